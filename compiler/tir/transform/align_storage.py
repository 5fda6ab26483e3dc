"""Apply ``storage_align`` hints: pad the stride of one dimension of an allocated buffer
to ``k * factor + offset``. Runs before flatten_storage, which uses the strides.

The hint is an AttrStmt above the buffer's Allocate (possibly with other hints between);
the buffer is replaced everywhere, hints included, by one with explicit strides."""
from __future__ import annotations

from ..functor import Mutator
from ..ir import AttrStmt, Buffer, IntImm, PrimExpr, PrimFunc, Stmt


def aligned_strides(b: Buffer, axis: int, factor: int, offset: int) -> tuple[PrimExpr, ...]:
    """Row-major strides of ``b`` with dimension ``axis``'s stride padded."""
    if not all(isinstance(s, IntImm) for s in b.shape):
        raise ValueError(f"storage_align needs a constant shape, {b.name} has {b.shape}")
    strides = [1] * len(b.shape)
    for d in range(len(b.shape) - 2, -1, -1):
        s = strides[d + 1] * b.shape[d + 1].value  # type: ignore[attr-defined]
        if d == axis:
            s += (offset - s) % factor
        strides[d] = s
    return tuple(IntImm(s) for s in strides)


class _Align(Mutator):
    def __init__(self) -> None:
        self.remap: dict[Buffer, Buffer] = {}

    def visit_buffer(self, b: Buffer) -> Buffer:
        return self.remap.get(b, b)

    def visit_AttrStmt(self, s: AttrStmt) -> Stmt:
        if s.key != "storage_align":
            return self.generic(s)
        old: Buffer = s.node
        axis, factor, offset = s.value
        self.remap[old] = Buffer(old.data, old.name, old.shape, old.dtype,
                                 aligned_strides(old, axis, factor, offset), old.elem_offset,
                                 old.scope)
        return self.visit(s.body)


def align_storage(func: PrimFunc) -> PrimFunc:
    """The function with aligned buffers given explicit padded strides."""
    return func.with_body(_Align().visit(func.body))
