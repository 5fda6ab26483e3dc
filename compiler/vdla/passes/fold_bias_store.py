"""fold_bias_store: GEMM reset + bias ADD of an accumulator tile set -> an overwriting first GEMM step
and a STORE that adds the bias.

After ``inject_alu_op`` an output tile's accumulators are zeroed by a GEMM reset before the
reduction and get the bias added by an ALU ADD after it.  ``fold_bias_init`` turns the pair into
one ALU MOV of the bias (one cycle per tile, on the compute module's critical path).  This pass
removes the initialisation altogether, with two ISA features:

- the first reduction step of every tile runs as a GEMM with the ``overwrite`` bit
  (``acc = inp @ wgt``, no accumulator read), the rest as the usual multiply-accumulate
  (its micro-op nest guarded by ``r0 != 0 || r1 != 0 ...`` over the reduction loops, so
  code generation lists only the other points); and
- the bias ADD moves into the STORE that writes the tiles out: ``requant(acc + bias)``, which
  ``inject_dma_copy`` lowers to a STORE with ``bias`` (one bias tile per DRAM row, advancing 0 or
  1 tile per row).

Integer addition wraps and commutes, so ``bias + sum`` is what the reset + ADD computed.  The
fold applies to a statement sequence holding, in order, a GEMM reset scope on an accumulator ``B``;
statements that touch ``B`` only through GEMM multiply-accumulates, the first of them a GEMM scope
(or a loop over reduction chunks whose body holds one, which is peeled); an ALU ADD scope
``B[dst] += S[src]`` writing exactly the reset's tiles once each; and then the copy nest that
stores ``B`` requantized, iterating the ADD's tiles in the ADD's order.  Anything else is left to
``fold_bias_init``; so is a function whose attribute ``vdla.bias_store`` is False.
"""

from __future__ import annotations

from vdla.compiler.tir import (NE, Allocate, AttrStmt, BufferHandle, BufferLoad, BufferStore, Call, Cast, Evaluate, For, IfThenElse,
                          IntImm, Mutator, Or, PrimExpr, PrimFunc, SeqStmt, Stmt, StringImm, Sub, seq)
from vdla.compiler.tir.functor import collect, fresh_copy, substitute

from vdla_hw.isa import AluOp

from ..affine import NotAffineError, affine, simplify
from ..intrin import ALU_UOP, GEMM_OVERWRITE_UOP, GEMM_RESET_UOP, GEMM_UOP, UOP_SCOPE
from ..stmt import int_arg, packed_call, requant, requant_parts
from .common import const_extent, perfect_nest, rebuild_nest
from .fold_bias_init import is_zero, loop_tiles, touches_only_by_gemm, uop_scope

ATTR = "vdla.bias_store"
"""PrimFunc attribute: False keeps the accumulator initialisation (``fold_bias_init``'s MOV)."""


def split_first_gemm(scope: AttrStmt) -> Stmt | None:
    """The GEMM scope as an overwriting first reduction step plus a guarded multiply-accumulate of
    the other steps; None unless every destination tile is reached once per reduction point."""
    loops, body = perfect_nest(scope.body)
    call = packed_call(body)
    if call is None or call[0] != GEMM_UOP:
        return None
    args = call[1]
    try:
        coef, _ = affine(args[1], [lp.loop_var for lp in loops])
    except NotAffineError:
        return None
    red = [lp for lp in loops if coef[lp.loop_var] == 0 and const_extent(lp) > 1]
    unit = [lp for lp in loops if coef[lp.loop_var] == 0 and const_extent(lp) == 1]
    keep = [lp for lp in loops if coef[lp.loop_var] != 0]
    tiles = loop_tiles(keep, args[1])
    if tiles is None or len(set(tiles[1])) != len(tiles[1]):
        return None  # two points of the first step write one tile: the second would overwrite the first
    first = substitute(body, {lp.loop_var: IntImm(0) for lp in red + unit})
    first_call = first.value  # type: ignore[attr-defined]
    over = Evaluate(Call(first_call.dtype, first_call.op, (StringImm(GEMM_OVERWRITE_UOP),) + tuple(first_call.args[1:])))
    parts = [AttrStmt(scope.node, UOP_SCOPE, "gemm", rebuild_nest(keep, over))]
    if red:
        cond: PrimExpr = NE(red[0].loop_var, IntImm(0))
        for lp in red[1:]:
            cond = Or(cond, NE(lp.loop_var, IntImm(0)))
        parts.append(AttrStmt(scope.node, UOP_SCOPE, "gemm", rebuild_nest(loops, IfThenElse(cond, body, None))))
    return seq(*parts)


def _first_step(stmt: Stmt, buf) -> Stmt | None:  # type: ignore[no-untyped-def]
    """``stmt`` (the first statement touching ``buf`` after its reset) with its first GEMM split; a
    loop over reduction chunks is peeled first (through the input/weight allocations its body opens:
    the peeled copy reopens them, as the unrolled stream reuses one region per iteration anyway).
    None when it is neither."""
    scope = uop_scope(stmt, "gemm")
    if scope is not None:
        return split_first_gemm(stmt) if scope[0].data is buf.data else None  # type: ignore[arg-type]
    if not isinstance(stmt, For) or const_extent(stmt) < 1:
        return None
    allocs: list[Allocate] = []
    inner = stmt.body
    while isinstance(inner, Allocate):
        allocs.append(inner)
        inner = inner.body
    body = list(inner.stmts) if isinstance(inner, SeqStmt) else [inner]
    at = next((i for i, s in enumerate(body) if (u := uop_scope(s, "gemm")) is not None and u[0].data is buf.data), None)
    if at is None:
        return None
    v = stmt.loop_var
    peeled = [fresh_copy(s, {v: IntImm(0)}) for s in body]
    split = split_first_gemm(peeled[at])  # type: ignore[arg-type]
    if split is None:
        return None
    peeled[at] = split
    first = seq(*peeled)
    for a in reversed(allocs):
        first = Allocate(a.buffer, first)
    n = const_extent(stmt)
    rest = [] if n == 1 else [For(v, stmt.min, IntImm(n - 1), stmt.kind, substitute(stmt.body, {v: v + 1}),
                                  stmt.annotations)]
    return seq(first, *rest)


