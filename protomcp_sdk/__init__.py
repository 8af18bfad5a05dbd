"""protomcp SDK: write MCP tools as plain Python functions.

```python
from protomcp_sdk import tool

@tool
def add(a: int, b: int) -> int:
    \"\"\"Add two numbers.\"\"\"
    return a + b
```

The public names are loaded on first use: the host imports only ``protomcp_sdk.wire`` and pays
for none of the tool-authoring API. pydantic is imported only for tools whose signatures need
it (see ``protomcp_sdk.authoring.schema``).

Layers, each importing only the ones after it: ``runtime/`` (the tool process) -> ``authoring/``
(what tool files use) -> ``wire/`` (the contract shared with the host). ``testing`` may use all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__all__ = [
    "UI",
    "Audio",
    "ClientRequestError",
    "Context",
    "EmbeddedResource",
    "Image",
    "Message",
    "Principal",
    "ResourceLink",
    "ResourceNotFound",
    "Text",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "UserStateError",
    "__version__",
    "completion",
    "env",
    "lifespan",
    "middleware",
    "on_roots_changed",
    "prompt",
    "resource",
    "resource_updated",
    "tool",
]

_DECORATORS = "protomcp_sdk.authoring.decorators"
_RESULTS = "protomcp_sdk.authoring.results"
_EXPORTS = {
    "tool": _DECORATORS,
    "middleware": _DECORATORS,
    "lifespan": _DECORATORS,
    "ToolCall": "protomcp_sdk.authoring.middleware",
    "Context": "protomcp_sdk.runtime.context",
    "ToolResult": _RESULTS,
    "ToolError": _RESULTS,
    "Text": _RESULTS,
    "Image": _RESULTS,
    "Audio": _RESULTS,
    "ResourceLink": _RESULTS,
    "EmbeddedResource": _RESULTS,
    "ClientRequestError": "protomcp_sdk.runtime.client",
    "UserStateError": "protomcp_sdk.runtime.user_state",
    "on_roots_changed": _DECORATORS,
    "resource": _DECORATORS,
    "resource_updated": "protomcp_sdk.authoring.resources",
    "ResourceNotFound": "protomcp_sdk.authoring.resources",
    "prompt": _DECORATORS,
    "completion": _DECORATORS,
    "Message": "protomcp_sdk.authoring.messages",
    "Principal": "protomcp_sdk.authoring.principal",
    "env": _DECORATORS,
    "UI": "protomcp_sdk.authoring.apps",
}

if TYPE_CHECKING:
    __version__: str  # the installed distribution's, read from its metadata on first use
    from protomcp_sdk.authoring.apps import UI
    from protomcp_sdk.authoring.decorators import (
        completion,
        env,
        lifespan,
        middleware,
        on_roots_changed,
        prompt,
        resource,
        tool,
    )
    from protomcp_sdk.authoring.messages import Message
    from protomcp_sdk.authoring.middleware import ToolCall
    from protomcp_sdk.authoring.principal import Principal
    from protomcp_sdk.authoring.resources import ResourceNotFound, resource_updated
    from protomcp_sdk.authoring.results import (
        Audio,
        EmbeddedResource,
        Image,
        ResourceLink,
        Text,
        ToolError,
        ToolResult,
    )
    from protomcp_sdk.runtime.client import ClientRequestError
    from protomcp_sdk.runtime.context import Context
    from protomcp_sdk.runtime.user_state import UserStateError


def __getattr__(name: str) -> object:
    if name == "__version__":
        from protomcp_sdk.wire.version import installed_version

        globals()[name] = installed_version()
        return globals()[name]
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'protomcp_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
