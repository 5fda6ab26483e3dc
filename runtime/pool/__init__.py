"""The device pool: VDLA simulators, RTL, boards and CPUs shared over dask.distributed.

- :mod:`~runtime.pool.kinds`: device kinds as Dask resources;
- :mod:`~runtime.pool.executor`: :class:`PoolExecutor`, the client (``connect`` builds one from
  a ``--pool ADDR --certs DIR --node NAME`` triple);
- :mod:`~runtime.pool.jobs`: how a worker runs a job (job processes, timeouts, the host lock);
- :mod:`~runtime.pool.node`: starting schedulers, workers and a local cluster;
- :mod:`~runtime.pool.security`: the pool's CA and per-node certificates (mutual TLS);
- :mod:`~runtime.pool.status`, :mod:`~runtime.pool.tasks`: status reports; VDLA programs as jobs.

Importing this package needs ``pip install 'vdla[pool]'`` (dask.distributed, cryptography).
"""

from runtime.pool.errors import (JobCrashedError, JobTimeoutError, NoDeviceError, PoolError, SchedulerLostError,
                                 WorkerLostError)
from runtime.pool.executor import JobExecutor, PoolExecutor, PoolUnreachableError, connect

__all__ = ["JobCrashedError", "JobExecutor", "JobTimeoutError", "NoDeviceError", "PoolError", "PoolExecutor",
           "PoolUnreachableError", "SchedulerLostError", "WorkerLostError", "connect"]
