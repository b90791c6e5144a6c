"""The frame codec between `pool` (the parent), `server` (the fork server) and `worker` (a child).

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. The parent writes job
frames to the server's stdin and reads answer frames from its stdout; a child writes its one
answer frame to the server. `failure(kind, message)` is the answer frame of a call that did not
produce a result (a kind from `tools.result`'s closed set).
"""

from __future__ import annotations

import json
import os
import struct
from typing import IO, Any

FRAME_HEADER = struct.Struct(">I")


def write_frame(fd: int, obj: dict[str, Any]) -> None:
    """Write `obj` as one whole frame to the file descriptor `fd` (retrying short writes)."""
    data = json.dumps(obj, ensure_ascii=False).encode("utf-8", "replace")
    view = memoryview(FRAME_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def read_frame(stream: IO[bytes]) -> dict[str, Any] | None:
    """One frame from a blocking binary stream; None at end of stream."""
    head = _read_exactly(stream, FRAME_HEADER.size)
    if head is None:
        return None
    (size,) = FRAME_HEADER.unpack(head)
    body = _read_exactly(stream, size)
    return None if body is None else json.loads(body)


def frame_body(buffer: bytes | bytearray) -> bytes | None:
    """The JSON bytes of the first frame in `buffer` once all of it has arrived, else None.
    The frame takes `FRAME_HEADER.size + len(body)` bytes of the buffer."""
    if len(buffer) < FRAME_HEADER.size:
        return None
    (size,) = FRAME_HEADER.unpack_from(buffer)
    if len(buffer) < FRAME_HEADER.size + size:
        return None
    return bytes(buffer[FRAME_HEADER.size : FRAME_HEADER.size + size])


def failure(kind: str, message: str) -> dict[str, Any]:
    """The answer frame of a call that failed with error `kind`."""
    return {"ok": False, "error": {"kind": kind, "message": message}}


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    data = bytearray()
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return bytes(data)
