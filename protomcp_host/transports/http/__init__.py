"""Streamable HTTP and HTTP+SSE (2024-11-05): the ASGI app, sessions by id, event streams, auth."""
