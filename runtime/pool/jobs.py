"""What a pool worker runs for one job: a pickled call, in a job process, under the host lock.

A Dask worker thread never runs a job itself.  It hands the pickled call to a persistent
job process (:mod:`vdla.runtime.pool.child`), one per worker thread, and waits:

- a job past its timeout is cut by killing its process (a thread cannot be stopped), and a
  fresh process serves the next job;
- a job that crashes its process (a signal, an abort in native code) fails with
  :class:`JobCrashedError` and leaves the worker alive;
- the worker needs none of the job's modules: it forwards bytes (the job process imports them).

The host lock makes ``exclusive`` jobs (CPU timing) own the whole machine: every job takes a
shared ``flock`` on one per-host file, an exclusive job an exclusive one, so no other job of any
worker process on that host runs beside it.  A turnstile lock keeps a stream of shared jobs from
starving a waiting exclusive one.  The kernel drops the locks of a killed process.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from vdla.runtime.pool.frames import write_frame
from vdla.runtime.pool.errors import JobCrashedError, JobTimeoutError

LOCK_DIR_ENV = "VDLA_POOL_LOCK_DIR"


def lock_dir() -> Path:
    """Where the per-host lock files live (``$VDLA_POOL_LOCK_DIR``, default the temp dir)."""
    return Path(os.environ.get(LOCK_DIR_ENV) or tempfile.gettempdir())


def _lock_fd(name: str) -> int:
    # Read-only is enough for flock, and lets workers of other users open the same files.
    return os.open(lock_dir() / name, os.O_RDONLY | os.O_CREAT, 0o644)


@contextmanager
def host_lock(exclusive: bool) -> Iterator[None]:
    """Hold this host's job lock: shared for packed jobs, exclusive for ones that own the machine."""
    turnstile, main = _lock_fd("vdla-pool-host.turnstile"), _lock_fd("vdla-pool-host.lock")
    try:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if exclusive:
            fcntl.flock(main, fcntl.LOCK_EX)
            fcntl.flock(turnstile, fcntl.LOCK_UN)
        else:
            fcntl.flock(turnstile, fcntl.LOCK_UN)
            fcntl.flock(main, fcntl.LOCK_SH)
        yield
    finally:
        os.close(main)
        os.close(turnstile)


class JobProcess:
    """One persistent job process (see the module docstring)."""

    def __init__(self) -> None:
        env = dict(os.environ)
        # The job process must import what the worker can (the runtime, the job's modules).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen([sys.executable, "-m", "vdla.runtime.pool.child", str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def call(self, request: bytes, timeout_s: float | None) -> bytes:
        """Send ``request`` and return the reply frame; raises on timeout or a dead process."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            write_frame(self.proc.stdin.fileno(), request)
        except BrokenPipeError:
            raise JobCrashedError(self._death()) from None
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        fd = self.proc.stdout.fileno()
        head = self._read(fd, 8, deadline, timeout_s)
        return self._read(fd, int.from_bytes(head, "big"), deadline, timeout_s)

    def _read(self, fd: int, n: int, deadline: float | None, timeout_s: float | None) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                self.kill()
                raise JobTimeoutError(f"the job ran past its timeout of {timeout_s:g} s on this worker and was "
                                      "cut", hint="raise the job's timeout_s if it is really that long")
            chunk = os.read(fd, n - len(buf))
            if not chunk:
                raise JobCrashedError(self._death())
            buf += chunk
        return bytes(buf)

    def _death(self) -> str:
        code = self.proc.wait()
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return f"the job's process died ({how}) while running it"

    def kill(self) -> None:
        """End the process now (it may be running a job that must not finish)."""
        self.proc.kill()
        self.proc.wait()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None


RECENT_S = 60.0
_finished: deque[float] = deque(maxlen=100_000)
_total = [0]
_idle: list[JobProcess] = []
_idle_lock = threading.Lock()


def _take() -> JobProcess:
    with _idle_lock:
        while _idle:
            proc = _idle.pop()
            if proc.alive:
                return proc
    return JobProcess()


def run_job(request: bytes, timeout_s: float | None, exclusive: bool) -> bytes:
    """Run one pickled job on this worker; returns the job process's reply frame.

    This is the function the client submits to Dask: its arguments and result are bytes, so the
    scheduler and the worker never unpickle the job itself.
    """
    proc = _take()
    with host_lock(exclusive):
        try:
            reply = proc.call(request, timeout_s)
        except BaseException:
            if proc.alive:
                proc.kill()  # a half-finished exchange leaves the channel out of step
            raise
    with _idle_lock:
        _idle.append(proc)
        _finished.append(time.monotonic())
        _total[0] += 1
    return reply


def job_counts() -> dict[str, float]:
    """This worker's finished jobs: in total, and per second over the last :data:`RECENT_S` seconds."""
    now = time.monotonic()
    with _idle_lock:
        recent = sum(1 for t in _finished if now - t <= RECENT_S)
        return {"jobs_total": _total[0], "jobs_per_s": recent / RECENT_S, "job_processes": len(_idle)}
