"""The tool process: frame loop, calls, features, middleware, context, threads. Imports authoring, wire."""
