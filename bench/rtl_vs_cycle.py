"""Calibration: RTL cycles beside cycle-model cycles, per program, with the relative error.

Runs every system-test program (:mod:`vdla.runtime.system_programs`) on every preset
(``tiny``, ``default``, ``wide``), ResNet-18-sized GEMMs on ``default``, and conv layers
compiled by the VDLA compiler (overwriting first GEMM step, a STORE that adds the bias and
requantizes, 2 virtual threads: ResNet-18's
1x1 layers C3 and C5 on ``default``, a small 1x1 and 3x3 layer on every preset), on the ``rtl``
backend (the Verilated design with the harness's DRAM model at the config's
``timing.dram_latency``) and on the ``cycle`` backend, checks that both leave the same
DRAM as fsim (:func:`vdla.runtime.calibration.calibrate`), and prints ``(cycle - rtl) / rtl``
per row and a per-preset summary.  Target: within 5% on every row (the default test
suite guards ``tiny``: tests/rtl/backend/test_cycle_calibration.py).  A second table
(``rtl_timing_probes.py``) gives the marginal cost of one instruction, loop iteration,
tile and row of each kind on both, which locates any gap.
Run: ``python bench/rtl_vs_cycle.py [--configs tiny default wide] [--randoms N] [--no-probes]``;
writes ``bench/results/rtl_vs_cycle.json``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tqdm import tqdm

from host import host_line
from rtl_timing_probes import PROBES, measure

from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import (RESNET18_CONVS, Conv2dWorkload, Requantize, compile_conv2d, random_conv_data,
                                requant_shift)
from vdla.runtime.calibration import TARGET, calibrate
from vdla.runtime.program import Program
from vdla.runtime.system_programs import build_case, case_names
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw.config import load_config, preset_names
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
    return rows + compiled_convs(config)


def compiled_convs(config: str) -> list[tuple[str, Program]]:
    """Conv layers as the compiler emits them for ``config``, bound to seeded data."""
    target = VdlaTarget.from_config(config)
    cfg = target.config
    layers = {f"conv 1x1 {4 * cfg.block_in}->{4 * cfg.block_out} 14x14":
              Conv2dWorkload(cfg.batch, 4 * cfg.block_in, 14, 14, 4 * cfg.block_out, 1, 1, 1, 0),
              f"conv 3x3 {2 * cfg.block_in}->{2 * cfg.block_out} 8x8":
              Conv2dWorkload(cfg.batch, 2 * cfg.block_in, 8, 8, 2 * cfg.block_out, 3, 3, 1, 1)}
    if config == "default":
        layers.update({f"resnet18 {name} (compiled)": RESNET18_CONVS[name] for name in ("C3", "C5")})
    rows = []
    for name, wl in layers.items():
        compiled = compile_conv2d(wl, target, epilogue=Requantize(shift=requant_shift(wl)))
        data, kernel, bias = random_conv_data(wl)
        rows.append((f"{name} vt{compiled.knobs.virtual_threads}",
                     compiled.module.bind(*compiled.pack_inputs(data, kernel, bias))))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(preset_names()), help="presets (default: all)")
    parser.add_argument("--randoms", type=int, default=6, help="random programs per config (default 6)")
    parser.add_argument("--no-probes", action="store_true", help="skip the per-instruction timing probes")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "rtl_vs_cycle.json"))
    args = parser.parse_args()

    jobs = [(config, name, program) for config in args.configs for name, program in workloads(config, args.randoms)]
    print(f"{host_line()} (simulation speed only; cycle counts do not depend on it)")
    rows = [calibrate(name, program).to_dict() for config, name, program in tqdm(jobs, desc="rtl vs cycle")]

    header = f"{'config':<8} {'program':<34} {'insns':>6} {'RTL cycles':>11} {'cycle model':>11} {'error':>8}"
    print("\nRTL (Verilated, DRAM latency = timing.dram_latency) vs the cycle model; error = (model - RTL) / RTL")
    print(header)
    print("-" * len(header))
    for r in rows:
        flag = "" if abs(r["relative_error"]) <= TARGET else "  > 5%"
        print(f"{r['config']:<8} {r['program']:<34} {r['instructions']:>6,} {r['rtl_cycles']:>11,} "
              f"{r['cycle_model_cycles']:>11,} {r['relative_error']:>+7.1%}{flag}")
    summary = summarize(rows, args.configs)
    print(f"\n{'config':<8} {'rows':>5} {'within 5%':>10} {'mean |error|':>13} {'worst program':<34} {'worst':>8}")
    for s in summary:
        print(f"{s['config']:<8} {s['rows']:>5} {s['within_target']:>10} {s['mean_abs_error']:>12.2%} "
              f"{s['worst_program']:<34} {s['worst_error']:>+7.1%}")
    probes = [] if args.no_probes else run_probes(args.configs)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"target": TARGET, "rows": rows, "summary": summary, "probes": probes}, indent=2))
    print(f"wrote {out}")


def summarize(rows: list[dict], configs: list[str]) -> list[dict]:
    """Per preset: rows, rows within the target, mean |error| and the worst row."""
    out = []
    for config in configs:
        mine = [r for r in rows if r["config"] == config]
        worst = max(mine, key=lambda r: abs(r["relative_error"]))
        out.append({"config": config, "rows": len(mine),
                    "within_target": sum(abs(r["relative_error"]) <= TARGET for r in mine),
                    "mean_abs_error": sum(abs(r["relative_error"]) for r in mine) / len(mine),
                    "worst_program": worst["program"], "worst_error": worst["relative_error"]})
    return out


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
