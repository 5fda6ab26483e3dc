"""Replace schedule blocks by plain statements.

Iterators are substituted by their bindings and predicates become ``if`` guards. A
reduction's init is hoisted out of the reduction loops: it is placed, inside copies of
the spatial loops nested below them, just before the outermost loop driving a reduction
iterator (``for i: for j: C=0`` then ``for k: for i: for j: C+=``), so no ``if k == 0`` is
left in the hot loop. When a loop drives both kinds of iterators the init stays guarded by
``reduction iterators == their minimum``.
"""
from __future__ import annotations

from ..functor import child_fields, fresh_copy, substitute, uses_var
from ..ir import (And, BlockRealize, EQ, For, IfThenElse, IntImm, IterKind, PrimExpr, PrimFunc,
                  Stmt, Var, all_of, seq)


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    if isinstance(e, IntImm) and e.value:
        return []
    return [e]


def _guard(cond: PrimExpr, body: Stmt) -> Stmt:
    return body if isinstance(cond, IntImm) and cond.value else IfThenElse(cond, body)


class _Lower:
    def __init__(self) -> None:
        self.hoisted: dict[int, list[Stmt]] = {}

    def stmt(self, s: Stmt, loops: list[For]) -> Stmt:
        if isinstance(s, For):
            new = For(s.loop_var, s.min, s.extent, s.kind, self.stmt(s.body, loops + [s]),
                      s.annotations)
            inits = self.hoisted.pop(id(s), [])
            return seq(*inits, new)
        if isinstance(s, BlockRealize):
            return self.block(s, loops)
        values = []
        changed = False
        for name in child_fields(type(s)):
            v = getattr(s, name)
            if isinstance(v, Stmt):
                nv = self.stmt(v, loops)
                changed |= nv is not v
                v = nv
            elif isinstance(v, tuple) and v and isinstance(v[0], Stmt):
                nv = tuple(self.stmt(x, loops) for x in v)
                changed |= any(a is not b for a, b in zip(nv, v))
                v = nv
            values.append(v)
        return type(s)(*values) if changed else s

    def block(self, r: BlockRealize, loops: list[For]) -> Stmt:
        b = r.block
        vmap = {iv.var: val for iv, val in zip(b.iter_vars, r.iter_values)}
        body = substitute(b.body, vmap)
        if b.init is None:
            return _guard(r.predicate, body)
        init = substitute(b.init, vmap)
        red = [(iv, val) for iv, val in zip(b.iter_vars, r.iter_values)
               if iv.kind == IterKind.REDUCE]
        spatial_vals = [val for iv, val in zip(b.iter_vars, r.iter_values)
                        if iv.kind != IterKind.REDUCE]
        red_loops = {lp.loop_var for lp in loops if any(uses_var(v, {lp.loop_var}) for _, v in red)}
        if self.hoist(loops, red_loops, spatial_vals, init, r.predicate):
            return _guard(r.predicate, body)
        first = all_of(*(EQ(val, iv.min) for iv, val in red))
        return _guard(r.predicate, seq(IfThenElse(first, init), body))

    def hoist(self, loops: list[For], red_loops: set[Var], spatial_vals: list[PrimExpr],
              init: Stmt, predicate: PrimExpr) -> bool:
        start = next((k for k, lp in enumerate(loops) if lp.loop_var in red_loops), None)
        if start is None:
            return False
        below = loops[start:]
        for lp in below:
            if lp.loop_var in red_loops and any(uses_var(v, {lp.loop_var}) for v in spatial_vals):
                return False
        if uses_var(init, red_loops):
            return False
        keep = [lp for lp in below if lp.loop_var not in red_loops]
        if any(uses_var(lp.min, red_loops) or uses_var(lp.extent, red_loops) for lp in keep):
            return False
        conds = [c for c in _conjuncts(predicate) if not uses_var(c, red_loops)]
        nest: Stmt = _guard(all_of(*conds), init)
        for lp in reversed(keep):
            nest = For(lp.loop_var, lp.min, lp.extent, lp.kind, nest, lp.annotations)
        self.hoisted.setdefault(id(loops[start]), []).append(fresh_copy(nest))
        return True


def lower_blocks(func: PrimFunc) -> PrimFunc:
    """The function without Block/BlockRealize nodes."""
    return func.with_body(_Lower().stmt(func.body, []))
