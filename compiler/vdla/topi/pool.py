"""VDLA average pooling (global or windowed) as the conv2d schedule with identity weight tiles.

A packed activation ``(N/B, C/BI, H, W, B, BI)`` is, byte for byte, a batch of ``N*C/BI`` images of
BI channels each, so the window sums of an average pool are the conv2d of that batch (``ic = oc =
BI``) with one BLOCK_OUT x BLOCK_IN identity tile per window tap: the GEMM core adds the taps into
int32 accumulators.  The divide by the window size ``K`` is the conv epilogue's fixed-point
requantization: ``((sum + round) * mult) >> shift`` with ``mult * 2**-shift ~= 1/K`` (an ALU ADD
of the resident rounding tile, an ALU MUL by the resident multiplier tile, the STORE's shift and
clip).  Zero padding is counted in the divisor (``count_include_pad``).

This wastes BLOCK_IN x the useful MACs of a depthwise sum on the GEMM core, but a pool is a tiny
fraction of a network's work and the schedule, its tiling and its tuning are the conv2d's.

A **global** pool (one window over the whole image, no padding) has its own schedule
(:func:`global_pool_schedule`): the conv form runs one image (channel block) at a time, a LOAD per
row and a GEMM of H x W micro-ops per block, and its fixed costs dominate (ResNet-18's 512 x 7 x 7:
54,185 cycles for 3,136 cycles of DMA).  Here a tile is a chunk of channel blocks: one contiguous
LOAD of the chunk's ``blocks x H x W`` input tiles, one GEMM instruction summing every tap of every
block of the chunk (``iter_out`` = blocks, ``iter_in`` = rows, the micro-ops = columns, each block's
taps into its own accumulator tile), then the divide: ``(sum + round) * mult == sum * mult + round * mult``
in wrapping int32 arithmetic, so one ALU MUL over ``blocks`` tiles and the STORE adds ``round * mult`` as
its bias before the shift;
two virtual threads overlap one chunk's LOAD with the other's GEMM.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from vdla_hw.errors import UnsupportedError

from vdla.compiler import te
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.tir import IntImm, PrimFunc
from vdla.compiler.tir.ir import max_, min_

from ..build import VdlaModule, build
from ..intrin import GemmIntrin
from ..passes.fold_alu_store import ATTR as ALU_FOLD
from ..passes.fold_bias_init import ATTR as BIAS_INIT
from ..passes.fold_requant_store import ATTR as REQUANT_ON_STORE
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .epilogue import Requantize
from .ops import CompiledConv, compile_conv2d
from .reference import pack_bias
from .tiling import Conv2dWorkload


@dataclass(frozen=True)
class AvgPoolWorkload:
    """An average pool of a packed int8 ``(N, C, H, W)`` tensor: ``kh x kw`` windows, one stride and
    one padding for both axes, and the fixed-point divide ``((sum + round) * mult) >> shift``."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    mult: int = 1
    round: int = 0
    shift: int = 0

    @property
    def is_global(self) -> bool:
        """One window over the whole unpadded image (the global average pool): :func:`global_pool_schedule`."""
        return self.kh == self.h and self.kw == self.w and self.pad == 0

    def conv(self, block: int, batch: int) -> Conv2dWorkload:
        """The conv2d computing the window sums (channel blocks as images)."""
        return Conv2dWorkload(self.n * self.c // block, block, self.h, self.w, block, self.kh, self.kw,
                              self.stride, self.pad)


