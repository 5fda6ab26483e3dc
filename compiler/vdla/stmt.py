"""The VDLA statement vocabulary inside TIR, and NumPy implementations for the interpreter.

After the VDLA passes a program consists of ordinary TIR (loops, allocations) around
these statements:

- ``vdla.load(sram, sram_tile, dram, dram_tile, y_size, x_size, x_stride, y_pad0, y_pad1, x_pad0, x_pad1)``
  and ``vdla.store(dram, dram_tile, sram, sram_tile, y_size, x_size, x_stride, shift, clip, relu)``: 2-D
  DMA of whole tiles with the ISA's semantics (``inject_dma_copy``);
- the expression ``vdla.requant(x, shift, clip, relu, out_bits)``: what a requantizing STORE does to
  each accumulator lane (``fold_requant_store`` puts it into result stores);
- ``vdla.gemm_uop`` / ``vdla.alu_uop`` micro-ops (``intrin.py``) inside an
  ``AttrStmt(UOP_SCOPE)`` that marks one GEMM or ALU instruction; ``fold_uop_loop``
  annotates up to two loops of that nest with :data:`UOP_LOOP` (their index factors);
- ``AttrStmt(DEPS)`` around an instruction holding its dependency-token flags
  (``insert_dep_token``).

All are packed calls or attributes, so the printer lists them and the reference
interpreter runs every intermediate program.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from vdla.compiler.tir import AttrStmt, BufferHandle, Call, Evaluate, IntImm, PrimExpr, Stmt, StringImm, register_packed
from vdla.compiler.tir.op import call_packed
from vdla.compiler.tir.ir import Buffer

from vdla_hw.isa import requantize

from .intrin import ALU_UOP, GEMM_OVERWRITE_UOP, GEMM_RESET_UOP, GEMM_UOP, UOP_SCOPE

LOAD = "vdla.load"
STORE = "vdla.store"
REQUANT = "vdla.requant"
UOP_LOOP = "vdla.uop_loop"
"""For annotation: this loop is an instruction loop level; value = (dst, src, wgt) factors."""
DEPS = "vdla.deps"
"""AttrStmt key: value is the instruction's :class:`~vdla_hw.isa.DepFlags`."""
FINISH = "vdla.finish"


def dma_load(sram: Buffer, sram_tile: Any, dram: Buffer, dram_tile: Any, y_size: Any, x_size: Any, x_stride: Any,
             pad: tuple[Any, Any, Any, Any] = (0, 0, 0, 0)) -> Evaluate:
    """A 2-D LOAD of ``y_size x x_size`` tiles; ``pad`` = (top, bottom, left, right) zero tiles."""
    return call_packed(LOAD, sram, sram_tile, dram, dram_tile, y_size, x_size, x_stride, *pad)


def dma_store(dram: Buffer, dram_tile: Any, sram: Buffer, sram_tile: Any, y_size: Any, x_size: Any,
              x_stride: Any, requant: Requant | None = None,
              bias: tuple[Buffer, Any, int] | None = None) -> Evaluate:
    """A 2-D STORE of accumulator tiles, requantized (``requant``, else plain) and narrowed to the output
    type of ``dram``; ``bias = (buffer, first tile, step)`` adds tile ``first + y * step`` of ``buffer``
    (an accumulator-scope buffer) to every tile of row ``y`` first."""
    r = requant or Requant()
    extra: tuple[Any, ...] = () if bias is None else (bias[0], bias[1], int(bias[2]))
    return call_packed(STORE, dram, dram_tile, sram, sram_tile, y_size, x_size, x_stride, r.shift, int(r.clip),
                       int(r.relu), *extra)


@dataclass(frozen=True)
class Requant:
    """The requantization fields of a STORE (see :func:`vdla_hw.isa.requantize`)."""

    shift: int = 0
    clip: bool = False
    relu: bool = False


def requant(x: PrimExpr, r: Requant, out_bits: int) -> PrimExpr:
    """The expression ``vdla.requant(x, ...)``: ``x`` requantized as a STORE does, to ``out_bits`` bits."""
    args = (StringImm(REQUANT), x, IntImm(r.shift), IntImm(int(r.clip)), IntImm(int(r.relu)), IntImm(out_bits))
    return Call(x.dtype, "call_packed", args)


