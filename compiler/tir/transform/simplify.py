"""Simplify every expression with the ranges of the enclosing loops known; fold constant
conditions, drop loops of extent <= 1 and substitute trivial lets."""
from __future__ import annotations

from ..arith import Analyzer
from ..functor import Mutator, substitute
from ..ir import (NOP, BlockRealize, For, IfThenElse, IntImm, LetStmt, Node, PrimExpr, PrimFunc,
                  Stmt, Var)


class StmtSimplifier(Mutator):
    """Statement-level simplifier; reusable by passes that need it on a subtree."""

    def __init__(self, an: Analyzer | None = None):
        self.an = an or Analyzer()

    def visit(self, node: object) -> object:
        if isinstance(node, PrimExpr) and not isinstance(node, Var):
            return self.an.simplify(node)
        return super().visit(node)

    def visit_For(self, s: For) -> Stmt:
        lo, ext = self.an.simplify(s.min), self.an.simplify(s.extent)
        if isinstance(ext, IntImm) and ext.value <= 0:
            return NOP
        if isinstance(ext, IntImm) and ext.value == 1:
            return self.visit(substitute(s.body, {s.loop_var: lo}))
        lo_b = self.an.bound(lo)[0]
        hi_b = self.an.bound(lo + ext - 1)[1]
        with self.an.scope(s.loop_var, lo_b, hi_b):
            body = self.visit(s.body)
        return For(s.loop_var, lo, ext, s.kind, body, s.annotations)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt | None:
        cond = self.an.simplify(s.condition)
        if isinstance(cond, IntImm):
            if cond.value:
                return self.visit(s.then_case)
            return NOP if s.else_case is None else self.visit(s.else_case)
        else_case = None if s.else_case is None else self.visit(s.else_case)
        return IfThenElse(cond, self.visit(s.then_case), else_case)

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        value = self.an.simplify(s.value)
        if isinstance(value, (IntImm, Var)):
            return self.visit(substitute(s.body, {s.var: value}))
        return LetStmt(s.var, value, self.visit(s.body))

    def visit_BlockRealize(self, r: BlockRealize) -> Node:
        values = tuple(self.an.simplify(v) for v in r.iter_values)
        pred = self.an.simplify(r.predicate)
        if isinstance(pred, IntImm) and not pred.value:
            return NOP
        saved = dict(self.an.bounds)
        for iv in r.block.iter_vars:
            lo = self.an.bound(iv.min)[0]
            hi = self.an.bound(iv.min + iv.extent - 1)[1]
            self.an.bind(iv.var, lo, hi)
        block = self.visit(r.block)
        self.an.bounds = saved
        return BlockRealize(values, pred, block)


def simplify(func: PrimFunc) -> PrimFunc:
    """The function with simplified expressions and trivially decided control flow."""
    return func.with_body(StmtSimplifier().visit(func.body))
