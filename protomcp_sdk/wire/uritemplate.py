"""RFC 6570 URI templates, read backwards: does a URI match a template, and with which values?

Pure and dependency-free: the tool process uses it to pass a template's variables to the
function, and the host (which otherwise imports only ``wire`` from this package) to find the
tool file that owns a URI. Supported expressions: ``{x}`` (simple), ``{+x}`` (reserved),
``{#x}`` (fragment), ``{/x}`` (path segment), ``{.x}`` (label), and ``{?x,y}`` / ``{&x}``
(query, at the end of the template); several variables per expression; ``*`` and ``:n``
modifiers are accepted and ignored.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")

# operator -> (prefix before the first value, separator between values, value pattern)
_OPERATORS = {
    "": ("", ",", r"[^/?#&,]+"),
    "+": ("", ",", r".+?"),
    "#": ("#", ",", r".*?"),
    "/": ("/", "/", r"[^/?#]*"),
    ".": (".", ".", r"[^./?#]*"),
    ";": (";", ";", r"[^;/?#]*"),
}


class TemplateError(ValueError):
    pass


def is_template(uri: str) -> bool:
    return _EXPRESSION.search(uri) is not None


class UriTemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self.query: list[str] = []  # variables of a trailing {?...}/{&...}
        pattern = ""
        position = 0
        for match in _EXPRESSION.finditer(template):
            operator, body = match.group(1), match.group(2)
            pattern += re.escape(template[position : match.start()])
            position = match.end()
            names = [_name(part, template) for part in body.split(",")]
            if operator in ("?", "&"):
                if template[position:]:
                    raise TemplateError(f"{template!r}: a {{{operator}...}} expression must come last")
                self.query += names
                self.variables += names
                continue
            if self.query:
                raise TemplateError(f"{template!r}: a query expression must come last")
            if operator not in _OPERATORS:
                raise TemplateError(f"{template!r}: operator {operator!r} is not supported")
            prefix, separator, value = _OPERATORS[operator]
            groups = re.escape(separator).join(f"(?P<{_group(len(self.variables) + i)}>{value})"
                                               for i in range(len(names)))  # fmt: skip
            pattern += f"(?:{re.escape(prefix)}{groups})" + ("?" if operator == "#" else "")
            self.variables += names
        pattern += re.escape(template[position:])
        if self.query:
            pattern += r"(?:[?&](?P<query>[^#]*))?"
        if len(set(self.variables)) != len(self.variables):
            raise TemplateError(f"{template!r}: a variable appears twice")
        self._regex = re.compile(pattern, re.DOTALL)
        self._query = bool(self.query)

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values (percent-decoded) if `uri` matches, else None."""
        found = self._regex.fullmatch(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        for index, name in enumerate(self.variables):
            if name in self.query:
                continue
            value = found.group(_group(index))
            if value is not None:
                values[name] = unquote(value)
        if self._query and found.group("query"):
            parsed = parse_qs(found.group("query"), keep_blank_values=True)
            for name in self.query:
                if name in parsed:
                    values[name] = parsed[name][0]
        return values


def _name(part: str, template: str) -> str:
    name = part.strip().rstrip("*").split(":", 1)[0]
    if not _VARNAME.fullmatch(name):
        raise TemplateError(f"{template!r}: {part!r} is not a valid variable")
    return name


def _group(index: int) -> str:
    return f"v{index}"