def compile_avg_pool(wl: AvgPoolWorkload, target: VdlaTarget | str = "default", virtual_threads: int = 2,
                     compile_conv=None) -> CompiledAvgPool | CompiledGlobalPool:  # type: ignore[no-untyped-def]
    """Compile ``wl``: a global pool with :func:`global_pool_schedule`, any other as the conv2d schedule, where
    ``compile_conv(conv_wl, target, epilogue)`` overrides the conv2d compile step (the graph compiler passes one
    that uses tuned knobs)."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    cfg = tgt.config
    if cfg.block_in != cfg.block_out:
        raise UnsupportedError(f"config {cfg.name!r} has BLOCK_IN={cfg.block_in} != BLOCK_OUT={cfg.block_out}: an "
                               f"identity weight tile needs them equal")
    if wl.c % cfg.block_in or wl.n % cfg.batch:
        raise UnsupportedError(f"average pool of {wl.n}x{wl.c} does not tile into BATCH={cfg.batch}, "
                               f"BLOCK_IN={cfg.block_in}", hint="pad the channels to a multiple of the block")
    if wl.is_global:
        return CompiledGlobalPool(wl, build(global_pool_func(wl, tgt), tgt))
    conv = wl.conv(cfg.block_in, cfg.batch)
    epilogue = Requantize(shift=wl.shift, relu=False, bias=True, multiplier=True)
    if compile_conv is not None:
        compiled = compile_conv(conv, tgt, epilogue)
    else:
        compiled = compile_conv2d(conv, tgt, epilogue=epilogue, virtual_threads=virtual_threads)
    return CompiledAvgPool(wl, compiled)


@dataclass(frozen=True)
class CompiledAvgPool:
    workload: AvgPoolWorkload
    compiled: CompiledConv

    def constants(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The identity weight tiles (one per tap), the rounding tile and the multiplier tile."""
        cfg = self.compiled.module.target.config
        wl, bi, bo = self.workload, cfg.block_in, cfg.block_out
        eye = np.zeros((1, 1, wl.kh, wl.kw, bo, bi), np.int8)
        eye[..., np.arange(bi), np.arange(bi)] = 1
        return (eye, pack_bias(cfg, np.full(bo, wl.round, np.int32)), pack_bias(cfg, np.full(bo, wl.mult, np.int32)))

    def bind(self, data: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        """The program with the constants (and the packed input, when given) in DRAM."""
        shape = self.compiled.module.params[0].shape
        x = np.zeros(shape, np.int8) if data is None else data.reshape(shape)
        return self.compiled.module.bind(x, *self.constants())

    def run_packed(self, data: np.ndarray, backend: str = "fsim", **options: object):  # type: ignore[no-untyped-def]
        """Run on a packed ``(N/B, C/BI, H, W, B, BI)`` input; returns the packed output and the run result."""
        cfg = self.compiled.module.target.config
        outs, result = self.compiled.module.run(data.reshape(self.compiled.module.params[0].shape), *self.constants(),
                                                backend=backend, **options)
        nb, cb = data.shape[:2]
        y = outs["out"]
        return y.reshape((nb, cb) + y.shape[2:4] + (cfg.batch, cfg.block_out)), result


def avg_pool_reference(data: np.ndarray, wl: AvgPoolWorkload, layout: str = "NCHW") -> np.ndarray:
    """NumPy: the graph operator ``qavg_pool2d``'s reference on an int8 array in ``layout``."""
    from vdla.compiler.graph.ops.qnn import qavg_pool_reference

    p = wl.pad
    return qavg_pool_reference([data], {"pool_size": (wl.kh, wl.kw), "strides": (wl.stride, wl.stride),
                                        "padding": (p, p, p, p), "layout": layout, "mult": wl.mult,
                                        "round": wl.round, "shift": wl.shift})


def global_pool_tiling(wl: AvgPoolWorkload, target: VdlaTarget) -> tuple[int, int]:
    """``(blocks per tile, threads)``: the largest chunk of channel blocks that fits a thread's half of the input
    buffer while leaving at least 8 chunks (or one per block) -- small chunks keep the last GEMM, ALU chain and
    STORE (what the DMA cannot hide) short, and each chunk is one LOAD, one GEMM, two ALU ops and one STORE, so
    their fixed costs stay small -- and two virtual threads when the chunks pair up."""
    cfg = target.config
    blocks = wl.c // cfg.block_in
    taps = wl.h * wl.w
    room = target.scope(SCOPE_INP).depth // 2
    if taps > room:
        raise UnsupportedError(f"a global pool over {wl.h}x{wl.w} needs {taps} input tiles per channel block; config "
                               f"{cfg.name!r}'s input buffer holds {2 * room} (two threads)")
    want = min(8, blocks)
    tile = max(d for d in range(1, blocks + 1) if blocks % d == 0 and d * taps <= room and blocks // d >= want)
    threads = 2 if (blocks // tile) % 2 == 0 else 1
    return tile, threads


def global_pool_schedule(wl: AvgPoolWorkload, target: VdlaTarget, name: str = "global_pool") -> Schedule:
    """The global average pool's schedule (module doc): per chunk of channel blocks one LOAD, one GEMM summing
    every tap into the block's accumulator tile, ``(sum + round) * mult`` on the ALU, the shift and clip on
    the STORE."""
    cfg = target.config
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    inp_t, wgt_t = target.scope(SCOPE_INP).dtype, target.scope(SCOPE_WGT).dtype
    acc_t, out_t = target.scope(SCOPE_ACC).dtype, target.out_dtype
    data = te.placeholder((wl.n // bt, wl.c // bi, wl.h, wl.w, bt, bi), inp_t, "data")
    eye = te.placeholder((1, 1, 1, 1, bo, bi), wgt_t, "eye")
    # The multiplier and the rounding term times the multiplier: (sum + r) * m == sum * m + r * m in wrapping
    # int32 arithmetic, so the rounding rides on the STORE's bias (fold_alu_store) after the ALU's MUL.
    consts = te.placeholder((2, bt, bo), acc_t, "consts")
    ry, rx, k = te.reduce_axis(wl.h, "ry"), te.reduce_axis(wl.w, "rx"), te.reduce_axis(bi, "k")
    shape = (wl.n // bt, wl.c // bi, 1, 1, bt, bo)
    sums = te.compute(shape, lambda n, c, y, x, t, j: te.sum(
        data[n, c, y + ry, x + rx, t, k].astype(acc_t) * eye[0, 0, 0, 0, j, k].astype(acc_t), axis=[ry, rx, k]),
        "sums")

    def stage(fn, prev: te.Tensor, label: str) -> te.Tensor:  # type: ignore[no-untyped-def]
        return te.compute(shape, lambda n, c, y, x, t, j: fn(prev[n, c, y, x, t, j], t, j), label)

    hi = (1 << (cfg.out_width - 1)) - 1
    stages = [stage(lambda v, t, j: v * consts[0, t, j], sums, "mult")]
    stages.append(stage(lambda v, t, j: v + consts[1, t, j], stages[-1], "round"))
    if wl.shift:
        stages.append(stage(lambda v, t, j: v // IntImm(1 << wl.shift, acc_t), stages[-1], "shr"))
    stages.append(stage(lambda v, t, j: max_(v, IntImm(-hi - 1, acc_t)), stages[-1], "clip_lo"))
    stages.append(stage(lambda v, t, j: min_(v, IntImm(hi, acc_t)), stages[-1], "clip_hi"))
    out = te.compute(shape, lambda n, c, y, x, t, j: stages[-1][n, c, y, x, t, j].astype(out_t), "out")

    s = create_schedule(out, [data, eye, consts, out], name)
    gemm = GemmIntrin(target)
    inp = s.cache_read(data, SCOPE_INP, [sums])
    wgt = s.cache_read(eye, SCOPE_WGT)
    s.cache_read(consts, SCOPE_ACC)  # resident: loaded once, up front
    acc = s.cache_write(sums, SCOPE_ACC)
    s.compute_inline(sums)
    for st in stages:
        s.compute_inline(st)
    tile, threads = global_pool_tiling(wl, target)
    n, c, y, x, b, j = s.get_loops(out)
    c_o, c_i = s.split(c, factor=tile)
    vthread = None
    if threads > 1:
        c_o, vthread = s.split(c_o, factor=threads)
    at = vthread if vthread is not None else c_o
    s.reorder(n, *([c_o, vthread] if vthread is not None else [c_o]), c_i, y, x, b, j)
    s.compute_at(acc, at)
    an, ac, ay, ax, ab, aj, ary, arx, ak = s.get_loops(acc)[-9:]
    s.reorder(an, ac, ay, ax, ary, arx, ab, aj, ak)
    init = s.decompose_reduction(acc, an)
    s.compute_at(inp, at)
    s.compute_at(wgt, n)
    s.compact_buffers()
    if vthread is not None:
        s.bind(vthread, "vthread")
    s.tensorize(s.get_loops(acc)[-3], gemm.update)
    s.tensorize(s.get_loops(init)[-2], gemm.reset)
    return s


def global_pool_func(wl: AvgPoolWorkload, target: VdlaTarget, name: str = "global_pool") -> PrimFunc:
    """The scheduled program of :func:`global_pool_schedule`, marked for the VDLA pipeline (requantization on the
    STORE; the rounding ADD stays an ALU op before the multiply)."""
    func = global_pool_schedule(wl, target, name).func
    attrs = (("target", "vdla"), ("config", target.config.name), ("workload", wl), (REQUANT_ON_STORE, True),
             (BIAS_INIT, False), (ALU_FOLD, "store"))
    return PrimFunc(func.name, func.params, func.body, attrs)


@dataclass(frozen=True)
class CompiledGlobalPool:
    """A global average pool compiled with :func:`global_pool_schedule`."""

    workload: AvgPoolWorkload
    module: VdlaModule

    def constants(self) -> tuple[np.ndarray, np.ndarray]:
        """The identity weight tile and the resident ``mult, round * mult`` tiles (int32, wrapping)."""
        cfg = self.module.target.config
        eye = np.eye(cfg.block_out, cfg.block_in, dtype=np.int8).reshape(1, 1, 1, 1, cfg.block_out, cfg.block_in)
        consts = np.empty((2, cfg.batch, cfg.block_out), np.int32)
        m = self.workload.mult
        consts[0], consts[1] = m, np.int64(self.workload.round * m).astype(np.int32)  # wraps as the ALU does
        return eye, consts

    def bind(self, data: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        """The program with the constants (and the packed input, when given) in DRAM."""
        shape = self.module.params[0].shape
        x = np.zeros(shape, np.int8) if data is None else data.reshape(shape)
        return self.module.bind(x, *self.constants())

    def run_packed(self, data: np.ndarray, backend: str = "fsim", **options: object):  # type: ignore[no-untyped-def]
        """Run on a packed ``(N/B, C/BI, H, W, B, BI)`` input; returns the packed output and the run result."""
        outs, result = self.module.run(data.reshape(self.module.params[0].shape), *self.constants(), backend=backend,
                                       **options)
        return outs["out"], result
