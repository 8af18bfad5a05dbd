"""The type of the functions a tool file registers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

AuthorFunction: TypeAlias = Callable[..., Any]
"""A tool, resource, prompt or completion function as the tool file wrote it: sync or async
(its spec's ``is_async`` says which, found at run time) and returning whatever it likes, which
the runtime awaits or not, then encodes."""
