"""2-D pooling (reduction pattern): max_pool2d, avg_pool2d, global_avg_pool2d.

Each takes a ``layout`` (``NCHW`` or a packed ``NCHW{b}n{c}c``); pooling only touches the
H and W axes, so a packed tensor is pooled without unpacking it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.layout import parse_layout
from vdla.compiler.graph.ops.common import FLOATS, NUMERIC, check_dtype, pair, pool_out_size, quad, windows
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op


def _hw_axes(op: str, layout: str, ndim: int) -> tuple[int, int]:
    lay = parse_layout(layout)
    if lay.primal != "NCHW" or lay.factor("H") != 1 or lay.factor("W") != 1 or len(lay.axes) != ndim:
        raise TypeInferenceError(f"{op}: layout {layout} must be NCHW-based with unsplit H and W, for a rank-{ndim} input")
    return lay.axes.index("H"), lay.axes.index("W")


def _out_hw(op: str, t: TensorType, attrs: Attrs) -> tuple[tuple[int, int], tuple[int, int]]:
    ah, aw = _hw_axes(op, attrs["layout"], t.ndim)
    (kh, kw), (sh, sw) = pair(op, "pool_size", attrs["pool_size"]), pair(op, "strides", attrs["strides"])
    dh, dw = pair(op, "dilation", attrs["dilation"])
    pt, pl, pb, pr = quad(op, attrs["padding"])
    if min(kh, kw, sh, sw, dh, dw) < 1:
        raise TypeInferenceError(f"{op}: pool_size, strides and dilation must be positive")
    if max(pt, pb) >= (kh - 1) * dh + 1 or max(pl, pr) >= (kw - 1) * dw + 1:
        raise TypeInferenceError(f"{op}: padding {attrs['padding']} must be smaller than the window")
    ceil = bool(attrs["ceil_mode"])
    oh = pool_out_size(t.shape[ah], kh, sh, pt, pb, dh, ceil)
    ow = pool_out_size(t.shape[aw], kw, sw, pl, pr, dw, ceil)
    return (ah, aw), (oh, ow)


def _pool_relation(op: str, dtypes: Sequence[str]):
    def relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        check_dtype(op, types[0], dtypes)
        (ah, aw), (oh, ow) = _out_hw(op, types[0], attrs)
        shape = list(types[0].shape)
        shape[ah], shape[aw] = oh, ow
        return TensorType(tuple(shape), types[0].dtype)

    return relation


def _pool_windows(x: np.ndarray, attrs: Attrs, fill: float | int) -> tuple[np.ndarray, tuple[int, int], dict[str, np.ndarray]]:
    """Windows (..., OH, OW, KH, KW) over H, W (moved last), and per-window element counts.

    The counts are ``"padded"`` (positions inside the input or its explicit padding) and
    ``"real"`` (positions inside the input): the two divisors of average pooling.
    """
    (ah, aw), out_hw = _out_hw("pool", TensorType(x.shape, x.dtype.name), attrs)
    xt = np.moveaxis(x, (ah, aw), (-2, -1))
    pt, pl, pb, pr = attrs["padding"]
    k, s, d = tuple(attrs["pool_size"]), tuple(attrs["strides"]), tuple(attrs["dilation"])
    h, w = xt.shape[-2:]
    # Ceil mode may need windows past the explicit padding: pad further with `fill`, counted nowhere.
    extra_b = max(0, (out_hw[0] - 1) * s[0] + (k[0] - 1) * d[0] + 1 - (h + pt + pb))
    extra_r = max(0, (out_hw[1] - 1) * s[1] + (k[1] - 1) * d[1] + 1 - (w + pl + pr))
    widths = [(0, 0)] * (xt.ndim - 2) + [(pt, pb + extra_b), (pl, pr + extra_r)]
    xp = np.pad(xt, widths, constant_values=fill)
    full = ((0, extra_b), (0, extra_r))
    padded = np.pad(np.ones((h + pt + pb, w + pl + pr)), full)
    real = np.pad(np.pad(np.ones((h, w)), ((pt, pb), (pl, pr))), full)
    counts = {name: windows(m, k, s, d, out_hw).sum(axis=(-2, -1)) for name, m in (("padded", padded), ("real", real))}
    return windows(xp, k, s, d, out_hw), (ah, aw), counts


def _max_pool_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
    win, (ah, aw), _ = _pool_windows(x, attrs, fill)
    return np.moveaxis(win.max(axis=(-2, -1)), (-2, -1), (ah, aw)).astype(x.dtype)


def _avg_pool_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    win, (ah, aw), counts = _pool_windows(x, attrs, 0)
    count = counts["padded" if attrs["count_include_pad"] else "real"]
    total = win.sum(axis=(-2, -1), dtype=np.float64)
    return np.moveaxis(total / count, (-2, -1), (ah, aw)).astype(x.dtype)


_POOL_ATTRS = {"pool_size": REQUIRED, "strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1),
               "ceil_mode": False, "layout": "NCHW"}

register_op(OpDef("max_pool2d", OpPattern.REDUCTION, _pool_relation("max_pool2d", NUMERIC), _max_pool_reference,
                  (1, 1), _POOL_ATTRS, "max over each window; padding never wins"))
register_op(OpDef("avg_pool2d", OpPattern.REDUCTION, _pool_relation("avg_pool2d", FLOATS), _avg_pool_reference,
                  (1, 1), {**_POOL_ATTRS, "count_include_pad": False},
                  "mean over each window; count_include_pad counts explicit padding in the divisor"))


def _global_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_dtype("global_avg_pool2d", types[0], FLOATS)
    ah, aw = _hw_axes("global_avg_pool2d", attrs["layout"], types[0].ndim)
    shape = list(types[0].shape)
    shape[ah] = shape[aw] = 1
    return TensorType(tuple(shape), types[0].dtype)


def _global_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    ah, aw = _hw_axes("global_avg_pool2d", attrs["layout"], xs[0].ndim)
    return xs[0].mean(axis=(ah, aw), keepdims=True, dtype=np.float64).astype(xs[0].dtype)


register_op(OpDef("global_avg_pool2d", OpPattern.REDUCTION, _global_relation, _global_reference, (1, 1),
                  {"layout": "NCHW"}, "mean over H and W, keeping them as size-1 axes"))


def _mean_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t = types[0]
    check_dtype("mean", t, FLOATS)
    axes = attrs["axes"]
    if any(not 0 <= a < t.ndim for a in axes) or len(set(axes)) != len(axes):
        raise TypeInferenceError(f"mean: axes {axes} must be distinct axes of a rank-{t.ndim} input")
    if attrs["keepdims"]:
        return TensorType(tuple(1 if i in axes else d for i, d in enumerate(t.shape)), t.dtype)
    return TensorType(tuple(d for i, d in enumerate(t.shape) if i not in axes), t.dtype)


register_op(OpDef("mean", OpPattern.REDUCTION, _mean_relation,
                  lambda xs, a: xs[0].mean(axis=tuple(a["axes"]), keepdims=a["keepdims"], dtype=np.float64)
                  .astype(xs[0].dtype), (1, 1), {"axes": REQUIRED, "keepdims": True},
                  "arithmetic mean over the given (non-negative) axes"))
