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
it (see ``protomcp_sdk.schema``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "Audio",
    "ClientRequestError",
    "Context",
    "EmbeddedResource",
    "Image",
    "Message",
    "ResourceLink",
    "ResourceNotFound",
    "Text",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "__version__",
    "completion",
    "middleware",
    "on_roots_changed",
    "prompt",
    "resource",
    "resource_updated",
    "tool",
]

_EXPORTS = {
    "tool": "protomcp_sdk.registry",
    "middleware": "protomcp_sdk.chain",
    "ToolCall": "protomcp_sdk.chain",
    "Context": "protomcp_sdk.context",
    "ToolResult": "protomcp_sdk.results",
    "ToolError": "protomcp_sdk.results",
    "Text": "protomcp_sdk.results",
    "Image": "protomcp_sdk.results",
    "Audio": "protomcp_sdk.results",
    "ResourceLink": "protomcp_sdk.results",
    "EmbeddedResource": "protomcp_sdk.results",
    "ClientRequestError": "protomcp_sdk.client",
    "on_roots_changed": "protomcp_sdk.client",
    "resource": "protomcp_sdk.resources",
    "resource_updated": "protomcp_sdk.resources",
    "ResourceNotFound": "protomcp_sdk.resources",
    "prompt": "protomcp_sdk.prompts",
    "completion": "protomcp_sdk.completions",
    "Message": "protomcp_sdk.messages",
}

if TYPE_CHECKING:
    from protomcp_sdk.chain import ToolCall, middleware
    from protomcp_sdk.client import ClientRequestError, on_roots_changed
    from protomcp_sdk.completions import completion
    from protomcp_sdk.context import Context
    from protomcp_sdk.messages import Message
    from protomcp_sdk.prompts import prompt
    from protomcp_sdk.registry import tool
    from protomcp_sdk.resources import ResourceNotFound, resource, resource_updated
    from protomcp_sdk.results import Audio, EmbeddedResource, Image, ResourceLink, Text, ToolError, ToolResult


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'protomcp_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
