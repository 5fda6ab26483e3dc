"""fold_alu_store: the identity-GEMM + ALU kernels' fixed per-tile work off the compute module.

The residual add and the other ALU kernels (``topi/eltwise.py``) move each int8 operand tile into
its own accumulator tile with a GEMM reset and an identity GEMM, run an ALU chain, and STORE.  On
the compute module (which the GEMM core and the ALU share) that is one reset cycle per tile and
move, and ``alu_ii`` cycles per tile for the chain's last ADD of a resident tile (the rounding
term).  Two ISA features take both off it:

- **overwrite**: a GEMM reset of ``B`` whose next use of ``B`` is a GEMM writing exactly the reset's
  tiles becomes that GEMM with the ``overwrite`` bit (``acc = inp @ wgt``: no accumulator read, so
  no reset needed); a GEMM with reduction steps keeps them as the guarded multiply-accumulate
  (``fold_bias_store.split_first_gemm``);
- **the STORE's bias**: an ALU ``B[dst] += S[src]`` of another accumulator buffer ``S`` right before
  the requantizing copy that stores ``B``, over the same tiles in the same order, becomes that
  STORE's ``bias`` (``requant(B + S)``: one extra read cycle per DRAM row on the store module), when
  nothing after the STORE in the sequence reads ``B``.

Wrapping addition commutes, and the STORE adds the bias before its shift / ReLU / clip, so the
result is the same bit for bit.  Opt-in: only functions whose attribute ``vdla.alu_fold`` is True
(both folds; the ALU kernels set it; conv2d has its own ``fold_bias_store``) or ``"store"`` (the STORE's
bias only: the global pool, whose reduction GEMM would otherwise split into a first step and a guarded
rest with a longer micro-op list).
"""

from __future__ import annotations

from vdla_hw.isa import AluOp

from vdla.compiler.tir import BufferHandle, BufferLoad, BufferStore, Mutator, PrimFunc, SeqStmt, Stmt, Sub, seq
from vdla.compiler.tir.functor import collect

from ..affine import simplify
from ..intrin import ALU_UOP, GEMM_RESET_UOP, GEMM_UOP
from ..stmt import int_arg
from .fold_bias_init import is_zero, loop_tiles, uop_scope
from .fold_bias_store import split_first_gemm, store_with_bias

ATTR = "vdla.alu_fold"
"""PrimFunc attribute: True lets :func:`fold_alu_store` run, ``"store"`` only its STORE-bias fold (default False)."""


def _mentions(stmt: Stmt, buf) -> bool:  # type: ignore[no-untyped-def]
    """Whether ``stmt`` reads or writes ``buf`` (a micro-op's handle or an element access)."""
    return bool(collect(stmt, lambda n: isinstance(n, (BufferHandle, BufferLoad, BufferStore))
                        and n.buffer.data is buf.data))


def _same_tiles(reset, gemm) -> bool:  # type: ignore[no-untyped-def]
    """Whether a GEMM (``loop_tiles`` over all its loops: a tile may repeat over reduction steps) writes
    exactly the tiles a reset (each once) zeroes."""
    return (reset is not None and gemm is not None and len(set(reset[1])) == len(reset[1])
            and set(reset[1]) == set(gemm[1]) and is_zero(simplify(Sub(reset[0], gemm[0]))))


def _overwrite(stmts: list[Stmt], k: int) -> list[Stmt] | None:
    """``stmts`` with the reset at ``k`` folded into the first GEMM on its buffer, or None."""
    buf, r_loops, _, r_args = uop_scope(stmts[k], "gemm")
    at = next((j for j in range(k + 1, len(stmts)) if _mentions(stmts[j], buf)), None)
    if at is None:
        return None
    gemm = uop_scope(stmts[at], "gemm")
    if gemm is None or gemm[0].data is not buf.data or gemm[2] != GEMM_UOP:
        return None
    if not _same_tiles(loop_tiles(r_loops, r_args[1]), loop_tiles(gemm[1], gemm[3][1])):
        return None
    split = split_first_gemm(stmts[at])  # type: ignore[arg-type]
    if split is None:
        return None
    return stmts[:k] + stmts[k + 1:at] + [split] + stmts[at + 1:]


def _bias_store(stmts: list[Stmt], k: int) -> list[Stmt] | None:
    """``stmts`` with the ALU ADD at ``k`` folded into the STORE right after it, or None."""
    add = uop_scope(stmts[k], "alu")
    buf, _, name, args = add
    if name != ALU_UOP or AluOp(int_arg(args[4])) != AluOp.ADD or int_arg(args[5]):
        return None
    src = args[2]
    if not isinstance(src, BufferHandle) or src.buffer.data is buf.data or k + 1 >= len(stmts):
        return None
    if any(_mentions(s, buf) for s in stmts[k + 2:]):
        return None  # the accumulator is read again after the STORE: it must hold the sum
    store = store_with_bias(stmts[k + 1], buf, add)
    if store is None:
        return None
    return stmts[:k] + [store] + stmts[k + 2:]


class _Fold(Mutator):
    def __init__(self, overwrite: bool) -> None:
        super().__init__()
        self.overwrite = overwrite

    def visit_SeqStmt(self, node: SeqStmt) -> Stmt:
        stmts = [self.visit(s) for s in node.stmts]
        k = 0
        while k < len(stmts):
            reset = uop_scope(stmts[k], "gemm")
            if self.overwrite and reset is not None and reset[2] == GEMM_RESET_UOP:
                folded = _overwrite(stmts, k)
                if folded is not None:
                    stmts = folded
                    continue
            alu = uop_scope(stmts[k], "alu")
            if alu is not None:
                folded = _bias_store(stmts, k)
                if folded is not None:
                    stmts = folded
                    continue
            k += 1
        return seq(*stmts)


def fold_alu_store(func: PrimFunc) -> PrimFunc:
    """Overwriting moves instead of resets, and the last resident-tile ADD on the STORE (module doc)."""
    mode = dict(func.attrs).get(ATTR, False)
    if not mode:
        return func
    return func.with_body(_Fold(overwrite=mode is True).visit(func.body))
