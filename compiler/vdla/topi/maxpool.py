"""VDLA int8 max pooling: one identity GEMM per window tap, an ALU MAX chain, a plain STORE.

The ALU reads only the accumulator SRAM, so each window tap ``(i, j)`` of an output tile is
moved into its own int32 accumulator tile through the GEMM core with a BLOCK_OUT x BLOCK_IN
identity weight tile (exact), and the ALU folds the taps with in-place MAX instructions.

**Padding.**  Max pooling pads with the minimum, but the LOAD pads with zeros, which would win
over an all-negative window.  The exact fix is an offset that only real elements get: a constant
*indicator* tensor ``ind`` (one channel block, ``H x W``, every element 64) is loaded with the
same zero padding as the data and moved through a ``2 * I`` weight tile, so its tap tile holds
128 where the tap is inside the image and 0 where it is padding.  Each tap is then
``x + 128 in [0, 255]`` inside and ``0`` in the padding: a padding tap never exceeds a real one
(a tie at 0 means a real -128, the same maximum), and since ``pad < window`` every window has a
real tap.  The ALU adds the two tiles per tap, takes the MAX, and subtracts 128 (an immediate)::

    acc_t = move(x_tap) [+ move(ind_tap)]                  (GEMM, identity / 2 * identity)
    m     = max(acc_0, acc_1, ..., acc_{K-1}) [- 128]      (ALU ADD / MAX / ADD imm, in place)
    out   = int8(m)                                         (STORE: plain narrowing, m is in range)

Without padding the indicator, its moves and the offset are left out.  A clamp ``[lo, hi]`` after the max
(ReLU, ReLU6, clip) is two more ALU immediates or the STORE's ReLU; with a 1x1 window and stride 1
the kernel is a standalone int8 ReLU / clip (one identity GEMM, the clamp, the STORE).  The result is bit-exact
against the graph's ``max_pool2d`` on int8 (NumPy), and the kernel is a tensor expression
scheduled and tensorized like the residual add (``topi/eltwise.py``): no hand-built instructions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from vdla_hw.errors import UnsupportedError

from vdla.compiler import te
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.tir import IntImm, PrimFunc
from vdla.compiler.tir.ir import all_of, max_, min_

from ..build import VdlaModule, build
from ..intrin import GemmIntrin
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .eltwise import alu_kernel_func, identity_tile, tensorize_moves

#: The indicator's value and its weight: a real tap gets ``IND_VALUE * IND_WEIGHT`` added, padding 0.
IND_VALUE, IND_WEIGHT = 64, 2
OFFSET = IND_VALUE * IND_WEIGHT


@dataclass(frozen=True)
class MaxPoolWorkload:
    """A max pool of a packed int8 ``(N, C, H, W)`` tensor: ``kh x kw`` windows, one stride and one
    (minimum-valued) padding for both axes."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    lo: int = -128
    """A clamp after the max, ``min(max(m, lo), hi)``: a ReLU / ReLU6 / clip folds in; with a 1x1 window
    the kernel is a standalone int8 ReLU or clip."""
    hi: int = 127

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.kh) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.kw) // self.stride + 1

    def check(self, cfg) -> None:  # type: ignore[no-untyped-def]
        """Raise :class:`UnsupportedError` unless the pool maps onto ``cfg``'s tiles."""
        if cfg.block_in != cfg.block_out:
            raise UnsupportedError(f"config {cfg.name!r} has BLOCK_IN={cfg.block_in} != BLOCK_OUT={cfg.block_out}: "
                                   f"the identity GEMM that moves int8 tiles into the accumulators needs them equal")
        if self.n % cfg.batch or self.c % cfg.block_in or min(self.n, self.c, self.h, self.w) <= 0:
            raise UnsupportedError(f"max pool of {self.n}x{self.c}x{self.h}x{self.w} does not tile into "
                                   f"BATCH={cfg.batch}, BLOCK={cfg.block_in}",
                                   hint="pad the channels to a multiple of the block")
        if min(self.kh, self.kw, self.stride) <= 0 or self.pad < 0 or self.pad >= min(self.kh, self.kw):
            raise UnsupportedError(f"max pool window {self.kh}x{self.kw}, stride {self.stride}, padding {self.pad}: "
                                   f"the padding must be smaller than the window (a window of padding only has "
                                   f"no maximum)")
        if min(self.oh, self.ow) <= 0:
            raise UnsupportedError(f"max pool window {self.kh}x{self.kw} is larger than the padded "
                                   f"{self.h}x{self.w} input")
        if self.pad > 15:
            raise UnsupportedError(f"padding {self.pad} exceeds the LOAD's 4-bit padding fields")
        top = (1 << (cfg.out_width - 1)) - 1
        if not -top - 1 <= self.lo <= self.hi <= top:
            raise UnsupportedError(f"clamp bounds [{self.lo}, {self.hi}] are not an interval inside the int"
                                   f"{cfg.out_width} range [{-top - 1}, {top}]")


