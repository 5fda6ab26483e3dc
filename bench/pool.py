"""Benchmark: the device pool's throughput and per-job overhead on one machine.

The task is a tuning sweep on the cycle model: the schedule knobs of a tiled int8 GEMM
(``--gemm``, default 256x256x256) (chunk sizes in tiles and 1 or 2 virtual threads) give one program per candidate,
built here, and each measurement runs it on ``vdla-cycle`` and returns its cycle count.

- ``in-process`` (the peer): the measurements one after the other in this process;
- ``pool N``: a pool on 127.0.0.1 (``vdla pool up``'s local cluster) of N single-threaded
  workers; every candidate is submitted at once through :class:`PoolExecutor`.  Each pool
  run's cycle counts must equal the in-process ones exactly.
- per-job overhead: a job doing nothing, sent to a 1-worker pool and awaited one at a time,
  minus calling it here (round trip: client -> scheduler -> worker -> job process and back).

Run: ``python bench/pool.py [--workers 1 2 4] [--gemm M K N] [--overhead-jobs N]``; writes
``bench/results/pool.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import cloudpickle
from tqdm import tqdm

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]  # the tree, bench/

from vdla.runtime.backends import run as run_local  # noqa: E402
from vdla.runtime.pool import PoolExecutor  # noqa: E402
from vdla.runtime.pool.jobs import run_job  # noqa: E402
from vdla.runtime.pool.kinds import parse_device  # noqa: E402
from vdla.runtime.pool.node import local_cluster  # noqa: E402
from vdla.runtime.pool.tasks import submit_program  # noqa: E402
from vdla.runtime.program import Program  # noqa: E402
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402
from host import host_line, host_record  # noqa: E402

def candidates(limit: int, m: int, k: int, n: int) -> list[tuple[str, Program]]:
    """Schedule candidates of an ``m x k x n`` GEMM that fit the config's buffers, up to ``limit``."""
    cfg = load_config("default")
    out = []
    for tm, tn, tk, vt in itertools.product((4, 8, 16), (1, 2, 4), (2, 4, 8), (1, 2)):
        try:
            program, _ = tiled_gemm_program(cfg, m, k, n, virtual_threads=vt, tiling=GemmTiling(tm, tn, tk))
        except ValueError:
            continue
        out.append((f"tm{tm} tn{tn} tk{tk} vt{vt}", program))
        if len(out) == limit:
            break
    return out


def measure_cycles(program: Program) -> int:
    """One measurement: the program's cycle count on the cycle model."""
    return int(run_local(program, "cycle").cycles or 0)


def nothing() -> None:
    """The empty job of the overhead measurement."""


def sweep_pool(address: str, programs: list[Program]) -> tuple[float, list[int]]:
    with PoolExecutor(address) as ex:
        # Every worker starts its job process and imports the cycle model outside the timed region.
        ex.client.run(run_job, cloudpickle.dumps((measure_cycles, (programs[0],), {})), None, False)
        t0 = time.perf_counter()
        futures = [submit_program(ex, p, "cycle") for p in programs]
        results = [int(f.result().cycles or 0) for f in futures]
        return time.perf_counter() - t0, results


def overhead(address: str, jobs: int) -> dict[str, float]:
    with PoolExecutor(address) as ex:
        ex.submit(nothing, device_kind="vdla-cycle").result()
        trips = []
        for _ in range(jobs):
            t0 = time.perf_counter()
            ex.submit(nothing, device_kind="vdla-cycle").result()
            trips.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for f in [ex.submit(nothing, device_kind="vdla-cycle") for _ in range(jobs)]:
            f.result()
        pipelined = (time.perf_counter() - t0) / jobs
    local = []
    for _ in range(jobs):
        t0 = time.perf_counter()
        nothing()
        local.append(time.perf_counter() - t0)
    return {"round_trip_median_ms": 1e3 * (statistics.median(trips) - statistics.median(local)),
            "round_trip_min_ms": 1e3 * min(trips), "pipelined_per_job_ms": 1e3 * pipelined}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="pool sizes (default 1 2 4)")
    parser.add_argument("--candidates", type=int, default=24, help="measurements per sweep (default 24)")
    parser.add_argument("--gemm", type=int, nargs=3, default=[256, 256, 256], metavar=("M", "K", "N"),
                        help="the tuned GEMM (default 256 256 256, a real layer's size: ~0.3 s per "
                             "measurement; 64 256 64 gives ~25 ms ones, where the per-job overhead shows)")
    parser.add_argument("--overhead-jobs", type=int, default=50, help="empty jobs for the overhead (default 50)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "pool.json"))
    args = parser.parse_args()

    print(f"{host_line()}; load average {os.getloadavg()[0]:.1f}")
    named = candidates(args.candidates, *args.gemm)
    programs = [p for _, p in named]
    bar = tqdm(total=len(programs) * (1 + len(args.workers)), desc="measurements", disable=not sys.stderr.isatty())

    t0 = time.perf_counter()
    reference = []
    for p in programs:
        reference.append(measure_cycles(p))
        bar.update()
    rows = [{"setup": "in-process", "workers": 0, "seconds": time.perf_counter() - t0}]
    device = [parse_device("vdla-cycle", 1)]
    over: dict[str, float] = {}
    for n in args.workers:
        with local_cluster(n, device, port=0) as cluster:
            seconds, cycles = sweep_pool(cluster.scheduler_address, programs)
            if cycles != reference:
                raise SystemExit(f"pool {n}: cycle counts differ from the in-process run: {cycles} vs {reference}")
            if n == 1:
                over = overhead(cluster.scheduler_address, args.overhead_jobs)
        bar.update(len(programs))
        rows.append({"setup": f"pool {n}", "workers": n, "seconds": seconds})
    bar.close()

    for r in rows:
        r["measurements_per_s"] = len(programs) / r["seconds"]
    base = next((r for r in rows if r["workers"] == 1), None)
    m, k, n = args.gemm
    print(f"\n{len(programs)} cycle-model measurements of a {m}x{k}x{n} GEMM's schedule candidates "
          f"(best tiling {named[reference.index(min(reference))][0]}: {min(reference):,} cycles)")
    print(f"{'setup':<12} {'seconds':>9} {'meas/s':>8} {'vs 1 worker':>12} {'vs in-process':>14}")
    for r in rows:
        vs1 = f"{r['measurements_per_s'] / base['measurements_per_s']:.2f}x" if base else "-"
        vsp = f"{r['measurements_per_s'] / rows[0]['measurements_per_s']:.2f}x"
        print(f"{r['setup']:<12} {r['seconds']:>9.2f} {r['measurements_per_s']:>8.2f} {vs1:>12} {vsp:>14}")
    if over:
        print(f"per-job overhead vs in-process: {over['round_trip_median_ms']:.1f} ms median round trip "
              f"(min {over['round_trip_min_ms']:.1f} ms); {over['pipelined_per_job_ms']:.1f} ms per job when "
              f"{args.overhead_jobs} are in flight")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "host": host_record(), "load_average_1m": os.getloadavg()[0],
        "task": {"gemm": args.gemm, "candidates": [n for n, _ in named], "cycles": reference},
        "rows": rows, "overhead": over,
    }, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
