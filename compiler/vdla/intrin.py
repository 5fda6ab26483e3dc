"""The accelerator's compute units declared as tensor intrinsics, derived from the config.

:class:`GemmIntrin` is the GEMM core: its *description* is the tensor expression of one
tile multiply-accumulate (BATCH x BLOCK_IN int8 inputs times a BLOCK_OUT x BLOCK_IN int8
weight block, accumulated into BATCH x BLOCK_OUT int32), and its *implementation* is one
micro-op inside an instruction scope: ``attr vdla.uop_scope "gemm"`` around
``vdla.gemm_uop(acc, dst, inp, src, wgt, widx)`` on tile indices of the three on-chip
buffers.  :meth:`GemmIntrin.update` and :meth:`GemmIntrin.reset` are the
:class:`~vdla.compiler.schedule.TensorIntrin` objects ``Schedule.tensorize`` uses; their
implementations receive the tensorize views (one tile each) and pass them with index 0,
``inject_uop_scope`` later rewrites them to (buffer, tile index).  :data:`ALU_OPS`
declare the vector ALU (``vdla.alu_uop``) as the TIR operations ``inject_alu_op`` maps.
All micro-ops are packed calls with NumPy implementations registered here, so every
program that contains them still runs on the TIR reference interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vdla_hw.isa import IMM_W, AluOp, alu_apply  # the one definition of the ALU's arithmetic

from vdla.compiler.schedule import TensorIntrin
from vdla.compiler.te import Tensor, compute, placeholder, reduce_axis, sum as te_sum

from vdla.compiler.tir import Add, AttrStmt, Buffer, Evaluate, FloorDiv, IntImm, Max, Min, Mul, PrimExpr, Stmt, register_packed
from vdla.compiler.tir.op import call_packed

from .target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget

GEMM_UOP = "vdla.gemm_uop"
GEMM_RESET_UOP = "vdla.gemm_reset_uop"
GEMM_OVERWRITE_UOP = "vdla.gemm_overwrite_uop"
"""``acc[dst] = inp[src] @ wgt[widx].T``: a GEMM with the ``overwrite`` bit (``fold_bias_store``)."""
ALU_UOP = "vdla.alu_uop"
UOP_SCOPE = "vdla.uop_scope"
"""AttrStmt key: the body is one GEMM (value ``"gemm"``) or ALU (``"alu"``) instruction."""


def _wrap(values: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement wrap of int64 ``values`` to ``bits``."""
    half = 1 << (bits - 1)
    return ((values + half) & ((1 << bits) - 1)) - half


def _tiles(arr: np.ndarray) -> np.ndarray:
    """A buffer (or a one-tile tensorize view) as an array of 2-D tiles, sharing memory."""
    return arr.reshape((-1,) + arr.shape[-2:])


@dataclass(frozen=True)
class GemmIntrin:
    """The GEMM core of ``target`` as a tensor intrinsic."""

    target: VdlaTarget

    @property
    def name(self) -> str:
        c = self.target.config
        return f"vdla.gemm_{c.batch}x{c.block_in}x{c.block_out}"

    def describe(self) -> tuple[Tensor, Tensor, Tensor]:
        """The compute description: ``(inp, wgt, acc)`` tensors of one tile multiply-accumulate."""
        c = self.target.config
        inp = placeholder((c.batch, c.block_in), f"int{c.inp_width}", "inp")
        wgt = placeholder((c.block_out, c.block_in), f"int{c.wgt_width}", "wgt")
        k = reduce_axis(c.block_in, "k")
        acc_t = f"int{c.acc_width}"
        acc = compute((c.batch, c.block_out),
                      lambda i, j: te_sum(inp[i, k].astype(acc_t) * wgt[j, k].astype(acc_t), axis=k), "acc")
        return inp, wgt, acc

    @cached_property
    def update(self) -> TensorIntrin:
        """The multiply-accumulate as a tensor intrinsic (for the update block of a
        decomposed reduction: it accumulates and has no reset of its own)."""
        return TensorIntrin(self.name, self.describe()[2], self._update, self._reset)

    @cached_property
    def reset(self) -> TensorIntrin:
        """Zeroing one accumulator tile (a GEMM with the reset bit) as a tensor intrinsic."""
        c = self.target.config
        acc_t = f"int{c.acc_width}"
        desc = compute((c.batch, c.block_out), lambda i, j: IntImm(0, acc_t), "acc")
        return TensorIntrin(f"{self.name}_reset", desc, lambda ins, outs: self._reset(outs))

    def _update(self, ins: list[Buffer], outs: list[Buffer]) -> Stmt:
        (inp, wgt), acc = ins, outs[0]
        for buf, scope in ((acc, SCOPE_ACC), (inp, SCOPE_INP), (wgt, SCOPE_WGT)):
            if buf.scope != scope:
                raise ValueError(f"the GEMM intrinsic reads {buf.name} from scope {scope!r}, not {buf.scope!r}; "
                                 f"cache_read/cache_write it into {scope!r} first")
        return AttrStmt(acc, UOP_SCOPE, "gemm", call_packed(GEMM_UOP, acc, 0, inp, 0, wgt, 0))

    def _reset(self, outs: list[Buffer]) -> Stmt:
        acc = outs[0]
        if acc.scope != SCOPE_ACC:
            raise ValueError(f"a GEMM reset writes scope {SCOPE_ACC!r}, not {acc.scope!r} ({acc.name}); "
                             f"cache_write the reduction into {SCOPE_ACC!r}")
        return AttrStmt(acc, UOP_SCOPE, "gemm", call_packed(GEMM_RESET_UOP, acc, 0))


