"""RFC 6570 URI templates, read backwards: does a URI match a template, and with which values?

Pure and dependency-free: the tool process uses it to pass a template's variables to the
function, and the host to find the tool file that owns a URI. Supported expressions: ``{x}``
(simple), ``{+x}`` (reserved), ``{#x}`` (fragment), ``{/x}`` (path segment), ``{.x}`` (label),
``{;x}`` (path parameter) and ``{?x,y}`` / ``{&x}`` (query, at the end of the template); several
variables per expression; ``*`` and ``:n`` modifiers are accepted and ignored.

URIs come from clients, so matching takes time linear in the URI's length (times the size of
the template, which the tool's author wrote): no regular-expression backtracking. The template
becomes a list of steps (literals, variables, optional groups); one backward pass records, for
each step and position, whether the rest of the template can match from there; one forward
pass then picks each variable's value as a backtracking regex would (greedy for ``{x}``,
``{/x}``, ``{.x}``, ``{;x}``, the query; lazy for ``{+x}`` and ``{#x}``), never trying a
choice that cannot succeed.

Decoded values that could walk out of where the template puts them are refused (no match):
a ``/`` (e.g. ``%2F``) in a value whose expansion does not allow one, a ``..`` path segment
(``%2e%2e``), or a NUL (``%00``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]+)\}")
_VARNAME = re.compile(r"[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*")

MAX_URI_LENGTH = 64 * 1024
"""Longer URIs match no template (the tables below are this long, per step)."""

# operator -> (prefix before the first value, separator between values, characters a raw value
# may not contain (None: any), at least one character, greedy)
_OPERATORS: dict[str, tuple[str, str, frozenset[str] | None, bool, bool]] = {
    "": ("", ",", frozenset("/?#&,"), True, True),
    "+": ("", ",", None, True, False),
    "#": ("#", ",", None, False, False),
    "/": ("/", "/", frozenset("/?#"), False, True),
    ".": (".", ".", frozenset("./?#"), False, True),
    ";": (";", ";", frozenset(";/?#"), False, True),
}
_QUERY = "?query"  # holds a trailing query string (no variable can have this name)


class TemplateError(ValueError):
    pass


def is_template(uri: str) -> bool:
    return _EXPRESSION.search(uri) is not None


@dataclass(frozen=True, slots=True)
class _Literal:
    text: str


@dataclass(frozen=True, slots=True)
class _OneOf:
    chars: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Variable:
    name: str
    excluded: frozenset[str] | None  # characters a raw value may not contain
    non_empty: bool
    greedy: bool


@dataclass(frozen=True, slots=True)
class _Optional:
    skip_to: int  # the step after the optional group


_Step = _Literal | _OneOf | _Variable | _Optional


class UriTemplate:
    def __init__(self, template: str) -> None:
        self.template = template
        self.variables: list[str] = []
        self.query: list[str] = []  # variables of a trailing {?...}/{&...}
        self._slash_free: set[str] = set()  # values that must not decode to a "/"
        steps: list[_Step] = []
        position = 0
        for match in _EXPRESSION.finditer(template):
            operator, body = match.group(1), match.group(2)
            if template[position : match.start()]:
                steps.append(_Literal(template[position : match.start()]))
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
            prefix, separator, excluded, non_empty, greedy = _OPERATORS[operator]
            group = len(steps)
            if operator == "#":
                steps.append(_Optional(-1))  # skip_to set below
            if prefix:
                steps.append(_Literal(prefix))
            for i, name in enumerate(names):
                if i:
                    steps.append(_Literal(separator))
                steps.append(_Variable(name, excluded, non_empty, greedy))
                if excluded is not None and "/" in excluded:
                    self._slash_free.add(name)
            if operator == "#":
                steps[group] = _Optional(len(steps))
            self.variables += names
        if template[position:]:
            steps.append(_Literal(template[position:]))
        if self.query:
            steps.append(_Optional(len(steps) + 3))
            steps.append(_OneOf(frozenset("?&")))
            steps.append(_Variable(_QUERY, frozenset("#"), False, True))
        if len(set(self.variables)) != len(self.variables):
            raise TemplateError(f"{template!r}: a variable appears twice")
        self._steps = steps

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables' values (percent-decoded) if `uri` matches, else None."""
        found = self._match(uri)
        if found is None:
            return None
        values: dict[str, str] = {}
        for name, raw in found.items():
            if name == _QUERY:
                continue
            value = unquote(raw)
            if not _safe(value) or (name in self._slash_free and "/" in value):
                return None
            values[name] = value
        if self.query and found.get(_QUERY):
            parsed = parse_qs(found[_QUERY], keep_blank_values=True)
            for name in self.query:
                if name in parsed:
                    value = parsed[name][0]
                    if not _safe(value):
                        return None
                    values[name] = value
        return values

    def _match(self, uri: str) -> dict[str, str] | None:
        """The raw text of each variable, or None. Time O(len(uri) * len(template))."""
        n = len(uri)
        if n > MAX_URI_LENGTH:
            return None
        steps = self._steps
        if steps and isinstance(steps[0], _Literal) and not uri.startswith(steps[0].text):
            return None  # most URIs tried against a template fail here, at once
        if steps and isinstance(steps[-1], _Literal) and not uri.endswith(steps[-1].text):
            return None
        # ok[i][p]: steps i.. match uri[p:] exactly. ok[len(steps)] is the end of the URI.
        ok: list[bytearray] = [bytearray(n + 1) for _ in range(len(steps) + 1)]
        ok[len(steps)][n] = 1
        for i in range(len(steps) - 1, -1, -1):
            step, here, after = steps[i], ok[i], ok[i + 1]
            if isinstance(step, _Literal):
                text, size = step.text, len(step.text)
                start = uri.find(text)
                while start != -1:
                    if start + size <= n and after[start + size]:
                        here[start] = 1
                    start = uri.find(text, start + 1)
            elif isinstance(step, _OneOf):
                for p in range(n):
                    if uri[p] in step.chars and after[p + 1]:
                        here[p] = 1
            elif isinstance(step, _Optional):
                skip = ok[step.skip_to]
                for p in range(n + 1):
                    here[p] = after[p] or skip[p]
            else:
                # reach[p]: some q >= p with uri[p:q] all allowed has after[q] (one pass backward)
                excluded, reach = step.excluded, after[n]
                for p in range(n - 1, -1, -1):
                    allowed = excluded is None or uri[p] not in excluded
                    if step.non_empty:
                        here[p] = 1 if allowed and reach else 0  # reach is still reach[p + 1]
                    reach = after[p] or (allowed and reach)
                    if not step.non_empty:
                        here[p] = 1 if reach else 0
                if not step.non_empty:
                    here[n] = after[n]
        if not ok[0][0]:
            return None
        values: dict[str, str] = {}
        i = p = 0
        while i < len(steps):
            step = steps[i]
            if isinstance(step, _Literal):
                p += len(step.text)
                i += 1
            elif isinstance(step, _OneOf):
                p += 1
                i += 1
            elif isinstance(step, _Optional):
                i = i + 1 if ok[i + 1][p] else step.skip_to  # the group first, as "?" would
            else:
                end = _run_end(uri, p, step.excluded)
                after = ok[i + 1]
                first = p + 1 if step.non_empty else p
                choices = range(end, first - 1, -1) if step.greedy else range(first, end + 1)
                q = next(q for q in choices if after[q])
                values[step.name] = uri[p:q]
                p = q
                i += 1
        return values


def _run_end(uri: str, start: int, excluded: frozenset[str] | None) -> int:
    """The end of the longest run from `start` of characters not in `excluded`."""
    if excluded is None:
        return len(uri)
    end = start
    while end < len(uri) and uri[end] not in excluded:
        end += 1
    return end


def _safe(value: str) -> bool:
    """No NUL and no ".." path segment."""
    return "\x00" not in value and ".." not in value.replace("\\", "/").split("/")


def _name(part: str, template: str) -> str:
    name = part.strip().rstrip("*").split(":", 1)[0]
    if not _VARNAME.fullmatch(name):
        raise TemplateError(f"{template!r}: {part!r} is not a valid variable")
    return name
