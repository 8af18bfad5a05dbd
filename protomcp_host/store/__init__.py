"""Shared state for several hosts (`--store`): the notification bus, the key that seals
`requestState`, and keyed records with a lifetime (for tasks). `base.Store` is the interface;
`memory.MemoryStore` is the default (one host); `redis_store.RedisStore` is the only module that
speaks Redis. Imports no other host folder."""