def requant_parts(e: PrimExpr) -> tuple[PrimExpr, Requant, int] | None:
    """``(x, fields, out_bits)`` when ``e`` is a :func:`requant` expression, else None."""
    if isinstance(e, Call) and e.op == "call_packed" and isinstance(e.args[0], StringImm) and e.args[0].value == REQUANT:
        x, shift, clip, relu, bits = e.args[1:]
        return x, Requant(int_arg(shift), bool(int_arg(clip)), bool(int_arg(relu))), int_arg(bits)
    return None


def finish() -> Evaluate:
    return call_packed(FINISH)


def packed_call(stmt: Stmt) -> tuple[str, tuple[PrimExpr, ...]] | None:
    """``(name, args)`` when ``stmt`` is ``Evaluate(call_packed(name, *args))``, else None."""
    if isinstance(stmt, Evaluate) and isinstance(stmt.value, Call) and stmt.value.op == "call_packed":
        head = stmt.value.args[0]
        if isinstance(head, StringImm):
            return head.value, stmt.value.args[1:]
    return None


def is_instruction(stmt: Stmt) -> bool:
    """Whether ``stmt`` is one VDLA instruction (a DMA, a uop scope or FINISH), possibly with deps."""
    if isinstance(stmt, AttrStmt) and stmt.key == DEPS:
        stmt = stmt.body
    if isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE:
        return True
    call = packed_call(stmt)
    return call is not None and call[0] in (LOAD, STORE, FINISH)


def buffer_arg(e: PrimExpr) -> Buffer:
    if not isinstance(e, BufferHandle):
        raise TypeError(f"expected a buffer argument, got {e}")
    return e.buffer


def int_arg(e: PrimExpr) -> int:
    if not isinstance(e, IntImm):
        raise TypeError(f"expected a constant, got {e}")
    return e.value


MICRO_OPS = (GEMM_UOP, GEMM_RESET_UOP, GEMM_OVERWRITE_UOP, ALU_UOP)


# ---- NumPy implementations (tile arrays: one row per SRAM/DRAM element) ----------------------
def _tile_rows(view: np.ndarray, tile_dims: int = 2) -> np.ndarray:
    n = int(np.prod(view.shape[-tile_dims:]))
    return view.reshape(-1, n)


@register_packed(LOAD)
def _load(sram: np.ndarray, s0: int, dram: np.ndarray, d0: int, ys: int, xs: int, stride: int,
          yp0: int, yp1: int, xp0: int, xp1: int) -> None:
    dst, src = _tile_rows(sram), _tile_rows(dram)
    width = xp0 + xs + xp1
    block = np.zeros((yp0 + ys + yp1, width, dst.shape[1]), dst.dtype)
    for r in range(ys):
        block[yp0 + r, xp0:xp0 + xs] = src[d0 + r * stride: d0 + r * stride + xs]
    dst[s0: s0 + block.shape[0] * width] = block.reshape(-1, dst.shape[1])


@register_packed(STORE)
def _store(dram: np.ndarray, d0: int, sram: np.ndarray, s0: int, ys: int, xs: int, stride: int, shift: int = 0,
           clip: int = 0, relu: int = 0, bias: np.ndarray | None = None, b0: int = 0, bstep: int = 0) -> None:
    dst, src = _tile_rows(dram), _tile_rows(sram)
    bits = dst.dtype.itemsize * 8
    for r in range(ys):
        rows = src[s0 + r * xs: s0 + (r + 1) * xs]
        if bias is not None:
            rows = rows + _tile_rows(bias)[b0 + r * bstep]  # wraps in the accumulator type, as the hardware
        rows = requantize(rows, shift, bool(clip), bool(relu), bits)
        dst[d0 + r * stride: d0 + r * stride + xs] = rows.astype(dst.dtype)


@register_packed(REQUANT)
def _requant(x: Any, shift: int, clip: int, relu: int, bits: int) -> Any:
    out = requantize(x, shift, bool(clip), bool(relu), bits)
    return int(out) if out.ndim == 0 else out


@register_packed(FINISH)
def _finish() -> None:
    """FINISH has no effect on memory."""
