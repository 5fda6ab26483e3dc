"""Benchmark: simulation speed of the cycle model beside fsim on the same program.

The workload is the im2col GEMM of ResNet-18's 56x56, 64->64, 3x3 layer
(M = 3136 output pixels, K = 576 = 64 channels x 3 x 3, N = 64), built with
:func:`vdla.runtime.workloads.tiled_gemm_program` for the ``default`` preset with two
virtual threads and 8x4x4-tile chunks: 13,331 instructions.  Both simulators run
the same program in the same process; the cycle model's result is checked
bit-exactly against fsim and NumPy.  Reported: simulated instructions/s for
both, simulated cycles/s for the cycle model, and their ratio.

``--peer REV ...`` runs the same workload on the simulators of other commits in the same run
(each ``git archive``d into a temporary folder and run in a subprocess that builds its own
program with that commit's code, so an older ISA's program is what that code simulated), as
the before/after peer.  Times are the best of ``--repeat`` runs, as wall time and as the
process's CPU time (steadier on a machine shared with other jobs).

Run: ``python bench/cycle_sim.py [--repeat N] [--tiling TM TN TK] [--peer REV ...]``; writes
``bench/results/cycle_sim.json``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # single-thread figures

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla.simulator.cycle import run_cycle
from vdla.simulator.fsim import run_fsim
from vdla_hw.config import load_config

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (already there when this runs as a script)
from host import host_line, host_record  # noqa: E402

M, K, N = 56 * 56, 64 * 3 * 3, 64
TARGET_INSNS_PER_S = 20_000


def _best(fn: Callable[[], Any], repeat: int, bar: tqdm) -> tuple[float, float, Any]:
    """Best wall and best CPU seconds of ``repeat`` calls, and the last result."""
    best, best_cpu, out = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
        bar.update()
    return best, best_cpu, out


# Runs inside a peer commit's tree: that commit's own workload builder and simulators (before
# the vdla.* namespace the packages imported as top-level names).
PEER_SCRIPT = """
import json, sys, time
try:
    from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
    from vdla.simulator.cycle import run_cycle
    from vdla.simulator.fsim import run_fsim
except ImportError:
    from runtime.workloads import GemmTiling, tiled_gemm_program
    from simulator.cycle import run_cycle
    from simulator.fsim import run_fsim
from vdla_hw.config import load_config
m, k, n, tm, tn, tk, repeat = (int(v) for v in sys.argv[1:8])
cfg = load_config("default")
program, expected = tiled_gemm_program(cfg, m, k, n, virtual_threads=2, tiling=GemmTiling(tm, tn, tk))
insns = program.instructions
out = {"instructions": len(insns)}
for name, fn in (("fsim", lambda: run_fsim(cfg, insns, program.dram)),
                 ("cycle", lambda: run_cycle(cfg, insns, program.dram, insn_addr=program.insn_addr))):
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    out[name] = {"seconds": wall, "cpu_seconds": cpu}
    if name == "cycle":
        out["cycles"] = int(result.stats.cycles)
