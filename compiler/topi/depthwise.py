"""Depthwise 2-D convolution: every channel is convolved with its own filter.

Two layouts: plain NCHW (data ``[N, C, H, W]``, weights ``[C, 1, KH, KW]``), whose schedule
vectorizes output columns and unrolls the kernel width; and channel-blocked NCHWc (data
``[N, C/cb, H, W, cb]``, weights ``[C/cb, KH, KW, cb]``), what the CPU graph uses between blocked
convs, whose schedule vectorizes the channel block and keeps a tile of output columns in
registers (strided convs vectorize as well as unit-stride ones, the channels being contiguous).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import ComputeOp, Tensor
from .conv2d import pad_nchw
from .conv2d_nchwc import _pair, conv_out_size, pad_nchwc
from .utils import (TopiError, const_shape, largest_divisor, schedule_elementwise, vector_lanes,
                    vector_registers)


def depthwise_conv2d_nchw(data: Tensor, kernel: Tensor, stride: int | tuple[int, int] = 1,
                          padding: int | tuple[int, int] = 0,
                          name: str = "depthwise_conv2d") -> Tensor:
    """``out[n, c, y, x] = sum(pad(data)[n, c, y*sh+ky, x*sw+kx] * kernel[c, 0, ky, kx])``."""
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    if sh == 0 or sw == 0:
        raise TopiError("stride must be positive")
    n, c, h, w = const_shape(data)
    kc, mult, kh, kw = const_shape(kernel)
    if kc != c or mult != 1:
        raise TopiError(f"depthwise kernel must be [{c}, 1, KH, KW], got {[kc, mult, kh, kw]} "
                        f"(channel multipliers other than 1 are not supported)")
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    padded = pad_nchw(data, ph, pw, name=f"{name}_pad")
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute((n, c, oh, ow),
                      lambda b, ch, y, x: te.sum(padded[b, ch, y * sh + ry, x * sw + rx] *
                                                 kernel[ch, 0, ry, rx], axis=[ry, rx]),
                      name=name)


@dataclass(frozen=True)
class DepthwiseKnobs:
    """``ow_vector``: output columns per vector; ``unroll_kw``: unroll the kernel width;
    ``parallel``: run channels x rows on all threads."""

    ow_vector: int
    unroll_kw: bool = True
    parallel: bool = True


def default_depthwise_knobs(out: Tensor, target: Target | None = None) -> DepthwiseKnobs:
    return DepthwiseKnobs(ow_vector=min(vector_lanes(target), const_shape(out)[3]))


def schedule_depthwise_conv2d_nchw(out: Tensor, knobs: DepthwiseKnobs | None = None,
                                   s: Schedule | None = None,
                                   target: Target | None = None) -> Schedule:
    s = s or create_schedule(out)
    knobs = knobs or default_depthwise_knobs(out, target)
    if knobs.ow_vector < 1:
        raise TopiError("ow_vector must be positive")
    pad = out.op.input_tensors()[0]
    if isinstance(pad.op, ComputeOp):
        schedule_elementwise(s, pad, vector_lanes(target), knobs.parallel)
    b, c, y, x, ry, rx = s.get_loops(out)
    xo, xi = s.split(x, factor=knobs.ow_vector)
    s.reorder(b, c, y, xo, ry, rx, xi)
    s.vectorize(xi)
    if knobs.unroll_kw:
        s.unroll(rx)
    fused = s.fuse(b, c, y)
    if knobs.parallel:
        s.parallel(fused)
    return s


# ---- channel-blocked layout ---------------------------------------------------------------------
def depthwise_conv2d_nchwc(data: Tensor, kernel: Tensor, stride: int | tuple[int, int] = 1,
                           padding: int | tuple[int, int] = 0,
                           name: str = "depthwise_conv2d_nchwc") -> Tensor:
    """Depthwise conv of channel-blocked data ``[N, C/cb, H, W, cb]`` with weights ``[C/cb, KH, KW, cb]``:
    ``out[n, c, y, x, i] = sum(pad(data)[n, c, y*sh+ky, x*sw+kx, i] * kernel[c, ky, kx, i])``.

    The ``cb`` channels of one position are one vector, as in ``conv2d_nchwc``, so a depthwise
    conv between two blocked convs needs no layout change."""
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    if sh == 0 or sw == 0:
        raise TopiError("stride must be positive")
    n, co, h, w, cb = const_shape(data)
    kco, kh, kw, kcb = const_shape(kernel)
    if (kco, kcb) != (co, cb):
        raise TopiError(f"depthwise kernel must be [{co}, KH, KW, {cb}] for data {data.name} "
                        f"{[n, co, h, w, cb]}, got {[kco, kh, kw, kcb]}: block both with the same channel block")
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    padded = pad_nchwc(data, ph, pw, name=f"{name}_pad")
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute((n, co, oh, ow, cb),
                      lambda b, c, y, x, i: te.sum(padded[b, c, y * sh + ry, x * sw + rx, i] * kernel[c, ry, rx, i],
                                                   axis=[ry, rx]),
                      name=name)


@dataclass(frozen=True)
class DepthwiseNCHWcKnobs:
    """``ow_block``: output columns per register tile (divides the output width; each column holds
    the channel block's vectors); ``unroll_kw``: unroll the kernel width; ``parallel``: run channel
    blocks x rows on all threads."""

    ow_block: int
    unroll_kw: bool = True
    parallel: bool = True

    def validate(self, out_width: int) -> None:
        if self.ow_block < 1 or out_width % self.ow_block:
            raise TopiError(f"ow_block {self.ow_block} must divide the output width {out_width}")


def default_depthwise_nchwc_knobs(out: Tensor, target: Target | None = None) -> DepthwiseNCHWcKnobs:
    """The widest column tile whose accumulators leave two registers for a weight and an input and
    take at most half the vector registers.

    Why half: the fused kernel (``epilogue``) also keeps the bias, the clip bounds and the hoisted
    kernel taps in registers.  With AVX-512 a 28-column tile (28 of 32 zmm) made LLVM spill: ~28
    stack stores and ~50 reloads per kernel, 1.17-1.38x the best config of every MobileNetV2
    depthwise layer that got it, and up to 1.85x in the model: a spilling kernel's time moves with
    the stack position of its call by up to 1.5x (``docs/autotune.md``, "The large-activation nodes").
    16 columns reload once, 14 never; on AVX2 (16 ymm, two per 16-channel block) the cap is the
    old budget's 4 columns."""
    _, _, _, ow, cb = const_shape(out)
    vectors = max(1, -(-cb // vector_lanes(target)))
    registers = vector_registers(target)
    budget = max(1, min(registers - 2 * vectors, registers // 2) // vectors)
    kw = const_shape(out.op.input_tensors()[1])[2]
    return DepthwiseNCHWcKnobs(ow_block=largest_divisor(ow, budget), unroll_kw=kw <= 7)


def schedule_depthwise_conv2d_nchwc(out: Tensor, knobs: DepthwiseNCHWcKnobs | None = None,
                                    s: Schedule | None = None, target: Target | None = None,
                                    epilogue: Tensor | None = None) -> Schedule:
    """Register tile of ``ow_block`` columns x the channel vector; per kernel tap one weight
    vector feeds ``ow_block`` FMAs with the inputs of those columns.

    ``epilogue``: an element-wise stage of the conv's shape that reads it (bias, ReLU/clip, a
    residual add).  The tile then loops over the epilogue and the conv is computed per tile into
    registers and stored once through it, and the zero-padded input is made per output row (the
    ``KH`` rows that row reads, in L1) instead of as a whole padded copy: a depthwise conv does
    ~KH*KW FMAs per element, so the passes over memory, not the FMAs, were its time.
    """
    if s is None:
        s = create_schedule(epilogue if epilogue is not None else out)
    knobs = knobs or default_depthwise_nchwc_knobs(out, target)
    knobs.validate(const_shape(out)[3])
    pad = out.op.input_tensors()[0]
    padded = isinstance(pad.op, ComputeOp)
    if epilogue is not None:
        if const_shape(epilogue) != const_shape(out):
            raise TopiError(f"epilogue {epilogue.name} has shape {const_shape(epilogue)}, the depthwise conv "
                            f"{out.name} {const_shape(out)}: only a same-shape element-wise stage fuses")
        return _schedule_dw_with_epilogue(s, out, epilogue, pad if padded else None, knobs)
    if padded:
        pb, pc, py, _, pi = s.get_loops(pad)
        s.vectorize(pi)
        fused_pad = s.fuse(pb, pc, py)
        if knobs.parallel:
            s.parallel(fused_pad)
    b, c, y, x, i, ry, rx = s.get_loops(out)
    xo, xi = s.split(x, factor=knobs.ow_block)
    s.reorder(b, c, y, xo, ry, rx, xi, i)
    s.unroll(xi)
    s.vectorize(i)
    if knobs.unroll_kw:
        s.unroll(rx)
    fused = s.fuse(b, c, y)
    if knobs.parallel:
        s.parallel(fused)
    return s


def _schedule_dw_with_epilogue(s: Schedule, conv: Tensor, epilogue: Tensor, pad: Tensor | None,
                               knobs: DepthwiseNCHWcKnobs) -> Schedule:
    b, c, y, x, i = s.get_loops(epilogue)
    xo, xi = s.split(x, factor=knobs.ow_block)
    s.reorder(b, c, y, xo, xi, i)
    s.vectorize(i)
    s.unroll(xi)
    s.compute_at(conv, xo)
    x_t, i_t, ry, rx = s.get_loops(conv)[-4:]
    s.reorder(ry, rx, x_t, i_t)
    s.unroll(x_t)
    s.vectorize(i_t)
    if knobs.unroll_kw:
        s.unroll(rx)
    if pad is not None:
        s.compute_at(pad, y)
        s.vectorize(s.get_loops(pad)[-1])
    fused = s.fuse(b, c, y)
    if knobs.parallel:
        s.parallel(fused)
    s.compact_buffers()
    return s
