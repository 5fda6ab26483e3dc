"""Element-wise and broadcast operators, and the schedule that fuses chains of them.

Binary operators broadcast like NumPy (shapes aligned on the right, size-1 axes
stretched). ``schedule_injective`` inlines every element-wise producer into the output,
so ``relu(add(x, bias))`` runs as one vectorized, parallel loop.
"""
from __future__ import annotations

from typing import Callable

from .. import te
from ..tir import op as tir_op
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import ComputeOp, Tensor
from ..tir.ir import ExprLike, PrimExpr
from .utils import TopiError, const_shape, schedule_elementwise, vector_lanes


def _unary(x: Tensor, fn: Callable[[PrimExpr], ExprLike], name: str) -> Tensor:
    return te.compute(const_shape(x), lambda *i: fn(x[i]), name=name)


def relu(x: Tensor) -> Tensor:
    return _unary(x, lambda v: tir_op.max(v, te.const(0, x.dtype)), "relu")


def leaky_relu(x: Tensor, alpha: float) -> Tensor:
    return _unary(x, lambda v: te.if_then_else(v > te.const(0, x.dtype), v,
                                                v * te.const(alpha, x.dtype)), "leaky_relu")


def clip(x: Tensor, lo: float, hi: float) -> Tensor:
    if lo > hi:
        raise TopiError(f"clip bounds are reversed: {lo} > {hi}")
    low, high = te.const(lo, x.dtype), te.const(hi, x.dtype)
    return _unary(x, lambda v: tir_op.min(tir_op.max(v, low), high), "clip")


def negative(x: Tensor) -> Tensor:
    return _unary(x, lambda v: -v, "negative")


def exp(x: Tensor) -> Tensor:
    return _unary(x, te.exp, "exp")


def log(x: Tensor) -> Tensor:
    return _unary(x, te.log, "log")


def sqrt(x: Tensor) -> Tensor:
    return _unary(x, te.sqrt, "sqrt")


def sigmoid(x: Tensor) -> Tensor:
    return _unary(x, te.sigmoid, "sigmoid")


def tanh(x: Tensor) -> Tensor:
    return _unary(x, te.tanh, "tanh")


def erf(x: Tensor) -> Tensor:
    return _unary(x, te.erf, "erf")


def abs(x: Tensor) -> Tensor:  # noqa: A001
    return _unary(x, te.abs, "abs")


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy's broadcast of two shapes."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise TopiError(f"shapes {a} and {b} do not broadcast (axis -{i}: {x} vs {y})")
        out.append(max(x, y))
    return tuple(reversed(out))


def _broadcast_index(t: Tensor, idx: tuple[PrimExpr, ...]) -> tuple[ExprLike, ...]:
    shape = const_shape(t)
    tail = idx[len(idx) - len(shape):]
    return tuple(0 if s == 1 else i for s, i in zip(shape, tail))


def _binary(a: Tensor, b: Tensor, fn: Callable[[PrimExpr, PrimExpr], ExprLike],
            name: str) -> Tensor:
    if a.dtype != b.dtype:
        raise TopiError(f"{name} of {a.dtype} and {b.dtype}: cast one operand first")
    shape = broadcast_shape(const_shape(a), const_shape(b))
    return te.compute(shape, lambda *i: fn(a[_broadcast_index(a, i)], b[_broadcast_index(b, i)]),
                      name=name)


def add(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, lambda x, y: x + y, "add")


def subtract(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, lambda x, y: x - y, "subtract")


def multiply(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, lambda x, y: x * y, "multiply")


def divide(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, lambda x, y: x / y, "divide")


def maximum(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, tir_op.max, "maximum")


def minimum(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, tir_op.min, "minimum")


def power(a: Tensor, b: Tensor) -> Tensor:
    return _binary(a, b, te.power, "power")


def bias_add(x: Tensor, bias: Tensor, axis: int = 1) -> Tensor:
    """``x + bias`` with the 1-D ``bias`` along ``axis`` of ``x``."""
    shape = const_shape(x)
    axis = axis % len(shape)
    if const_shape(bias) != (shape[axis],):
        raise TopiError(f"bias of shape {const_shape(bias)} does not match axis {axis} of "
                        f"{x.name} {shape}")
    return te.compute(shape, lambda *i: x[i] + bias[i[axis]], name="bias_add")


def _inline_producers(s: Schedule, out: Tensor) -> None:
    stack = list(out.op.input_tensors())
    seen: set[int] = set()
    while stack:
        t = stack.pop()
        if id(t.op) in seen or not isinstance(t.op, ComputeOp) or t.op.reduce_axis:
            continue
        seen.add(id(t.op))
        s.compute_inline(t)
        stack.extend(t.op.input_tensors())


def schedule_injective(out: Tensor, s: Schedule | None = None,
                       target: Target | None = None) -> Schedule:
    """Inline element-wise producers into ``out`` and run it as one fused, vectorized,
    parallel loop."""
    if s is None:
        s = create_schedule(out)
    _inline_producers(s, out)
    schedule_elementwise(s, out, vector_lanes(target))
    return s
