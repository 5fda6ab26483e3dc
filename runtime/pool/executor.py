"""The client side of the pool: :class:`PoolExecutor` runs jobs on the workers of a Dask scheduler.

It implements the tuner's measurement seam (:class:`JobExecutor`).  A job is ``fn(*args)``
sent, pickled, to a worker offering ``device_kind`` (see :mod:`vdla.runtime.pool.kinds`), which runs
it in a job process (:mod:`vdla.runtime.pool.jobs`).  Faults are handled here, on the client, so the
scheduler needs nothing of this project:

- a kind no worker offers fails at ``submit``, naming the kind and the workers present; a job
  whose every capable worker left while it waited fails after ``orphan_grace_s``;
- a worker dying under a job (Dask reschedules it itself) or a crashed job process is retried,
  ``retries`` times, then fails with :class:`WorkerLostError` / :class:`JobCrashedError`;
  finished results are fetched at once and kept, so no result is lost;
- a job over ``timeout_s`` (counted while it runs) fails with :class:`JobTimeoutError`;
- when the scheduler restarts, the client reconnects and resubmits the jobs it had in flight
  (within ``reconnect_s``, else :class:`SchedulerLostError`).

A job's own exception is raised, unchanged, by its future.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

import cloudpickle
from distributed import Client
from distributed.scheduler import KilledWorker
from distributed.security import Security

from vdla.runtime.pool.errors import JobCrashedError, NoDeviceError, PoolError, SchedulerLostError, WorkerLostError
from vdla.runtime.pool.jobs import run_job
from vdla.runtime.pool.kinds import kinds_of, resources_for, satisfies
from vdla.runtime.pool.security import security_from
from vdla_hw.errors import UsageError

T = TypeVar("T")


class JobExecutor(Protocol):
    """Runs ``fn(*args)`` on a device of kind ``device_kind`` and returns a future of its result.

    ``timeout_s`` bounds the run; ``exclusive`` gives the job the whole machine (CPU timing),
    otherwise jobs pack onto the cores.
    """

    def submit(self, fn: Callable[..., T], *args: Any, device_kind: str, timeout_s: float | None = None,
               exclusive: bool = False) -> cf.Future[T]: ...


class PoolUnreachableError(PoolError):
    """No scheduler answers at the pool address."""

    reason = "unreachable"


@dataclass
class _Job:
    request: bytes
    kind: str
    need: dict[str, float]
    timeout_s: float | None
    exclusive: bool
    future: cf.Future
    failures: int = 0
    key: str = ""
    orphan_since: float | None = None
    dask: Any = field(default=None, repr=False)


def describe_workers(workers: dict[str, dict[str, Any]]) -> str:
    """``name (kinds...)`` for each worker, or ``no workers``."""
    if not workers:
        return "no workers"
    return "; ".join(f"{w.get('name', addr)} ({', '.join(kinds_of(w.get('resources') or {})) or 'no devices'})"
                     for addr, w in sorted(workers.items()))


class PoolExecutor:
    """Runs jobs on the pool whose scheduler listens at ``address`` (see the module docstring)."""

    def __init__(self, address: str, security: Security | None = None, retries: int = 2, *,
                 connect_timeout_s: float = 10.0, reconnect_s: float = 60.0, orphan_grace_s: float = 30.0) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if address.startswith("tls://") and security is None:
            raise UsageError(f"{address} is a TLS pool: it admits only holders of a certificate of its CA",
                             hint="pass --certs DIR --node NAME (made by vdla pool certs)")
        self.address = address
        self.retries = retries
        self.reconnect_s = reconnect_s
        self.orphan_grace_s = orphan_grace_s
        self._security = security
        self._connect_timeout_s = connect_timeout_s
        self._client = self._connect()
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._watch = threading.Thread(target=self._watch_orphans, name="vdla-pool-watch", daemon=True)
        self._watch.start()

    # ---- connection ----------------------------------------------------------------------------
    def _connect(self) -> Client:
        try:
            return Client(self.address, security=self._security, timeout=self._connect_timeout_s,
                          set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise PoolUnreachableError(
                f"no pool scheduler answers at {self.address} ({exc})",
                hint="start one with `vdla pool up` or `vdla pool scheduler`; a tls:// pool needs --certs/--node"
            ) from None

    @property
    def client(self) -> Client:
        """The Dask client (for status queries)."""
        return self._client

    def workers(self, refresh: bool = False) -> dict[str, dict[str, Any]]:
        """Worker address -> Dask's info on it (``name``, ``resources``, ``nthreads`` ...)."""
        if refresh:
            self._client.sync(self._client._update_scheduler_info, n_workers=-1)
        return dict(self._client.scheduler_info(n_workers=-1).get("workers", {}))

    def _check_kind(self, kind: str, need: dict[str, float]) -> None:
        for refresh in (False, True):
            if any(satisfies(w.get("resources") or {}, need) for w in self.workers(refresh).values()):
                return
        raise NoDeviceError(f"no worker of the pool at {self.address} offers device kind {kind!r}; workers present: "
                            f"{describe_workers(self.workers())}",
                            hint=f"start one with `vdla pool worker {self.address} --device ...` offering {kind}")

    # ---- jobs ----------------------------------------------------------------------------------
    def submit(self, fn: Callable[..., T], *args: Any, device_kind: str, timeout_s: float | None = None,
               exclusive: bool = False) -> cf.Future[T]:
        """Run ``fn(*args)`` on a worker offering ``device_kind``; see :class:`JobExecutor`."""
        if timeout_s is not None and not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        need = resources_for(device_kind)
        self._check_kind(device_kind, need)
        future: cf.Future[T] = cf.Future()
        future.set_running_or_notify_cancel()
        job = _Job(cloudpickle.dumps((fn, args, {})), device_kind, need, timeout_s, exclusive, future)
        self._launch(job)
        return future

    def _launch(self, job: _Job) -> None:
        with self._lock:
            self._jobs.pop(job.key, None)  # a relaunch runs under a fresh key
            job.key = f"vdla-{job.kind}-{uuid.uuid4().hex}"
            self._jobs[job.key] = job
        job.dask = self._client.submit(run_job, job.request, job.timeout_s, job.exclusive, key=job.key,
                                       resources=job.need, pure=False, retries=0)
        job.dask.add_done_callback(lambda f, job=job: self._on_done(job, f))

    def _settle(self, job: _Job, *, result: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            self._jobs.pop(job.key, None)
        if job.future.done():
            return
        if error is not None:
            job.future.set_exception(error)
        else:
            job.future.set_result(result)

    def _on_done(self, job: _Job, f: Any) -> None:
        if job.future.done() or job.dask is not f:
            return
        if f.status == "finished":
            try:
                reply = f.result()
            except (cf.CancelledError, OSError, TimeoutError):
                # The result went away with the scheduler before it reached us: run the job again.
                self._relaunch_later(job)
                return
            f.release()
            try:
                status, value = cloudpickle.loads(reply)
            except Exception as exc:  # noqa: BLE001 - e.g. the result's class is not importable here: the caller sees it
                self._settle(job, error=exc)
                return
            if status == "ok":
                self._settle(job, result=value)
            else:
                self._settle(job, error=value)
        elif f.status == "error":
            exc = f.exception()
            if isinstance(exc, (KilledWorker, JobCrashedError)):
                job.failures += 1
                if job.failures > self.retries:
                    cls = WorkerLostError if isinstance(exc, KilledWorker) else JobCrashedError
                    self._settle(job, error=cls(f"job on {job.kind} failed {job.failures} times, the retry budget "
                                                f"is {self.retries}: {exc}"))
                else:
                    f.release()
                    self._launch(job)
            else:
                self._settle(job, error=exc)
        else:  # cancelled or lost: the scheduler went away with the job
            self._relaunch_later(job)

    def _relaunch_later(self, job: _Job) -> None:
        threading.Thread(target=self._relaunch, args=(job,), daemon=True).start()

    def _relaunch(self, job: _Job) -> None:
        """Resubmit ``job`` once the client is connected again (a restarted scheduler)."""
        deadline = time.monotonic() + self.reconnect_s
        while not self._closed.is_set() and time.monotonic() < deadline:
            if self._client.status in ("closed", "closing", "failed"):
                try:
                    with self._lock:
                        if self._client.status in ("closed", "closing", "failed"):
                            self._client = self._connect()
                except PoolUnreachableError:
                    time.sleep(0.5)
                    continue
            if self._client.status == "running":
                try:
                    self._launch(job)
                    return
                except (OSError, TimeoutError):
                    pass
            time.sleep(0.2)
        self._settle(job, error=SchedulerLostError(
            f"the pool scheduler at {self.address} went away and did not come back within {self.reconnect_s:g} s"))

    def _watch_orphans(self) -> None:
        """Fail jobs no connected worker can run any more (their workers left while they waited)."""
        while not self._closed.wait(1.0):
            with self._lock:
                jobs = list(self._jobs.values())
            if not jobs or self._client.status != "running":
                continue
            try:
                workers = self.workers()
            except (OSError, TimeoutError):
                continue
            now = time.monotonic()
            for job in jobs:
                if any(satisfies(w.get("resources") or {}, job.need) for w in workers.values()):
                    job.orphan_since = None
                elif job.orphan_since is None:
                    job.orphan_since = now
                elif now - job.orphan_since > self.orphan_grace_s:
                    if job.dask is not None:
                        job.dask.cancel()
                    self._settle(job, error=NoDeviceError(
                        f"job on {job.kind!r} waited {self.orphan_grace_s:g} s with no worker offering that kind "
                        f"(they left); workers present: {describe_workers(workers)}"))

    def close(self) -> None:
        """Cancel the jobs still running and disconnect."""
        self._closed.set()
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            self._settle(job, error=cf.CancelledError(
                f"the client closed its pool connection with this {job.kind} job in flight, so the pool dropped "
                "it; resubmit it from a connected client"))
        self._client.close()

    def __enter__(self) -> PoolExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(address: str, certs: str | None = None, node: str | None = None, retries: int = 2) -> PoolExecutor:
    """A :class:`PoolExecutor` for ``address``; ``certs``/``node`` name its TLS files (see ``vdla pool certs``).

    This is what a ``--pool ADDR [--certs DIR --node NAME]`` command-line option turns into.
    """
    return PoolExecutor(address, security=security_from(certs, node), retries=retries)
