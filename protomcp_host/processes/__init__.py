"""Tool processes: launch, lifetime, pipes, the Envelope channel, workers, supervision, reload, output.
May import only `protomcp_sdk.wire` and the standard library (plus anyio/watchfiles)."""
