"""User-facing expression builders: math intrinsics, casts, ``if_then_else``, packed calls."""
from __future__ import annotations

from . import dtype as dt
from .ir import (Buffer, BufferHandle, Call, Evaluate, ExprLike, PrimExpr, Select,
                 StringImm, const, convert, max_, min_)

#: Intrinsics of one floating-point argument understood by the interpreter and codegen.
UNARY_MATH = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "fabs", "floor",
              "ceil", "round")
#: Intrinsics of two floating-point arguments.
BINARY_MATH = ("pow",)


def _float_call(op: str, *args: ExprLike) -> PrimExpr:
    xs = [convert(a) for a in args]
    xs = [convert(a, xs[0].dtype) for a in args]
    if not dt.is_float(xs[0].dtype):
        raise TypeError(f"{op} needs a floating-point argument, got {xs[0].dtype}: "
                        f"cast it first, e.g. x.astype('float32')")
    if any(x.dtype != xs[0].dtype for x in xs):
        raise TypeError(f"{op} arguments have different dtypes {[x.dtype for x in xs]}")
    return Call(xs[0].dtype, op, tuple(xs))


def exp(x: ExprLike) -> PrimExpr: return _float_call("exp", x)
def log(x: ExprLike) -> PrimExpr: return _float_call("log", x)
def sqrt(x: ExprLike) -> PrimExpr: return _float_call("sqrt", x)
def rsqrt(x: ExprLike) -> PrimExpr: return _float_call("rsqrt", x)
def tanh(x: ExprLike) -> PrimExpr: return _float_call("tanh", x)
def sigmoid(x: ExprLike) -> PrimExpr: return _float_call("sigmoid", x)
def erf(x: ExprLike) -> PrimExpr: return _float_call("erf", x)
def fabs(x: ExprLike) -> PrimExpr: return _float_call("fabs", x)
def floor(x: ExprLike) -> PrimExpr: return _float_call("floor", x)
def ceil(x: ExprLike) -> PrimExpr: return _float_call("ceil", x)
def round(x: ExprLike) -> PrimExpr: return _float_call("round", x)  # noqa: A001
def power(x: ExprLike, y: ExprLike) -> PrimExpr: return _float_call("pow", x, y)


def cast(dtype: str, x: ExprLike) -> PrimExpr:
    """Convert ``x`` to ``dtype``."""
    dt.split(dtype)
    return convert(x).astype(dtype)


def min(a: ExprLike, b: ExprLike) -> PrimExpr:  # noqa: A001
    return min_(a, b)


def max(a: ExprLike, b: ExprLike) -> PrimExpr:  # noqa: A001
    return max_(a, b)


def abs(x: ExprLike) -> PrimExpr:  # noqa: A001
    """Absolute value of an integer or float."""
    e = convert(x)
    return fabs(e) if dt.is_float(e.dtype) else Select(e < 0, -e, e)


def if_then_else(cond: ExprLike, t: ExprLike, f: ExprLike) -> PrimExpr:
    """``t`` if ``cond`` else ``f``, evaluating only the chosen branch (safe for guarded
    loads such as padding)."""
    c = convert(cond)
    if not dt.is_bool(c.dtype):
        raise TypeError(f"if_then_else condition must be bool, got {c.dtype}")
    if isinstance(t, PrimExpr) or not isinstance(f, PrimExpr):
        tv = convert(t)
        fv = convert(f, tv.dtype)
    else:
        fv = f
        tv = convert(t, fv.dtype)
    if tv.dtype != fv.dtype:
        raise TypeError(f"if_then_else branches differ in dtype: {tv.dtype} vs {fv.dtype}")
    return Call(tv.dtype, "if_then_else", (c, tv, fv))


def min_value(dtype: str) -> PrimExpr:
    """The lowest value of ``dtype`` (-inf for floats): the identity of max."""
    if dt.is_float(dtype):
        return const(float("-inf"), dtype)
    import numpy as np
    return const(int(np.iinfo(dt.to_numpy(dtype)).min), dtype)


def max_value(dtype: str) -> PrimExpr:
    """The highest value of ``dtype`` (+inf for floats): the identity of min."""
    if dt.is_float(dtype):
        return const(float("inf"), dtype)
    import numpy as np
    return const(int(np.iinfo(dt.to_numpy(dtype)).max), dtype)


def call_packed(name: str, *args: Buffer | ExprLike) -> Evaluate:
    """A statement calling the external function registered as ``name`` (see
    ``packed.register_packed``); Buffers are passed whole."""
    conv = tuple(BufferHandle(a) if isinstance(a, Buffer) else convert(a) for a in args)
    return Evaluate(Call("int32", "call_packed", (StringImm(name),) + conv))


__all__ = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "fabs", "floor", "ceil",
           "round", "power", "cast", "min", "max", "abs", "if_then_else", "min_value",
           "max_value", "call_packed", "UNARY_MATH", "BINARY_MATH"]
