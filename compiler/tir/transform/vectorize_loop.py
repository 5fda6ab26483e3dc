"""Turn ``vectorized`` loops into vector (Ramp/Broadcast) code.

The loop variable becomes ``ramp(min, 1, lanes)`` and every expression depending on it a
vector; lane-invariant operands are broadcast. Stores must write distinct addresses per
lane (a Ramp index). When the body cannot be expressed lane-wise (a guard or loop bound
that depends on the lane, a store whose address does not, a read of a location another
lane writes, an allocation, an opaque call, a lazy ``if_then_else`` that would have to
evaluate a guarded load on every lane), the loop is kept as a serial loop instead.
"""
from __future__ import annotations

from ..arith import Analyzer
from ..functor import Mutator, collect, uses_var
from .. import dtype as dt
from ..ir import (Allocate, And, BinaryOp, Broadcast, BufferLoad, BufferStore, Call, Cast,
                  CmpOp, Evaluate, For, ForKind, IfThenElse, IntImm, LetStmt, Not, Or, PrimExpr,
                  PrimFunc, Ramp, Select, Stmt, Var)


class _Scalarize(Exception):
    """The loop body cannot be vectorized."""


def _lanes(e: PrimExpr) -> int:
    return dt.lanes(e.dtype)


def _bcast(e: PrimExpr, n: int) -> PrimExpr:
    return e if _lanes(e) == n else Broadcast(e, n)


class _Vectorizer(Mutator):
    def __init__(self, var: Var, lo: PrimExpr, lanes: int):
        self.var, self.lanes = var, lanes
        self.vmap: dict[Var, PrimExpr] = {var: Ramp(lo, IntImm(1, var.dtype), lanes)}
        self.an = Analyzer()

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(v, v)

    def _binary(self, e: PrimExpr) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)  # type: ignore[attr-defined]
        n = max(_lanes(a), _lanes(b))
        return self.an.simplify(type(e)(_bcast(a, n), _bcast(b, n)))

    def visit_Not(self, e: Not) -> PrimExpr:
        return Not(self.visit(e.a))

    def visit_Select(self, e: Select) -> PrimExpr:
        c, t, f = self.visit(e.condition), self.visit(e.true_value), self.visit(e.false_value)
        n = max(_lanes(c), _lanes(t), _lanes(f))
        return Select(_bcast(c, n), _bcast(t, n), _bcast(f, n))

    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self.visit(e.value)
        return Cast(dt.with_lanes(e.dtype, _lanes(v)), v)

    def visit_Call(self, e: Call) -> PrimExpr:
        args = tuple(self.visit(a) for a in e.args)
        n = max(_lanes(a) for a in args) if args else 1
        if n == 1:
            return Call(e.dtype, e.op, args)
        if e.op == "call_packed":
            raise _Scalarize
        if e.op == "if_then_else":
            branches_load = collect(e.args[1:], lambda x: isinstance(x, BufferLoad))
            if branches_load and _lanes(args[0]) > 1:
                raise _Scalarize
            if _lanes(args[0]) == 1:
                return Call(dt.with_lanes(e.dtype, n), e.op,
                            (args[0], _bcast(args[1], n), _bcast(args[2], n)))
            return Select(args[0], _bcast(args[1], n), _bcast(args[2], n))
        return Call(dt.with_lanes(e.dtype, n), e.op, tuple(_bcast(a, n) for a in args))

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.an.simplify(self.visit(i)) for i in e.indices)
        return BufferLoad(e.buffer, idx)

    # -- statements
    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        idx = tuple(self.an.simplify(self.visit(i)) for i in s.indices)
        value = self.visit(s.value)
        n = max([_lanes(value)] + [_lanes(i) for i in idx])
        if n == 1:
            raise _Scalarize  # every lane would store to the same address
        if len(idx) != 1 or not isinstance(idx[0], Ramp) or \
                (isinstance(idx[0].stride, IntImm) and idx[0].stride.value == 0):
            raise _Scalarize
        return BufferStore(s.buffer, _bcast(value, n), idx)

    def visit_For(self, s: For) -> Stmt:
        if uses_var(s.min, self.vmap) or uses_var(s.extent, self.vmap):
            raise _Scalarize
        return For(s.loop_var, s.min, s.extent, s.kind, self.visit(s.body), s.annotations)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        if uses_var(s.condition, self.vmap):
            raise _Scalarize
        return self.generic(s)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.visit(s.value)
        if _lanes(value) == 1:
            return LetStmt(s.var, value, self.visit(s.body))
        vec = Var(s.var.name, value.dtype)
        self.vmap[s.var] = vec
        return LetStmt(vec, value, self.visit(s.body))

    def visit_Allocate(self, s: Allocate) -> Stmt:
        raise _Scalarize

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        if uses_var(s.value, self.vmap):
            raise _Scalarize
        return s


for _cls in (BinaryOp.__subclasses__() + CmpOp.__subclasses__() + [And, Or]):
    setattr(_Vectorizer, "visit_" + _cls.__name__, _Vectorizer._binary)


def _cross_lane_dependence(body: Stmt, var: Var) -> bool:
    """A buffer both stored and loaded at different addresses may carry values between
    lanes (e.g. ``A[i + 1] = A[i]``)."""
    stores = collect(body, lambda n: isinstance(n, BufferStore))
    loads = collect(body, lambda n: isinstance(n, BufferLoad))
    for st in stores:
        for ld in loads:
            if ld.buffer.data is st.buffer.data and ld.indices != st.indices and \
                    uses_var(ld.indices + st.indices, {var}):  # type: ignore[attr-defined]
                return True
    return False


class _VectorizeLoops(Mutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != ForKind.VECTORIZED or not isinstance(s.extent, IntImm) or \
                _cross_lane_dependence(body, s.loop_var) or \
                collect(body, lambda n: isinstance(n, (Ramp, Broadcast))):
            kind = ForKind.SERIAL if s.kind == ForKind.VECTORIZED else s.kind
            return For(s.loop_var, s.min, s.extent, kind, body, s.annotations)
        try:
            return _Vectorizer(s.loop_var, s.min, s.extent.value).visit(body)
        except _Scalarize:
            return For(s.loop_var, s.min, s.extent, ForKind.SERIAL, body, s.annotations)


def vectorize_loop(func: PrimFunc) -> PrimFunc:
    """The function with vectorized loops turned into vector code (or serial loops)."""
    return func.with_body(_VectorizeLoops().visit(func.body))
