"""Where measurement jobs run: the :class:`JobExecutor` protocol and the local process executor.

An executor runs a picklable module-level function with picklable arguments on a device of a
given kind (``cpu-<isa>``, ``vdla-cycle``) and returns a future.  ``exclusive=True`` marks a timing
job that must have the machine to itself.  A job that exceeds ``timeout_s`` fails with
:class:`JobTimeout` (a ``TimeoutError``); a worker process that dies (killed, crashed) fails its
job with :class:`WorkerDied`: neither hangs the tuner.  ``vdla.runtime.pool`` (dask) implements the same
protocol for many machines.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class JobExecutor(Protocol):
    """Runs measurement jobs (see the module doc)."""

    def submit(self, fn: Callable[..., T], *args: Any, device_kind: str, timeout_s: float | None = None,
               exclusive: bool = False) -> concurrent.futures.Future[T]: ...


class JobTimeout(TimeoutError):
    """The job ran longer than its timeout; its worker was killed."""


class WorkerDied(RuntimeError):
    """The worker process running the job exited before answering (killed or crashed)."""


class RemoteError(RuntimeError):
    """The job raised an exception that could not be sent back as itself."""


def _worker_main(conn: Any) -> None:
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        fn, args = job
        try:
            reply = ("ok", fn(*args))
        except Exception as exc:  # noqa: BLE001 - shipped back to the caller, which classifies it
            reply = ("err", exc, traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - an unpicklable result or exception
            conn.send(("err", RemoteError(f"{type(exc).__name__}: {exc}"), traceback.format_exc()))


class _SharedExclusiveLock:
    """Many shared holders or one exclusive holder; waiting exclusive jobs block new shared ones."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    def acquire(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._waiting += 1
                self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
                self._waiting -= 1
                self._exclusive = True
            else:
                self._cond.wait_for(lambda: not self._exclusive and self._waiting == 0)
                self._shared += 1

    def release(self, exclusive: bool) -> None:
        with self._cond:
            if exclusive:
                self._exclusive = False
            else:
                self._shared -= 1
            self._cond.notify_all()


@dataclass
class _Job:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    timeout_s: float | None
    exclusive: bool
    future: concurrent.futures.Future[Any] = field(default_factory=concurrent.futures.Future)


class _Slot:
    """One worker process and the thread feeding it jobs."""

    def __init__(self, ctx: Any) -> None:
        self._ctx = ctx
        self._proc: Any = None
        self._conn: Any = None
        self.interrupted = threading.Event()

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_worker_main, args=(child,), daemon=True)
        try:
            proc.start()
        except BaseException:
            # Keep no handle on a process that never started: killing it later would fail on its
            # missing Popen (an AttributeError at shutdown, after the job already failed).
            parent.close()
            raise
        finally:
            child.close()
        self._proc, self._conn = proc, parent

    def _kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if proc is not None:
            proc.kill()
            proc.join()
            conn.close()

    def run(self, job: _Job) -> None:
        if self._proc is None or not self._proc.is_alive():
            self._kill()
            self._start()
        deadline = None if job.timeout_s is None else time.monotonic() + job.timeout_s
        try:
            self._conn.send((job.fn, job.args))
            # Short polls, so an interrupt (see LocalExecutor.shutdown) is noticed while waiting.
            while not (ready := self._conn.poll(0.1)):
                if self.interrupted.is_set() or (deadline is not None and time.monotonic() > deadline):
                    break
        except (BrokenPipeError, EOFError, OSError):
            ready, died = True, True
        else:
            died = False
        if not ready:
            self._kill()
            if self.interrupted.is_set():
                job.future.set_exception(WorkerDied(f"the worker running {job.fn.__name__} was stopped"))
            else:
                job.future.set_exception(JobTimeout(f"job {job.fn.__name__} exceeded its {job.timeout_s:g} s timeout"))
            return
        try:
            reply = None if died else self._conn.recv()
        except (EOFError, OSError):
            reply = None
        if reply is None:
            code = self._proc.exitcode if self._proc is not None else None
            self._kill()
            job.future.set_exception(WorkerDied(f"the worker running {job.fn.__name__} died (exit code {code})"))
        elif reply[0] == "ok":
            job.future.set_result(reply[1])
        else:
            job.future.set_exception(reply[1])

    def interrupt(self) -> None:
        """Stop the job in progress: its thread kills the worker and fails the job with WorkerDied."""
        self.interrupted.set()

    def stop(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self._proc.join(timeout=5)
        self._kill()


class LocalExecutor:
    """Jobs on ``workers`` long-lived worker processes of this machine, each job with its own timeout.

    It serves the device kinds ``cpu-<host isa>`` and ``vdla-cycle``.  Exclusive jobs wait until no
    other job runs and hold back new ones while they run.
    """

    def __init__(self, workers: int = 1, device_kinds: tuple[str, ...] | None = None) -> None:
        from .task import HostInfo

        if workers < 1:
            raise ValueError(f"workers must be >= 1, got {workers}")
        self.device_kinds = device_kinds or (HostInfo.detect().device_kind, "vdla-cycle")
        ctx = multiprocessing.get_context("spawn")
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._lock = _SharedExclusiveLock()
        self._slots = [_Slot(ctx) for _ in range(workers)]
        self._threads = [threading.Thread(target=self._serve, args=(s,), daemon=True) for s in self._slots]
        for t in self._threads:
            t.start()

    def _serve(self, slot: _Slot) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                slot.stop()
                return
            if not job.future.set_running_or_notify_cancel():
                continue
            self._lock.acquire(job.exclusive)
            try:
                slot.run(job)
            except Exception as exc:  # noqa: BLE001 - e.g. the worker could not start: fail this job, keep serving
                if not job.future.done():
                    job.future.set_exception(WorkerDied(f"could not run {job.fn.__name__} on a worker: {exc}"))
            finally:
                self._lock.release(job.exclusive)

    def submit(self, fn: Callable[..., T], *args: Any, device_kind: str, timeout_s: float | None = None,
               exclusive: bool = False) -> concurrent.futures.Future[T]:
        if device_kind not in self.device_kinds:
            raise ValueError(f"this machine serves devices {self.device_kinds}, not {device_kind!r}: "
                             f"run the job on a device pool that has one")
        job = _Job(fn, args, timeout_s, exclusive)
        self._queue.put(job)
        return job.future

    def shutdown(self, cancel_pending: bool = False) -> None:
        """Stop the workers after the jobs already queued (or, with ``cancel_pending``, without them)."""
        if cancel_pending:
            while True:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job.future.cancel()
            for slot in self._slots:
                slot.interrupt()
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join()

    def __enter__(self) -> LocalExecutor:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # On an error or Ctrl-C, do not run the rest of the queue first.
        self.shutdown(cancel_pending=exc_type is not None)