print("PEER" + json.dumps(out))
"""


def run_peer(rev: str, tiling: tuple[int, int, int], repeat: int) -> dict[str, Any]:
    """The workload on commit ``rev``'s simulators (a subprocess in an archived copy of its tree)."""
    from peer_tree import peer_tree  # bench/ is on the path: this file runs as a script

    with peer_tree(rev, prefix="cycle_sim_peer_") as (commit, tree):
        env = dict(os.environ, PYTHONPATH=str(tree))
        args = [str(v) for v in (M, K, N, *tiling, repeat)]
        proc = subprocess.run([sys.executable, "-c", PEER_SCRIPT, *args], cwd=tree, env=env,
                              capture_output=True, text=True)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PEER")]
    if proc.returncode or not lines:
        raise SystemExit(f"peer {rev} ({commit}) failed:\n{proc.stderr[-2000:]}")
    return {"rev": rev, "commit": commit, **json.loads(lines[-1][4:])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per simulator; the best time is kept (default 3)")
    parser.add_argument("--tiling", type=int, nargs=3, default=(8, 4, 4), metavar=("TM", "TN", "TK"),
                        help="chunk sizes in tiles (default 8 4 4)")
    parser.add_argument("--peer", nargs="*", default=[], metavar="REV",
                        help="also run the workload on the simulators of these commits, in the same run")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "cycle_sim.json"))
    args = parser.parse_args()

    cfg = load_config("default")
    load_before = os.getloadavg()
    start = time.perf_counter()
    program, expected = tiled_gemm_program(cfg, M, K, N, virtual_threads=2, tiling=GemmTiling(*args.tiling))
    build_s = time.perf_counter() - start
    insns = program.instructions
    with tqdm(total=2 * args.repeat, desc="simulating", unit="run") as bar:
        fsim_s, fsim_cpu, fsim = _best(lambda: run_fsim(cfg, insns, program.dram), args.repeat, bar)
        cycle_s, cycle_cpu, cyc = _best(lambda: run_cycle(cfg, insns, program.dram, insn_addr=program.insn_addr),
                                        args.repeat, bar)
    if not (np.array_equal(cyc.dram, fsim.dram) and np.array_equal(program.read("out", cyc.dram), expected)):
        raise SystemExit("cycle model result differs from fsim / NumPy")
    peers = [run_peer(rev, tuple(args.tiling), args.repeat) for rev in tqdm(args.peer, desc="peers", unit="commit")]
    load_after = os.getloadavg()
    stats = cyc.stats
    n = len(insns)

    def row(who: str, simulator: str, count: int, wall: float, cpu: float, cycles: int | None) -> dict[str, Any]:
        return {"code": who, "simulator": simulator, "instructions": count, "seconds": wall, "cpu_seconds": cpu,
                "insns_per_s": count / wall, "insns_per_cpu_s": count / cpu,
                "sim_cycles_per_s": cycles / wall if cycles else None, "cycles": cycles}

    rows = [row("this tree", "fsim", n, fsim_s, fsim_cpu, None),
            row("this tree", "cycle", n, cycle_s, cycle_cpu, stats.cycles)]
    for p in peers:
        rows.append(row(p["rev"], "fsim", p["instructions"], p["fsim"]["seconds"], p["fsim"]["cpu_seconds"], None))
        rows.append(row(p["rev"], "cycle", p["instructions"], p["cycle"]["seconds"], p["cycle"]["cpu_seconds"],
                        p["cycles"]))
    print(f"\n{host_line()}; load average {load_before[0]:.1f} before the runs, {load_after[0]:.1f} after "
          f"(other jobs share the CPU: the per-CPU-second column is the steadier one)")
    print(f"workload: ResNet-18 56x56 64->64 3x3 as im2col GEMM {M}x{K}x{N}, config default, 2 virtual threads, "
          f"tiling {tuple(args.tiling)}: {n:,} instructions (built in {build_s:.2f} s)")
    print(f"simulated: {stats.cycles:,} cycles ({stats.seconds * 1e3:.2f} ms at {stats.clock_mhz:g} MHz), "
          f"GEMM utilization {stats.gemm_utilization:.1%}, {stats.roofline_fraction:.1%} of the roofline bound; "
          f"results bit-exact vs fsim and NumPy")
    print(f"\n| code | simulator | instructions | best of {args.repeat} (s) | instructions/s | instructions/CPU-s | "
          f"simulated cycles/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        cps = f"{r['sim_cycles_per_s']:,.0f}" if r["sim_cycles_per_s"] else "-"
        print(f"| {r['code']} | {r['simulator']} | {r['instructions']:,} | {r['seconds']:.3f} | {r['insns_per_s']:,.0f} | "
              f"{r['insns_per_cpu_s']:,.0f} | {cps} |")
    ratio = fsim_s / cycle_s
    verdict = "meets" if rows[1]["insns_per_s"] >= TARGET_INSNS_PER_S else "misses"
    verdict_cpu = "meets" if rows[1]["insns_per_cpu_s"] >= TARGET_INSNS_PER_S else "misses"
    print(f"\ncycle model speed = {ratio:.2f}x fsim's; {verdict} the {TARGET_INSNS_PER_S:,} instructions/s target "
          f"in wall time, {verdict_cpu} it per CPU second")
    for p in peers:
        for sim, mine in (("fsim", rows[0]), ("cycle", rows[1])):
            theirs = next(r for r in rows if r["code"] == p["rev"] and r["simulator"] == sim)
            print(f"{sim}: {mine['insns_per_s'] / theirs['insns_per_s']:.2f}x the instructions/s of {p['rev']} "
                  f"({mine['insns_per_cpu_s'] / theirs['insns_per_cpu_s']:.2f}x per CPU second)")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "workload": {"m": M, "k": K, "n": N, "config": "default", "virtual_threads": 2, "tiling": list(args.tiling),
                     "instructions": n},
        "simulated_cycles": stats.cycles, "gemm_utilization": stats.gemm_utilization,
        "roofline_fraction": stats.roofline_fraction, "repeat": args.repeat, "rows": rows,
        "peers": [{k: v for k, v in p.items() if k in ("rev", "commit", "instructions", "cycles")} for p in peers],
        "cycle_over_fsim_speed": ratio, "target_insns_per_s": TARGET_INSNS_PER_S,
        "host": host_record(), "load_average": {"before": load_before, "after": load_after},
    }, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
