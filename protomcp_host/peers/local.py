"""The in-process MCP session through which a peer's requests run local tools: the same
Session, Router, middleware, validation and tool processes an MCP client gets, driven by
JSON-RPC messages in memory (as `transports/direct.py` does for `list` and `call`)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import orjson

from protomcp_host.protocol import jsonrpc as rpc
from protomcp_host.transports.ports import Connection, Sessions


class LocalClient:
    """One headless MCP session of this host (one per peer link: its own tool-list state)."""

    def __init__(self, sessions: Sessions, name: str) -> None:
        self.sessions = sessions
        self.name = name
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._ids = itertools.count(1)
        self.connection: Connection = sessions.connect(self._write)

    def _write(self, data: bytes, related: bytes | None = None) -> None:
        message = orjson.loads(data)
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and "id" in item and "method" not in item:
                future = self._waiting.pop(item["id"], None)
                if future is not None and not future.done():
                    future.set_result(item)

    async def open(self) -> None:
        await self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": self.name, "version": "1"},
            },
        )
        self.connection.feed(rpc.notification("notifications/initialized"))

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response (result or error). Cancelling it cancels the request."""
        request_id = next(self._ids)
        future = self._waiting[request_id] = asyncio.get_running_loop().create_future()
        self.connection.feed(rpc.request(request_id, method, params))
        try:
            return await future
        except asyncio.CancelledError:
            if self._waiting.pop(request_id, None) is not None:
                self.connection.feed(
                    rpc.notification(
                        "notifications/cancelled", {"requestId": request_id, "reason": "peer request ended"}
                    )
                )
            raise

    def close(self) -> None:
        self.connection.cancel_all()
        self.sessions.disconnect(self.connection)
        for future in self._waiting.values():
            future.cancel()
        self._waiting.clear()