@dataclass(frozen=True)
class AluIntrin:
    """One vector ALU operation: its ISA opcode and the TIR node it replaces (``inject_alu_op``)."""

    op: AluOp
    node: type


ALU_OPS: dict[AluOp, AluIntrin] = {
    AluOp.MIN: AluIntrin(AluOp.MIN, Min),
    AluOp.MAX: AluIntrin(AluOp.MAX, Max),
    AluOp.ADD: AluIntrin(AluOp.ADD, Add),
    AluOp.SHR: AluIntrin(AluOp.SHR, FloorDiv),
    AluOp.MUL: AluIntrin(AluOp.MUL, Mul),
}
"""ALU op -> intrinsic.  In TIR a shift right by ``s`` is written ``x // 2**s`` (floor division
by a power of two is an arithmetic shift); the ALU's NumPy semantics are the simulator's."""

IMM_MIN, IMM_MAX = -(1 << (IMM_W - 1)), (1 << (IMM_W - 1)) - 1


def alu_uop(op: AluOp, dst_buf: Buffer, dst: PrimExpr | int, src_buf: Buffer | None = None,
            src: PrimExpr | int = 0, imm: int | None = None) -> Evaluate:
    """One ALU micro-op: ``dst_buf[dst] = op(dst_buf[dst], imm if imm is not None else src_buf[src])``."""
    src_buf = dst_buf if src_buf is None else src_buf
    for buf in (dst_buf, src_buf):
        if buf.scope != SCOPE_ACC:
            raise ValueError(f"the ALU works on scope {SCOPE_ACC!r}, not {buf.scope!r} ({buf.name})")
    if imm is not None and not IMM_MIN <= imm <= IMM_MAX:
        raise ValueError(f"ALU immediate {imm} does not fit {IMM_W} signed bits [{IMM_MIN}, {IMM_MAX}]")
    return call_packed(ALU_UOP, dst_buf, dst, src_buf, src, int(op), int(imm is not None), imm or 0)


# ---- NumPy implementations, so the reference interpreter runs programs holding micro-ops ----
@register_packed(GEMM_RESET_UOP)
def _gemm_reset_uop(acc: np.ndarray, dst: int) -> None:
    _tiles(acc)[dst] = 0


@register_packed(GEMM_UOP)
def _gemm_uop(acc: np.ndarray, dst: int, inp: np.ndarray, src: int, wgt: np.ndarray, widx: int) -> None:
    acc_t = _tiles(acc)
    bits = acc.dtype.itemsize * 8
    prod = _tiles(inp)[src].astype(np.int64) @ _tiles(wgt)[widx].astype(np.int64).T
    acc_t[dst] = _wrap(acc_t[dst].astype(np.int64) + prod, bits).astype(acc.dtype)


@register_packed(GEMM_OVERWRITE_UOP)
def _gemm_overwrite_uop(acc: np.ndarray, dst: int, inp: np.ndarray, src: int, wgt: np.ndarray, widx: int) -> None:
    acc_t = _tiles(acc)
    bits = acc.dtype.itemsize * 8
    prod = _tiles(inp)[src].astype(np.int64) @ _tiles(wgt)[widx].astype(np.int64).T
    acc_t[dst] = _wrap(prod, bits).astype(acc.dtype)


@register_packed(ALU_UOP)
def _alu_uop(acc: np.ndarray, dst: int, src_buf: np.ndarray, src: int, op: int, use_imm: int, imm: int) -> None:
    tiles = _tiles(acc)
    operand = imm if use_imm else _tiles(src_buf)[src].copy()
    tiles[dst] = alu_apply(AluOp(op), tiles[dst].copy(), operand)
