"""Streamable HTTP and legacy HTTP+SSE: the ASGI app, sessions by id, event streams, auth (guard, OAuth)."""
