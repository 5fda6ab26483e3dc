"""allocate_sram: place every on-chip allocation at a fixed region of its SRAM buffer.

Allocations in a VDLA scope (any shape whose trailing dimensions are one tile: a grid
of tiles) move into one arena buffer per scope, the size of the hardware buffer: every VDLA statement argument naming such a buffer (always followed by
its tile index) names the arena instead, with the region's first tile added to the
index, so the listing shows absolute SRAM addresses.  Placement is a stack: an allocation takes the
tiles after those of the allocations enclosing it and frees them when its scope ends, so
siblings (e.g. successive chunks of one loop) reuse a region while per-thread copies made
by ``inject_virtual_thread`` (nested allocations) get disjoint ones.  A program whose
live allocations exceed a buffer raises :class:`~vdla.compiler.vdla.target.CapacityError`
naming the allocation and the overflow.
"""

from __future__ import annotations

from vdla.compiler.tir import Allocate, Buffer, BufferHandle, Call, IntImm, Mutator, PrimExpr, PrimFunc, Stmt, decl_buffer

from ..affine import simplify

from ..target import VdlaTarget
from .common import is_vdla_scope


class _Place(Mutator):
    def __init__(self, target: VdlaTarget):
        self.target = target
        self.arenas: dict[str, Buffer] = {}
        self.top: dict[str, int] = {}
        self.views: dict[Buffer, Buffer] = {}

    def arena(self, scope: str) -> Buffer:
        if scope not in self.arenas:
            ms = self.target.scope(scope)
            self.arenas[scope] = decl_buffer((ms.depth,) + ms.tile, ms.dtype, scope.replace(".", "_"), scope=scope)
            self.top[scope] = 0
        return self.arenas[scope]

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.views.get(buffer, buffer)

    def visit_Call(self, call: Call) -> PrimExpr:
        if call.op != "call_packed":
            return self.generic(call)
        args = list(call.args)
        for i, a in enumerate(args[:-1]):
            if isinstance(a, BufferHandle) and a.buffer in self.views:
                view = self.views[a.buffer]
                base = view.elem_offset.value // self.target.scope(view.scope).tile_elems  # type: ignore[attr-defined]
                args[i] = BufferHandle(self.arenas[view.scope])
                args[i + 1] = simplify(self.visit(args[i + 1]) + base)
        new = Call(call.dtype, call.op, tuple(self.visit(a) for a in args))
        return new

    def visit_Allocate(self, node: Allocate) -> Stmt:
        b = node.buffer
        if not is_vdla_scope(b):
            return self.generic(node)
        arena = self.arena(b.scope)
        ms = self.target.scope(b.scope)
        nt = len(ms.tile)
        lead = b.shape[:-nt]
        if (not lead or not all(isinstance(d, IntImm) for d in lead)
                or tuple(b.shape[-nt:]) != tuple(IntImm(d) for d in ms.tile)):
            raise ValueError(f"on-chip buffer {b.name} must have shape (..., {', '.join(map(str, ms.tile))}) "
                             f"with constant leading dimensions, got {[str(s) for s in b.shape]}")
        base = self.top[b.scope]
        tiles = 1
        for d in lead:
            tiles *= d.value  # type: ignore[attr-defined]
        ms.check_fits(base + tiles, f"{b.name} (placed at tile {base} of {b.scope})")
        self.views[b] = Buffer(arena.data, b.name, b.shape, b.dtype, (), IntImm(base * ms.tile_elems), b.scope)
        self.top[b.scope] = base + tiles
        body = self.visit(node.body)
        self.top[b.scope] = base
        return body


def allocate_sram(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Turn the on-chip allocations of ``func`` into fixed regions of the SRAM arenas."""
    placer = _Place(target)
    body = placer.visit(func.body)
    for scope in sorted(placer.arenas, reverse=True):
        body = Allocate(placer.arenas[scope], body)
    return func.with_body(body)

