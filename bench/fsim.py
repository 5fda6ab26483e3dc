"""Benchmark: a 256x256x256 int8 matmul as 16x16 tiles on the functional simulator.

Reports fsim instructions/s and MACs/s for several chunkings of the same GEMM
(from a few large GEMM instructions to one tile per instruction) beside NumPy's
int32 matmul of the same size in the same run, and checks every run bit-exactly.
Run: ``python bench/fsim.py [--repeat N] [--quick]``; writes ``bench/results/fsim.json``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one thread for every library: single-thread figures first

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from vdla.runtime import run
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla_hw.config import load_config

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ (already there when this runs as a script)
from host import host_line, host_record  # noqa: E402

SIZE = 256
TILINGS: dict[str, GemmTiling | None] = {
    "largest chunks": None,
    "16x1x16 tiles/insn": GemmTiling(16, 1, 16),
    "1 tile/insn": GemmTiling(1, 1, 1),
}


def _best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the best time is kept (default 3)")
    parser.add_argument("--quick", action="store_true", help="skip the one-tile-per-instruction case")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "fsim.json"))
    args = parser.parse_args()

    cfg = load_config("default")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (SIZE, SIZE)).astype(np.int32)
    b = rng.integers(-128, 128, (SIZE, SIZE)).astype(np.int32)
    numpy_s = _best(lambda: a @ b, max(args.repeat, 5))
    macs = SIZE**3
    rows = []
    cases = {k: v for k, v in TILINGS.items() if not (args.quick and v == GemmTiling(1, 1, 1))}
    for label, tiling in tqdm(cases.items(), desc="fsim cases"):
        program, expected = tiled_gemm_program(cfg, SIZE, SIZE, SIZE, tiling=tiling)
        result = run(program)
        if not np.array_equal(result.read("out"), expected):
            raise SystemExit(f"fsim result of case {label!r} differs from NumPy")
        fsim_s = _best(lambda: run(program), args.repeat)
        n = program.insn_count
        rows.append({"case": label, "instructions": n, "macs": result.counters["macs"], "fsim_s": fsim_s,
                     "insn_per_s": n / fsim_s, "macs_per_s": macs / fsim_s, "numpy_s": numpy_s,
                     "fsim_over_numpy": fsim_s / numpy_s})
    header = f"{'case':<22} {'insns':>8} {'fsim ms':>9} {'insn/s':>11} {'MAC/s':>11} {'numpy ms':>9} {'fsim/numpy':>10}"
    print(f"\n{host_line()}")
    print(f"{SIZE}x{SIZE}x{SIZE} int8 GEMM + bias/ReLU/requantize on fsim (config default, 1 thread), "
          f"peer: NumPy int32 matmul of the same size")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['case']:<22} {r['instructions']:>8,} {r['fsim_s'] * 1e3:>9.1f} {r['insn_per_s']:>11.3g} "
              f"{r['macs_per_s']:>11.3g} {r['numpy_s'] * 1e3:>9.2f} {r['fsim_over_numpy']:>9.1f}x")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "fsim", "size": SIZE, "config": cfg.name, "numpy": np.__version__,
                               "host": host_record(),
                               "threads": 1, "rows": rows}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
