"""Lane analyses of vector index expressions.

``affine_lanes`` recognizes indices of the form ``base + lane * stride`` (what a
vectorized loop produces after flattening), so loads and stores become one contiguous
vector access or one broadcast scalar instead of a gather. ``lane_of`` rewrites a vector
expression into the scalar expression of one lane, for operations that must run lane by
lane (a lazily evaluated vector ``if_then_else``).
"""
from __future__ import annotations

from ...tir import dtype as dt
from ...tir.functor import Mutator
from ...tir.ir import (Add, Broadcast, BufferLoad, Call, Cast, IntImm, Mul, PrimExpr, Ramp, Sub,
                       Var)
from .types import CodegenError


def affine_lanes(e: PrimExpr) -> tuple[PrimExpr, int] | None:
    """``(scalar base, constant stride)`` with lane ``i`` of ``e`` equal to
    ``base + i * stride``, or None when ``e`` is not of that form."""
    if isinstance(e, Ramp):
        return (e.base, e.stride.value) if isinstance(e.stride, IntImm) else None
    if isinstance(e, Broadcast):
        return e.value, 0
    if isinstance(e, (Add, Sub)):
        a, b = affine_lanes(e.a), affine_lanes(e.b)
        if a is None or b is None:
            return None
        if isinstance(e, Add):
            return _add(a[0], b[0]), a[1] + b[1]
        return a[0] - b[0], a[1] - b[1]
    if isinstance(e, Mul):
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, Broadcast) and isinstance(y.value, IntImm):
                inner = affine_lanes(x)
                if inner is not None:
                    c = y.value.value
                    return _mul(inner[0], y.value), inner[1] * c
    return None


def _add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and a.value == 0:
        return b
    if isinstance(b, IntImm) and b.value == 0:
        return a
    return a + b


def _mul(a: PrimExpr, c: IntImm) -> PrimExpr:
    if c.value == 1:
        return a
    if isinstance(a, IntImm):
        return IntImm(a.value * c.value, a.dtype)
    return a * c


class _Lane(Mutator):
    def __init__(self, lane: int):
        self.lane = lane

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        return self.visit(e.base) + self.visit(e.stride) * self.lane

    def visit_Broadcast(self, e: Broadcast) -> PrimExpr:
        return self.visit(e.value)

    def visit_Cast(self, e: Cast) -> PrimExpr:
        return Cast(dt.element(e.dtype), self.visit(e.value))

    def visit_Call(self, e: Call) -> PrimExpr:
        return Call(dt.element(e.dtype), e.op, tuple(self.visit(a) for a in e.args))

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        return BufferLoad(e.buffer, tuple(self.visit(i) for i in e.indices))

    def visit_Var(self, v: Var) -> PrimExpr:
        if dt.lanes(v.dtype) > 1:
            raise CodegenError(f"cannot split the vector variable {v.name} into lanes")
        return v


def lane_of(e: PrimExpr, lane: int) -> PrimExpr:
    """The scalar expression computing lane ``lane`` of the vector expression ``e``."""
    return _Lane(lane).visit(e)
