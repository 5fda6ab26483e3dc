"""Hand-built reference workloads for the accelerator.

:func:`tiled_gemm_program` is the demo's and the benchmarks' workload: a tiled
int8 matrix multiply with bias, ReLU and requantization (shift right, clip to
the output range), written with the program builder and synchronized with
dependency tokens.  With two virtual threads the SRAM is split into ping-pong
regions so the loads of one chunk overlap the GEMM of the previous one and the
store of one output tile overlaps the compute of the next -- the latency
hiding the cycle model measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import LOOP_ITER_W, AluOp, MemType, Uop

from vdla.runtime.program import Program, ProgramBuilder

_MAX_ITER = (1 << LOOP_ITER_W) - 1


@dataclass(frozen=True)
class GemmTiling:
    """Chunk sizes in tiles: ``tm`` row tiles, ``tn`` output-channel tiles, ``tk`` reduction tiles."""

    tm: int
    tn: int
    tk: int


def _largest_divisor(n: int, limit: int) -> int:
    return max((d for d in range(1, min(n, limit) + 1) if n % d == 0), default=0)


def choose_tiling(cfg: HwConfig, mb: int, kb: int, nb: int, virtual_threads: int) -> GemmTiling:
    """The largest chunks (in tiles) whose ping-pong regions fit the SRAM buffers."""
    vt = virtual_threads
    inp_budget = cfg.inp_buff_depth // vt
    wgt_budget = cfg.wgt_buff_depth // vt
    acc_budget = (cfg.acc_buff_depth - nb) // vt
    tk = _largest_divisor(kb, min(inp_budget, wgt_budget))
    tn = _largest_divisor(nb, min(wgt_budget // max(tk, 1), acc_budget, _MAX_ITER))
    tm = _largest_divisor(mb, min(inp_budget // max(tk, 1), acc_budget // max(tn, 1), _MAX_ITER))
    if not (tk and tn and tm):
        raise ValueError(
            f"a {mb}x{kb}x{nb}-tile GEMM does not fit config {cfg.name!r} with {vt} virtual thread(s): the "
            f"accumulator buffer ({cfg.acc_buff_depth} tiles) must hold the {nb}-tile bias plus {vt} output tile(s)"
        )
    return GemmTiling(tm, tn, tk)


def _check_tiling(cfg: HwConfig, t: GemmTiling, mb: int, kb: int, nb: int, vt: int) -> None:
    if mb % t.tm or kb % t.tk or nb % t.tn:
        raise ValueError(f"tiling {t} must divide the problem ({mb}x{kb}x{nb} tiles)")
    fits = (vt * t.tm * t.tk <= cfg.inp_buff_depth and vt * t.tn * t.tk <= cfg.wgt_buff_depth
            and vt * t.tm * t.tn + nb <= cfg.acc_buff_depth and max(t.tm, t.tn) <= _MAX_ITER)
    if not fits:
        raise ValueError(f"tiling {t} with {vt} virtual thread(s) does not fit the SRAM buffers of {cfg.name!r}")


def reference_output(cfg: HwConfig, a: np.ndarray, b: np.ndarray, bias: np.ndarray, shift: int) -> np.ndarray:
    """NumPy reference: clip((relu(a @ b + bias)) >> shift) to the output width."""
    from vdla.simulator.packing import dtype_for, wrap

    acc = wrap(a.astype(np.int64) @ b.astype(np.int64) + bias.astype(np.int64)[None, :], cfg.acc_width).astype(np.int64)
    lo, hi = -(1 << (cfg.out_width - 1)), (1 << (cfg.out_width - 1)) - 1
    return np.clip(np.maximum(acc, 0) >> shift, lo, hi).astype(dtype_for(cfg.out_width))


def tiled_gemm_program(cfg: HwConfig, m: int, k: int, n: int, *, virtual_threads: int = 1, seed: int = 0,
                       tiling: GemmTiling | None = None, shift: int | None = None) -> tuple[Program, np.ndarray]:
    """A tiled ``(m x k) @ (k x n)`` int8 GEMM + bias + ReLU + requantize program and its expected output.

    ``m`` must be a multiple of BATCH, ``k`` of BLOCK_IN and ``n`` of BLOCK_OUT.
    ``virtual_threads`` (1 or 2) is the number of ping-pong SRAM regions; ``tiling``
    overrides the chunk sizes (default: the largest that fit).  The program's buffers
    are ``inp`` (m, k), ``wgt`` (n, k) = b.T, ``bias`` and ``out`` (m, n).
    """
    if virtual_threads not in (1, 2):
        raise ValueError(f"virtual_threads must be 1 or 2, got {virtual_threads}")
    if m % cfg.batch or k % cfg.block_in or n % cfg.block_out or min(m, k, n) <= 0:
        raise ValueError(
            f"m={m}, k={k}, n={n} must be positive multiples of BATCH={cfg.batch}, BLOCK_IN={cfg.block_in} "
            f"and BLOCK_OUT={cfg.block_out} on config {cfg.name!r}"
        )
    vt = virtual_threads
    mb, kb, nb = m // cfg.batch, k // cfg.block_in, n // cfg.block_out
    t = tiling or choose_tiling(cfg, mb, kb, nb, vt)
    _check_tiling(cfg, t, mb, kb, nb, vt)

    rng = np.random.default_rng(seed)
    ilo, ihi = -(1 << (cfg.inp_width - 1)), (1 << (cfg.inp_width - 1))
    wlo, whi = -(1 << (cfg.wgt_width - 1)), (1 << (cfg.wgt_width - 1))
    a = rng.integers(ilo, ihi, size=(m, k))
    b = rng.integers(wlo, whi, size=(k, n))
    bias_span = 1 << (cfg.inp_width + cfg.wgt_width + 2)
    bias = rng.integers(-bias_span, bias_span, size=n)
    if shift is None:
        spread = math.sqrt(k) * (ihi / math.sqrt(3)) * (whi / math.sqrt(3))
        shift = max(0, round(math.log2(spread)) - (cfg.out_width - 2))

    pb = ProgramBuilder(cfg)
    inp = pb.alloc("inp", "inp", (m, k), a)
    wgt = pb.alloc("wgt", "wgt", (n, k), b.T)
    bias_buf = pb.alloc("bias", "acc", (cfg.batch, n), np.broadcast_to(bias, (cfg.batch, n)))
    out = pb.alloc("out", "out", (m, n))

    # SRAM regions: vt ping-pong copies of each chunk; the bias row sits after the accumulator tiles.
    inp_base = [r * t.tm * t.tk for r in range(vt)]
    wgt_base = [r * t.tn * t.tk for r in range(vt)]
    acc_base = [r * t.tm * t.tn for r in range(vt)]
    bias_base = vt * t.tm * t.tn
    uops: list[Uop] = []

    def place(lst: list[Uop]) -> tuple[int, int]:
        uops.extend(lst)
        return len(uops) - len(lst), len(uops)

    tile_uop = [place([Uop(acc_base[r], 0, 0)]) for r in range(vt)]
    gemm_uop = {(ra, rl): place([Uop(acc_base[ra], inp_base[rl] + kk, wgt_base[rl] + kk) for kk in range(t.tk)])
                for ra in range(vt) for rl in range(vt)}
    bias_uop = {(ra, nj): place([Uop(acc_base[ra], bias_base + nj * t.tn, 0)]) for ra in range(vt) for nj in range(nb // t.tn)}
    if len(uops) > cfg.uop_buff_depth:
        raise ValueError(f"{len(uops)} micro-ops exceed the {cfg.uop_buff_depth}-entry micro-op buffer; use larger tiles")
    pb.load_uops(pb.uops(uops, "uops"))
    pb.load(MemType.ACC, bias_base, bias_buf.addr, 1, nb, nb)

    def f(iters: int, factor: int) -> int:
        return factor if iters > 1 else 0  # a factor of a one-iteration loop is irrelevant; keep it encodable

    loop = {"iter_out": t.tm, "iter_in": t.tn}
    tile_dst = (f(t.tm, t.tn), f(t.tn, 1))
    jobs = [(mi, nj) for mi in range(mb // t.tm) for nj in range(nb // t.tn)]
    kchunks = kb // t.tk
    nchunks = len(jobs) * kchunks
    lo, hi = -(1 << (cfg.out_width - 1)), (1 << (cfg.out_width - 1)) - 1
    c = 0
    for j, (mi, nj) in enumerate(jobs):
        ra = j % vt
        pb.gemm(*tile_uop[ra], **loop, dst_factor=tile_dst, reset=True, pop_next=j >= vt)
        for kc in range(kchunks):
            rl = c % vt
            pb.load(MemType.INP, inp_base[rl], inp.addr + mi * t.tm * kb + kc * t.tk, t.tm, t.tk, kb, pop_next=c >= vt)
            pb.load(MemType.WGT, wgt_base[rl], wgt.addr + nj * t.tn * kb + kc * t.tk, t.tn, t.tk, kb, push_next=True)
            pb.gemm(*gemm_uop[(ra, rl)], **loop, dst_factor=tile_dst, src_factor=(f(t.tm, t.tk), 0),
                    wgt_factor=(0, f(t.tn, t.tk)), pop_prev=True, push_prev=c + vt < nchunks)
            c += 1
        pb.alu(AluOp.ADD, *bias_uop[(ra, nj)], **loop, dst_factor=tile_dst, src_factor=(0, f(t.tn, 1)))
        pb.alu(AluOp.MAX, *tile_uop[ra], imm=0, **loop, dst_factor=tile_dst)
        pb.alu(AluOp.SHR, *tile_uop[ra], imm=shift, **loop, dst_factor=tile_dst)
        pb.alu(AluOp.MIN, *tile_uop[ra], imm=hi, **loop, dst_factor=tile_dst)
        pb.alu(AluOp.MAX, *tile_uop[ra], imm=lo, **loop, dst_factor=tile_dst, push_next=True)
        pb.store(acc_base[ra], out.addr + mi * t.tm * nb + nj * t.tn, t.tm, t.tn, nb, pop_prev=True,
                 push_prev=j + vt < len(jobs) or j == len(jobs) - 1)
    pb.finish(pop_next=True)
    return pb.build(), reference_output(cfg, a, b, bias, shift)
