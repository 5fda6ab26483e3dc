"""inject_alu_op: the fused epilogue of a result store -> in-place ALU instructions + a plain store.

After ``compute_inline`` of the element-wise stages (bias add, ReLU, shift, clip), the
store of the result reads ``out[...] = cast(f(acc[t, i, j]))`` where ``f`` is a chain of
element-wise operations on the accumulator tile: ``op(chain, operand)`` with ``op`` one of
:data:`~vdla.compiler.vdla.intrin.ALU_OPS` (``x // 2**s`` is a shift right) and ``operand`` a
constant (an immediate), another accumulator-scope tile with the same lanes (a bias
row), or another such chain on a second accumulator tile (a residual add's ``a * m_a + b * m_b``:
that chain runs first, in place on its own tile, which must be dead after the store too).  The ALU only works in place (``acc[dst] = op(acc[dst], imm | acc[src])``), so the
chain is evaluated innermost first, each operation an instruction scope over the tile
loops writing ``acc`` itself, and the store becomes ``out[...] = cast(acc[...])``, which
``inject_dma_copy`` turns into a STORE.  A ``vdla.requant`` wrapper that ``fold_requant_store``
put around the chain stays on the store (``cast(vdla.requant(acc[...]))``): the STORE does it.  Writing ``acc`` in place is legal because the
store is its last use: no later statement of the enclosing sequence may read it, and every
loop of the nest must index a different tile (checked).
"""

from __future__ import annotations

from vdla.compiler.tir import (Add, AttrStmt, BufferLoad, BufferStore, Cast, FloorDiv, For, IntImm, Mutator, PrimExpr,
                          PrimFunc, SeqStmt, Stmt, seq)
from vdla.compiler.tir.functor import collect, uses_var
from vdla.compiler.tir.ir import Max, Min, Mul

from ..intrin import ALU_OPS, UOP_SCOPE, alu_uop
from ..stmt import requant, requant_parts
from ..target import SCOPE_ACC, VdlaTarget
from .common import VdlaLoweringError, const_extent, is_vdla_scope, perfect_nest, rebuild_nest, tile_index

_COMMUTATIVE = (Add, Mul, Min, Max)


def _is_acc_load(e: PrimExpr) -> bool:
    return isinstance(e, BufferLoad) and e.buffer.scope == SCOPE_ACC


