"""Float math, comparison and selection operators (injective) and ``sum`` (reduction).

These carry the ONNX operators that exported transformers and MobileNet-V3/EfficientNet-style
networks use: ``sqrt``/``erf``/``exp`` (LayerNorm, GELU), ``power``, ``equal`` and ``where``
(mostly in shape arithmetic, which the importer folds), and ``sum``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.ops.common import FLOATS, NUMERIC, broadcast_shapes, check_dtype, check_same_dtype
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op


def _float_unary(name: str, fn: Callable[[np.ndarray], np.ndarray], doc: str) -> None:
    def relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        check_dtype(name, types[0], FLOATS)
        return types[0]

    def reference(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return np.asarray(fn(xs[0])).astype(xs[0].dtype, copy=False)

    register_op(OpDef(name, OpPattern.INJECTIVE, relation, reference, (1, 1), {}, doc))


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


_float_unary("sqrt", np.sqrt, "square root (NaN for negative inputs)")
_float_unary("exp", np.exp, "e ** x")
_float_unary("erf", _erf, "the Gauss error function")


def _power_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = check_same_dtype("power", types)
    check_dtype("power", types[0], FLOATS)
    return TensorType(broadcast_shapes("power", types[0].shape, types[1].shape), dtype)


register_op(OpDef("power", OpPattern.INJECTIVE, _power_relation,
                  lambda xs, a: np.power(xs[0], xs[1]).astype(xs[0].dtype, copy=False), (2, 2), {},
                  "x ** y elementwise with broadcasting (floats)"))


def _equal_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_same_dtype("equal", types)
    return TensorType(broadcast_shapes("equal", types[0].shape, types[1].shape), "bool")


register_op(OpDef("equal", OpPattern.INJECTIVE, _equal_relation, lambda xs, a: np.equal(xs[0], xs[1]), (2, 2), {},
                  "elementwise x == y with broadcasting; a bool result"))


def _where_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    cond, x, y = types
    if cond.dtype != "bool":
        raise TypeInferenceError(f"where: the condition must be bool, got {cond.dtype}")
    dtype = check_same_dtype("where", [x, y])
    return TensorType(broadcast_shapes("where", cond.shape, x.shape, y.shape), dtype)


register_op(OpDef("where", OpPattern.INJECTIVE, _where_relation, lambda xs, a: np.where(xs[0], xs[1], xs[2]),
                  (3, 3), {}, "x where the condition holds, else y, with broadcasting"))


def _sum_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t = types[0]
    check_dtype("sum", t, NUMERIC)
    axes = attrs["axes"]
    if any(not 0 <= a < t.ndim for a in axes) or len(set(axes)) != len(axes):
        raise TypeInferenceError(f"sum: axes {axes} must be distinct axes of a rank-{t.ndim} input")
    keep = attrs["keepdims"]
    return TensorType(tuple(1 if i in axes else d for i, d in enumerate(t.shape) if keep or i not in axes), t.dtype)


def _sum_reference(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
    x = xs[0]
    acc = np.float64 if x.dtype.kind == "f" else None
    with np.errstate(over="ignore"):
        return np.asarray(x.sum(axis=tuple(a["axes"]), keepdims=a["keepdims"], dtype=acc)).astype(x.dtype)


register_op(OpDef("sum", OpPattern.REDUCTION, _sum_relation, _sum_reference, (1, 1),
                  {"axes": REQUIRED, "keepdims": True}, "sum over the given (non-negative) axes; integers wrap"))
