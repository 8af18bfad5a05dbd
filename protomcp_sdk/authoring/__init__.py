"""Tool-file API: decorators, specs, registry, schema, results, messages. May import only `wire`."""