class _Inject(Mutator):
    def __init__(self, target: VdlaTarget):
        self.tile = target.scope(SCOPE_ACC).tile
        self.temps: list = []  # accumulator tiles a sub-chain of the current epilogue overwrites

    def visit_SeqStmt(self, node: SeqStmt) -> Stmt:
        out: list[Stmt] = []
        for k, s in enumerate(node.stmts):
            lowered = self._epilogue(s)
            if lowered is None:
                out.append(self.visit(s))
                continue
            later = node.stmts[k + 1:]
            for acc in lowered[1]:
                if any(collect(later, lambda n: isinstance(n, BufferLoad) and n.buffer.data is acc.data)):
                    raise VdlaLoweringError(f"the epilogue would overwrite {acc.name} in place, but a later "
                                            f"statement reads it; store it before reading it again")
            out.append(lowered[0])
        return seq(*out)

    def visit_For(self, loop: For) -> Stmt:
        lowered = self._epilogue(loop)
        return lowered[0] if lowered is not None else self.generic(loop)

    def _epilogue(self, stmt: Stmt):  # type: ignore[no-untyped-def]
        """``(ALU scopes + plain store, acc buffer)`` when ``stmt`` is a fused result store, else None."""
        loops, store = perfect_nest(stmt)
        nt = len(self.tile)
        if not (isinstance(store, BufferStore) and not is_vdla_scope(store.buffer) and len(loops) > nt):
            return None
        value = store.value.value if isinstance(store.value, Cast) else store.value
        on_store = requant_parts(value)
        if on_store is not None:
            value = on_store[0]
        if _is_acc_load(value) or not collect(value, _is_acc_load):
            return None  # a plain copy, or no accumulator involved
        if [const_extent(lp) for lp in loops[-nt:]] != list(self.tile):
            return None
        tile_vars = tuple(lp.loop_var for lp in loops[-nt:])
        chain: list[Stmt] = []
        self.temps = []
        root = self._chain(value, tile_vars, loops, chain)
        dst = tile_index(root.buffer, root.indices, tile_vars)
        for lp in loops[:-nt]:
            if not uses_var(dst, {lp.loop_var}):
                raise VdlaLoweringError(f"loop {lp.loop_var.name} of the store of {store.buffer.name} does not "
                                        f"index the accumulator {root.buffer.name}: the in-place epilogue would "
                                        f"apply twice to one tile")
        kept: PrimExpr = root if on_store is None else requant(root, on_store[1], on_store[2])
        final = Cast(store.value.dtype, kept) if isinstance(store.value, Cast) else kept
        copy = rebuild_nest(loops, BufferStore(store.buffer, final, store.indices))
        return seq(*chain, copy), [root.buffer, *self.temps]

    def _chain(self, e: PrimExpr, tile_vars, loops: list[For], out: list[Stmt]) -> BufferLoad:  # type: ignore[no-untyped-def]
        """Emit the ALU scopes computing ``e`` in place; returns the accumulator load it ends in."""
        if _is_acc_load(e):
            return e  # type: ignore[return-value]
        intrin = next((a for a in ALU_OPS.values() if type(e) is a.node), None)
        if intrin is None:
            raise VdlaLoweringError(f"cannot map `{e}` onto the ALU; the epilogue must be a chain of "
                                    f"min/max/+/*/// 2**s on the accumulator with constants or bias tiles")
        lhs, rhs = e.a, e.b  # type: ignore[attr-defined]
        if isinstance(e, _COMMUTATIVE) and not self._has_chain(lhs) and self._has_chain(rhs):
            lhs, rhs = rhs, lhs
        root = self._chain(lhs, tile_vars, loops, out)
        nt = len(tile_vars)
        dst = tile_index(root.buffer, root.indices, tile_vars)
        if dst is None:
            raise VdlaLoweringError(f"{root.buffer.name}: the epilogue must read whole accumulator tiles")
        if isinstance(rhs, IntImm):
            imm = rhs.value
            if isinstance(e, FloorDiv):
                if imm <= 0 or imm & (imm - 1):
                    raise VdlaLoweringError(f"{root.buffer.name}: only division by a power of two maps to a shift")
                imm = imm.bit_length() - 1
            uop = alu_uop(intrin.op, root.buffer, dst, imm=imm)
        elif (_is_acc_load(rhs) or self._has_chain(rhs)) and not isinstance(e, FloorDiv):
            if not _is_acc_load(rhs):
                # Another chain (``a * m_a + b * m_b``): evaluate it in place on its own tile first;
                # that tile is dead after this store like the root's (checked by the caller).
                rhs = self._chain(rhs, tile_vars, loops, out)
                if rhs.buffer.data is root.buffer.data:
                    raise VdlaLoweringError(f"{root.buffer.name}: both operands of `{e}` are chains on the "
                                            f"same accumulator tile")
                self.temps.append(rhs.buffer)
            src = tile_index(rhs.buffer, rhs.indices, tile_vars)  # type: ignore[union-attr]
            if src is None:
                raise VdlaLoweringError(f"{root.buffer.name}: ALU operand {rhs} must be a whole accumulator tile")
            uop = alu_uop(intrin.op, root.buffer, dst, rhs.buffer, src)  # type: ignore[union-attr]
        else:
            raise VdlaLoweringError(f"{root.buffer.name}: ALU operand {rhs} must be a constant or an "
                                    f"accumulator-scope tile")
        out.append(AttrStmt(root.buffer, UOP_SCOPE, "alu", rebuild_nest(loops[:-nt], uop)))
        return root

    def _has_chain(self, e: PrimExpr) -> bool:
        return _is_acc_load(e) or (type(e) in {a.node for a in ALU_OPS.values()} and
                                   (self._has_chain(e.a) or self._has_chain(e.b)))  # type: ignore[attr-defined]


def inject_alu_op(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Split every fused result store of ``func`` into in-place ALU instructions and a plain store."""
    return func.with_body(_Inject(target).visit(func.body))
