"""decompose_reduction: move a reduction's init out of its block, in front of a loop.

A reduction block runs its ``init`` when every reduce iterator is at its minimum. Before
tensorizing the update with an instruction that only accumulates (a GEMM core), the init
must become a stage of its own: ``decompose_reduction(block, loop)`` places a new block
``<block>_init`` right before ``loop``, under fresh copies of the loops between ``loop``
and the block that drive only spatial iterators, and leaves the original block without
its init (an update block). ``loop`` must not be inside a loop driving a reduce iterator.
"""
from __future__ import annotations

from dataclasses import replace as dc_replace

from ..tir.functor import substitute, uses_var
from ..tir.ir import (And, Block, BlockRealize, For, IntImm, IterKind, IterVar, PrimExpr, PrimFunc,
                      Stmt, Var, all_of, seq)
from .cache import unique_block_name
from .compute_location import get_block
from .errors import ScheduleError
from .loop_transform import get_loop
from .tree import loops_of, replace


class ReductionError(ScheduleError):
    """decompose_reduction is not possible for this block/loop."""


def _conjuncts(e: PrimExpr) -> list[PrimExpr]:
    if isinstance(e, And):
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [] if isinstance(e, IntImm) and e.value else [e]


def decompose_reduction(func: PrimFunc, name: str, var: Var) -> tuple[PrimFunc, str]:
    """Split block ``name`` into an init block placed before loop ``var`` and an update
    block; returns the init block's name."""
    what = f"decompose_reduction({name!r}, {getattr(var, 'name', var)!r})"
    r, path = get_block(func, name)
    b = r.block
    if b.init is None:
        raise ReductionError(f"{what}: block {name!r} is not a reduction (it has no init)")
    target, _ = get_loop(func, var)
    loops = loops_of(path)
    pos = next((k for k, lp in enumerate(loops) if lp is target), None)
    if pos is None:
        raise ReductionError(f"{what}: loop {var.name!r} does not enclose block {name!r}")
    red_values = [v for iv, v in zip(b.iter_vars, r.iter_values) if iv.kind == IterKind.REDUCE]
    spatial = [(iv, v) for iv, v in zip(b.iter_vars, r.iter_values) if iv.kind != IterKind.REDUCE]
    red_loops = {lp.loop_var for lp in loops if any(uses_var(v, {lp.loop_var}) for v in red_values)}
    for lp in loops[:pos]:
        if lp.loop_var in red_loops:
            raise ReductionError(f"{what}: loop {var.name!r} is inside reduction loop "
                                 f"{lp.loop_var.name!r}, so the init would run more than once; "
                                 f"decompose at {lp.loop_var.name!r} or further out")
    keep = [lp for lp in loops[pos:] if lp.loop_var not in red_loops]
    for lp in keep:
        if any(uses_var(v, {lp.loop_var}) for _, v in spatial) and \
                (uses_var(lp.min, red_loops) or uses_var(lp.extent, red_loops)):
            raise ReductionError(f"{what}: the range of loop {lp.loop_var.name!r} depends on a "
                                 f"reduction loop")
    fresh: dict[Var, PrimExpr] = {lp.loop_var: Var(lp.loop_var.name + "_init", lp.loop_var.dtype)
                                  for lp in keep}
    ivs = tuple(IterVar(Var(iv.var.name, iv.var.dtype), iv.min, iv.extent, iv.kind) for iv, _ in spatial)
    init_body = substitute(b.init, {iv.var: new.var for (iv, _), new in zip(spatial, ivs)})
    preds = [c for c in _conjuncts(r.predicate) if not uses_var(c, red_loops)]
    init_name = unique_block_name(func, f"{name}_init")
    stmt: Stmt = BlockRealize(tuple(substitute(v, fresh) for _, v in spatial),
                              substitute(all_of(*preds), fresh), Block(init_name, ivs, init_body))
    for lp in reversed(keep):
        stmt = For(fresh[lp.loop_var], substitute(lp.min, fresh), substitute(lp.extent, fresh),  # type: ignore
                   lp.kind, stmt, lp.annotations)
    body = replace(func.body, r, BlockRealize(r.iter_values, r.predicate, dc_replace(b, init=None)))
    loop, _ = get_loop(func.with_body(body), var)  # type: ignore[arg-type]
    body = replace(body, loop, seq(stmt, loop))  # type: ignore[arg-type]
    return func.with_body(body), init_name  # type: ignore[arg-type]
