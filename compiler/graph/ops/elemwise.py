"""Elementwise and broadcasting operators (all injective).

Integer arithmetic wraps in the value's dtype, as the hardware does; ``right_shift``
has the VDLA ALU's SHR semantics (arithmetic, a negative amount shifts left).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.ops.common import FLOATS, INTEGERS, NUMERIC, broadcast_shapes, check_dtype, check_same_dtype
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op


def _unary_relation(name: str, dtypes: Sequence[str]) -> Callable[[Sequence[TensorType], Attrs], TensorType]:
    def relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        check_dtype(name, types[0], dtypes)
        return types[0]

    return relation


def _unary(name: str, fn: Callable[[np.ndarray, Attrs], np.ndarray], dtypes: Sequence[str] = NUMERIC,
           attrs: dict | None = None, doc: str = "") -> None:
    def reference(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.asarray(fn(xs[0], a)).astype(xs[0].dtype, copy=False)

    register_op(OpDef(name, OpPattern.INJECTIVE, _unary_relation(name, dtypes), reference, (1, 1), attrs or {}, doc))


def _sigmoid(x: np.ndarray, a: Attrs) -> np.ndarray:
    # Split by sign so exp never overflows.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _clip(x: np.ndarray, a: Attrs) -> np.ndarray:
    lo, hi = a.get("a_min"), a.get("a_max")
    out = x
    if lo is not None:
        out = np.maximum(out, np.asarray(lo).astype(x.dtype))
    if hi is not None:
        out = np.minimum(out, np.asarray(hi).astype(x.dtype))
    return out


def _right_shift(x: np.ndarray, a: Attrs) -> np.ndarray:
    s = a["shift"]
    wide = x.astype(np.int64)
    return (wide >> s if s >= 0 else wide << -s).astype(x.dtype)


_unary("relu", lambda x, a: np.maximum(x, np.zeros((), x.dtype)), doc="max(x, 0)")
_unary("sigmoid", _sigmoid, FLOATS, doc="1 / (1 + exp(-x))")
_unary("tanh", lambda x, a: np.tanh(x), FLOATS, doc="tanh(x)")
_unary("clip", _clip, NUMERIC, {"a_min": None, "a_max": None}, "min(max(x, a_min), a_max); a missing bound is open")
_unary("right_shift", _right_shift, INTEGERS, {"shift": REQUIRED},
       "arithmetic x >> shift (a negative shift shifts left), wrapping in the dtype like the VDLA ALU's SHR")


def _cast_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_dtype("cast", types[0], NUMERIC)
    check_dtype("cast", TensorType((), attrs["dtype"]), NUMERIC, "target dtype")
    return TensorType(types[0].shape, attrs["dtype"])


register_op(OpDef(
    "cast", OpPattern.INJECTIVE, _cast_relation, lambda xs, a: xs[0].astype(a["dtype"]), (1, 1), {"dtype": REQUIRED},
    "convert the element type; integers narrow by keeping the low bits (two's complement wrap), floats truncate",
))


def _trunc_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.issubdtype(a.dtype, np.floating):
        return a / b
    if np.any(b == 0):
        raise ZeroDivisionError("integer division by zero in 'divide'")
    q = a // b
    # C-style division truncates toward zero; floor division rounds down.
    return q + ((q < 0) & (q * b != a)).astype(q.dtype)


_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": _trunc_divide,
    "maximum": np.maximum, "minimum": np.minimum,
}


def _binary(name: str, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> None:
    def relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        dtype = check_same_dtype(name, types)
        if dtype not in NUMERIC:
            raise TypeInferenceError(f"{name}: dtype {dtype} is not supported; use one of {list(NUMERIC)}")
        return TensorType(broadcast_shapes(name, types[0].shape, types[1].shape), dtype)

    def reference(xs: Sequence[np.ndarray], a: Attrs) -> np.ndarray:
        with np.errstate(over="ignore"):
            return np.asarray(fn(xs[0], xs[1])).astype(xs[0].dtype, copy=False)

    register_op(OpDef(name, OpPattern.INJECTIVE, relation, reference, (2, 2), {},
                      f"elementwise {name} with NumPy broadcasting; integers wrap"))


for _name, _fn in _BINARY.items():
    _binary(_name, _fn)
