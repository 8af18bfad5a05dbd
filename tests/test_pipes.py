"""pipes.BatchedWriter and read_into against real pipes and files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from protomcp_host.processes.pipes import BatchedWriter, read_into

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def drain_in_thread(fd: int, into: bytearray) -> threading.Thread:
    def run() -> None:
        while chunk := os.read(fd, 7000):  # small reads: the writer must wait for room
            into.extend(chunk)
        os.close(fd)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_big_and_small_writes_arrive_whole_and_in_order() -> None:
    r, w = os.pipe()
    got = bytearray()
    reader = drain_in_thread(r, got)
    writer = BatchedWriter(w)
    expected = b""
    for i in range(50):
        piece = (b"%d," % i) * (1 + (i % 7) * 40000)  # mixes small and > 256 KiB pieces
        writer.write(piece)
        expected += piece
        if i % 10 == 0:
            await anyio.sleep(0)  # let some flushes happen in between
    with anyio.fail_after(10):
        await writer.drain(10)
    writer.close()
    await anyio.to_thread.run_sync(reader.join)
    assert bytes(got) == expected
    assert writer.closed


async def test_close_waits_for_pending_data() -> None:
    r, w = os.pipe()
    writer = BatchedWriter(w)
    writer.write(b"x" * (3 * 1024 * 1024))
    writer.close()  # before anything has been read
    got = bytearray()
    reader = drain_in_thread(r, got)
    await anyio.to_thread.run_sync(reader.join)  # returns at EOF: the fd was closed after the data
    assert len(got) == 3 * 1024 * 1024


async def test_a_vanished_reader_is_not_an_error() -> None:
    r, w = os.pipe()
    writer = BatchedWriter(w)
    os.close(r)
    writer.write(b"nobody listens")
    with anyio.fail_after(5):
        await writer.drain(5)
    assert writer.closed
    writer.write(b"more")  # ignored, no exception


async def test_regular_files_use_blocking_writes_and_reads(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    writer = BatchedWriter(fd)
    writer.write(b"hello ")
    writer.write(b"file")
    await writer.drain(5)
    writer.close()
    assert path.read_bytes() == b"hello file"
    chunks: list[bytes] = []
    await read_into(os.open(path, os.O_RDONLY), chunks.append)
    assert b"".join(chunks) == b"hello file"
