"""How many bytes to ask a pipe for per read, shared by the host and the tool process.

asyncio allocates the whole read size before each read. Past glibc's mmap threshold
(128 KiB) that is an mmap, an mremap and a munmap per read even when 50 bytes arrive:
three system calls per frame on the hot path. Reads therefore start under the threshold
and grow (x4, up to a ceiling) only while they come back full, that is while a large
message is streaming in; the first short read brings them back down.
"""

from __future__ import annotations

from typing import Protocol

SMALL = 64 * 1024  # under the mmap threshold: the buffer comes from the heap and is reused


def next_size(size: int, got: int, largest: int) -> int:
    """The size of the read after one of `size` bytes that brought `got`."""
    return min(size * 4, largest) if got >= size else SMALL


class ResizableRead(Protocol):
    """asyncio's read pipe transport: it reads `max_size` bytes at a time (an attribute its
    base classes do not declare)."""

    max_size: int


def adapt(transport: ResizableRead, got: int, largest: int) -> None:
    """After a read of `got` bytes, set the asyncio read transport's next read size."""
    transport.max_size = next_size(transport.max_size, got, largest)
