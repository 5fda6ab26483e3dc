"""Apply ``double_buffer`` hints: a buffer written and read inside a loop gets two copies,
selected by the parity of that loop's iteration, so the next iteration's writes never
overwrite data the current iteration may still be reading (what lets an accelerator's
load of tile i+1 overlap the compute on tile i).
"""
from __future__ import annotations

from ..arith import Analyzer
from ..functor import Mutator, collect, replace_node, stmt_children
from ..ir import (Allocate, AttrStmt, Buffer, BufferLoad, BufferStore, For, IntImm, PrimExpr,
                  PrimFunc, Stmt, decl_buffer)


def _accesses(node: Stmt, buf: Buffer) -> int:
    return len(collect(node, lambda n: isinstance(n, (BufferLoad, BufferStore))
                       and n.buffer is buf))  # type: ignore[attr-defined]


def _innermost_common_loop(body: Stmt, buf: Buffer) -> For | None:
    total = _accesses(body, buf)
    node: Stmt = body
    best = node if isinstance(node, For) else None
    while True:
        inner = [c for c in stmt_children(node) if _accesses(c, buf) == total]
        if not inner:
            return best
        node = inner[0]
        if isinstance(node, For):
            best = node


class _Index(Mutator):
    def __init__(self, old: Buffer, new: Buffer, parity: PrimExpr):
        self.old, self.new, self.parity = old, new, parity

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        if e.buffer is not self.old:
            return BufferLoad(e.buffer, idx)
        return BufferLoad(self.new, (self.parity,) + idx)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        idx = tuple(self.visit(i) for i in s.indices)
        value = self.visit(s.value)
        if s.buffer is not self.old:
            return BufferStore(s.buffer, value, idx)
        return BufferStore(self.new, value, (self.parity,) + idx)


class _DoubleBuffer(Mutator):
    def __init__(self) -> None:
        self.targets: set[Buffer] = set()

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key != "double_buffer_scope":
            return self.generic(s)
        self.targets.add(s.node)
        return self.visit(s.body)

    def visit_Allocate(self, s: Allocate) -> Stmt:
        body = self.visit(s.body)
        old = s.buffer
        loop = _innermost_common_loop(body, old) if old in self.targets else None
        if loop is None:
            return Allocate(old, body)
        strides = (old.size(),) + old.strides if old.strides else ()
        new = decl_buffer((IntImm(2),) + old.shape, old.dtype, old.name, old.scope, strides)
        parity = Analyzer().simplify((loop.loop_var - loop.min) % 2)
        new_loop = _Index(old, new, parity).visit(loop)
        return Allocate(new, replace_node(body, loop, new_loop))


def inject_double_buffer(func: PrimFunc) -> PrimFunc:
    """The function with double-buffered allocations split into two alternating copies."""
    return func.with_body(_DoubleBuffer().visit(func.body))
