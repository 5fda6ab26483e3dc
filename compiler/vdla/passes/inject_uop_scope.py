"""inject_uop_scope: tensorized micro-ops -> instruction scopes over their loop nests.

``tensorize`` replaces the inner (BATCH, BLOCK_OUT, BLOCK_IN) block of the GEMM by one
micro-op inside ``attr vdla.uop_scope``; the loops around it (output tiles, input
channel blocks, kernel taps) are what one GEMM instruction iterates.  This pass

- rewrites the micro-op's arguments from tensorize views (one tile of an on-chip buffer
  at an offset) to the allocated buffer and a tile index (``offset / tile size``), the
  form ``fold_uop_loop`` and code generation read;
- lifts the scope above the perfectly nested loops around it, up to the first loop that
  holds anything else (a load of the next chunk, the epilogue), so the scope is one
  instruction whose micro-op list and hardware loops come from those loops.
"""

from __future__ import annotations

from vdla.compiler.tir import (Allocate, AttrStmt, Buffer, BufferHandle, Call, Evaluate, For, ForKind, IntImm, Mutator,
                          PrimExpr, PrimFunc, Stmt)
from vdla.compiler.tir.functor import uses_var

from ..affine import simplify
from ..intrin import UOP_SCOPE
from ..target import VdlaTarget
from .common import VdlaLoweringError, is_vdla_scope


class _Inject(Mutator):
    def __init__(self, target: VdlaTarget):
        self.target = target
        self.allocs: dict[object, Buffer] = {}

    def visit_Allocate(self, node: Allocate) -> Stmt:
        self.allocs[node.buffer.data] = node.buffer
        return self.generic(node)

    def base(self, view: Buffer) -> tuple[Buffer, PrimExpr]:
        """The allocated buffer behind ``view`` and the index of the view's first tile."""
        buf = self.allocs.get(view.data)
        if buf is None or not is_vdla_scope(buf):
            raise VdlaLoweringError(f"micro-op operand {view.name} is not an on-chip allocation; cache_read/"
                                    f"cache_write it into a vdla scope and compact_buffers before tensorize")
        elems = self.target.scope(buf.scope).tile_elems
        offset = simplify(view.elem_offset)
        rem = simplify(offset % elems)
        if not (isinstance(rem, IntImm) and rem.value == 0):
            raise VdlaLoweringError(f"micro-op operand {view.name} starts inside a tile (offset {offset}); "
                                    f"tensorize at the loop over whole tiles")
        return buf, simplify(offset // elems)

    def visit_Evaluate(self, node: Evaluate) -> Stmt:
        call = node.value
        if not (isinstance(call, Call) and call.op == "call_packed"):
            return node
        args = list(call.args)
        changed = False
        for i, a in enumerate(args[:-1]):
            if isinstance(a, BufferHandle) and is_vdla_scope(a.buffer) and a.buffer is not self.allocs.get(a.buffer.data):
                buf, first = self.base(a.buffer)
                args[i] = BufferHandle(buf)
                args[i + 1] = simplify(first + args[i + 1])
                changed = True
        return Evaluate(Call(call.dtype, call.op, tuple(args))) if changed else node

    def visit_AttrStmt(self, node: AttrStmt) -> Stmt:
        if node.key != UOP_SCOPE:
            return self.generic(node)
        buf = node.node
        if isinstance(buf, Buffer) and buf is not self.allocs.get(buf.data):
            buf = self.base(buf)[0]
        return AttrStmt(buf, node.key, node.value, self.visit(node.body))

    def visit_For(self, loop: For) -> Stmt:
        body = self.visit(loop.body)
        if (isinstance(body, AttrStmt) and body.key == UOP_SCOPE and loop.kind == ForKind.SERIAL
                and not uses_var(body.node, {loop.loop_var})):
            inner = For(loop.loop_var, loop.min, loop.extent, loop.kind, body.body, loop.annotations)
            return AttrStmt(body.node, body.key, body.value, inner)
        if body is loop.body:
            return loop
        return For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.annotations)


def inject_uop_scope(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Canonicalize tensorized micro-ops and lift each instruction scope over its loop nest."""
    return func.with_body(_Inject(target).visit(func.body))
