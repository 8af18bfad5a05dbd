"""URI templates (protomcp_sdk.wire.uritemplate): linear-time matching of untrusted URIs, the
same answers as the regular-expression matcher it replaced, and decoded values that cannot walk
out of their place (``%2F``, ``%2e%2e``, ``%00``)."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protomcp_sdk.wire.uritemplate import MAX_URI_LENGTH, TemplateError, UriTemplate

pytestmark = pytest.mark.fast  # starts no process

# -- the regular-expression matcher this module used to be (backtracking), as a reference ------
_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")
_REF_OPERATORS = {
    "": ("", ",", r"[^/?#&,]+"),
    "+": ("", ",", r".+?"),
    "#": ("#", ",", r".*?"),
    "/": ("/", "/", r"[^/?#]*"),
    ".": (".", ".", r"[^./?#]*"),
    ";": (";", ";", r"[^;/?#]*"),
}


def reference_match(template: str, uri: str) -> dict[str, str] | None:
    variables: list[str] = []
    query: list[str] = []
    pattern, position = "", 0
    for match in _EXPRESSION.finditer(template):
        operator, body = match.group(1), match.group(2)
        pattern += re.escape(template[position : match.start()])
        position = match.end()
        names = [part.strip().rstrip("*").split(":", 1)[0] for part in body.split(",")]
        if operator in ("?", "&"):
            query += names
            variables += names
            continue
        prefix, separator, value = _REF_OPERATORS[operator]
        groups = re.escape(separator).join(f"(?P<v{len(variables) + i}>{value})" for i in range(len(names)))
        pattern += f"(?:{re.escape(prefix)}{groups})" + ("?" if operator == "#" else "")
        variables += names
    pattern += re.escape(template[position:])
    if query:
        pattern += r"(?:[?&](?P<query>[^#]*))?"
    found = re.fullmatch(pattern, uri, re.DOTALL)
    if found is None:
        return None
    values = {}
    for index, name in enumerate(variables):
        if name not in query and found.group(f"v{index}") is not None:
            values[name] = unquote(found.group(f"v{index}"))
    if query and found.group("query"):
        parsed = parse_qs(found.group("query"), keep_blank_values=True)
        values.update({name: parsed[name][0] for name in query if name in parsed})
    return values


def _unsafe(template: str, values: dict[str, str]) -> bool:
    slash_free = set()
    for operator, body in _EXPRESSION.findall(template):
        if operator in ("", "/", ".", ";"):
            slash_free |= {part.strip().rstrip("*").split(":", 1)[0] for part in body.split(",")}
    return any(
        "\x00" in value
        or ".." in value.replace("\\", "/").split("/")
        or (name in slash_free and "/" in value)
        for name, value in values.items()
    )


TEMPLATES = [
    "notes://{id}",
    "file://{name}.{ext}",
    "files://{+path}",
    "files://{+a}/{+b}/{+c}",
    "x://{a},{b}",
    "x://{a,b}",
    "x://{+a,b}",
    "x://root{/seg,more}",
    "x://host{.label}/z",
    "x://p{;k}",
    "x://{a}{#frag}",
    "x://{+a}{#f,g}",
    "x://{a}{?q,r}",
    "x://{+a}x{b}{&c}",
    "x://{a}/{b}/tail",
]

uris = st.text(alphabet="ab/.,#?&=;x%2F0e:", max_size=14).map(lambda tail: "x://" + tail)


@settings(max_examples=400, deadline=None)
@given(template=st.sampled_from(TEMPLATES), uri=uris)
def test_same_answers_as_the_backtracking_matcher(template: str, uri: str) -> None:
    expected = reference_match(template, uri)
    got = UriTemplate(template).match(uri)
    if expected is not None and _unsafe(template, expected):
        assert got is None  # refused: a value that could walk out of its place
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("notes://{id}", "notes://42", {"id": "42"}),
        ("notes://{id}", "notes://a%20b", {"id": "a b"}),
        ("file://{name}.{ext}", "file://a.b.c", {"name": "a.b", "ext": "c"}),  # greedy, as before
        ("files://{+path}", "files://a/b/c.txt", {"path": "a/b/c.txt"}),
        ("files://{+a}/{+b}", "files://1/2/3", {"a": "1", "b": "2/3"}),  # lazy, as before
        ("x://{a}{?q,r}", "x://v?q=1&r=2", {"a": "v", "q": "1", "r": "2"}),
        ("x://{a}{?q}", "x://v", {"a": "v"}),
        ("x://{a}{#f}", "x://v#frag", {"a": "v", "f": "frag"}),
        ("x://{query}", "x://v", {"query": "v"}),  # a variable may be called "query"
    ],
)
def test_matches(template: str, uri: str, expected: dict[str, str]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("notes://{id}", "notes://..%2F..%2Fetc%2Fpasswd"),  # %2F in a simple value
        ("notes://{id}", "notes://a%2Fb"),
        ("notes://{id}", "notes://%2e%2e"),  # a ".." segment
        ("notes://{id}", "notes://.."),
        ("notes://{id}", "notes://a%00"),  # NUL
        ("files://{+path}", "files://a/../b"),
        ("files://{+path}", "files://a/%2e%2e/b"),
        ("files://{+path}", "files://a%5C..%5Cb"),  # backslashes count as separators
        ("x://root{/seg}", "x://root/a%2Fb"),
        ("x://{a}{?q}", "x://v?q=..%2Fx%00"),
    ],
)
def test_hostile_values_are_refused(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_long_hostile_uris_take_linear_time() -> None:
    """A 6 KB URI against three {+x} took 75 s with the regular expression (cubic backtracking);
    this counts the work instead of timing it: one table entry per step and character."""
    template = UriTemplate("files://{+a}/{+b}/{+c}/end")
    steps = len(template._steps)
    for uri in ("files://" + "a/" * 3000, "files://" + "a" * 6000 + "/x", "files://" + "/" * 6000):
        assert template.match(uri) is None
    found = template.match("files://" + "a/" * 3000 + "end")
    assert found is not None and found["a"] == "a" and found["b"] == "a"
    assert steps < 10  # the tables are steps x len(uri) bytes: linear in the URI


def test_too_long_uris_match_nothing() -> None:
    assert UriTemplate("files://{+path}").match("files://" + "a" * MAX_URI_LENGTH) is None
    assert UriTemplate("files://{+path}").match("files://" + "a" * 100) == {"path": "a" * 100}


@pytest.mark.parametrize("template", ["x://{a}{a}", "x://{?q}/more", "x://{bad name}", "x://{!x}"])
def test_bad_templates(template: str) -> None:
    with pytest.raises(TemplateError):
        UriTemplate(template)
