"""Run a sweep in parallel: worker processes here, or the device pool's workers.

Locally each point is one task of a process pool (``jobs`` processes; one runs in this process).
With a pool address, this process compiles (the pool's workers never import the compiler) and
``jobs`` points are in flight at once, their synthesis and simulations running on the pool.
Results come back in the sweep's order; a tqdm bar counts the points done.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vdla_hw.progress import bar

from .evaluate import PointResult, evaluate_point
from .sweep import SweepPoint
from .workloads import Workloads

if TYPE_CHECKING:
    from vdla.runtime.pool.executor import JobExecutor


def run_sweep(points: Sequence[SweepPoint], workloads: Workloads, *, jobs: int = 1, fmax: bool = False,
              use_cache: bool = True, executor: JobExecutor | None = None) -> list[PointResult]:
    """Evaluate every point (see :func:`evaluate_point`), ``jobs`` at a time; with ``executor`` (a
    device pool's, which the caller closes) on the pool's workers."""
    results: list[PointResult | None] = [None] * len(points)
    with bar(total=len(points), desc=f"dse {workloads.name}", unit="config") as progress:
        def done(i: int, result: PointResult) -> None:
            results[i] = result
            progress.set_postfix_str(f"{result.label}: {'ok' if result.ok else result.failure}", refresh=False)
            progress.update(1)

        if executor is not None:
            with cf.ThreadPoolExecutor(max_workers=max(1, jobs)) as threads:
                futures = {threads.submit(evaluate_point, p, workloads, fmax, use_cache, executor): i
                           for i, p in enumerate(points)}
                for f in cf.as_completed(futures):
                    done(futures[f], f.result())
        elif jobs <= 1:
            for i, p in enumerate(points):
                done(i, evaluate_point(p, workloads, fmax, use_cache))
        else:
            with cf.ProcessPoolExecutor(max_workers=jobs) as procs:
                futures = {procs.submit(evaluate_point, p, workloads, fmax, use_cache): i for i, p in enumerate(points)}
                for f in cf.as_completed(futures):
                    done(futures[f], f.result())
    return [r for r in results if r is not None]
