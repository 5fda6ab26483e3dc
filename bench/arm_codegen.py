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

The peer the issue names is onnxruntime's AArch64 SGEMM kernel (MLAS, hand-written assembly; onnxruntime's
fp32 Conv on ARM is im2col + this SGEMM).  Its aarch64 wheel, unpacked into the build cache
(``ort-aarch64``; see docs/deploy.md for the ``pip download`` that fills it), is disassembled with
``llvm-objdump``.  The library is stripped, so the kernel is found by its shape: the innermost loop (no
other backward branch inside) whose by-element ``fmla`` accumulate into 16 vector registers (4 rows x
16 columns of C in v16-v31).  Its insn/FMA is the same count as ours; its insn/out-vec is insn/FMA times
the multiply-adds of one output vector of each layer (the GEMM's K = input channels x kernel area).  The
im2col copy that precedes the SGEMM is not counted.  Without the wheel or ``llvm-objdump`` the column is
skipped with the command that provides it.

Run: ``python bench/arm_codegen.py [--quick]``; writes ``bench/results/arm_codegen.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
from tqdm import tqdm

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]  # the tree, bench/

from vdla.compiler import te, topi  # noqa: E402
from vdla.compiler.codegen.llvm import codegen, parse_target, using_target  # noqa: E402
from vdla.compiler.tir.pipeline import lower  # noqa: E402
from vdla.compiler.tir.stmt import PrimFunc  # noqa: E402
from vdla.compiler.vdla.topi import RESNET18_CONVS  # noqa: E402
from vdla_hw.cache import cache_dir  # noqa: E402
from host import host_line, host_record  # noqa: E402

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


#: One instruction of ``llvm-objdump -d --no-show-raw-insn`` output: address, mnemonic, operands.
OBJDUMP_LINE = re.compile(r"^\s*([0-9a-f]+):\s+([a-z][\w.]*)\s*([^/<]*)")
#: AArch64 conditional and unconditional branches to an immediate address.
BRANCH = re.compile(r"^(b|b\.\w+|cbn?z|tbn?z)$")
#: Longer "loops" are outer loops or unrelated code spans, never a kernel's hot loop.
MAX_LOOP_INSNS = 4096
#: The cache entry holding the unpacked onnxruntime aarch64 wheel (docs/deploy.md shows how it is filled).
ORT_AARCH64 = "ort-aarch64"
ORT_FILL = ("pip download --no-deps --only-binary=:all: --platform manylinux2014_aarch64 --python-version 3.11 "
            "onnxruntime -d ~/.cache/vdla/ort-aarch64 && python -m zipfile -e ~/.cache/vdla/ort-aarch64/"
            "onnxruntime-*.whl ~/.cache/vdla/ort-aarch64/site")


@dataclasses.dataclass(frozen=True)
class Loop:
    """A loop of disassembled AArch64 code: the instructions from a backward branch's target to the branch."""

    start: int
    end: int
    insns: tuple[tuple[str, str], ...]

    @property
    def fmas(self) -> int:
        return sum(1 for m, ops in self.insns if m == "fmla" and ".4s" in ops)

    def accumulators(self) -> frozenset[str]:
        """The vector registers the loop's ``fmla`` accumulate into."""
        return frozenset(ops.split(",")[0].split(".")[0].strip() for m, ops in self.insns
                         if m == "fmla" and ".4s" in ops)


def innermost_loops(disassembly: str) -> list[Loop]:
    """The innermost loops of ``llvm-objdump -d`` AArch64 output: ranges [target, branch] of backward branches
    that hold no other backward branch and no call or return (those would make them outer loops or tails)."""
    insns = [(int(m[1], 16), m[2], m[3].strip()) for m in map(OBJDUMP_LINE.match, disassembly.splitlines()) if m]
    index = {addr: i for i, (addr, _, _) in enumerate(insns)}
    backward: list[tuple[int, int]] = []
    for i, (addr, mnemonic, ops) in enumerate(insns):
        target = ops.rsplit(",", 1)[-1].strip()
        if BRANCH.match(mnemonic) and re.fullmatch(r"(0x)?[0-9a-f]+", target):
            start = int(target, 16)
            if start < addr and start in index:
                backward.append((index[start], i))
    # latest[b]: the largest start index of a backward branch at index b; a loop [lo, hi] is innermost
    # when no branch inside it (b < hi) starts at or after lo. Checked by slicing the loop's own range,
    # so loops are capped at MAX_LOOP_INSNS (a hot kernel loop is far shorter; a library has ~10^6 insns).
    latest = np.full(len(insns), -1, dtype=np.int64)
    for lo, hi in backward:
        latest[hi] = max(latest[hi], lo)
    loops = []
    for lo, hi in backward:
        if hi - lo > MAX_LOOP_INSNS or (hi > lo and latest[lo:hi].max() >= lo):
            continue
        body = insns[lo:hi + 1]
        if any(m in ("ret", "bl", "blr", "br") for _, m, _ in body[:-1]):
            continue
        loops.append(Loop(insns[lo][0], insns[hi][0], tuple((m, ops) for _, m, ops in body)))
    return loops


