"""What the host tells its operator beside MCP: metrics (Prometheus at GET /metrics, and
OpenTelemetry when the otel extra is configured) and the audit log of tool calls. Imports no
other host folder: every layer may record here, so recording stays one call."""
