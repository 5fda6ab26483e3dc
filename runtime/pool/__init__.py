"""The device pool: VDLA simulators, RTL, boards and CPUs shared over dask.distributed.

- :mod:`~vdla.runtime.pool.kinds`: device kinds as Dask resources;
- :mod:`~vdla.runtime.pool.executor`: :class:`PoolExecutor`, the client (``connect`` builds one from
  a ``--pool ADDR --certs DIR --node NAME`` triple);
- :mod:`~vdla.runtime.pool.jobs`: how a worker runs a job (job processes, timeouts, the host lock);
- :mod:`~vdla.runtime.pool.node`: starting schedulers, workers and a local cluster;
- :mod:`~vdla.runtime.pool.security`: the pool's CA and per-node certificates (mutual TLS);
- :mod:`~vdla.runtime.pool.status`, :mod:`~vdla.runtime.pool.tasks`: status reports; VDLA programs as jobs.

Importing this package needs ``pip install 'vdla[pool]'`` (dask.distributed, cryptography).
"""

from typing import Any

from vdla.runtime.pool.errors import (JobCrashedError, JobTimeoutError, NoDeviceError, PoolError, SchedulerLostError,
                                 WorkerLostError)

_EXECUTOR_NAMES = ("JobExecutor", "PoolExecutor", "PoolUnreachableError", "connect")


def __getattr__(name: str) -> Any:
    # The executor pulls in dask.distributed; a job process (vdla.runtime.pool.child) must start without it.
    if name in _EXECUTOR_NAMES:
        from vdla.runtime.pool import executor

        return getattr(executor, name)
    raise AttributeError(f"module 'vdla.runtime.pool' has no attribute {name!r}")


__all__ = ["JobCrashedError", "JobExecutor", "JobTimeoutError", "NoDeviceError", "PoolError", "PoolExecutor",
           "PoolUnreachableError", "SchedulerLostError", "WorkerLostError", "connect"]
