"""fold_uop_loop: the outer loops of a micro-op nest -> the instruction's two-level loop.

A GEMM/ALU instruction runs its micro-op list inside two hardware loops whose
accumulator, input and weight indices advance by constant factors.  For each
instruction scope this pass drops one-iteration loops, then marks up to two outermost
loops whose micro-op indices are affine in the loop variable with the
:data:`~vdla.compiler.vdla.stmt.UOP_LOOP` annotation ``(dst, src, wgt)`` factors.  The loops
stay in the program (it still runs on the interpreter); code generation reads their
extents and factors into ``iter_out/iter_in`` and the ``*_factor_*`` fields, and turns
the remaining inner loops into the micro-op list.
"""

from __future__ import annotations

from vdla_hw.isa import LOOP_ITER_W

from vdla.compiler.tir import AttrStmt, For, IfThenElse, IntImm, Mutator, PrimFunc, Stmt
from vdla.compiler.tir.functor import substitute

from ..affine import NotAffineError, affine
from ..decode import guard_vars
from ..intrin import ALU_UOP, GEMM_OVERWRITE_UOP, GEMM_RESET_UOP, GEMM_UOP
from ..stmt import UOP_LOOP, UOP_SCOPE, int_arg, packed_call
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .common import const_extent, perfect_nest, rebuild_nest

MAX_LOOP = (1 << LOOP_ITER_W) - 1

# Micro-op name -> argument positions of its (dst, src, wgt) indices (None: not used).
INDEX_ARGS: dict[str, tuple[int | None, int | None, int | None]] = {
    GEMM_UOP: (1, 3, 5),
    GEMM_OVERWRITE_UOP: (1, 3, 5),
    GEMM_RESET_UOP: (1, None, None),
    ALU_UOP: (1, 3, None),
}


class _Fold(Mutator):
    def __init__(self, target: VdlaTarget):
        self.target = target

    def visit_AttrStmt(self, attr: AttrStmt) -> Stmt:
        if attr.key != UOP_SCOPE:
            return self.generic(attr)
        loops, body = perfect_nest(attr.body)
        guard = body if isinstance(body, IfThenElse) and body.else_case is None else None
        # A guarded micro-op (fold_bias_store) skips points of its guard's loops: those stay micro-op loops.
        guarded = [] if guard is None else guard_vars(guard.condition)
        call = packed_call(body if guard is None else guard.then_case)
        if call is None or call[0] not in INDEX_ARGS:
            return attr
        name, args = call
        unit = {lp.loop_var: IntImm(0) for lp in loops if const_extent(lp) == 1}
        loops = [lp for lp in loops if lp.loop_var not in unit]
        body = substitute(body, unit)
        if guard is not None:
            body = IfThenElse(guard.condition, substitute(guard.then_case, unit), None)
        args = packed_call(body if guard is None else body.then_case)[1]  # type: ignore[index,union-attr]
        uses_imm = name == ALU_UOP and int_arg(args[5]) == 1
        positions = INDEX_ARGS[name]
        limits = self._limits(name)
        folded: list[For] = []
        for lp in loops[:2]:
            if any(lp.loop_var is g for g in guarded):
                break
            factors = []
            for pos, limit in zip(positions, limits):
                if pos is None or (pos == 3 and uses_imm):
                    factors.append(0)
                    continue
                try:
                    k = affine(args[pos], [lp.loop_var])[0][lp.loop_var]
                except NotAffineError:
                    k = -1
                factors.append(k)
                if not 0 <= k < limit:
                    break
            if len(factors) < 3 or any(not 0 <= k < lim for k, lim in zip(factors, limits)) or const_extent(lp) > MAX_LOOP:
                break
            folded.append(For(lp.loop_var, lp.min, lp.extent, lp.kind, lp.body,
                              lp.annotations + ((UOP_LOOP, tuple(factors)),)))
        nest = rebuild_nest(folded + loops[len(folded):], body)
        return AttrStmt(attr.node, attr.key, attr.value, nest)

    def _limits(self, name: str) -> tuple[int, int, int]:
        depth = {s: self.target.scope(s).depth for s in (SCOPE_ACC, SCOPE_INP, SCOPE_WGT)}
        src = depth[SCOPE_ACC] if name == ALU_UOP else depth[SCOPE_INP]
        return depth[SCOPE_ACC], src, depth[SCOPE_WGT]


def fold_uop_scope(attr: AttrStmt, target: VdlaTarget) -> Stmt:
    """One instruction scope with its (up to two) outer loops annotated as instruction loops; loops
    annotated before are folded afresh (``split_block`` refolds a piece of a split instruction)."""
    def strip(s: Stmt) -> Stmt:
        if isinstance(s, For):
            ann = tuple(a for a in s.annotations if a[0] != UOP_LOOP)
            return For(s.loop_var, s.min, s.extent, s.kind, strip(s.body), ann)
        return s
    return _Fold(target).visit_AttrStmt(AttrStmt(attr.node, attr.key, attr.value, strip(attr.body)))


def fold_uop_loop(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Annotate the (up to two) outer loops of every micro-op nest of ``func`` as instruction loops."""
    return func.with_body(_Fold(target).visit(func.body))
