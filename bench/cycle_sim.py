"""Benchmark: simulation speed of the cycle model beside fsim on the same program.

The workload is the im2col GEMM of ResNet-18's 56x56, 64->64, 3x3 layer
(M = 3136 output pixels, K = 576 = 64 channels x 3 x 3, N = 64), built with
:func:`vdla.runtime.workloads.tiled_gemm_program` for the ``default`` preset with two
virtual threads and 8x4x4-tile chunks: 13,331 instructions.  Both simulators run
the same program in the same process; the cycle model's result is checked
bit-exactly against fsim and NumPy.  Reported: simulated instructions/s for
both, simulated cycles/s for the cycle model, and their ratio.

Run: ``python bench/cycle_sim.py [--repeat N] [--tiling TM TN TK]``; writes
``bench/results/cycle_sim.json``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # single-thread figures

import argparse
import json
import platform
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla.simulator.cycle import run_cycle
from vdla.simulator.fsim import run_fsim
from vdla_hw.config import load_config

M, K, N = 56 * 56, 64 * 3 * 3, 64
TARGET_INSNS_PER_S = 20_000


def _best(fn: Callable[[], Any], repeat: int, bar: tqdm) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
        bar.update()
    return best, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per simulator; the best time is kept (default 3)")
    parser.add_argument("--tiling", type=int, nargs=3, default=(8, 4, 4), metavar=("TM", "TN", "TK"),
                        help="chunk sizes in tiles (default 8 4 4)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cycle_sim.json"))
    args = parser.parse_args()

    cfg = load_config("default")
    start = time.perf_counter()
    program, expected = tiled_gemm_program(cfg, M, K, N, virtual_threads=2, tiling=GemmTiling(*args.tiling))
    build_s = time.perf_counter() - start
    insns = program.instructions
    with tqdm(total=2 * args.repeat, desc="simulating", unit="run") as bar:
        fsim_s, fsim = _best(lambda: run_fsim(cfg, insns, program.dram), args.repeat, bar)
        cycle_s, cyc = _best(lambda: run_cycle(cfg, insns, program.dram, insn_addr=program.insn_addr), args.repeat, bar)
    if not (np.array_equal(cyc.dram, fsim.dram) and np.array_equal(program.read("out", cyc.dram), expected)):
        raise SystemExit("cycle model result differs from fsim / NumPy")
    stats = cyc.stats
    n = len(insns)
    rows = [
        {"simulator": "fsim", "seconds": fsim_s, "insns_per_s": n / fsim_s, "sim_cycles_per_s": None},
        {"simulator": "cycle", "seconds": cycle_s, "insns_per_s": n / cycle_s,
         "sim_cycles_per_s": stats.cycles / cycle_s},
    ]
    print(f"\nworkload: ResNet-18 56x56 64->64 3x3 as im2col GEMM {M}x{K}x{N}, config default, 2 virtual threads, "
          f"tiling {tuple(args.tiling)}: {n:,} instructions (built in {build_s:.2f} s)")
    print(f"simulated: {stats.cycles:,} cycles ({stats.seconds * 1e3:.2f} ms at {stats.clock_mhz:g} MHz), "
          f"GEMM utilization {stats.gemm_utilization:.1%}, {stats.roofline_fraction:.1%} of the roofline bound; "
          f"results bit-exact vs fsim and NumPy")
    print(f"\n| simulator | best of {args.repeat} (s) | instructions/s | simulated cycles/s |")
    print("|---|---:|---:|---:|")
    for r in rows:
        cps = f"{r['sim_cycles_per_s']:,.0f}" if r["sim_cycles_per_s"] else "-"
        print(f"| {r['simulator']} | {r['seconds']:.3f} | {r['insns_per_s']:,.0f} | {cps} |")
    ratio = fsim_s / cycle_s
    verdict = "meets" if rows[1]["insns_per_s"] >= TARGET_INSNS_PER_S else "misses"
    print(f"\ncycle model speed = {ratio:.2f}x fsim's; {verdict} the {TARGET_INSNS_PER_S:,} instructions/s target")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "workload": {"m": M, "k": K, "n": N, "config": "default", "virtual_threads": 2, "tiling": list(args.tiling),
                     "instructions": n},
        "simulated_cycles": stats.cycles, "gemm_utilization": stats.gemm_utilization,
        "roofline_fraction": stats.roofline_fraction, "repeat": args.repeat, "rows": rows,
        "cycle_over_fsim_speed": ratio, "target_insns_per_s": TARGET_INSNS_PER_S,
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine()},
    }, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
