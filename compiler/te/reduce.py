"""Reductions: ``reduce_axis`` and commutative reducers (sum, max, min, user-defined)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..tir import dtype as dt
from ..tir.ir import (ExprLike, IntImm, IterKind, IterVar, Node, PrimExpr, Var, all_of,
                      const, convert, max_, min_)
from ..tir.op import max_value, min_value


def reduce_axis(dom: int | PrimExpr | tuple[ExprLike, ExprLike], name: str = "k") -> IterVar:
    """A reduction axis over ``range(dom)`` or ``range(lo, hi)`` for a ``(lo, hi)`` pair."""
    if isinstance(dom, tuple):
        lo, hi = convert(dom[0]), convert(dom[1])
    else:
        lo, hi = convert(0), convert(dom)
    extent = hi - lo
    if isinstance(lo, IntImm) and isinstance(hi, IntImm):
        extent = convert(hi.value - lo.value)
        if extent.value <= 0:  # type: ignore[attr-defined]
            raise ValueError(f"reduce_axis {name!r} has an empty range [{lo}, {hi})")
    return IterVar(Var(name), lo, extent, IterKind.REDUCE)


@dataclass(frozen=True, slots=True)
class CommReducer(Node):
    """``result`` combines accumulator ``lhs`` with a new value ``rhs``; ``identity`` is
    the neutral start. Commutative and associative, so any loop order is valid."""

    lhs: Var
    rhs: Var
    result: PrimExpr
    identity: PrimExpr
    name: str = "reducer"


@dataclass(frozen=True, slots=True, eq=False)
class Reduce(PrimExpr):
    """Reduce ``source`` over ``axis`` with ``combiner``, skipping points where
    ``condition`` is false. Only valid as the whole body of a compute."""

    combiner: CommReducer
    source: PrimExpr
    axis: tuple[IterVar, ...]
    condition: PrimExpr

    @property
    def dtype(self) -> str:
        return self.source.dtype


class Reducer:
    """A reducer factory: ``r(expr, axis=k)`` (``axis`` may be a list) builds a Reduce."""

    def __init__(self, fcombine: Callable[[PrimExpr, PrimExpr], ExprLike],
                 fidentity: Callable[[str], ExprLike], name: str):
        self.fcombine = fcombine
        self.fidentity = fidentity
        self.name = name

    def combiner(self, dtype: str) -> CommReducer:
        """The reducer instantiated for ``dtype``."""
        lhs, rhs = Var("x", dtype), Var("y", dtype)
        result = convert(self.fcombine(lhs, rhs), dtype)
        identity = convert(self.fidentity(dtype), dtype)
        if result.dtype != dtype or identity.dtype != dtype:
            raise TypeError(f"reducer {self.name!r} must keep dtype {dtype}: combine gives "
                            f"{result.dtype}, identity gives {identity.dtype}")
        return CommReducer(lhs, rhs, result, identity, self.name)

    def __call__(self, expr: ExprLike, axis: IterVar | Sequence[IterVar],
                 where: ExprLike | None = None) -> Reduce:
        src = convert(expr)
        axes = (axis,) if isinstance(axis, IterVar) else tuple(axis)
        for a in axes:
            if a.kind != IterKind.REDUCE:
                raise ValueError(f"{a.var.name} is not a reduce_axis")
        cond = all_of() if where is None else convert(where)
        if not dt.is_bool(cond.dtype):
            raise TypeError(f"reduction condition must be bool, got {cond.dtype}")
        return Reduce(self.combiner(src.dtype), src, axes, cond)


def comm_reducer(fcombine: Callable[[PrimExpr, PrimExpr], ExprLike],
                 fidentity: Callable[[str], ExprLike], name: str = "reduce") -> Reducer:
    """A user-defined commutative reducer, e.g. a product:
    ``comm_reducer(lambda x, y: x * y, lambda t: const(1, t), "prod")``."""
    return Reducer(fcombine, fidentity, name)


def _const_of(value: Any) -> Callable[[str], PrimExpr]:
    return lambda t: const(value, t)


sum = comm_reducer(lambda x, y: x + y, _const_of(0), "sum")  # noqa: A001
max = comm_reducer(max_, min_value, "max")  # noqa: A001
min = comm_reducer(min_, max_value, "min")  # noqa: A001
