"""Depthwise 2-D convolution, NCHW (data ``[N, C, H, W]``, weights ``[C, 1, KH, KW]``).

Every channel is convolved with its own filter. The schedule vectorizes output columns
and unrolls the kernel width; it is memory-bound, so there is no register tile.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import ComputeOp, Tensor
from .conv2d import pad_nchw
from .conv2d_nchwc import _pair, conv_out_size
from .utils import TopiError, const_shape, schedule_elementwise, vector_lanes


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