def store_with_bias(stmt: Stmt, buf, add) -> Stmt | None:  # type: ignore[no-untyped-def]
    """The requantizing copy nest ``stmt`` that stores ``buf``, reading the bias of the ADD ``add`` too."""
    _, a_loops, _, a_args = add
    loops, body = perfect_nest(stmt)
    if not isinstance(body, BufferStore):
        return None
    value = body.value
    cast = value if isinstance(value, Cast) else None
    parts = requant_parts(cast.value if cast is not None else value)
    if parts is None or not isinstance(parts[0], BufferLoad) or parts[0].buffer.data is not buf.data:
        return None
    load, fields, bits = parts
    bias_buf = a_args[2].buffer
    outer = loops[:len(loops) - 2]  # the two innermost loops are the tile's lanes
    if len(outer) != len(a_loops) or [const_extent(a) for a in a_loops] != [const_extent(o) for o in outer]:
        return None
    rename = {a.loop_var: o.loop_var for a, o in zip(a_loops, outer)}
    lanes = tuple(load.indices[-2:])
    tile = _flat_tile(buf, load.indices[:-2])
    if tile is None or not is_zero(simplify(Sub(substitute(a_args[1], rename), tile))):
        return None  # the STORE walks other tiles (or in another order) than the ADD
    if len(bias_buf.shape) != 3:
        return None
    bias = BufferLoad(bias_buf, (simplify(substitute(a_args[3], rename)),) + lanes)
    new_value = requant(load + bias, fields, bits)
    new_value = Cast(cast.dtype, new_value) if cast is not None else new_value
    return rebuild_nest(loops, BufferStore(body.buffer, new_value, body.indices))


def _flat_tile(buf, lead) -> PrimExpr | None:  # type: ignore[no-untyped-def]
    """The flat tile index of ``buf[lead..., lanes]`` (row-major over the leading dimensions)."""
    if not lead:
        return None
    flat: PrimExpr = lead[0]
    for idx, extent in zip(lead[1:], buf.shape[1:len(lead)]):
        flat = flat * extent + idx
    return flat


class _Fold(Mutator):
    def visit_SeqStmt(self, node: SeqStmt) -> Stmt:
        stmts = [self.visit(s) for s in node.stmts]
        k = 0
        while k < len(stmts):
            reset = uop_scope(stmts[k], "gemm")
            if reset is not None and reset[2] == GEMM_RESET_UOP:
                folded = self._fold(stmts, k, reset)
                if folded is not None:
                    stmts = folded
            k += 1
        return seq(*stmts)

    @staticmethod
    def _fold(stmts: list[Stmt], k: int, reset) -> list[Stmt] | None:  # type: ignore[no-untyped-def]
        buf, r_loops, _, r_args = reset
        add_at = next((j for j in range(k + 1, len(stmts))
                       if (a := uop_scope(stmts[j], "alu")) is not None and a[0].data is buf.data), None)
        if add_at is None or add_at + 1 >= len(stmts):
            return None
        add = uop_scope(stmts[add_at], "alu")
        _, a_loops, name, a_args = add
        if name != ALU_UOP or AluOp(int_arg(a_args[4])) != AluOp.ADD or int_arg(a_args[5]):
            return None
        src = a_args[2]
        if not hasattr(src, "buffer") or src.buffer.data is buf.data:
            return None
        between = stmts[k + 1:add_at]
        if not touches_only_by_gemm(between, buf):
            return None
        r_tiles, a_tiles = loop_tiles(r_loops, r_args[1]), loop_tiles(a_loops, a_args[1])
        if (r_tiles is None or a_tiles is None or set(r_tiles[1]) != set(a_tiles[1])
                or len(set(a_tiles[1])) != len(a_tiles[1]) or not is_zero(simplify(Sub(r_tiles[0], a_tiles[0])))):
            return None
        first = next((i for i, s in enumerate(between) if _mentions(s, buf)), None)
        if first is None:
            return None
        split = _first_step(between[first], buf)
        store = store_with_bias(stmts[add_at + 1], buf, add)
        if split is None or store is None:
            return None
        between = between[:first] + [split] + between[first + 1:]
        return stmts[:k] + between + [store] + stmts[add_at + 2:]


def _mentions(stmt: Stmt, buf) -> bool:  # type: ignore[no-untyped-def]
    return bool(collect(stmt, lambda n: isinstance(n, BufferHandle) and n.buffer.data is buf.data))


def fold_bias_store(func: PrimFunc) -> PrimFunc:
    """Start every tile's reduction with an overwriting GEMM and add the bias on the STORE."""
    if not dict(func.attrs).get(ATTR, True):
        return func
    return func.with_body(_Fold().visit(func.body))
