"""``ResourceSpec``: static resources and URI templates, what reading one returns, and
``resource_updated`` (bound by the tool process to its frame output)."""

from __future__ import annotations

import binascii
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from protomcp_sdk.authoring.apps import UI, declared_files, resource_ui
from protomcp_sdk.authoring.arguments import ArgumentError, Converter
from protomcp_sdk.authoring.functions import AuthorFunction
from protomcp_sdk.authoring.metadata import as_json, checked_icons, checked_meta, checked_scopes
from protomcp_sdk.authoring.results import EmbeddedResource
from protomcp_sdk.authoring.schema import analyze
from protomcp_sdk.wire import envelope_pb2 as pb
from protomcp_sdk.wire.jsontypes import JSONObject

if TYPE_CHECKING:
    from protomcp_sdk.wire.uritemplate import UriTemplate

RESOURCE_NOT_FOUND = -32002
INTERNAL_ERROR = -32603


class ResourceNotFound(LookupError):
    """Raise from a resource function when the URI names nothing (answered with -32002)."""


@dataclass
class ResourceSpec:
    uri: str  # the URI, or the URI template
    name: str
    title: str | None
    description: str
    mime_type: str | None
    size: int | None
    annotations: JSONObject | None
    fn: AuthorFunction
    is_async: bool
    template: UriTemplate | None
    context_param: str | None
    converter: Converter = field(repr=False)
    meta: JSONObject | None = None
    icons: list[JSONObject] | None = None
    scopes: frozenset[str] = frozenset()  # OAuth scopes a caller's token must grant (HTTP + OAuth)
    ui: JSONObject | None = None  # an app's _meta.ui (MCP Apps): listed, and on each content read
    files: tuple[Path, ...] = ()  # files beside the tool file it serves from (pack bundles them)

    def resource_definition(self) -> pb.ResourceDefinition:
        """How resources/list shows this resource (one without URI variables)."""
        return pb.ResourceDefinition(
            uri=self.uri, size=self.size or 0, scopes=sorted(self.scopes), **self._listed()
        )

    def template_definition(self) -> pb.ResourceTemplateDefinition:
        """How resources/templates/list shows this template."""
        scopes = sorted(self.scopes)
        return pb.ResourceTemplateDefinition(uri_template=self.uri, scopes=scopes, **self._listed())

    def _listed(self) -> dict[str, str]:
        return {
            "name": self.name,
            "title": self.title or "",
            "description": self.description,
            "mime_type": self.mime_type or "",
            "annotations_json": orjson.dumps(self.annotations).decode() if self.annotations else "",
            "meta_json": as_json(self.meta),
            "icons_json": as_json(self.icons),
        }

    def _app(self, content: JSONObject) -> JSONObject:
        """An app's contents carry its _meta.ui too: the spec has hosts prefer it to the listing's."""
        if self.ui is not None:
            content["_meta"] = {"ui": self.ui}
        return content

    def arguments(self, uri: str) -> dict[str, object]:
        """The function's keyword arguments for reading `uri` (template variables converted)."""
        values = self.template.match(uri) if self.template is not None else {}
        if values is None:
            raise ResourceNotFound(f"{uri} does not match {self.uri}")
        try:
            return self.converter(values)
        except ArgumentError as exc:
            raise ArgumentError(f"Invalid URI {uri} for resource template {self.uri}: {exc}") from None

    def contents(self, value: object, uri: str) -> list[JSONObject]:
        """A read's return value as MCP resource contents: str -> text, bytes -> base64 blob,
        EmbeddedResource -> its contents; a list or tuple gives several."""
        items = value if isinstance(value, (list, tuple)) else [value]
        return [self._content(item, uri) for item in items]

    def _content(self, item: object, uri: str) -> JSONObject:
        if isinstance(item, str):
            return self._app({"uri": uri, "mimeType": self.mime_type or "text/plain", "text": item})
        if isinstance(item, (bytes, bytearray, memoryview)):
            blob = binascii.b2a_base64(item, newline=False).decode("ascii")
            mime = self.mime_type or "application/octet-stream"
            return self._app({"uri": uri, "mimeType": mime, "blob": blob})
        if isinstance(item, EmbeddedResource):
            contents: JSONObject = item.to_mcp()["resource"]
            return contents
        raise TypeError(
            f"resource {self.uri} returned a {type(item).__name__}; return str (text), bytes (binary), "
            "an EmbeddedResource, or a list of them"
        )


def resource_spec(
    fn: AuthorFunction,
    uri: str,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
    size: int | None,
    annotations: JSONObject | None,
    meta: JSONObject | None = None,
    icons: Iterable[JSONObject] | None = None,
    scopes: Iterable[str] | None = None,
    ui: UI | None = None,
    files: Iterable[str] | None = None,
) -> ResourceSpec:
    if not isinstance(uri, str) or not uri:
        raise ValueError("@resource needs a URI, e.g. @resource('notes://{id}')")
    from protomcp_sdk.wire.uritemplate import UriTemplate, is_template  # (a file with no resources: never)

    label = name or str(getattr(fn, "__name__", uri))
    template = UriTemplate(uri) if is_template(uri) else None
    signature = analyze(fn, label, returns=False)
    variables = template.variables if template is not None else []
    defaults = {
        p.name for p in inspect.signature(fn).parameters.values() if p.default is not inspect.Parameter.empty
    }
    for param in signature.params:
        if param not in variables and param not in defaults:
            raise TypeError(
                f"resource {uri!r}: parameter {param!r} of {fn.__qualname__} is not a variable of the URI"
                + (" (a URI without {variables} is read without arguments)" if template is None else "")
            )
    for variable in variables:
        if variable not in signature.params:
            raise TypeError(f"resource {uri!r}: {fn.__qualname__} has no parameter for {{{variable}}}")
    doc = inspect.cleandoc(fn.__doc__) if fn.__doc__ else ""
    meta = checked_meta(f"resource {uri!r}", meta)
    mime_type, ui_meta = resource_ui(uri, mime_type, ui, meta)
    if ui_meta is not None:
        meta = {**(meta or {}), "ui": ui_meta}
    return ResourceSpec(
        uri=uri,
        name=label,
        title=title,
        description=description if description is not None else doc,
        mime_type=mime_type,
        size=size,
        annotations=dict(annotations) if annotations else None,
        fn=fn,
        is_async=inspect.iscoroutinefunction(fn),
        template=template,
        context_param=signature.context_param,
        converter=signature.convert,
        meta=meta,
        icons=checked_icons(f"resource {uri!r}", icons),
        scopes=checked_scopes(f"resource {uri!r}", scopes),
        ui=ui_meta,
        files=declared_files(f"resource {uri!r}", fn, files),
    )


# -- notifications from the tool file -------------------------------------------------------

_send: Callable[[pb.Envelope], None] | None = None


def bind(send: Callable[[pb.Envelope], None] | None) -> None:
    """The tool process sets where resource notifications go."""
    global _send
    _send = send


def resource_updated(uri: str) -> None:
    """Tell subscribed clients that the resource at `uri` changed (they will read it again).
    Callable from anywhere in a tool file: a tool, a background task or another thread."""
    if _send is None:
        raise RuntimeError("resource_updated() works only inside a tool process served by protomcp")
    _send(pb.Envelope(resource_changed=pb.ResourceChangedNotification(uri=uri)))
