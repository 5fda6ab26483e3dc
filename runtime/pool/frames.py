"""Length-prefixed frames: how a worker and its job process exchange pickled calls and replies."""

from __future__ import annotations

import os


def read_frame(fd: int) -> bytes | None:
    """One frame from ``fd``, or None at end of file."""
    head = _read(fd, 8)
    if head is None:
        return None
    body = _read(fd, int.from_bytes(head, "big"))
    if body is None:
        raise EOFError("job channel closed in the middle of a frame")
    return body


def _read(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def write_frame(fd: int, payload: bytes) -> None:
    """Write one frame to ``fd``."""
    data = len(payload).to_bytes(8, "big") + payload
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
