"""Max / average pooling and global pooling, in NCHW or NCHWc layout.

In NCHWc the vectorized axis is the channel block (always contiguous, whatever the
stride); in NCHW it is the output columns. Max pooling in NCHWc needs no padded copy: with the
padding smaller than the window (checked) every window holds an element of the input, and clamping
a tap outside the input to the nearest row/column repeats an element of the same window, which
leaves the maximum unchanged (in NCHW a clamped column would turn the vector load into a gather, so
it pads with ``-inf`` in a separate stage). Average pooling pads with 0 in a separate stage and
divides by the window size (``count_include_pad``, the PyTorch default) or by the number of
in-bounds elements.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import ComputeOp, Tensor
from ..tir import op as tir_op
from .conv2d_nchwc import _pair, conv_out_size
from .utils import TopiError, const_shape, schedule_elementwise, vector_lanes

_LAYOUTS = ("NCHW", "NCHWc")
#: Marks the padding stage pool2d made (the pool schedule owns it; any other input stage is the caller's).
_PAD_TAG = "pool_pad"


def _spatial(layout: str, rank: int) -> int:
    if layout not in _LAYOUTS:
        raise TopiError(f"layout {layout!r} is not one of {_LAYOUTS}")
    want = 4 if layout == "NCHW" else 5
    if rank != want:
        raise TopiError(f"a {layout} tensor has {want} axes, got {rank}")
    return 2


def _pad(data: Tensor, ph: int, pw: int, value: float, name: str) -> Tensor:
    shape = const_shape(data)
    h, w = shape[2], shape[3]
    if ph == 0 and pw == 0:
        return data
    out_shape = shape[:2] + (h + 2 * ph, w + 2 * pw) + shape[4:]

    def f(*i):  # noqa: ANN002, ANN202
        y, x = i[2], i[3]
        inside = (y >= ph) & (y < h + ph) & (x >= pw) & (x < w + pw)
        src = i[:2] + (y - ph, x - pw) + i[4:]
        return te.if_then_else(inside, data[src], te.const(value, data.dtype))

    return te.compute(out_shape, f, name=name, tag=_PAD_TAG)


def pool2d(data: Tensor, kernel: int | tuple[int, int], stride: int | tuple[int, int] = 1,
           padding: int | tuple[int, int] = 0, pool_type: str = "max", layout: str = "NCHW",
           count_include_pad: bool = True, name: str | None = None) -> Tensor:
    """Pool the spatial axes (2 and 3) of an NCHW or NCHWc tensor."""
    _spatial(layout, len(data.shape))
    if pool_type not in ("max", "avg"):
        raise TopiError(f"pool_type must be 'max' or 'avg', got {pool_type!r}")
    kh, kw = _pair(kernel, "kernel")
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    if min(kh, kw, sh, sw) < 1 or ph >= kh or pw >= kw:
        raise TopiError("pool kernel and stride must be positive and padding smaller than "
                        "the kernel")
    shape = const_shape(data)
    h, w = shape[2], shape[3]
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    name = name or f"{pool_type}_pool2d"
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    out_shape = shape[:2] + (oh, ow) + shape[4:]
    if pool_type == "max" and layout == "NCHWc":
        def clamped(v, pad: int, size: int):  # noqa: ANN001, ANN202 - te index expressions
            return tir_op.min(tir_op.max(v - pad, 0), size - 1) if pad else v

        def window_max(*i):  # noqa: ANN002, ANN202
            src = i[:2] + (clamped(i[2] * sh + ry, ph, h), clamped(i[3] * sw + rx, pw, w)) + i[4:]
            return te.max(data[src], axis=[ry, rx])

        return te.compute(out_shape, window_max, name=name)
    padded = _pad(data, ph, pw, float("-inf") if pool_type == "max" else 0.0, f"{name}_pad")
    reducer = te.max if pool_type == "max" else te.sum

    def window(*i):  # noqa: ANN002, ANN202
        src = i[:2] + (i[2] * sh + ry, i[3] * sw + rx) + i[4:]
        return reducer(padded[src], axis=[ry, rx])

    pooled = te.compute(out_shape, window, name=name if pool_type == "max" else f"{name}_sum")
    if pool_type == "max":
        return pooled

    def average(*i):  # noqa: ANN002, ANN202
        if count_include_pad:
            return pooled[i] / te.const(float(kh * kw), data.dtype)
        y0, x0 = i[2] * sh - ph, i[3] * sw - pw
        rows = tir_op.min(y0 + kh, h) - tir_op.max(y0, 0)
        cols = tir_op.min(x0 + kw, w) - tir_op.max(x0, 0)
        return pooled[i] / (rows * cols).astype(data.dtype)

    return te.compute(out_shape, average, name=name)


def global_pool(data: Tensor, pool_type: str = "avg", layout: str = "NCHW",
                name: str | None = None) -> Tensor:
    """Pool over the whole spatial extent: ``[N, C, 1, 1(, c)]``."""
    _spatial(layout, len(data.shape))
    shape = const_shape(data)
    h, w = shape[2], shape[3]
    return pool2d(data, (h, w), 1, 0, pool_type, layout, name=name or f"global_{pool_type}_pool")


@dataclass(frozen=True)
class PoolKnobs:
    """``vector``: lanes of the vectorized axis (channel block in NCHWc, output columns in
    NCHW); ``parallel``: run the outer loops on all threads; ``ow_block``: output columns (NCHWc)
    or column vectors (NCHW) computed together per window tap, an unrolled register tile;
    ``unroll_kw``: unroll the window's column taps.  The defaults (1, False) are one column (one
    vector) per window walk, the schedule the graph used before these knobs existed."""

    vector: int
    parallel: bool = True
    ow_block: int = 1
    unroll_kw: bool = False


def schedule_pool(out: Tensor, knobs: PoolKnobs | None = None, s: Schedule | None = None,
                  target: Target | None = None) -> Schedule:
    """Schedule ``pool2d`` / ``global_pool`` (both pooling stages and the padding)."""
    s = s or create_schedule(out)
    knobs = knobs or PoolKnobs(vector=vector_lanes(target))
    stages = [out]
    if out.op.input_tensors() and not getattr(out.op, "reduce_axis", ()):
        stages.insert(0, out.op.input_tensors()[0])  # the sum stage of an average
    pad = stages[0].op.input_tensors()[0]
    if isinstance(pad.op, ComputeOp) and pad.op.tag == _PAD_TAG:
        schedule_elementwise(s, pad, knobs.vector, knobs.parallel)
    for t in stages:
        if getattr(t.op, "reduce_axis", ()):
            _schedule_window(s, t, knobs)
        else:
            schedule_elementwise(s, t, knobs.vector, knobs.parallel)
    return s


def _schedule_window(s: Schedule, t: Tensor, knobs: PoolKnobs) -> None:
    loops = s.get_loops(t)
    nchwc = len(t.shape) == 5
    ow = const_shape(t)[3]
    if knobs.ow_block < 1:
        raise TopiError(f"bad pool knobs {knobs} (ow_block must be positive)")
    if nchwc:
        b, c, y, x, i, ry, rx = loops
        if knobs.ow_block > 1:
            # A tile of output columns shares each window tap's loop: ow_block vector accumulators.
            xo, xu = s.split(x, factor=min(knobs.ow_block, ow))
            s.reorder(b, c, y, xo, ry, rx, xu, i)
            s.unroll(xu)
        else:
            s.reorder(b, c, y, x, ry, rx, i)
        s.vectorize(i)
    else:
        b, c, y, x, ry, rx = loops
        lanes = min(knobs.vector, ow)
        if knobs.ow_block > 1 and lanes * knobs.ow_block <= ow:
            xo, xt = s.split(x, factor=lanes * knobs.ow_block)
            xu, xi = s.split(xt, factor=lanes)
            s.reorder(b, c, y, xo, ry, rx, xu, xi)
            s.unroll(xu)
        else:
            xo, xi = s.split(x, factor=lanes)
            s.reorder(b, c, y, xo, ry, rx, xi)
        s.vectorize(xi)
    if knobs.unroll_kw:
        s.unroll(rx)
    outer = [b, c, y]
    fused = s.fuse(*outer)
    if knobs.parallel and const_shape(t)[1] * const_shape(t)[2] > 8:
        s.parallel(fused)