def find_mlas_sgemm_loop(disassembly: str) -> Loop:
    """MLAS's AArch64 SGEMM inner loop: the innermost loop accumulating into all of v16-v31 with by-element
    ``fmla`` (the 4 x 16 tile of C its hand-written kernel keeps in registers)."""
    tile = frozenset(f"v{r}" for r in range(16, 32))
    found = [lp for lp in innermost_loops(disassembly) if lp.accumulators() == tile
             and all("[" in ops for m, ops in lp.insns if m == "fmla")]
    if not found:
        raise LookupError("no innermost loop accumulating a 4x16 fp32 tile in v16-v31: not MLAS's SGEMM kernel")
    return max(found, key=lambda lp: lp.fmas)


def onnxruntime_aarch64_peer() -> dict[str, object]:
    """The hot-loop figures of onnxruntime's aarch64 SGEMM, or why they could not be read."""
    site = cache_dir() / ORT_AARCH64 / "site" / "onnxruntime" / "capi"
    libs = sorted(site.glob("onnxruntime_pybind11_state*.so"))
    if not libs:
        return {"skipped": f"onnxruntime's aarch64 wheel is not unpacked under {site.parent.parent}: {ORT_FILL}"}
    if shutil.which("llvm-objdump") is None:
        return {"skipped": "llvm-objdump is missing: apt-get install llvm"}
    dis = subprocess.run(["llvm-objdump", "-d", "--no-show-raw-insn", str(libs[0])], capture_output=True,
                         text=True, check=True, timeout=600).stdout
    loop = find_mlas_sgemm_loop(dis)
    version = next((w.name.split("-")[1] for w in (cache_dir() / ORT_AARCH64).glob("onnxruntime-*.whl")), "unknown")
    return {"library": libs[0].name, "version": version, "loop": [hex(loop.start), hex(loop.end)],
            "hot_insns": len(loop.insns), "fmas": loop.fmas,
            "insn_per_fma": round(len(loop.insns) / loop.fmas, 3),
            "stack_per_fma": round(sum(1 for m, ops in loop.insns if STACK["aarch64"].match(f"{m} {ops}"))
                                   / loop.fmas, 3)}


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
    print(f"{host_line()} -- the peer row; ARM rows are cross-compiled, never run or timed")
    rows = [analyze(layer, spec) for layer in tqdm(layers, desc="layers") for spec in TARGETS.values()]
    peer = onnxruntime_aarch64_peer()
    if "skipped" not in peer:
        for layer in layers:
            w = RESNET18_CONVS[layer]
            rows.append({"layer": layer, "target": f"onnxruntime {peer['version']} MLAS SGEMM", "isa": "ort-a64",
                         "lanes": 4, "tile": "4x16", "insn_per_fma": peer["insn_per_fma"],
                         "insn_per_out_vector": round(peer["insn_per_fma"] * w.ic * w.kh * w.kw, 1),
                         "stack_per_fma": peer["stack_per_fma"]})
        rows.sort(key=lambda r: layers.index(r["layer"]))
    header = f"{'layer':<6}{'target':<8}{'tile':>8}{'insn/FMA':>10}{'insn/out-vec':>14}{'stack/FMA':>11}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['layer']:<6}{r['isa']:<8}{r['tile']:>8}{r['insn_per_fma']:>10.2f}{r['insn_per_out_vector']:>14.1f}"
              f"{r['stack_per_fma']:>11.3f}")
    if "skipped" in peer:
        print(f"onnxruntime aarch64 column skipped: {peer['skipped']}")
    else:
        print(f"ort-a64: onnxruntime {peer['version']} aarch64 wheel, MLAS SGEMM inner loop {peer['loop'][0]}-"
              f"{peer['loop'][1]} of {peer['library']}: {peer['hot_insns']} insns, {peer['fmas']} fmla "
              "(Conv = im2col + this SGEMM; the im2col copy is not counted; nothing timed)")
    out = Path(__file__).resolve().parent / "results" / "arm_codegen.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "rows": rows,
                               "onnxruntime_aarch64": peer}, indent=1))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
