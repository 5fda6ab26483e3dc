"""Benchmark without a board to time: the quality of our ARM conv code, read from its assembly.

Per ResNet-18 conv layer (C2-C12, batch 1, fp32), the conv micro-kernel is compiled with the default
schedule for the Cortex-A53 of the Ultra96-V2 / ZCU104 (AArch64, ``board:ultra96-v2``) and the Cortex-A9
of the PYNQ-Z2 (ARMv7-A NEON, ``board:pynq-z2``), and for this host as the peer in the same run.  From the
assembly of the hot loop (the basic blocks holding the vector multiply-adds) it reports:

* ``insn/FMA``: instructions of the hot loop per vector multiply-add (1.0 would be pure arithmetic; the
  rest are loads of inputs and weights, address arithmetic and the loop branch);
* ``insn/out-vec``: instructions per output vector (4 fp32 lanes on NEON), ``insn/FMA`` times the
  multiply-adds one output vector needs (input channels x kernel height x kernel width);
* ``stack/FMA``: q-register loads and stores from the stack inside the hot loop per multiply-add
  (register pressure: values LLVM keeps in stack slots).

Nothing is timed: emulated (qemu) timing says nothing about a Cortex-A53, and this script reports none.
onnxruntime's ARM kernels (the peer the issue names) are hand-written assembly inside its aarch64 wheel,
which needs pip inside the arm64 userland; they are listed as not measured (see docs/deploy.md).

Run: ``python bench/arm_codegen.py [--quick]``; writes ``bench/results/arm_codegen.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import re
import sys
from pathlib import Path

from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler import te, topi  # noqa: E402
from compiler.codegen.llvm import codegen, host_target, parse_target, using_target  # noqa: E402
from compiler.tir.pipeline import lower  # noqa: E402
from compiler.tir.stmt import PrimFunc  # noqa: E402
from compiler.vdla.topi import RESNET18_CONVS  # noqa: E402

TARGETS = {"a53": "board:ultra96-v2", "a9": "board:pynq-z2", "host": "llvm"}
#: The vector multiply-add of each architecture's code.  A Cortex-A9 has no fused one: LLVM emits ``vmla``
#: or a ``vmul`` + ``vadd`` pair, counted once (by its ``vmul``).
FMA = {"aarch64": re.compile(r"^fmla\s+v\d+\.4s"), "arm": re.compile(r"^(vmla|vfma|vmul)\.f32\s+q\d+"),
       "x86_64": re.compile(r"^vfmadd\d+ps\s")}
#: Vector loads and stores of stack slots.  ARMv7 addresses them through a register set from sp
#: (``add r0, sp, #N`` then ``vstmia r0``): every ``vldmia`` / ``vstmia`` of this code is one.
STACK = {"aarch64": re.compile(r"^(ldr|str|ldp|stp)\s+q\d+.*\[sp"),
         "arm": re.compile(r"^(v(ld|st)\S*\s.*\bsp\b|vldmia|vstmia)"),
         "x86_64": re.compile(r"^vmov\w*\s.*\(%rsp\)")}


def hot_blocks(asm: str, fma: re.Pattern[str]) -> list[list[str]]:
    """The basic blocks (split at labels) that contain a vector multiply-add."""
    blocks: list[list[str]] = [[]]
    for line in asm.splitlines():
        if re.match(r"^\.?[A-Za-z_$.0-9]+:", line):
            blocks.append([])
        elif line.startswith("\t") and not line.strip().startswith((".", "//", "@", "#")):
            blocks[-1].append(line.strip())
    return [b for b in blocks if any(fma.match(i) for i in b)]


def analyze(layer: str, spec: str, **tile: int) -> dict[str, float | str]:
    """The hot-loop figures of ``layer`` compiled for ``spec`` (default schedule; ``tile`` overrides knobs)."""
    w = RESNET18_CONVS[layer]
    tgt = parse_target(spec)
    lanes = tgt.vector_lanes()
    with using_target(tgt):
        data = te.placeholder((1, w.ic // lanes, w.h, w.w, lanes), name="data")
        kernel = te.placeholder((w.oc // lanes, w.ic // lanes, w.kh, w.kw, lanes, lanes), name="kernel")
        out = topi.conv2d_nchwc(data, kernel, w.stride, w.pad)
        knobs = dataclasses.replace(topi.default_conv2d_nchwc_knobs(out), **tile)
        lowered = lower(topi.schedule_conv2d_nchwc(out, knobs), "llvm")
    func = PrimFunc("conv", (data.buffer, kernel.buffer, out.buffer), lowered.body, lowered.attrs)
    asm = codegen([func], tgt, name="conv").assembly()
    hot = hot_blocks(asm, FMA[tgt.arch])
    insns = sum(len(b) for b in hot)
    fmas = sum(1 for b in hot for i in b if FMA[tgt.arch].match(i))
    stack = sum(1 for b in hot for i in b if STACK[tgt.arch].match(i))
    per_fma = insns / max(fmas, 1)
    return {"layer": layer, "target": str(tgt), "isa": tgt.isa, "lanes": lanes,
            "tile": f"{knobs.oh_block}x{knobs.ow_block}x{knobs.oc_block}", "hot_insns": insns, "fmas": fmas,
            "insn_per_fma": round(per_fma, 3), "insn_per_out_vector": round(per_fma * w.ic * w.kh * w.kw, 1),
            "stack_per_fma": round(stack / max(fmas, 1), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="layers C2, C9 and C12 only")
    args = parser.parse_args()
    layers = ["C2", "C9", "C12"] if args.quick else list(RESNET18_CONVS)
    host = host_target()
    print(f"host CPU: {platform.processor() or platform.machine()} ({host.cpu}, {host.isa}, "
          f"{host.vector_bits}-bit vectors) -- the peer row; ARM rows are cross-compiled, never run or timed")
    rows = [analyze(layer, spec) for layer in tqdm(layers, desc="layers") for spec in TARGETS.values()]
    header = f"{'layer':<6}{'target':<8}{'tile':>8}{'insn/FMA':>10}{'insn/out-vec':>14}{'stack/FMA':>11}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['layer']:<6}{r['isa']:<8}{r['tile']:>8}{r['insn_per_fma']:>10.2f}{r['insn_per_out_vector']:>14.1f}"
              f"{r['stack_per_fma']:>11.3f}")
    print("onnxruntime aarch64 kernels: not measured (its wheel needs pip inside the arm64 userland; "
          "no timing under emulation is ever reported)")
    out = Path(__file__).resolve().parent / "results" / "arm_codegen.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"host": {"cpu": host.cpu, "isa": host.isa}, "rows": rows,
                               "onnxruntime_aarch64": "not measured"}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
