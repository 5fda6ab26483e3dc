"""Where the compute module's cycles go for compiled ResNet-18 conv layers (cycle model).

Per layer, the run's cycles split into what the compute module did: GEMM micro-op iterations (the
useful work), the GEMM pipeline fill and done cycle per instruction, the ALU's iterations (the bias
MOV at ``alu_copy_ii``, or the reset + bias ADD without ``bias_init``) and pipeline, micro-op and
accumulator loads, the dependency-token gate's fixed cycles per instruction (``insn_overhead``), and
the stalls: waiting for a token (load/store behind), for an instruction (fetch behind), for room in a
token queue; the rest is idle after the module's last instruction.  Every compiled output is checked
bit-exactly against NumPy.  The peer: the same layer compiled the old way (``--before``).

    python bench/compute_breakdown.py [--layers C3,C5,C8] [--config default] [--candidates 16]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]  # the tree, bench/

from vdla.compiler.vdla.target import VdlaTarget  # noqa: E402
from vdla.compiler.vdla.topi import RESNET18_CONVS, Requantize, check_conv2d, compile_conv2d, requant_shift, tune_conv2d  # noqa: E402
from vdla.simulator.cycle import run_cycle  # noqa: E402
from vdla.simulator.cycle.breakdown import PARTS, compute_breakdown  # noqa: E402
from vdla_hw.isa import Module, module_of  # noqa: E402
from host import host_line  # noqa: E402


def breakdown(program, cfg) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """The compute module's cycles of one program, by cause (the parts sum to the run's cycles)."""
    res = run_cycle(cfg, program.instructions, program.dram, insn_addr=program.insn_addr, timeline=True)
    parts, kinds = compute_breakdown(cfg, program.instructions, res)
    n_compute = sum(1 for i in program.instructions if module_of(i) == Module.COMPUTE)
    return {"cycles": res.stats.cycles, "gemm_utilization": res.stats.gemm_utilization, "compute_insns": n_compute,
            "kinds": kinds, "parts": parts}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="default")
    p.add_argument("--layers", default="C3,C5,C8")
    p.add_argument("--candidates", type=int, default=16, help="knob settings measured (1 = cost model's pick)")
    p.add_argument("--before", action="store_true", help="also the old bias path (bias_init=False)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "compute_breakdown.json"))
    args = p.parse_args(argv)
    target = VdlaTarget.from_config(args.config)
    rows = []
    for name in args.layers.split(","):
        wl = RESNET18_CONVS[name]
        eps = {"now": Requantize(shift=requant_shift(wl))}
        if args.before:
            eps["before"] = Requantize(shift=requant_shift(wl), bias_init=False)
        for key, ep in eps.items():
            compiled = (tune_conv2d(wl, target, 2, args.candidates, epilogue=ep) if args.candidates > 1
                        else compile_conv2d(wl, target, epilogue=ep))
            if not check_conv2d(compiled, backend="fsim")[0]:
                raise AssertionError(f"{name} ({key}) is not bit-exact vs NumPy")
            row = {"layer": name, "variant": key, "knobs": str(compiled.knobs),
                   **breakdown(compiled.module.program, target.config)}
            rows.append(row)
    print(f"{host_line()} (cycle counts do not depend on it)")
    print(f"compute-module cycles by cause, config {target.config.name!r} (cycle model, 2 virtual threads)")
    print(f"{'layer':<5} {'variant':<7} {'cycles':>9} {'util':>6} " + " ".join(f"{p:>14}" for p in PARTS))
    for r in rows:
        parts = r["parts"]
        print(f"{r['layer']:<5} {r['variant']:<7} {r['cycles']:>9,} {r['gemm_utilization']:>6.1%} "
              + " ".join(f"{parts[p]:>7,} {parts[p] / r['cycles']:>5.1%}" for p in PARTS))
        print(f"      {r['knobs']}; compute instructions {r['compute_insns']}: {r['kinds']}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": target.config.name, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
