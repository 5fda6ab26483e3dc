"""Turn every multi-dimensional buffer access into a 1-D access of its storage.

Each buffer is replaced by a 1-D buffer over the same ``data`` (shape: the storage size)
and indices become ``elem_offset + sum(index * stride)``. Function parameters keep their
N-D declaration so callers can still check shapes; only the body changes. Buffers passed
whole to opaque calls keep their N-D view.
"""
from __future__ import annotations

from ..arith import Analyzer
from ..functor import Mutator
from ..ir import (Allocate, Buffer, BufferLoad, BufferStore, IntImm, PrimExpr, PrimFunc, Stmt)


class _Flatten(Mutator):
    def __init__(self) -> None:
        self.flat: dict[Buffer, Buffer] = {}
        self.an = Analyzer()

    def flat_buffer(self, b: Buffer) -> Buffer:
        if b not in self.flat:
            is_flat = len(b.shape) == 1 and not b.strides and \
                isinstance(b.elem_offset, IntImm) and b.elem_offset.value == 0
            self.flat[b] = b if is_flat else Buffer(
                b.data, b.name, (self.an.simplify(b.size()),), b.dtype, (), IntImm(0), b.scope)
        return self.flat[b]

    def index(self, b: Buffer, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        idx = tuple(self.visit(i) for i in indices)
        return (self.an.simplify(b.flat_index(idx)),)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        return BufferLoad(self.flat_buffer(e.buffer), self.index(e.buffer, e.indices))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        return BufferStore(self.flat_buffer(s.buffer), self.visit(s.value),
                           self.index(s.buffer, s.indices))

    def visit_Allocate(self, s: Allocate) -> Stmt:
        return Allocate(self.flat_buffer(s.buffer), self.visit(s.body))


def flatten_storage(func: PrimFunc) -> PrimFunc:
    """The function with 1-D buffer accesses only."""
    return func.with_body(_Flatten().visit(func.body))
