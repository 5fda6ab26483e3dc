"""Requantizing int8 operators (opaque): qadd and qavg_pool2d.

Each is one int8 -> int8 operation with its fixed-point requantization spelled out in its
attributes, exactly as the accelerator computes it (int32 accumulators that wrap, arithmetic
shifts that round toward minus infinity, a clip to int8):

* ``qadd(a, b)``: the residual add of two int8 tensors with different scales::

      t_x = x * mult[k]                 (or x >> align[k] without multipliers; a negative align shifts left)
      y   = clip(([relu](t_a + t_b + round)) >> shift, -128, 127)

  the same arithmetic as the chain ``quantize`` emits for a residual add (cast, multiply, add,
  add of the rounding constant, [relu], right_shift, clip, cast), which ``fold_qnn`` collapses
  into one node so the partitioner can place the add as a unit.

* ``qavg_pool2d(x)``: average pooling of an int8 tensor whose output keeps the input's scale;
  the divide by the window size ``K`` is a fixed-point multiply: ``y = clip(((sum + round) *
  mult) >> shift, -128, 127)`` with ``mult * 2**-shift ~= 1/K`` and ``round ~= 2**(shift-1)/mult``
  (``quantize.requant_multipliers``: round half up, up to the multiplier's precision).  The window
  sum includes zero padding (``count_include_pad``).  ``pool_size`` equal to the input's H x W is a
  global average pool.

Both keep their layout (``layout``: NCHW or a packed ``NCHW{b}n{c}c``): they touch H and W only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.ops.common import pair, pool_out_size, quad
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op

ACC_BITS = 32


def wrap32(v: np.ndarray) -> np.ndarray:
    """int64 values wrapped to int32 two's complement, as the accumulators hold them."""
    half = 1 << (ACC_BITS - 1)
    return ((v + half) & ((1 << ACC_BITS) - 1)) - half


def _clip8(v: np.ndarray) -> np.ndarray:
    return np.clip(v, -128, 127).astype(np.int8)


def _qadd_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    a, b = types
    if a.dtype != "int8" or b.dtype != "int8" or a.shape != b.shape:
        raise TypeInferenceError(f"qadd: operands must be int8 of one shape, got {a.dtype}{list(a.shape)} and "
                                 f"{b.dtype}{list(b.shape)}")
    if attrs.get("mult") is not None and len(attrs.get("mult")) != 2 or len(attrs["align"]) != 2:
        raise TypeInferenceError("qadd: mult and align take one value per operand")
    if not 0 <= attrs["shift"] < ACC_BITS or any(not -ACC_BITS < s < ACC_BITS for s in attrs["align"]):
        raise TypeInferenceError(f"qadd: shifts must be in [0, {ACC_BITS}), got {attrs['shift']}, {attrs['align']}")
    return TensorType(a.shape, "int8")


def qadd_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    """NumPy: see the module doc."""
    terms = []
    for k, x in enumerate(xs):
        v = x.astype(np.int64)
        if attrs.get("mult") is not None:
            terms.append(wrap32(v * attrs.get("mult")[k]))
        else:
            k_ = attrs["align"][k]
            terms.append(v >> k_ if k_ >= 0 else wrap32(v << -k_))
    acc = wrap32(wrap32(terms[0] + terms[1]) + attrs["round"])
    if attrs["relu"]:
        acc = np.maximum(acc, 0)
    return _clip8(acc >> attrs["shift"])


register_op(OpDef("qadd", OpPattern.OPAQUE, _qadd_relation, qadd_reference, (2, 2),
                  {"mult": None, "align": (0, 0), "round": 0, "shift": 0, "relu": False},
                  "int8 residual add: y = clip(([relu](a*m_a + b*m_b + round)) >> shift) (or a >> k_a + b >> k_b)"))


def _hw_axes(layout: str, ndim: int) -> tuple[int, int]:
    from vdla.compiler.graph.layout import parse_layout

    lay = parse_layout(layout)
    if len(lay.axes) != ndim or "H" not in lay.axes or "W" not in lay.axes:
        raise TypeInferenceError(f"qavg_pool2d: layout {layout} does not describe a rank-{ndim} tensor with H and W")
    return lay.axes.index("H"), lay.axes.index("W")


def _qpool_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = types[0]
    if x.dtype != "int8":
        raise TypeInferenceError(f"qavg_pool2d: the input must be int8, got {x.dtype}")
    ah, aw = _hw_axes(attrs["layout"], x.ndim)
    (kh, kw), (sh, sw) = pair("qavg_pool2d", "pool_size", attrs["pool_size"]), pair("qavg_pool2d", "strides", attrs["strides"])
    pt, pl, pb, pr = quad("qavg_pool2d", attrs["padding"])
    shape = list(x.shape)
    shape[ah] = pool_out_size(x.shape[ah], kh, sh, pt, pb, 1, False)
    shape[aw] = pool_out_size(x.shape[aw], kw, sw, pl, pr, 1, False)
    if min(shape[ah], shape[aw]) <= 0:
        raise TypeInferenceError(f"qavg_pool2d: empty output for input {x.shape} and window {(kh, kw)}")
    return TensorType(tuple(shape), "int8")


def qavg_pool_sums(x: np.ndarray, attrs: Attrs) -> np.ndarray:
    """The int64 window sums (zero padding included) of ``qavg_pool2d``."""
    ah, aw = _hw_axes(attrs["layout"], x.ndim)
    (kh, kw), (sh, sw) = pair("qavg_pool2d", "pool_size", attrs["pool_size"]), pair("qavg_pool2d", "strides", attrs["strides"])
    pt, pl, pb, pr = quad("qavg_pool2d", attrs["padding"])
    widths = [(0, 0)] * x.ndim
    widths[ah], widths[aw] = (pt, pb), (pl, pr)
    v = np.pad(x.astype(np.int64), widths)
    oh = (v.shape[ah] - kh) // sh + 1
    ow = (v.shape[aw] - kw) // sw + 1
    out = 0
    for i in range(kh):
        for j in range(kw):
            idx = [slice(None)] * x.ndim
            idx[ah] = slice(i, i + sh * (oh - 1) + 1, sh)
            idx[aw] = slice(j, j + sw * (ow - 1) + 1, sw)
            out = out + v[tuple(idx)]
    return out  # type: ignore[return-value]


def qavg_pool_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    """NumPy: see the module doc."""
    acc = wrap32(wrap32(qavg_pool_sums(xs[0], attrs) + attrs["round"]) * attrs.get("mult"))
    return _clip8(acc >> attrs["shift"])


register_op(OpDef("qavg_pool2d", OpPattern.OPAQUE, _qpool_relation, qavg_pool_reference, (1, 1),
                  {"pool_size": REQUIRED, "strides": (1, 1), "padding": (0, 0, 0, 0), "layout": "NCHW",
                   "mult": 1, "round": 0, "shift": 0},
                  "int8 average pool keeping the scale: y = clip(((window sum + round) * mult) >> shift)"))
