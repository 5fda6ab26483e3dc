"""Real pool processes on 127.0.0.1 for the pool tests: schedulers and workers started with ``vdla pool``.

A module of its own (not the conftest) so tests can import it by a name unique in the suite; the processes
themselves are :mod:`vdla.runtime.pool.processes`' (``bench/pool_soak.py`` starts its pools there too)."""

from __future__ import annotations

from pathlib import Path

from vdla.runtime.pool.processes import START_TIMEOUT_S, PoolProcesses, free_port

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "START_TIMEOUT_S", "Pool", "free_port"]


class Pool(PoolProcesses):
    """Pool nodes for one test, run from this checkout (``PYTHONPATH``), logging under ``tmp``."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp, env={"PYTHONPATH": str(ROOT)}, start_timeout_s=60.0)
