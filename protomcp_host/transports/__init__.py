"""Transports: move bytes between clients and sessions (stdio, Streamable HTTP, HTTP+SSE, in-process).
May import `protocol` and `processes.launch` errors; they reach the rest of the host through the narrow
interfaces in `transports.ports`, never through `app.Host`."""
