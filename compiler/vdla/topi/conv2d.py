"""VDLA conv2d: packed int8 conv2d + bias + ReLU + requantize as a tensor expression, and
its schedule for the accelerator built with the generic schedule primitives.

:func:`conv2d_compute` declares the operator in the packed layout (``reference.py``):
optional zero padding (or, for a strided 1x1 kernel, the row subsampling), the int32
reduction over input-channel blocks, kernel taps and BLOCK_IN lanes, then the epilogue
stages (bias add, ReLU, shift right, clip) and the narrowing cast.

:func:`conv2d_schedule` schedules it the way VTA does, step by step on the explicit loop
program (``Schedule.trace`` lists the steps; ``vdla compile-op --dump`` writes the
program after each): ``cache_read`` of the input, weights and bias into the ``vdla.inp``
/ ``vdla.wgt`` / ``vdla.acc`` scopes (the padding stage inlined into the input copy),
``cache_write`` of the reduction into ``vdla.acc`` with the epilogue stages inlined into
the result store, tiling of the output by the knobs and a ``bind`` of one tile axis to
virtual threads, ``compute_at`` of the reduction into the output tile and of the copies
into the input-channel chunk loop (or further out, where they do not depend on it),
``decompose_reduction`` of the accumulator reset, ``compact_buffers`` so every on-chip
buffer holds one tile, and ``tensorize`` of the inner (BATCH, BLOCK_OUT, BLOCK_IN) block
with the GEMM intrinsic (and the reset with its reset form).  The VDLA passes
(``pipeline.py``) take it from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from vdla_hw.errors import UnsupportedError

from vdla.compiler import te
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.tir import IntImm, PrimFunc, all_of
from vdla.compiler.tir.ir import max_, min_

from ..intrin import GemmIntrin
from ..passes.fold_bias_init import ATTR as BIAS_INIT
from ..passes.fold_bias_store import ATTR as BIAS_STORE
from ..passes.split_block import SPLIT_ATTR
from ..passes.fold_requant_store import ATTR as REQUANT_ON_STORE
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .epilogue import Requantize, Residual, scale_to_common
from .fit import check_knobs
from .tiling import Conv2dKnobs, Conv2dWorkload, geometry

Dump = Callable[[str, PrimFunc], None]


@dataclass(frozen=True)
class Conv2dTensors:
    """The tensors of :func:`conv2d_compute`: parameters, the stages to schedule, the result."""

    data: te.Tensor
    kernel: te.Tensor
    bias: te.Tensor | None
    out: te.Tensor
    source: te.Tensor
    """What the reduction reads: ``data`` or its padded / row-subsampled stage."""
    conv: te.Tensor
    epilogue: tuple[te.Tensor, ...]
    scale: te.Tensor | None = None
    """The per-channel multiplier tile (``Requantize.multiplier``)."""
    skip: te.Tensor | None = None
    """A fused residual add's second operand (``Requantize.residual``), packed like the output."""
    eye: te.Tensor | None = None
    """The identity weight tile that moves the skip into the accumulators."""
    consts: te.Tensor | None = None
    """The residual add's resident ``m_a, m_b, round`` tiles (when it has multipliers or rounding)."""
    move: te.Tensor | None = None
    """The skip moved into int32 accumulators (a reduction over BLOCK_IN with ``eye``)."""

    @property
    def params(self) -> list[te.Tensor]:
        extra = [t for t in (self.bias, self.scale, self.skip, self.eye, self.consts) if t is not None]
        return [self.data, self.kernel] + extra + [self.out]


