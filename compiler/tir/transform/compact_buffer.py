"""Shrink intermediate buffers to the region they use and allocate them where they are used.

After ``compute_at``/``cache_read`` a stage computes one tile per loop iteration, but its
buffer is still allocated at the tensor's full size around the whole program. For every
allocation this pass finds the innermost statement enclosing all its accesses (their
lowest common ancestor; inside a loop that is the loop body, i.e. one allocation per
iteration) and the box of indices accessed there, with the loops inside that statement
relaxed over their ranges and the loops outside it kept symbolic. The buffer becomes a
new one with the box's (constant) extents, allocated at that statement, and every access
is shifted by the box's start. A dimension whose extent has no constant bound keeps its
full size; a buffer passed whole to an opaque call (a ``BufferHandle``, e.g. a tensorize
view) is left alone. Works on programs with or without blocks (block iterators are
replaced by their bindings to compute regions).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..arith import Analyzer, Interval, eval_interval
from ..functor import Mutator, collect, stmt_children, substitute
from ..ir import (LE, Allocate, BlockRealize, Buffer, BufferHandle, BufferLoad, BufferStore, For,
                  IntImm, PrimExpr, PrimFunc, Stmt, Var)


@dataclass
class _Access:
    path: list[Stmt]
    indices: tuple[PrimExpr, ...]


def _accesses(root: Stmt, buf: Buffer) -> list[_Access] | None:
    """Every load/store of ``buf`` under ``root`` with its statement path and its indices in
    terms of loop variables; None when ``buf`` is also used opaquely."""
    out: list[_Access] = []
    opaque = False

    def visit(s: Stmt, path: list[Stmt], vmap: dict[Var, PrimExpr]) -> None:
        nonlocal opaque
        if isinstance(s, BlockRealize):
            binds = {iv.var: substitute(v, vmap) for iv, v in zip(s.block.iter_vars, s.iter_values)}
            vmap = {**vmap, **binds}
        here = path + [s]
        own = [getattr(s, n) for n in ("value", "indices", "condition", "extent", "min", "predicate",
                                       "iter_values") if hasattr(s, n)]
        for node in collect(tuple(own), lambda n: isinstance(n, (BufferLoad, BufferHandle))):
            if isinstance(node, BufferHandle) and node.buffer.data is buf.data:
                opaque = True
            elif isinstance(node, BufferLoad) and node.buffer is buf:
                out.append(_Access(here, tuple(substitute(i, vmap) for i in node.indices)))
        if isinstance(s, BufferStore) and s.buffer is buf:
            out.append(_Access(here, tuple(substitute(i, vmap) for i in s.indices)))
        for c in stmt_children(s):
            visit(c, here, vmap)

    visit(root, [], {})
    return None if opaque else out


def _site(paths: list[list[Stmt]]) -> tuple[int, bool]:
    """Where to allocate: ``(k, inside)`` -- inside the body of loop ``paths[0][k]``, or
    around statement ``paths[0][k]``. The site is the lowest common ancestor of the
    accesses, moved up to the outermost block enclosing it (a block's body is not
    a place for an allocation)."""
    depth = 0
    while all(len(p) > depth + 1 for p in paths) and all(p[depth] is paths[0][depth] for p in paths):
        depth += 1
    if depth == 0:
        return 0, False
    blocks = [k for k in range(depth) if isinstance(paths[0][k], BlockRealize)]
    if blocks:
        return blocks[0], False
    return depth - 1, isinstance(paths[0][depth - 1], For)


def _pick(bounds: list[PrimExpr], an: Analyzer, lower: bool) -> PrimExpr | None:
    """The bound among ``bounds`` provably below (``lower``) / above all others."""
    for b in bounds:
        if all(an.can_prove(LE(b, o) if lower else LE(o, b)) for o in bounds):
            return b
    return None


class _Rewrite(Mutator):
    def __init__(self, old: Buffer, new: Buffer, start: list[PrimExpr], an: Analyzer):
        self.old, self.new, self.start, self.an = old, new, start, an

    def _shift(self, indices: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        return tuple(self.an.simplify(self.visit(i) - s) for i, s in zip(indices, self.start))

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        if e.buffer is not self.old:
            return self.generic(e)
        return BufferLoad(self.new, self._shift(e.indices))

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        if s.buffer is not self.old:
            return self.generic(s)
        return BufferStore(self.new, self.visit(s.value), self._shift(s.indices))


def _compact(body: Stmt, alloc: Allocate) -> Stmt:
    buf = alloc.buffer
    accesses = _accesses(alloc.body, buf)
    if not accesses:
        return body
    k, inside = _site([a.path for a in accesses])
    path0 = accesses[0].path
    site = path0[k]
    first_relaxed = k + 1 if inside else k
    an = Analyzer()
    for lp in path0[:first_relaxed]:
        if isinstance(lp, For):
            an.bind(lp.loop_var, an.bound(lp.min)[0], an.bound(lp.min + lp.extent - 1)[1])
    boxes: list[list[Interval]] = []
    for acc in accesses:
        relax: dict[Var, Interval] = {}
        for s in acc.path[first_relaxed:]:
            if isinstance(s, For):
                relax[s.loop_var] = Interval(eval_interval(s.min, relax, an).min,
                                             eval_interval(s.min + s.extent - 1, relax, an).max)
        boxes.append([eval_interval(i, relax, an) for i in acc.indices])
    starts: list[PrimExpr] = []
    shape: list[PrimExpr] = []
    for dim, full in enumerate(buf.shape):
        known = all(b[dim].min is not None and b[dim].max is not None for b in boxes)
        lo = _pick([b[dim].min for b in boxes], an, True) if known else None  # type: ignore[misc]
        hi = _pick([b[dim].max for b in boxes], an, False) if known else None  # type: ignore[misc]
        ext = None if lo is None or hi is None else an.bound(an.simplify(hi - lo + 1))[1]
        if ext is None or (isinstance(full, IntImm) and ext >= full.value):
            starts.append(IntImm(0))
            shape.append(full)
        else:
            starts.append(lo)  # type: ignore[arg-type]
            shape.append(IntImm(max(ext, 1)))
    new = Buffer(Var(buf.name, "handle"), buf.name, tuple(shape), buf.dtype, (), IntImm(0), buf.scope)
    placed = _Rewrite(buf, new, starts, an).visit(site)
    if inside:
        placed = For(placed.loop_var, placed.min, placed.extent, placed.kind, Allocate(new, placed.body),
                     placed.annotations)
    else:
        placed = Allocate(new, placed)
    return _Move(alloc, site, placed).visit(body)


class _Move(Mutator):
    """Drop the old allocation and put the rewritten site in place."""

    def __init__(self, alloc: Allocate, site: Stmt, placed: Stmt):
        self.alloc, self.site, self.placed = alloc, site, placed

    def visit(self, n: Any) -> Any:
        if n is self.alloc:
            return self.visit(self.alloc.body)
        if n is self.site:
            return self.placed
        return super().visit(n)


def compact_buffer(func: PrimFunc) -> PrimFunc:
    """Shrink every intermediate allocation of ``func`` to its used region, allocated at the
    innermost statement enclosing its uses (see the module docstring)."""
    body = func.body
    for buf in [a.buffer for a in collect(body, lambda n: isinstance(n, Allocate))]:
        alloc = next(a for a in collect(body, lambda n: isinstance(n, Allocate)) if a.buffer is buf)
        body = _compact(body, alloc)  # type: ignore[arg-type]
    return func.with_body(body)
