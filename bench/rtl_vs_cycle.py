"""Calibration: RTL cycles beside cycle-model cycles, per program, with the relative error.

Runs every system-test program (:mod:`runtime.system_programs`) on ``tiny`` and
``default`` and ResNet-18-sized GEMMs on ``default``, on the ``rtl`` backend (the
Verilated design with the harness's DRAM model at the config's
``timing.dram_latency``) and on the ``cycle`` backend, checks that both leave the
same DRAM as fsim, and prints ``(cycle - rtl) / rtl`` per row.  Target: within 5% on
every row.  A second table (``rtl_timing_probes.py``) gives the marginal cost of one
instruction, loop iteration, tile and row of each kind on both, which locates any gap.
Run: ``python bench/rtl_vs_cycle.py [--configs tiny default] [--randoms N] [--no-probes]``;
writes ``bench/results/rtl_vs_cycle.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from rtl_timing_probes import PROBES, measure

from runtime import run
from runtime.program import Program
from runtime.system_programs import build_case, case_names
from runtime.workloads import tiled_gemm_program
from vdla_hw.config import load_config

TARGET = 0.05
RESNET_GEMMS = {
    # ResNet-18 3x3 convolutions at batch 1 as GEMMs: (output pixels, 9 x input channels, output channels).
    "resnet18 conv3 784x1152x128": (784, 1152, 128),
    "resnet18 conv5 49x4608x512": (49, 4608, 512),
}


def workloads(config: str, randoms: int) -> list[tuple[str, Program]]:
    cfg = load_config(config)
    rows = [(name, build_case(cfg, name)) for name in case_names(randoms)]
    if config == "default":
        for name, (m, k, n) in RESNET_GEMMS.items():
            m_padded = -(-m // cfg.batch) * cfg.batch
            rows.append((f"{name} vt2", tiled_gemm_program(cfg, m_padded, k, n, virtual_threads=2)[0]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=["tiny", "default"])
    parser.add_argument("--randoms", type=int, default=6, help="random programs per config (default 6)")
    parser.add_argument("--no-probes", action="store_true", help="skip the per-instruction timing probes")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "rtl_vs_cycle.json"))
    args = parser.parse_args()

    jobs = [(config, name, program) for config in args.configs for name, program in workloads(config, args.randoms)]
    rows = []
    for config, name, program in tqdm(jobs, desc="rtl vs cycle"):
        expected = run(program, "fsim").dram
        t0 = time.perf_counter()
        rtl = run(program, "rtl")
        t1 = time.perf_counter()
        cyc = run(program, "cycle")
        t2 = time.perf_counter()
        for backend, result in (("rtl", rtl), ("cycle", cyc)):
            if not np.array_equal(result.dram, expected):
                raise SystemExit(f"{config}/{name}: the {backend} backend's DRAM differs from fsim")
        err = (cyc.cycles - rtl.cycles) / rtl.cycles
        rows.append({"config": config, "program": name, "instructions": program.insn_count, "rtl_cycles": rtl.cycles,
                     "cycle_model_cycles": cyc.cycles, "relative_error": err, "rtl_seconds": t1 - t0,
                     "cycle_seconds": t2 - t1})

    header = f"{'config':<8} {'program':<34} {'insns':>6} {'RTL cycles':>11} {'cycle model':>11} {'error':>8}"
    print("\nRTL (Verilated, DRAM latency = timing.dram_latency) vs the cycle model; error = (model - RTL) / RTL")
    print(header)
    print("-" * len(header))
    for r in rows:
        flag = "" if abs(r["relative_error"]) <= TARGET else "  > 5%"
        print(f"{r['config']:<8} {r['program']:<34} {r['instructions']:>6,} {r['rtl_cycles']:>11,} "
              f"{r['cycle_model_cycles']:>11,} {r['relative_error']:>+7.1%}{flag}")
    worst = max(rows, key=lambda r: abs(r["relative_error"]))
    within = sum(abs(r["relative_error"]) <= TARGET for r in rows)
    print(f"\n{within}/{len(rows)} rows within {TARGET:.0%}; worst: {worst['config']}/{worst['program']} "
          f"{worst['relative_error']:+.1%}")
    probes = [] if args.no_probes else run_probes(args.configs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"target": TARGET, "rows": rows, "probes": probes}, indent=2))
    print(f"wrote {out}")


def run_probes(configs: list[str]) -> list[dict]:
    """Measure and print the marginal-cost table (see rtl_timing_probes.py)."""
    jobs = [(config, probe) for config in configs for probe in PROBES]
    rows = []
    for config, probe in tqdm(jobs, desc="timing probes"):
        rtl, model = measure(load_config(config), probe)
        rows.append({"config": config, "probe": probe.name, "unit": probe.unit, "rtl": rtl, "cycle_model": model})
    header = f"{'config':<8} {'cycles per ...':<36} {'RTL':>8} {'model':>8} {'model-RTL':>9}"
    print("\nMarginal cost of one unit of work (steady state), RTL vs cycle model")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['config']:<8} {r['probe']:<36} {r['rtl']:>8.2f} {r['cycle_model']:>8.2f} {r['cycle_model'] - r['rtl']:>+9.2f}")
    return rows


if __name__ == "__main__":
    main()
