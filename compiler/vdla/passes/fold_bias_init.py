"""fold_bias_init: GEMM reset + bias ADD of an accumulator tile set -> one MOV of the bias.

After ``inject_alu_op`` an output tile's accumulators are zeroed by a GEMM reset before the
reduction and get the bias added by an ALU ADD after it.  Integer addition wraps and
commutes, so ``(0 + sum) + bias == bias + sum``: initialising the accumulators with a copy of
the resident bias rows (``AluOp.MOV``, which never reads its destination and issues one
iteration per cycle) does both at once, and saves the reset's cycle plus the ADD's ``alu_ii``
cycles per tile for one cycle per tile.

The fold applies to a statement sequence holding, in order, a GEMM reset scope on an
accumulator ``B``; statements that touch ``B`` only through GEMM multiply-accumulates; and an
ALU ADD scope ``B[dst] += S[src]`` with ``S`` another accumulator-scope buffer -- when the
reset and the ADD write the same set of tiles of ``B`` (checked by enumerating both nests).
The MOV takes the reset's place with the ADD's loops and micro-ops; the ADD goes.  Anything
else is left unchanged, and so is a function whose attribute ``vdla.bias_init`` is False
(kept to measure the difference).
"""

from __future__ import annotations

import itertools

from vdla_hw.isa import AluOp

from vdla.compiler.tir import (AttrStmt, BufferHandle, BufferLoad, BufferStore, Call, Evaluate, IntImm, Mutator, PrimExpr,
                          PrimFunc, SeqStmt, Stmt, Sub, seq)
from vdla.compiler.tir.functor import collect

from ..affine import NotAffineError, affine, simplify
from ..intrin import ALU_UOP, GEMM_RESET_UOP, GEMM_UOP, UOP_SCOPE, alu_uop
from ..stmt import int_arg, packed_call
from .common import const_extent, perfect_nest, rebuild_nest

ATTR = "vdla.bias_init"
"""PrimFunc attribute: False keeps the GEMM reset and the bias ADD."""


def uop_scope(stmt: Stmt, kind: str):  # type: ignore[no-untyped-def]
    """``(buffer, loops, micro-op name, args)`` of an instruction scope of ``kind``, else None."""
    if not (isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE and stmt.value == kind):
        return None
    loops, body = perfect_nest(stmt.body)
    call = packed_call(body)
    return None if call is None else (stmt.node, loops, call[0], call[1])


def is_zero(e: PrimExpr) -> bool:
    return isinstance(e, IntImm) and e.value == 0


def _handle(e: PrimExpr):  # type: ignore[no-untyped-def]
    return e.buffer if isinstance(e, BufferHandle) else None


def loop_tiles(loops, dst: PrimExpr):  # type: ignore[no-untyped-def]
    """``(rest, offsets)``: ``dst`` is ``rest`` (free of ``loops``) plus the offset of each iteration
    of ``loops`` (in order); None when ``dst`` is not affine in them."""
    vs = [lp.loop_var for lp in loops]
    try:
        coef, rest = affine(dst, vs)
    except NotAffineError:
        return None
    ranges = [range(const_extent(lp)) for lp in loops]
    return rest, [sum(coef[v] * i for v, i in zip(vs, point)) for point in itertools.product(*ranges)]


def touches_only_by_gemm(stmts: list[Stmt], buf) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``stmts`` use ``buf`` only as the accumulator of GEMM multiply-accumulates."""
    def mine(e: PrimExpr) -> bool:
        h = _handle(e)
        return h is not None and h.data is buf.data

    for s in stmts:
        if collect(s, lambda n: isinstance(n, (BufferLoad, BufferStore)) and n.buffer.data is buf.data):
            return False  # an element access of the accumulator outside the micro-ops
        calls = collect(s, lambda n: isinstance(n, Call) and any(mine(a) for a in n.args))
        if any(packed_call(Evaluate(c)) is None or packed_call(Evaluate(c))[0] != GEMM_UOP or not mine(c.args[1])
               for c in calls):
            return False
    return True


class _Fold(Mutator):
    def visit_SeqStmt(self, node: SeqStmt) -> Stmt:
        stmts = [self.visit(s) for s in node.stmts]
        k = 0
        while k < len(stmts):
            reset = uop_scope(stmts[k], "gemm")
            add_at = None
            if reset is not None and reset[2] == GEMM_RESET_UOP:
                add_at = next((j for j in range(k + 1, len(stmts))
                               if (a := uop_scope(stmts[j], "alu")) is not None and a[0].data is reset[0].data), None)
            if add_at is not None:
                folded = self._fold(reset, uop_scope(stmts[add_at], "alu"), stmts[k + 1:add_at])
                if folded is not None:
                    stmts = stmts[:k] + [folded] + stmts[k + 1:add_at] + stmts[add_at + 1:]
            k += 1
        return seq(*stmts)

    @staticmethod
    def _fold(reset, add, between: list[Stmt]) -> Stmt | None:  # type: ignore[no-untyped-def]
        buf, r_loops, _, r_args = reset
        _, a_loops, name, a_args = add
        if name != ALU_UOP or AluOp(int_arg(a_args[4])) != AluOp.ADD or int_arg(a_args[5]):
            return None
        src_buf = _handle(a_args[2])
        if src_buf is None or src_buf.data is buf.data or not touches_only_by_gemm(between, buf):
            return None
        r_tiles, a_tiles = loop_tiles(r_loops, r_args[1]), loop_tiles(a_loops, a_args[1])
        if r_tiles is None or a_tiles is None or set(r_tiles[1]) != set(a_tiles[1]):
            return None
        if len(set(a_tiles[1])) != len(a_tiles[1]):
            return None  # the ADD adds the bias to some tile twice: one copy is not the same
        if not is_zero(simplify(Sub(r_tiles[0], a_tiles[0]))):
            return None  # the same offsets from different bases: other tiles
        return AttrStmt(buf, UOP_SCOPE, "alu", rebuild_nest(a_loops, alu_uop(AluOp.MOV, buf, a_args[1], src_buf, a_args[3])))


def fold_bias_init(func: PrimFunc) -> PrimFunc:
    """Initialise accumulators with a MOV of the bias instead of a GEMM reset and an ALU ADD."""
    if not dict(func.attrs).get(ATTR, True):
        return func
    return func.with_body(_Fold().visit(func.body))
