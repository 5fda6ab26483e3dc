"""2-D convolution in NCHW layout (data ``[N, C, H, W]``, weights ``[OC, C, KH, KW]``).

The x86 schedule vectorizes output columns (contiguous input and output rows when the
stride is 1) and keeps an ``oc_block x lanes`` register tile: each input vector is reused
for ``oc_block`` FMAs with broadcast weights. This is the layout-free path; the blocked
``conv2d_nchwc`` is faster and is what the benchmarks use.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import ComputeOp, Tensor
from .conv2d_nchwc import _pair, conv_out_size
from .utils import TopiError, const_shape, largest_divisor, schedule_elementwise, vector_lanes


def pad_nchw(data: Tensor, ph: int, pw: int, value: float = 0.0, name: str = "pad") -> Tensor:
    """Pad the two spatial axes of a ``[N, C, H, W]`` tensor with ``value``."""
    n, c, h, w = const_shape(data)
    if ph == 0 and pw == 0:
        return data

    def f(i, j, y, x):  # noqa: ANN001, ANN202
        inside = (y >= ph) & (y < h + ph) & (x >= pw) & (x < w + pw)
        return te.if_then_else(inside, data[i, j, y - ph, x - pw], te.const(value, data.dtype))

    return te.compute((n, c, h + 2 * ph, w + 2 * pw), f, name=name)


def conv2d_nchw(data: Tensor, kernel: Tensor, stride: int | tuple[int, int] = 1,
                padding: int | tuple[int, int] = 0, name: str = "conv2d_nchw") -> Tensor:
    """``out[n, o, y, x] = sum(pad(data)[n, c, y*sh+ky, x*sw+kx] * kernel[o, c, ky, kx])``."""
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    if sh == 0 or sw == 0:
        raise TopiError("stride must be positive")
    n, c, h, w = const_shape(data)
    oc, kc, kh, kw = const_shape(kernel)
    if kc != c:
        raise TopiError(f"kernel {kernel.name} has {kc} input channels, data {data.name} has {c}")
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    padded = pad_nchw(data, ph, pw, name=f"{name}_pad")
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    return te.compute((n, oc, oh, ow),
                      lambda b, o, y, x: te.sum(padded[b, rc, y * sh + ry, x * sw + rx] *
                                                kernel[o, rc, ry, rx], axis=[rc, ry, rx]),
                      name=name)


@dataclass(frozen=True)
class Conv2dNCHWKnobs:
    """``oc_block``: output channels per register tile (divides OC, unrolled);
    ``ow_vector``: output columns per vector (the vectorized axis); ``unroll_kw``: unroll
    the kernel-width loop; ``parallel``: run the outer loop on all threads."""

    oc_block: int
    ow_vector: int
    unroll_kw: bool = True
    parallel: bool = True


def default_conv2d_nchw_knobs(out: Tensor, target: Target | None = None) -> Conv2dNCHWKnobs:
    _, oc, _, ow = const_shape(out)
    return Conv2dNCHWKnobs(oc_block=largest_divisor(oc, 8),
                           ow_vector=min(vector_lanes(target), ow))


def schedule_conv2d_nchw(out: Tensor, knobs: Conv2dNCHWKnobs | None = None,
                         s: Schedule | None = None, target: Target | None = None) -> Schedule:
    """The x86 schedule of ``conv2d_nchw``'s output."""
    s = s or create_schedule(out)
    knobs = knobs or default_conv2d_nchw_knobs(out, target)
    _, oc_n, _, _ = const_shape(out)
    if oc_n % knobs.oc_block or knobs.ow_vector < 1:
        raise TopiError(f"oc_block {knobs.oc_block} must divide {oc_n} and ow_vector must be "
                        f"positive")
    pad = out.op.input_tensors()[0]
    if isinstance(pad.op, ComputeOp):
        schedule_elementwise(s, pad, vector_lanes(target), knobs.parallel)
    b, o, y, x, rc, ry, rx = s.get_loops(out)
    oo, oi = s.split(o, factor=knobs.oc_block)
    xo, xi = s.split(x, factor=knobs.ow_vector)
    s.reorder(b, oo, y, xo, rc, ry, rx, oi, xi)
    s.unroll(oi)
    s.vectorize(xi)
    if knobs.unroll_kw:
        s.unroll(rx)
    fused = s.fuse(b, oo, y)
    if knobs.parallel:
        s.parallel(fused)
    return s
