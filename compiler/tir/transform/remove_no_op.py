"""Remove statements without effect: empty loops and branches, self-assignments, unused
allocations, constant evaluations."""
from __future__ import annotations

from ..functor import Mutator, collect
from ..ir import (NOP, Allocate, AttrStmt, BufferHandle, BufferLoad, BufferStore, Evaluate, For,
                  IfThenElse, IntImm, LetStmt, PrimFunc, SeqStmt, Stmt, is_no_op, seq)


class _RemoveNoOp(Mutator):
    def visit_SeqStmt(self, s: SeqStmt) -> Stmt:
        kept = [x for x in (self.visit(c) for c in s.stmts) if not is_no_op(x)]
        return seq(*kept) if kept else NOP

    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if is_no_op(body) or (isinstance(s.extent, IntImm) and s.extent.value <= 0):
            return NOP
        return For(s.loop_var, s.min, s.extent, s.kind, body, s.annotations)

    def visit_IfThenElse(self, s: IfThenElse) -> Stmt:
        then = self.visit(s.then_case)
        other = None if s.else_case is None else self.visit(s.else_case)
        if other is not None and is_no_op(other):
            other = None
        if is_no_op(then) and other is None:
            return NOP
        return IfThenElse(s.condition, then, other)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        v = s.value
        if isinstance(v, BufferLoad) and v.buffer is s.buffer and v.indices == s.indices:
            return NOP
        return s

    def visit_Allocate(self, s: Allocate) -> Stmt:
        body = self.visit(s.body)
        used = collect(body, lambda n: isinstance(n, (BufferLoad, BufferStore, BufferHandle))
                       and n.buffer.data is s.buffer.data)  # type: ignore[attr-defined]
        return Allocate(s.buffer, body) if used else body

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        body = self.visit(s.body)
        return NOP if is_no_op(body) else LetStmt(s.var, s.value, body)

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        body = self.visit(s.body)
        return NOP if is_no_op(body) else AttrStmt(s.node, s.key, s.value, body)

    def visit_Evaluate(self, s: Evaluate) -> Stmt:
        return NOP if is_no_op(s) else s


def remove_no_op(func: PrimFunc) -> PrimFunc:
    """The function without statements that have no effect."""
    return func.with_body(_RemoveNoOp().visit(func.body))
