"""The pool's classified failures: a job's own exception is re-raised as is; these are the pool's."""

from __future__ import annotations

from typing import Self

from vdla_hw.errors import DeviceFaultError, UsageError


class PoolError(DeviceFaultError):
    """A job could not be run to completion by the pool. ``reason`` classifies it (for tuning logs)."""

    reason = "pool-error"


class NoDeviceError(UsageError):
    """No worker of the pool offers the device kind a job needs; the message names the workers present."""

    reason = "no-device"


class JobTimeoutError(PoolError, TimeoutError):
    """The job ran longer than its timeout and was cut (its process killed).

    A ``TimeoutError`` too, as the executor protocol says, so the tuner logs it as a timeout.
    """

    def __new__(cls, *args: object, **kwargs: object) -> Self:
        # Unpickling through Dask (tblib) calls ``cls.__new__``, which Python finds on RuntimeError,
        # and RuntimeError refuses to make an instance of TimeoutError's (OSError's) layout.
        return TimeoutError.__new__(cls, *args)

    reason = "timeout"


class WorkerLostError(PoolError):
    """Workers died while running the job, more often than the retry budget allows."""

    reason = "worker-lost"


class JobCrashedError(PoolError):
    """The process running the job died (a signal, an abort in native code) more often than the retries allow."""

    reason = "crashed"


class SchedulerLostError(PoolError):
    """The scheduler went away and did not come back within the reconnect window."""

    reason = "scheduler-lost"
