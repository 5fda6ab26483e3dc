"""How close to 100% GEMM utilization a strided 1x1 ResNet-18 layer can get on VDLA, measured.

Issue 24 asks every compute-bound layer for >= 95% of its roofline; the compiled C11 (1x1, stride 2,
256 -> 512, 7x7 outputs) reaches 89.6% with the best of its 95 tilings, losing ~1,300 cycles before
its first GEMM and ~670 after its last.  The roofline (GEMM cycles vs DRAM bytes) has no startup or
drain term, so this benchmark measures one: the layer as a GEMM (pixels x input channels x output
channels) with everything resident in SRAM, scheduled by hand for small edges, run bit-exactly on
fsim and the cycle model beside the compiled layer in the same run.

The hand schedule (what the compiler's tilings cannot express today):

- *ic-major start*: the first ``b1`` input-channel blocks reduce into every output channel, one block
  at a time; the first block's GEMM is cut into pieces of ``first_piece`` output-channel blocks (the
  others' into pieces of ``piece``), each with its own weight LOAD, so the first GEMM waits for one input
  column and one weight piece;
- *oc-major end*: the remaining input-channel blocks run per group of ``group`` output-channel
  blocks; each group is final after its GEMM and stored at once (STORE adds the bias, ReLU, shift,
  clip), so after the last GEMM only one small STORE is left.

Nothing is re-loaded (SRAM holds the whole input, all weights and all accumulators: C11 on
``default`` uses 784 of 2,048 input tiles, 512 of 1,024 weight tiles, 1,600 of 2,048 accumulator
tiles), so no LOAD waits for a buffer to be released.  The input is loaded as the GEMM's
im2col matrix (the used pixels only); the compiled layer loads whole input rows (twice the pixels
of a stride-2 layer), which this bound does not charge.

    python bench/vdla_edge_bound.py [--config default] [--layer C11] [--b1 8] [--first-piece 8] [--piece 16] [--group 4]
                                    [--last-group 1] [--late-bias] [--candidates 0]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vdla_hw.config import HwConfig  # noqa: E402
from vdla_hw.isa import MemType, Uop  # noqa: E402

from vdla.compiler.codegen.llvm.target import host_target  # noqa: E402
from vdla.compiler.vdla.target import VdlaTarget  # noqa: E402
from vdla.compiler.vdla.topi import RESNET18_CONVS, Requantize, check_conv2d, requant_shift, tune_conv2d  # noqa: E402
from vdla.runtime.backends import RunResult, run  # noqa: E402
from vdla.runtime.program import Program, ProgramBuilder  # noqa: E402
from vdla.runtime.workloads import reference_output  # noqa: E402


def edge_schedule_program(cfg: HwConfig, m: int, k: int, n: int, b1: int, first_piece: int, group: int,
                          piece: int | None = None, late_bias: bool = False, last_group: int | None = None,
                          seed: int = 0) -> tuple[Program, np.ndarray]:
    """The ``(m x k) @ (k x n)`` GEMM + bias + ReLU + requantize, resident in SRAM, ic-major for the
    first ``b1`` reduction blocks and oc-major (stored per ``group`` output blocks) after; its
    expected output ``(m, n)``.  ``late_bias`` loads the bias (a compute-module LOAD) after the ic-major
    phase instead of before the first GEMM.  Raises ValueError when the shape does not fit resident."""
    if cfg.batch != 1 or k % cfg.block_in or n % cfg.block_out:
        raise ValueError(f"needs BATCH=1 and k, n multiples of the blocks on {cfg.name!r}")
    kb, nb = k // cfg.block_in, n // cfg.block_out
    if m * kb > cfg.inp_buff_depth or nb * kb > cfg.wgt_buff_depth or m * nb + nb > cfg.acc_buff_depth:
        raise ValueError(f"{m}x{k}x{n} does not fit resident in {cfg.name!r}'s SRAM ({m * kb} input, {nb * kb} weight, "
                         f"{m * nb + nb} accumulator tiles; it holds {cfg.inp_buff_depth}, {cfg.wgt_buff_depth}, "
                         f"{cfg.acc_buff_depth})")
    piece = piece or first_piece
    last_group = last_group or group
    if not (0 < b1 < kb and nb % first_piece == 0 and nb % piece == 0 and nb % group == 0 and group % last_group == 0):
        raise ValueError(f"b1={b1} must be in 1..{kb - 1}; first_piece={first_piece}, piece={piece} and group={group} "
                         f"must divide {nb}, last_group={last_group} must divide group")
    # oc-major groups: of `group` blocks, the last one cut into groups of `last_group` (a smaller last STORE)
    starts = list(range(0, nb - group, group)) + list(range(nb - group, nb, last_group))
    sizes = [b - a for a, b in zip(starts, starts[1:] + [nb])]
    rng = np.random.default_rng(seed)
    a = rng.integers(-(1 << (cfg.inp_width - 1)), 1 << (cfg.inp_width - 1), size=(m, k))
    w = rng.integers(-(1 << (cfg.wgt_width - 1)), 1 << (cfg.wgt_width - 1), size=(k, n))
    bias = rng.integers(-(1 << 12), 1 << 12, size=n)
    spread = math.sqrt(k) * (1 << (cfg.inp_width - 1)) / math.sqrt(3) * (1 << (cfg.wgt_width - 1)) / math.sqrt(3)
    shift = max(0, round(math.log2(spread)) - (cfg.out_width - 2))

    pb = ProgramBuilder(cfg)
    # DRAM tile [ic block][pixel]: the compiled layer's input is ic-block-major too (an ic block's rows are
    # contiguous), so one input-channel block of every pixel is one LOAD row.
    inp = pb.alloc("inp", "inp", (kb * m, cfg.block_in), a.reshape(m, kb, cfg.block_in).transpose(1, 0, 2).reshape(kb * m, -1))
    wgt = pb.alloc("wgt", "wgt", (n, k), w.T)            # DRAM tile [oc block][ic block]
    bias_buf = pb.alloc("bias", "acc", (1, n), bias[None, :])
    out = pb.alloc("out", "out", (nb * m, cfg.block_out))  # DRAM tile [oc block][pixel]: one STORE row per oc block
    # SRAM: input column b at b*m (pixels contiguous); phase-1 weights [b][o] at b*nb; phase-2 weights
    # [o][b - b1] after them; accumulators [o][pixel] (a group of oc blocks is one contiguous STORE); bias after.
    w2 = b1 * nb
    bias_base = m * nb
    uops: list[Uop] = []

    def place(lst: list[Uop]) -> tuple[int, int]:
        uops.extend(lst)
        return len(uops) - len(lst), len(uops)

    # One micro-op per GEMM piece (ic-major) or per reduction block (oc-major): the output-channel blocks
    # are the inner instruction loop, the pixels the outer, so the micro-op LOAD (on the compute module,
    # before the first GEMM) stays small.
    size = [first_piece] + [piece] * (b1 - 1)  # output-channel blocks per ic-major GEMM piece, per block
    first = {(b, o0): place([Uop(o0 * m, b * m, b * nb + o0)]) for b in range(b1) for o0 in range(0, nb, size[b])}
    rest = {o0: place([Uop(o0 * m, b * m, w2 + o0 * (kb - b1) + (b - b1)) for b in range(b1, kb)]) for o0 in starts}
    if len(uops) > cfg.uop_buff_depth:
        raise ValueError(f"{len(uops)} micro-ops exceed the micro-op buffer of {cfg.name!r}")
    pb.load_uops(pb.uops(uops, "uops"))
    if not late_bias:
        pb.load(MemType.ACC, bias_base, bias_buf.addr, 1, nb, nb)
    # The load module's order: per ic-major block its input column and weight pieces (one token each for
    # the GEMM piece that reads them), then input columns of the oc-major phase; then the phase-2 weights.
    later = list(range(b1, kb))
    for b in range(b1):
        pb.load(MemType.INP, b * m, inp.addr + b * m, 1, m, m)
        for o0 in range(0, nb, size[b]):
            pb.load(MemType.WGT, b * nb + o0, wgt.addr + o0 * kb + b, size[b], 1, kb, push_next=True)
            pb.gemm(*first[(b, o0)], iter_out=m, iter_in=size[b], dst_factor=(1, m), src_factor=(1, 0), wgt_factor=(0, 1),
                    overwrite=b == 0, pop_prev=True)
        for _ in range(-(-len(later) // (b1 - b))):
            if later:
                c = later.pop(0)
                pb.load(MemType.INP, c * m, inp.addr + c * m, 1, m, m)
    if late_bias:
        pb.load(MemType.ACC, bias_base, bias_buf.addr, 1, nb, nb)
    for i, (o0, g) in enumerate(zip(starts, sizes)):
        pb.load(MemType.WGT, w2 + o0 * (kb - b1), wgt.addr + o0 * kb + b1, g, kb - b1, kb, push_next=True)
        pb.gemm(*rest[o0], iter_out=m, iter_in=g, dst_factor=(1, m), src_factor=(1, 0), wgt_factor=(0, kb - b1),
                pop_prev=True, push_next=True)
        pb.store(o0 * m, out.addr + o0 * m, g, m, m, pop_prev=True, push_prev=i == len(starts) - 1,
                 shift=shift, clip=True, relu=True, bias=(bias_base + o0, 1))
    pb.finish(pop_next=True)
    return pb.build(), reference_output(cfg, a, w, bias, shift)


def read_out(result: RunResult, m: int, n: int, block_out: int) -> np.ndarray:
    """The ``out`` buffer ([oc block][pixel][channel]) as ``(m, n)``."""
    return result.read("out").reshape(n // block_out, m, block_out).transpose(1, 0, 2).reshape(m, n)


def edge_costs(trace: Path, gemm_cycles: int, cycles: int) -> dict[str, int]:
    """Where a run's cycles beyond its GEMM cycles went, on the compute module's timeline (cycle-model trace):
    before the first GEMM (prologue), GEMM instruction overheads (their cycles beyond the MACs), the compute
    module's own LOADs (micro-ops, bias) between the first and the last GEMM, its idle cycles there, and
    after the last GEMM (drain).  The five add up to ``cycles - gemm_cycles``."""
    events = sorted((e["args"]["start_cycle"], e["args"]["cycles"], e["name"].split("#")[0])
                    for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "insn")
    compute = [e for e in events if e[2] in ("GEMM", "ALU", "LOAD.UOP", "LOAD.ACC")]
    gemms = [e for e in compute if e[2] == "GEMM"]
    first, last = gemms[0][0], max(s + c for s, c, _ in gemms)
    inside = [e for e in compute if first <= e[0] < last]
    return {"prologue": first, "gemm_overhead": sum(c for _, c, _ in gemms) - gemm_cycles,
            "compute_loads": sum(c for _, c, n in inside if n != "GEMM"),
            "idle": (last - first) - sum(c for _, c, _ in inside), "drain": cycles - last, "gemm_instructions": len(gemms)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default="default")
    p.add_argument("--layer", default="C11")
    p.add_argument("--b1", type=int, default=8, help="input-channel blocks reduced ic-major (into every output block)")
    p.add_argument("--first-piece", type=int, default=8, help="output-channel blocks per GEMM piece of the first block")
    p.add_argument("--piece", type=int, default=16, help="output-channel blocks per GEMM piece of the other ic-major blocks")
    p.add_argument("--group", type=int, default=4, help="output-channel blocks per oc-major GEMM and STORE")
    p.add_argument("--last-group", type=int, default=1, help="the last oc-major group cut into groups of this many blocks")
    p.add_argument("--late-bias", action="store_true", help="load the bias after the ic-major phase (default: first)")
    p.add_argument("--candidates", type=int, default=0,
                   help="tilings measured for the compiled peer (0 = all, as bench/vdla_resnet18.py --candidates 0)")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "vdla_edge_bound.json"))
    args = p.parse_args(argv)
    start = time.perf_counter()
    target = VdlaTarget.from_config(args.config)
    cfg = target.config
    if args.layer not in RESNET18_CONVS:
        raise SystemExit(f"--layer {args.layer}: not a ResNet-18 layer; give one of {', '.join(RESNET18_CONVS)}")
    wl = RESNET18_CONVS[args.layer]
    if wl.kh != 1 or wl.kw != 1:
        raise SystemExit(f"--layer {args.layer}: a {wl.kh}x{wl.kw} layer; this bound is for the 1x1 layers (C3, C5, C8, C11)")
    m, k, n = wl.oh * wl.ow, wl.ic, wl.oc
    gemm = wl.macs // cfg.macs_per_cycle
    try:
        program, want = edge_schedule_program(cfg, m, k, n, args.b1, args.first_piece, args.group, piece=args.piece,
                                              late_bias=args.late_bias, last_group=args.last_group)
    except ValueError as exc:
        raise SystemExit(f"--layer {args.layer} on {cfg.name!r}: {exc} (only C11 fits resident on 'default'; the "
                         "others would need row tiles)")
    rows: dict[str, dict[str, object]] = {}
    fs = run(program, backend="fsim")
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        cy = run(program, backend="cycle", trace=str(trace))
        costs = edge_costs(trace, gemm, cy.cycles)
    exact = (np.array_equal(read_out(fs, m, n, cfg.block_out), want)
             and np.array_equal(read_out(cy, m, n, cfg.block_out), want) and np.array_equal(fs.dram, cy.dram))
    if not exact:
        raise AssertionError("the edge schedule is not bit-exact vs NumPy on fsim and cycle")
    st = cy.extra["stats"]
    rows["edge schedule (hand)"] = {"cycles": cy.cycles, "gemm_utilization": st["gemm_utilization"],
                                    "memory_bound": st["memory_bound_cycles"], "instructions": program.insn_count, **costs}
    compiled = tune_conv2d(wl, target, 2, args.candidates, epilogue=Requantize(shift=requant_shift(wl)), progress=True)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "trace.json"
        ok, res, _, _ = check_conv2d(compiled, backend="cycle", trace=str(trace))
        costs = edge_costs(trace, gemm, res.cycles)
    if not ok:
        raise AssertionError(f"compiled {args.layer} is not bit-exact vs NumPy")
    st = res.extra["stats"]
    kn = compiled.knobs
    rows[f"compiled {kn.oc_tile}/{kn.oh_tile}/{kn.ic_tile} {kn.vt_axis}"] = {
        "cycles": res.cycles, "gemm_utilization": st["gemm_utilization"], "memory_bound": st["memory_bound_cycles"],
        "instructions": compiled.module.program.insn_count, "knobs": str(kn), **costs}
    host = host_target()
    print(f"\nhost: {host.cpu}; the figures are the cycle model's ({cfg.name!r}, {cfg.clock_mhz:g} MHz)")
    print(f"{args.layer} {wl}: {gemm:,} GEMM cycles; edge schedule b1={args.b1}, first piece {args.first_piece}, "
          f"piece {args.piece}, group {args.group} (last {args.last_group}), "
          f"bias {'late' if args.late_bias else 'first'}: bit-exact on fsim and cycle; compiled: the best of "
          f"{'every tiling' if args.candidates <= 0 else f'{args.candidates} tilings'}")
    print(f"{'program':<24} {'cycles':>8} {'util':>7} {'prologue':>9} {'GEMM ovh':>9} {'UOP/ACC':>8} {'idle':>6} "
          f"{'drain':>6} {'GEMMs':>6} {'mem bound':>10}")
    for name, r in rows.items():
        print(f"{name:<24} {r['cycles']:>8,} {r['gemm_utilization']:>7.1%} {r['prologue']:>9,} {r['gemm_overhead']:>9,} "
              f"{r['compute_loads']:>8,} {r['idle']:>6,} {r['drain']:>6,} {r['gemm_instructions']:>6} {r['memory_bound']:>10,}")
    print("cycles = GEMM cycles + prologue + GEMM ovh (instruction overheads) + UOP/ACC (the compute module's micro-op "
          "and bias LOADs between the first and last GEMM) + idle (between them) + drain")
    print(f"wall time {time.perf_counter() - start:.0f} s")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"config": cfg.name, "layer": args.layer, "b1": args.b1, "first_piece": args.first_piece,
                               "piece": args.piece, "group": args.group,
                               "last_group": args.last_group, "late_bias": args.late_bias, "gemm_cycles": gemm, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
