"""pipes.BatchedWriter and read_into against real pipes and files."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from protomcp_host.processes.pipes import BatchedWriter, read_into

pytestmark = [pytest.mark.fast, pytest.mark.anyio]


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


async def test_writes_made_while_handling_input_leave_in_the_same_loop_turn() -> None:
    """An answer written by an input handler is in the pipe when the handler returns: no
    extra loop turn per message; writes from elsewhere still leave on the next turn."""
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    os.set_blocking(dst_r, False)
    writer = BatchedWriter(dst_w)
    seen: list[bytes] = []

    def check_after(data: bytes) -> None:
        writer.write(b"answer:" + data)
        writer.write(b";")
        with pytest.raises(BlockingIOError):
            os.read(dst_r, 100)  # nothing yet: the handler still runs
        seen.append(data)

    done = anyio.Event()

    async def reader() -> None:
        await read_into(src_r, check_after)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        os.write(src_w, b"q")
        with anyio.fail_after(5):
            while not seen:
                await anyio.sleep(0)
        # The handler returned in the callback that read "q": its writes are in the pipe now,
        # before any other callback of this loop ran.
        assert os.read(dst_r, 100) == b"answer:q;"
        writer.write(b"later")
        with pytest.raises(BlockingIOError):
            os.read(dst_r, 100)  # not from an input handler: it waits for the next turn
        await anyio.sleep(0)
        await anyio.sleep(0)
        assert os.read(dst_r, 100) == b"later"
        os.close(src_w)
        with anyio.fail_after(5):
            await done.wait()
    writer.close()
    os.close(dst_r)


def test_read_size_grows_while_reads_fill_and_drops_after_a_short_one() -> None:
    from protomcp_sdk.wire import readsize

    class T:
        max_size = readsize.SMALL

    t = T()
    readsize.adapt(t, 100, 1 << 20)
    assert t.max_size == readsize.SMALL
    readsize.adapt(t, readsize.SMALL, 1 << 20)
    assert t.max_size == 4 * readsize.SMALL
    for _ in range(5):
        readsize.adapt(t, t.max_size, 1 << 20)
    assert t.max_size == 1 << 20  # never past the ceiling
    readsize.adapt(t, 10, 1 << 20)
    assert t.max_size == readsize.SMALL
