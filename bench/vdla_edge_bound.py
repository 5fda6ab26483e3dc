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

from host import host_line, host_record  # noqa: E402
from vdla.compiler.vdla.target import VdlaTarget  # noqa: E402
from vdla.compiler.vdla.topi import (RESNET18_CONVS, Conv2dKnobs, Conv2dWorkload, Requantize, ResidentKnobs,  # noqa: E402
                                    check_conv2d, compile_conv2d, requant_shift, resident_error, resident_space,
                                    tune_conv2d)
from vdla.compiler.vdla.topi.resident import InputColumns, StoreEpilogue, emit_two_phase  # noqa: E402
from vdla.runtime.backends import RunResult, run  # noqa: E402
from vdla.runtime.program import Program, ProgramBuilder  # noqa: E402
from vdla.runtime.workloads import reference_output  # noqa: E402


def edge_schedule_program(cfg: HwConfig, m: int, k: int, n: int, b1: int, first_piece: int, group: int,
                          piece: int | None = None, late_bias: bool = False, last_group: int | None = None,
                          seed: int = 0, rows: int = 1, later_from: int = 0, **knobs: int) -> tuple[Program, np.ndarray]:
    """The ``(m x k) @ (k x n)`` GEMM + bias + ReLU + requantize, resident in SRAM, scheduled by the compiler's
    two-phase template (``vdla.compiler.vdla.topi.resident.emit_two_phase``: ic-major for the first ``b1``
    reduction blocks, oc-major after, stored per ``group`` output blocks); its expected output ``(m, n)``.
    The input is the im2col matrix (used pixels only), ``rows`` rows of ``m / rows`` pixels (the split knobs
    ``first_rows`` / ``last_rows`` count those rows); ``knobs`` are further :class:`ResidentKnobs` fields.
    Raises ValueError when the shape does not fit resident."""
    if cfg.batch != 1 or k % cfg.block_in or n % cfg.block_out or m % rows:
        raise ValueError(f"needs BATCH=1, k, n multiples of the blocks on {cfg.name!r} and rows={rows} dividing m={m}")
    kb, nb = k // cfg.block_in, n // cfg.block_out
    if m * kb > cfg.inp_buff_depth or nb * kb > cfg.wgt_buff_depth or m * nb + nb > cfg.acc_buff_depth:
        raise ValueError(f"{m}x{k}x{n} does not fit resident in {cfg.name!r}'s SRAM ({m * kb} input, {nb * kb} weight, "
                         f"{m * nb + nb} accumulator tiles; it holds {cfg.inp_buff_depth}, {cfg.wgt_buff_depth}, "
                         f"{cfg.acc_buff_depth})")
    rk = ResidentKnobs(b1, first_piece, piece or first_piece, group, last_group or group, late_bias,
                       later_from=later_from, **knobs)
    # The same checks as a conv layer's: a 1x1 "conv" of `rows` x (m / rows) pixels with those channels.
    reason = resident_error(Conv2dWorkload(1, k, rows, m // rows, n, 1, 1), rk, VdlaTarget(cfg), Requantize())
    if reason is not None:
        raise ValueError(reason)
    rng = np.random.default_rng(seed)
    a = rng.integers(-(1 << (cfg.inp_width - 1)), 1 << (cfg.inp_width - 1), size=(m, k))
    w = rng.integers(-(1 << (cfg.wgt_width - 1)), 1 << (cfg.wgt_width - 1), size=(k, n))
    bias = rng.integers(-(1 << 12), 1 << 12, size=n)
    spread = math.sqrt(k) * (1 << (cfg.inp_width - 1)) / math.sqrt(3) * (1 << (cfg.wgt_width - 1)) / math.sqrt(3)
    shift = max(0, round(math.log2(spread)) - (cfg.out_width - 2))

    pb = ProgramBuilder(cfg)
    # DRAM tile [ic block][pixel]: one input-channel block of every pixel is contiguous, like a conv's input.
    inp = pb.alloc("inp", "inp", (kb * m, cfg.block_in), a.reshape(m, kb, cfg.block_in).transpose(1, 0, 2).reshape(kb * m, -1))
    wgt = pb.alloc("wgt", "wgt", (n, k), w.T)            # DRAM tile [oc block][ic block]
    bias_buf = pb.alloc("bias", "acc", (1, n), bias[None, :])
    out = pb.alloc("out", "out", (nb * m, cfg.block_out))  # DRAM tile [oc block][pixel]: one STORE row per oc block
    px = m // rows
    emit_two_phase(pb, cfg, m, kb, nb, rk, InputColumns(inp.addr, m, rows, px, px, px, 1, px), wgt.addr, bias_buf.addr,
                   out.addr, StoreEpilogue(shift, relu=True))
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
    p.add_argument("--rows", type=int, default=1, help="the im2col input as this many rows of pixels (the split knobs count them)")
    p.add_argument("--first-rows", type=int, default=0, help="the first input column in two LOADs, the first of this many rows")
    p.add_argument("--first-blocks", type=int, default=1, help="leading ic-major blocks cut into --first-piece pieces")
    p.add_argument("--later-from", type=int, default=0, help="the ic-major block from which the oc-major columns load")
    p.add_argument("--last-rows", type=int, default=0, help="the last group's GEMM and STORE cut, the second part this many rows")
    p.add_argument("--bias-after", type=int, default=0, help="the bias LOAD after this many ic-major GEMMs")
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
                                              late_bias=args.late_bias, last_group=args.last_group, rows=args.rows,
                                              first_rows=args.first_rows, first_blocks=args.first_blocks,
                                              later_from=args.later_from, last_rows=args.last_rows, bias_after=args.bias_after)
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
    ep = Requantize(shift=requant_shift(wl))
    # The compiled layer twice: the best tiling (the tiled template alone) and the best resident setting.
    tiled = tune_conv2d(wl, target, 2, args.candidates, epilogue=ep, progress=True, resident=False)
    resident = [compile_conv2d(wl, target, knobs=kn, epilogue=ep) for kn in resident_space(wl, target, ep)]
    for compiled in [tiled] + resident:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "trace.json"
            ok, res, _, _ = check_conv2d(compiled, backend="cycle", trace=str(trace))
            costs = edge_costs(trace, gemm, res.cycles)
        if not ok:
            raise AssertionError(f"compiled {args.layer} ({compiled.knobs}) is not bit-exact vs NumPy")
        kn = compiled.knobs
        name = (f"compiled {kn.oc_tile}/{kn.oh_tile}/{kn.ic_tile} {kn.vt_axis}" if isinstance(kn, Conv2dKnobs)
                else "compiled resident")
        if name in rows and rows[name]["cycles"] <= res.cycles:  # type: ignore[operator]
            continue
        st = res.extra["stats"]
        rows[name] = {"cycles": res.cycles, "gemm_utilization": st["gemm_utilization"],
                      "memory_bound": st["memory_bound_cycles"], "instructions": compiled.module.program.insn_count,
                      "knobs": str(kn), **costs}
    print("\n" + host_line() + f"; the figures are the cycle model's ({cfg.name!r}, {cfg.clock_mhz:g} MHz)")
    print(f"{args.layer} {wl}: {gemm:,} GEMM cycles; edge schedule b1={args.b1}, first piece {args.first_piece}, "
          f"piece {args.piece}, group {args.group} (last {args.last_group}), "
          f"bias {'late' if args.late_bias else 'first'}: bit-exact on fsim and cycle; compiled: the best of "
          f"{'every tiling' if args.candidates <= 0 else f'{args.candidates} tilings'} and the best of the resident "
          f"template's {len(resident)} settings (resident_fit.resident_space)")
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
    out.write_text(json.dumps({"host": host_record(), "config": cfg.name, "layer": args.layer, "b1": args.b1, "first_piece": args.first_piece,
                               "piece": args.piece, "group": args.group,
                               "last_group": args.last_group, "late_bias": args.late_bias, "gemm_cycles": gemm, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
