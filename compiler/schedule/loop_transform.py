"""Loop-structure primitives: split, fuse, reorder. Each is a pure PrimFunc -> PrimFunc."""
from __future__ import annotations

from ..tir.arith import Analyzer
from ..tir.functor import Mutator, substitute, uses_var
from ..tir.ir import (And, BlockRealize, For, ForKind, IfThenElse, IntImm, PrimExpr, PrimFunc,
                      Stmt, Var)
from .errors import InvalidFactorError, LoopNestError, LoopNotFoundError
from .tree import blocks_in, find_loop, replace


def get_loop(func: PrimFunc, var: Var) -> tuple[For, list[Stmt]]:
    """The loop of ``var`` and its ancestors, or LoopNotFoundError."""
    found = find_loop(func.body, var) if isinstance(var, Var) else None
    if found is None:
        name = var.name if isinstance(var, Var) else repr(var)
        raise LoopNotFoundError(
            f"loop {name!r} is not in the current program: it may have been replaced by "
            f"split/fuse (use the loops those return) or belong to another schedule; "
            f"list the current loops with Schedule.get_loops(block)")
    return found


def _positive_int(value: object, what: str) -> int:
    v = value.value if isinstance(value, IntImm) else value
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise InvalidFactorError(f"{what} must be a positive integer, got {value!r}")
    return v


class _Predicate(Mutator):
    """AND a condition into the predicate of every block below."""

    def __init__(self, cond: PrimExpr):
        self.cond = cond

    def visit_BlockRealize(self, r: BlockRealize) -> BlockRealize:
        pred = self.cond if isinstance(r.predicate, IntImm) and r.predicate.value else \
            And(r.predicate, self.cond)
        return BlockRealize(r.iter_values, pred, r.block)


def guard(body: Stmt, cond: PrimExpr) -> Stmt:
    """``body`` executed only where ``cond`` holds (block predicates when there are
    blocks, so the structure stays schedulable)."""
    if blocks_in(body):
        return _Predicate(cond).visit(body)
    return IfThenElse(cond, body)


