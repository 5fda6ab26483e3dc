"""Indexing operators (injective): strided_slice, take, broadcast_to, tile.

All shapes and slice bounds are static attributes; the ONNX importer resolves them (folding
the shape arithmetic exporters emit) before these are built.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.ops.common import INTEGERS, check_dtype, normalize_axis
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op


def slice_length(begin: int, end: int, step: int) -> int:
    """Elements of ``range(begin, end, step)`` (bounds already clamped to the axis)."""
    return len(range(begin, end, step))


def _slice_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t = types[0]
    begin, end, strides = attrs["begin"], attrs["end"], attrs["strides"]
    if not len(begin) == len(end) == len(strides) == t.ndim:
        raise TypeInferenceError(f"strided_slice: begin/end/strides need one value per axis of {t.shape}")
    shape = []
    for d, b, e, s in zip(t.shape, begin, end, strides):
        if s == 0 or not (0 <= b <= d if s > 0 else -1 <= b < d):
            raise TypeInferenceError(f"strided_slice: begin {b} / step {s} are out of range for an axis of {d}")
        shape.append(slice_length(b, e, s))
    return TensorType(tuple(shape), t.dtype)


def _slice_reference(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
    # An empty range stays empty (NumPy would read a begin of -1 as the last element).
    idx = tuple(slice(b, e if e >= 0 else None, s) if slice_length(b, e, s) else slice(0, 0)
                for b, e, s in zip(a["begin"], a["end"], a["strides"]))
    return np.ascontiguousarray(xs[0][idx])


register_op(OpDef("strided_slice", OpPattern.INJECTIVE, _slice_relation, _slice_reference, (1, 1),
                  {"begin": REQUIRED, "end": REQUIRED, "strides": REQUIRED},
                  "x[begin:end:step] per axis; bounds are clamped, an end of -1 with a negative step runs to the start"))


def _take_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    data, indices = types
    check_dtype("take", indices, INTEGERS, "indices")
    axis = normalize_axis("take", attrs["axis"], data.ndim)
    return TensorType(data.shape[:axis] + indices.shape + data.shape[axis + 1:], data.dtype)


def _take_reference(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
    data, indices = xs
    axis = a["axis"] % data.ndim
    n = data.shape[axis]
    if np.any((indices < -n) | (indices >= n)):
        raise IndexError(f"take: indices {indices.ravel().tolist()} out of range for an axis of {n}")
    return np.take(data, np.where(indices < 0, indices + n, indices), axis=axis)


register_op(OpDef("take", OpPattern.INJECTIVE, _take_relation, _take_reference, (2, 2), {"axis": 0},
                  "ONNX Gather: pick entries along an axis by (possibly negative) integer indices"))


def _broadcast_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t, shape = types[0], tuple(attrs["shape"])
    try:
        np.broadcast_shapes(t.shape, shape)
    except ValueError:
        raise TypeInferenceError(f"broadcast_to: shape {t.shape} does not broadcast to {shape}") from None
    if np.broadcast_shapes(t.shape, shape) != shape:
        raise TypeInferenceError(f"broadcast_to: {t.shape} broadcast with {shape} is not {shape}")
    return TensorType(shape, t.dtype)


register_op(OpDef("broadcast_to", OpPattern.INJECTIVE, _broadcast_relation,
                  lambda xs, a: np.ascontiguousarray(np.broadcast_to(xs[0], tuple(a["shape"]))), (1, 1),
                  {"shape": REQUIRED}, "NumPy broadcasting to a static shape"))


def _tile_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t, reps = types[0], tuple(attrs["reps"])
    if len(reps) != t.ndim or any(r < 0 for r in reps):
        raise TypeInferenceError(f"tile: reps {reps} need one non-negative count per axis of {t.shape}")
    return TensorType(tuple(d * r for d, r in zip(t.shape, reps)), t.dtype)


register_op(OpDef("tile", OpPattern.INJECTIVE, _tile_relation, lambda xs, a: np.tile(xs[0], tuple(a["reps"])),
                  (1, 1), {"reps": REQUIRED}, "repeat the whole tensor reps[i] times along axis i"))