def conv2d_compute(wl: Conv2dWorkload, target: VdlaTarget, epilogue: Requantize = Requantize()) -> Conv2dTensors:
    """The packed conv2d + epilogue of ``wl`` as tensor expressions."""
    cfg = target.config
    wl.check(cfg)
    b_, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    nb, icb, ocb = wl.n // b_, wl.ic // bi, wl.oc // bo
    kib = wl.ic_blocks(cfg)  # input blocks per output block: 1 for a depthwise (block-diagonal) layer
    inp_t, wgt_t = target.scope(SCOPE_INP).dtype, target.scope(SCOPE_WGT).dtype
    acc_t, out_t = target.scope(SCOPE_ACC).dtype, target.out_dtype
    s, p = wl.stride, wl.pad
    data = te.placeholder((nb, icb, wl.h, wl.w, b_, bi), inp_t, "data")
    per_image = (nb,) if wl.batched_weights else ()  # a batched matmul: each image (head) its own weights
    kernel = te.placeholder(per_image + (ocb, kib, wl.kh, wl.kw, bo, bi), wgt_t, "kernel")
    row_step = s
    if p:
        source = te.compute((nb, icb, wl.h + 2 * p, wl.w + 2 * p, b_, bi),
                            lambda n, c, y, x, b, k: te.if_then_else(
                                all_of(y >= p, y < wl.h + p, x >= p, x < wl.w + p),
                                data[n, c, y - p, x - p, b, k], IntImm(0, inp_t)), "data_pad")
    elif wl.kh == 1 and s > 1:
        # Only every s-th row is used: a stage of those rows lets the input copy fetch them
        # with a DRAM row stride instead of reading the rows in between.
        source = te.compute((nb, icb, wl.oh, wl.w, b_, bi),
                            lambda n, c, y, x, b, k: data[n, c, y * s, x, b, k], "data_rows")
        row_step = 1
    else:
        source = data
    ic = te.reduce_axis(kib, "ic")
    ky = te.reduce_axis(wl.kh, "ky")
    kx = te.reduce_axis(wl.kw, "kx")
    k = te.reduce_axis(bi, "k")
    dw = wl.depthwise
    conv = te.compute((nb, ocb, wl.oh, wl.ow, b_, bo), lambda n, o, y, x, b, j: te.sum(
        source[n, o + ic if dw else ic, y * row_step + ky, x * s + kx, b, k].astype(acc_t)
        * kernel[(n,) * len(per_image) + (o, ic, ky, kx, j, k)].astype(acc_t), axis=[ic, ky, kx, k]), "conv")
    shape = conv.shape
    stages: list[te.Tensor] = []
    x = conv
    bias = None
    if epilogue.bias:
        bias = te.placeholder((ocb, b_, bo), acc_t, "bias")
        x = _stage(shape, lambda v, o, b, j: v + bias[o, b, j], x, "bias_add")  # type: ignore[index]
        stages.append(x)
    hi = (1 << (cfg.out_width - 1)) - 1
    if epilogue.relu:
        x = _stage(shape, lambda v, *_: max_(v, IntImm(0, acc_t)), x, "relu")
        stages.append(x)
    scale = None
    if epilogue.multiplier:
        scale = te.placeholder((ocb, b_, bo), acc_t, "scale")
        x = _stage(shape, lambda v, o, b, j: v * scale[o, b, j], x, "scale_mul")  # type: ignore[index]
        stages.append(x)
    if epilogue.shift:
        x = _stage(shape, lambda v, *_: v // IntImm(1 << epilogue.shift, acc_t), x, "shr")
        stages.append(x)
    if not epilogue.relu or epilogue.multiplier:  # ReLU, then >> keeps values >= 0 (a multiplier may wrap)
        x = _stage(shape, lambda v, *_: max_(v, IntImm(-hi - 1, acc_t)), x, "clip_lo")
        stages.append(x)
    x = _stage(shape, lambda v, *_: min_(v, IntImm(hi, acc_t)), x, "clip_hi")
    stages.append(x)
    res = None if epilogue.residual is None else _residual_stages(epilogue.residual, x, shape, target)
    if res is not None:
        stages.extend(res[-1])
        x = stages[-1]
    out = te.compute(shape, lambda n, o, y, x_, b, j: x[n, o, y, x_, b, j].astype(out_t), "out")
    skip, eye, consts, move = res[:4] if res is not None else (None, None, None, None)
    return Conv2dTensors(data, kernel, bias, out, source, conv, tuple(stages), scale, skip, eye, consts, move)


def _residual_stages(r: Residual, a: te.Tensor, shape: tuple, target: VdlaTarget):  # type: ignore[no-untyped-def]
    """The fused residual add after the conv's int8-clamped value ``a`` (``Requantize.residual``): the skip
    placeholder, the identity tile, the constants, the moved skip and the stages ``a * m_a + b * m_b + round``,
    ``[ReLU]``, ``>> shift``, the clip -- the graph operator ``qadd`` term for term."""
    cfg = target.config
    if cfg.block_in != cfg.block_out:
        raise UnsupportedError(f"config {cfg.name!r} has BLOCK_IN={cfg.block_in} != BLOCK_OUT={cfg.block_out}: the "
                               f"identity GEMM that moves the residual operand into the accumulators needs them equal")
    if not 0 <= r.shift < cfg.acc_width or any(not -15 < k < cfg.acc_width for k in r.align):
        raise UnsupportedError(f"residual add shift {r.shift} is outside [0, {cfg.acc_width}) or an alignment "
                               f"{r.align} outside (-15, {cfg.acc_width})")
    b_, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    inp_t, wgt_t = target.scope(SCOPE_INP).dtype, target.scope(SCOPE_WGT).dtype
    acc_t = target.scope(SCOPE_ACC).dtype
    skip = te.placeholder(shape[:-1] + (bi,), inp_t, "skip")
    eye = te.placeholder((1, 1, 1, 1, bo, bi), wgt_t, "eye")
    consts = te.placeholder((3, b_, bo), acc_t, "res_consts") if r.consts else None
    k = te.reduce_axis(bi, "k")
    move = te.compute(shape, lambda n, o, y, x, b, j: te.sum(
        skip[n, o, y, x, b, k].astype(acc_t) * eye[0, 0, 0, 0, j, k].astype(acc_t), axis=k), "move_skip")

    fa = scale_to_common(a, 0, r.mult, r.align, consts, acc_t)
    fb = scale_to_common(move, 1, r.mult, r.align, consts, acc_t)
    x = te.compute(shape, lambda *i: fa(*i) + fb(*i), "res_sum")
    stages = [x]
    if r.round:
        x = _stage(shape, lambda v, o, b, j: v + consts[2, b, j], x, "res_round")  # type: ignore[index]
        stages.append(x)
    hi = (1 << (cfg.out_width - 1)) - 1
    if r.relu:
        x = _stage(shape, lambda v, *_: max_(v, IntImm(0, acc_t)), x, "res_relu")
        stages.append(x)
    if r.shift:
        x = _stage(shape, lambda v, *_: v // IntImm(1 << r.shift, acc_t), x, "res_shr")
        stages.append(x)
    if not r.relu:
        x = _stage(shape, lambda v, *_: max_(v, IntImm(-hi - 1, acc_t)), x, "res_clip_lo")
        stages.append(x)
    x = _stage(shape, lambda v, *_: min_(v, IntImm(hi, acc_t)), x, "res_clip_hi")
    stages.append(x)
    return skip, eye, consts, move, stages


def _stage(shape, fn, prev: te.Tensor, name: str) -> te.Tensor:  # type: ignore[no-untyped-def]
    """One element-wise epilogue stage: ``fn(prev[idx], o, b, j)``."""
    return te.compute(shape, lambda n, o, y, x, b, j: fn(prev[n, o, y, x, b, j], o, b, j), name)


def conv2d_schedule(wl: Conv2dWorkload, knobs: Conv2dKnobs, target: VdlaTarget, epilogue: Requantize = Requantize(),
                    name: str = "conv2d", dump: Dump | None = None) -> Schedule:
    """The schedule of one packed conv2d layer (parameters: data, kernel, [bias,] out).

    ``dump(step, func)``, when given, sees the program after every primitive.
    """
    check_knobs(wl, knobs, target, epilogue)
    g = geometry(wl, knobs, target.config)
    t = conv2d_compute(wl, target, epilogue)
    s = create_schedule(t.out, t.params, name)
    if dump is not None:
        s = _Traced(s, dump)
    gemm = GemmIntrin(target)

    # On-chip copies; the padding / row stage becomes the input copy's body.
    inp = s.cache_read(t.source, SCOPE_INP, [t.conv])
    if t.source is not t.data:
        s.compute_inline(t.source)
    wgt = s.cache_read(t.kernel, SCOPE_WGT)
    if t.bias is not None:
        s.cache_read(t.bias, SCOPE_ACC)  # the whole bias stays resident: loaded once, up front
    if t.scale is not None:
        s.cache_read(t.scale, SCOPE_ACC)  # so does the per-channel multiplier, stacked after the bias
    acc = s.cache_write(t.conv, SCOPE_ACC)
    s.compute_inline(t.conv)
    res = None
    if t.move is not None:  # a fused residual add: its operand's own LOAD stream and identity GEMM
        skip_inp = s.cache_read(t.skip, SCOPE_INP, [t.move])
        eye_wgt = s.cache_read(t.eye, SCOPE_WGT)
        if t.consts is not None:
            s.cache_read(t.consts, SCOPE_ACC)  # resident, after the bias and the multiplier
        move_acc = s.cache_write(t.move, SCOPE_ACC)
        s.compute_inline(t.move)
        res = (skip_inp, eye_wgt, move_acc)
    for stage in t.epilogue:
        s.compute_inline(stage)

    # Output tiles; the outer tile axis first (loop_order), one axis split across virtual threads.
    # Column tiles belong to the row axis (inside its tiles, outside its virtual thread), so the
    # input copy placed at that axis's innermost loop covers one row x column tile.
    n, o, y, x, b, j = s.get_loops(t.out)
    o_o, o_i = s.split(o, factor=knobs.oc_tile)
    y_o, y_i = s.split(y, factor=knobs.oh_tile)
    x_o, x_i = (None, x) if g.ow_tiles == 1 else s.split(x, factor=g.ow_tile)
    axes = {"oc": [o_o], "oh": [y_o]}
    vthread = None
    if knobs.virtual_threads > 1:
        outer, vthread = s.split(axes[knobs.vt_axis][0], factor=knobs.virtual_threads)
        axes[knobs.vt_axis] = [outer, vthread]
    if x_o is not None:
        axes["oh"].insert(1, x_o)
    first, second = ("oc", "oh") if knobs.loop_order == "oc_oh" else ("oh", "oc")
    tile_loops = [n] + axes[first] + axes[second]
    s.reorder(*tile_loops, o_i, y_i, x_i, b, j)
    s.compute_at(acc, tile_loops[-1])

    # The reduction: input-channel chunks outside, the GEMM block (b, j, k) innermost.
    an, ao, ay, ax, ab, aj, aic, aky, akx, ak = s.get_loops(acc)[-10:]
    ic_o, ic_i = s.split(aic, factor=knobs.ic_tile)
    s.reorder(ic_o, an, ao, ay, ax, ic_i, aky, akx, ab, aj, ak)
    init = s.decompose_reduction(acc, ic_o)

    # Copies: per chunk, or -- with one chunk -- at the innermost loop of the tile axis they depend on.
    at = {"wgt": ic_o, "inp": ic_o}
    if g.ic_chunks == 1:
        # A depthwise input tile holds the output-channel tile's own blocks: inside both tile axes.
        at = {"wgt": axes["oc"][-1], "inp": tile_loops[-1] if wl.depthwise else axes["oh"][-1]}
    s.compute_at(wgt, at["wgt"])
    s.compute_at(inp, at["inp"])
    move_init = None
    if res is not None:
        # The skip tile of this output tile: loaded beside the conv's input, moved into its own
        # accumulator tile after the reduction; the identity tile once per image block.
        skip_inp, eye_wgt, move_acc = res
        s.compute_at(move_acc, tile_loops[-1])
        move_init = s.decompose_reduction(move_acc, s.get_loops(move_acc)[-7])
        s.compute_at(skip_inp, tile_loops[-1])
        s.compute_at(eye_wgt, n)

    s.compact_buffers()
    if vthread is not None:
        s.bind(vthread, "vthread")
    s.tensorize(s.get_loops(acc)[-3], gemm.update)
    s.tensorize(s.get_loops(init)[-2], gemm.reset)
    if res is not None:
        s.tensorize(s.get_loops(res[2])[-3], gemm.update)
        s.tensorize(s.get_loops(move_init)[-2], gemm.reset)
    return s


class _Traced(Schedule):
    """A schedule that hands the program to ``dump`` after every primitive."""

    def __init__(self, s: Schedule, dump: Dump):
        super().__init__(s.func, s._blocks)
        self._dump = dump
        dump("te", s.func)

    def _apply(self, text, fn):  # type: ignore[no-untyped-def]
        out = super()._apply(text, fn)
        self._dump(text, self.func)
        return out


def conv2d_func(wl: Conv2dWorkload, knobs: Conv2dKnobs, target: VdlaTarget, epilogue: Requantize = Requantize(),
                name: str = "conv2d", dump: Dump | None = None) -> PrimFunc:
    """The scheduled program of :func:`conv2d_schedule`, with the workload and knobs as attributes."""
    func = conv2d_schedule(wl, knobs, target, epilogue, name, dump).func
    attrs = (("target", "vdla"), ("config", target.config.name), ("workload", wl), ("knobs", knobs),
             (REQUANT_ON_STORE, epilogue.on_store), (BIAS_INIT, epilogue.bias_init),
             (BIAS_STORE, epilogue.bias_on_store), (SPLIT_ATTR, epilogue.splits_edges))
    return PrimFunc(func.name, func.params, func.body, attrs)


