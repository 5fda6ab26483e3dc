"""The job process of a pool worker: runs pickled calls sent over its stdin, one at a time.

Frames are an 8-byte big-endian length and a cloudpickle payload.  A request is
``(fn, args, kwargs)``; the reply is ``("ok", value)`` or ``("err", exception)``.  The
job's own prints go to stderr, so they cannot corrupt the reply channel.  The process
exits when its parent (the worker) dies, so a killed worker leaves no job running.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback

import cloudpickle

from vdla.runtime.pool.frames import read_frame, write_frame

PARENT_POLL_S = 0.5


def encode_error(exc: BaseException) -> bytes:
    """The reply for a failed call: the exception itself, or a RuntimeError with its text if unpicklable."""
    try:
        return cloudpickle.dumps(("err", exc))
    except Exception:  # noqa: BLE001 - any pickling failure: send the exception's text instead
        text = "".join(traceback.format_exception(exc))
        return cloudpickle.dumps(("err", RuntimeError(f"{type(exc).__name__}: {exc} (unpicklable)\n{text}")))


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(1)


def serve(parent: int) -> None:
    """Serve calls until stdin closes."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)  # the job's prints land on stderr
    sys.stdout = sys.stderr
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    while True:
        frame = read_frame(0)
        if frame is None:
            return
        try:
            fn, args, kwargs = cloudpickle.loads(frame)
            reply = cloudpickle.dumps(("ok", fn(*args, **kwargs)))
        except Exception as exc:  # noqa: BLE001 - the job's failure is its result, sent back to the client
            reply = encode_error(exc)
        write_frame(reply_fd, reply)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