@dataclass(frozen=True)
class MaxPoolTensors:
    """The tensors of :func:`max_pool_compute`: parameters, the padded stages, the per-tap moves (with
    padding interleaved: data tap, indicator tap), the MAX chain, the result."""

    data: te.Tensor
    eye: te.Tensor
    ind: te.Tensor | None
    eye2: te.Tensor | None
    sources: tuple[te.Tensor, ...]
    moves: tuple[te.Tensor, ...]
    stages: tuple[te.Tensor, ...]
    out: te.Tensor

    @property
    def params(self) -> list[te.Tensor]:
        extra = [self.ind, self.eye2] if self.ind is not None else []
        return [self.data, self.eye, *extra, self.out]  # type: ignore[list-item]


def max_pool_compute(wl: MaxPoolWorkload, target: VdlaTarget) -> MaxPoolTensors:
    """The packed max pool of ``wl`` as tensor expressions."""
    cfg = target.config
    wl.check(cfg)
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    inp_t, wgt_t = target.scope(SCOPE_INP).dtype, target.scope(SCOPE_WGT).dtype
    acc_t, out_t = target.scope(SCOPE_ACC).dtype, target.out_dtype
    s, p = wl.stride, wl.pad
    shape = (wl.n // bt, wl.c // bi, wl.oh, wl.ow, bt, bo)
    data = te.placeholder((wl.n // bt, wl.c // bi, wl.h, wl.w, bt, bi), inp_t, "data")
    eye = te.placeholder((1, 1, 1, 1, bo, bi), wgt_t, "eye")
    ind = eye2 = None

    def padded(x: te.Tensor, name: str) -> te.Tensor:
        if not p:
            return x
        return te.compute(x.shape[:2] + (wl.h + 2 * p, wl.w + 2 * p) + x.shape[4:],
                          lambda n, c, y, x_, b, k: te.if_then_else(
                              all_of(y >= p, y < wl.h + p, x_ >= p, x_ < wl.w + p),
                              x[n, c, y - p, x_ - p, b, k], IntImm(0, inp_t)), name)

    src = padded(data, "data_pad")
    sources = [src] if p else []
    if p:
        ind = te.placeholder((1, 1, wl.h, wl.w, bt, bi), inp_t, "ind")
        eye2 = te.placeholder((1, 1, 1, 1, bo, bi), wgt_t, "eye2")
        ind_src = padded(ind, "ind_pad")
        sources.append(ind_src)

    def move(x: te.Tensor, w: te.Tensor, i: int, j: int, name: str, per_image: bool) -> te.Tensor:
        # Tap (i, j) of every output through the weight tile ``w``; the indicator (not per_image) is one
        # block that every image and channel block shares.
        k = te.reduce_axis(bi, "k")
        if per_image:
            return te.compute(shape, lambda n, c, y, x_, t, o: te.sum(
                x[n, c, y * s + i, x_ * s + j, t, k].astype(acc_t) * w[0, 0, 0, 0, o, k].astype(acc_t), axis=k), name)
        return te.compute(shape, lambda n, c, y, x_, t, o: te.sum(
            x[0, 0, y * s + i, x_ * s + j, t, k].astype(acc_t) * w[0, 0, 0, 0, o, k].astype(acc_t), axis=k), name)

    moves: list[te.Tensor] = []
    taps = []
    for i in range(wl.kh):
        for j in range(wl.kw):
            mv = move(src, eye, i, j, f"tap_{i}_{j}", True)
            moves.append(mv)
            if p:
                mi = move(ind_src, eye2, i, j, f"ind_{i}_{j}", False)
                moves.append(mi)
                taps.append(lambda n, c, y, x_, t, o, mv=mv, mi=mi: mv[n, c, y, x_, t, o] + mi[n, c, y, x_, t, o])
            else:
                taps.append(lambda n, c, y, x_, t, o, mv=mv: mv[n, c, y, x_, t, o])

    def fold(*idx):  # type: ignore[no-untyped-def]
        e = taps[0](*idx)
        for tap in taps[1:]:
            e = max_(e, tap(*idx))
        if p:
            e = e + IntImm(-OFFSET, acc_t)
        top = (1 << (cfg.out_width - 1)) - 1
        if wl.lo > -top - 1:
            e = max_(e, IntImm(wl.lo, acc_t))
        if wl.hi < top:
            e = min_(e, IntImm(wl.hi, acc_t))
        return e

    m = te.compute(shape, fold, "max")
    out = te.compute(shape, lambda *i: m[i].astype(out_t), "out")
    return MaxPoolTensors(data, eye, ind, eye2, tuple(sources), tuple(moves), (m,), out)


def max_pool_rows_per_tile(wl: MaxPoolWorkload, target: VdlaTarget) -> int:
    """Output rows of one tile: as many as fit the accumulator buffer (one tile per tap, two with
    padding) and the input buffer (the window rows of the data, and of the indicator with padding)."""
    cfg = target.config
    taps = wl.kh * wl.kw * (2 if wl.pad else 1)
    acc_tiles = target.scope(SCOPE_ACC).depth
    inp_tiles = target.scope(SCOPE_INP).depth // (2 if wl.pad else 1)
    wp = wl.w + 2 * wl.pad

    def fits(rows: int) -> bool:
        return rows * wl.ow * taps <= acc_tiles and ((rows - 1) * wl.stride + wl.kh) * wp <= inp_tiles

    rows = wl.oh
    while rows > 1 and not (fits(rows) and wl.oh % rows == 0):
        rows -= 1
    if not fits(rows):
        raise UnsupportedError(f"one output row of the {wl.kh}x{wl.kw} max pool ({wl.ow} tiles x {taps} taps, "
                               f"{wl.kh} input rows of {wp}) does not fit config {cfg.name!r}'s buffers")
    return rows


def max_pool_schedule(wl: MaxPoolWorkload, target: VdlaTarget, name: str = "max_pool") -> Schedule:
    """Schedule: per (image block, channel block, row tile) load the window rows into the input
    buffer, move every tap into its accumulator tile with the identity GEMM, fold them on the ALU,
    STORE."""
    t = max_pool_compute(wl, target)
    s = create_schedule(t.out, t.params, name)
    gemm = GemmIntrin(target)
    data_moves = t.moves[::2] if wl.pad else t.moves
    ind_moves = t.moves[1::2] if wl.pad else ()
    src = t.sources[0] if wl.pad else t.data
    inps = [s.cache_read(src, SCOPE_INP, list(data_moves))]
    if wl.pad:
        inps.append(s.cache_read(t.sources[1], SCOPE_INP, list(ind_moves)))
        for x in t.sources:
            s.compute_inline(x)
    wgts = [s.cache_read(t.eye, SCOPE_WGT)] + ([s.cache_read(t.eye2, SCOPE_WGT)] if t.eye2 is not None else [])
    accs = [s.cache_write(m, SCOPE_ACC) for m in t.moves]
    for m in t.moves:
        s.compute_inline(m)
    for stage in t.stages:
        s.compute_inline(stage)
    n, c, y, x, b, j = s.get_loops(t.out)
    y_o, y_i = s.split(y, factor=max_pool_rows_per_tile(wl, target))
    s.reorder(n, c, y_o, y_i, x, b, j)
    tensorize_moves(s, gemm, accs, wgts, inps, n, y_o)
    return s


def max_pool_func(wl: MaxPoolWorkload, target: VdlaTarget, name: str = "max_pool") -> PrimFunc:
    return alu_kernel_func(max_pool_schedule(wl, target, name), wl, target)


@dataclass(frozen=True)
class CompiledMaxPool:
    workload: MaxPoolWorkload
    module: VdlaModule

    def constants(self) -> tuple[np.ndarray, ...]:
        """The identity weight tile and, with padding, the indicator tensor and its ``2 * I`` tile."""
        cfg = self.module.target.config
        eye = identity_tile(cfg)
        if not self.workload.pad:
            return (eye,)
        ind = np.full(self.module.params[2].shape, IND_VALUE, np.int8)
        return eye, ind, (eye * IND_WEIGHT).astype(np.int8)

    def bind(self, data: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        """The program with the constants (and the packed input, when given) in DRAM."""
        shape = self.module.params[0].shape
        return self.module.bind(np.zeros(shape, np.int8) if data is None else data.reshape(shape), *self.constants())

    def run_packed(self, data: np.ndarray, backend: str = "fsim", **options: object):  # type: ignore[no-untyped-def]
        outs, result = self.module.run(data.reshape(self.module.params[0].shape), *self.constants(),
                                       backend=backend, **options)
        return outs["out"], result


def compile_max_pool(wl: MaxPoolWorkload, target: VdlaTarget | str = "default") -> CompiledMaxPool:
    """Schedule, lower and generate the program of one max pool."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    return CompiledMaxPool(wl, build(max_pool_func(wl, tgt), tgt))


def max_pool_reference(data: np.ndarray, wl: MaxPoolWorkload, layout: str = "NCHW") -> np.ndarray:
    """NumPy: the graph operator ``max_pool2d``'s reference (padding never the maximum) on an int8 array in
    ``layout``."""
    from vdla.compiler.graph.ops.registry import get_op

    op = get_op("max_pool2d")
    p = wl.pad
    attrs = op.make_attrs({"pool_size": (wl.kh, wl.kw), "strides": (wl.stride, wl.stride), "padding": (p, p, p, p),
                           "layout": layout})
    return np.clip(op.reference([data], attrs), wl.lo, wl.hi).astype(np.int8)
