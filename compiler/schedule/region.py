"""Bound inference for schedules: the region of a buffer read inside a loop body, as
intervals in terms of the loops outside it."""
from __future__ import annotations

from ..tir.arith import Analyzer, Interval, eval_interval
from ..tir.ir import Buffer, For, IntImm, Max, Min, Stmt, Var
from .tree import blocks_in, block_accesses, iter_stmts, loops_of, read_buffers


def bind_loops(an: Analyzer, loops: list[For]) -> None:
    """Tell the analyzer the constant ranges of ``loops`` (where they are constant)."""
    for loop in loops:
        lo = an.bound(loop.min)[0]
        hi = an.bound(loop.min + loop.extent - 1)[1]
        an.bind(loop.loop_var, lo, hi)


def _relax_loops(loops: list[For], relax: dict[Var, Interval], an: Analyzer) -> None:
    for loop in loops:
        lo = eval_interval(loop.min, relax, an).min
        hi = eval_interval(loop.min + loop.extent - 1, relax, an).max
        relax[loop.loop_var] = Interval(lo, hi)


def _union(a: Interval, b: Interval, an: Analyzer) -> Interval:
    lo = None if a.min is None or b.min is None else an.simplify(Min(a.min, b.min))
    hi = None if a.max is None or b.max is None else an.simplify(Max(a.max, b.max))
    return Interval(lo, hi)


def read_region(scope: Stmt, buffer: Buffer, an: Analyzer,
                skip_block: str | None = None) -> list[Interval] | None:
    """Per-dimension intervals of ``buffer`` read by the blocks in ``scope`` (loops inside
    ``scope`` relaxed over their ranges), or None when nothing there reads it."""
    region: list[Interval] | None = None
    for r, path in blocks_in(scope):
        if r.block.name == skip_block or buffer not in read_buffers(r):
            continue
        relax: dict[Var, Interval] = {}
        _relax_loops(loops_of(path), relax, an)
        inner = [s for s, _ in iter_stmts(r.block.body) if isinstance(s, For)]
        _relax_loops(inner, relax, an)
        for acc in block_accesses(r):
            if acc.buffer is not buffer or acc.write:
                continue
            if acc.indices is None:
                box = [Interval(IntImm(0), an.simplify(s - 1)) for s in buffer.shape]
            else:
                box = [eval_interval(i, relax, an) for i in acc.indices]
            region = box if region is None else [_union(x, y, an) for x, y in zip(region, box)]
    return region