def split(func: PrimFunc, var: Var, factor: int | None = None,
          nparts: int | None = None) -> tuple[PrimFunc, Var, Var]:
    """Split loop ``var`` into an outer and an inner loop, by inner ``factor`` or by
    ``nparts`` outer iterations. A non-dividing split guards the tail with predicates."""
    loop, _ = get_loop(func, var)
    if (factor is None) == (nparts is None):
        raise InvalidFactorError("split takes exactly one of factor= or nparts=")
    an = Analyzer()
    if nparts is not None:
        parts = _positive_int(nparts, "split nparts")
        if not isinstance(loop.extent, IntImm):
            raise InvalidFactorError(f"split by nparts needs a constant extent; loop "
                                     f"{var.name!r} has extent {loop.extent}: split by factor")
        f = -(-loop.extent.value // parts)
    else:
        f = _positive_int(factor, "split factor")
    outer, inner = Var(f"{var.name}_o", var.dtype), Var(f"{var.name}_i", var.dtype)
    outer_extent = an.simplify((loop.extent + (f - 1)) // f)
    value = an.simplify(loop.min + outer * f + inner)
    body = substitute(loop.body, {var: value})
    hi = an.bound(outer_extent)[1]
    an.bind(outer, 0, None if hi is None else hi - 1)
    an.bind(inner, 0, f - 1)
    in_range = an.simplify(outer * f + inner < loop.extent)
    if not (isinstance(in_range, IntImm) and in_range.value):
        body = guard(body, in_range)
    inner_loop = For(inner, IntImm(0, var.dtype), IntImm(f, var.dtype), ForKind.SERIAL, body)
    new = For(outer, IntImm(0, var.dtype), outer_extent, ForKind.SERIAL, inner_loop,
              loop.annotations)
    return func.with_body(replace(func.body, loop, new)), outer, inner  # type: ignore[arg-type]


def _chain(func: PrimFunc, vars_: tuple[Var, ...], what: str) -> list[For]:
    """The loops from the outermost to the innermost of ``vars_``, which must form one
    perfectly nested chain."""
    found = [get_loop(func, v) for v in vars_]
    if len({id(v) for v in vars_}) != len(vars_):
        raise LoopNestError(f"{what}: a loop is listed twice")
    deepest, path = max(found, key=lambda lp: len(lp[1]))
    for loop, _ in found:
        if loop is not deepest and not any(s is loop for s in path):
            raise LoopNestError(
                f"{what}: loops {[v.name for v in vars_]} are not nested in one another "
                f"({loop.loop_var.name!r} does not enclose {deepest.loop_var.name!r})")
    top = min(found, key=lambda lp: len(lp[1]))[0]
    chain = [s for s in path[next(k for k, s in enumerate(path) if s is top):]] + [deepest]
    for outer, inner in zip(chain, chain[1:]):
        if not isinstance(outer, For) or outer.body is not inner:
            name = outer.loop_var.name if isinstance(outer, For) else type(outer).__name__
            raise LoopNestError(
                f"{what}: loops are not perfectly nested: {name!r} contains other statements "
                f"besides loop {inner.loop_var.name!r}; move them with compute_at first")  # type: ignore
    return chain  # type: ignore[return-value]


def fuse(func: PrimFunc, *vars_: Var) -> tuple[PrimFunc, Var]:
    """Fuse consecutive perfectly nested loops (outermost first) into one loop."""
    if not vars_:
        raise LoopNestError("fuse needs at least one loop")
    chain = _chain(func, vars_, "fuse")
    if len(chain) != len(vars_) or any(c.loop_var is not v for c, v in zip(chain, vars_)):
        raise LoopNestError(f"fuse: loops {[v.name for v in vars_]} must be consecutive and "
                            f"listed from outermost to innermost")
    an = Analyzer()
    fused = Var("_".join(v.name for v in vars_) + "_f", vars_[0].dtype)
    vmap: dict[Var, PrimExpr] = {}
    stride: PrimExpr = IntImm(1)
    for loop in reversed(chain):
        if uses_var(loop.extent, set(vars_)) or uses_var(loop.min, set(vars_)):
            raise LoopNestError(f"fuse: the range of {loop.loop_var.name!r} depends on another "
                                f"fused loop")
        idx = fused // stride if loop is not chain[-1] else fused
        if loop is not chain[0]:
            idx = idx % loop.extent
        vmap[loop.loop_var] = an.simplify(loop.min + idx)
        stride = an.simplify(stride * loop.extent)
    body = substitute(chain[-1].body, vmap)
    new = For(fused, IntImm(0, fused.dtype), stride, ForKind.SERIAL, body)
    return func.with_body(replace(func.body, chain[0], new)), fused  # type: ignore[arg-type]


def reorder(func: PrimFunc, *vars_: Var) -> PrimFunc:
    """Put the given loops in the given order (outermost first) within their nest; loops
    of the nest that are not listed keep their positions."""
    if len(vars_) < 2:
        return func
    chain = _chain(func, vars_, "reorder")
    listed = set(vars_)
    order = iter(get_loop(func, v)[0] for v in vars_)
    new_chain = [next(order) if c.loop_var in listed else c for c in chain]
    outside: set[Var] = set()
    for loop in new_chain:
        inner = {c.loop_var for c in chain} - outside - {loop.loop_var}
        if uses_var(loop.min, inner) or uses_var(loop.extent, inner):
            raise LoopNestError(f"reorder: the range of {loop.loop_var.name!r} depends on a "
                                f"loop that would move inside it")
        outside.add(loop.loop_var)
    body: Stmt = chain[-1].body
    for loop in reversed(new_chain):
        body = For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.annotations)
    return func.with_body(replace(func.body, chain[0], body))  # type: ignore[arg-type]
