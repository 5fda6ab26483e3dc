"""Helpers shared by the VDLA passes: loop nests, tile indices and scope tests."""

from __future__ import annotations

from vdla.compiler.tir import Allocate, Buffer, For, IntImm, PrimExpr, PrimFunc, SeqStmt, Stmt, Var
from vdla.compiler.tir.ir import Mul, Add

from ..target import SCOPES
from vdla_hw.errors import UnsupportedError


class VdlaLoweringError(UnsupportedError):
    """A program a VDLA pass cannot lower; the message names the statement and what to change."""


def perfect_nest(stmt: Stmt) -> tuple[list[For], Stmt]:
    """The chain of perfectly nested loops at ``stmt`` (outermost first) and the innermost body."""
    loops: list[For] = []
    while isinstance(stmt, For):
        loops.append(stmt)
        stmt = stmt.body
    return loops, stmt


def const_extent(loop: For) -> int:
    if not (isinstance(loop.min, IntImm) and loop.min.value == 0 and isinstance(loop.extent, IntImm)):
        raise VdlaLoweringError(f"VDLA lowering needs loops from 0 with constant extents, got "
                                f"for {loop.loop_var.name} in [{loop.min}, +{loop.extent})")
    return loop.extent.value


def rebuild_nest(loops: list[For], body: Stmt) -> Stmt:
    for loop in reversed(loops):
        body = For(loop.loop_var, loop.min, loop.extent, loop.kind, body, loop.annotations)
    return body


def is_vdla_scope(buf: Buffer) -> bool:
    return buf.scope in SCOPES


def tile_index(buf: Buffer, indices: tuple[PrimExpr, ...], tile_vars: tuple[Var, ...]) -> PrimExpr | None:
    """The element (tile) index of ``buf[indices]`` when its last dims are exactly ``tile_vars``.

    A buffer whose trailing ``len(tile_vars)`` dimensions are one tile is a row-major grid of
    tiles over its leading dimensions; returns the flat position in that grid, or None when the
    access does not address whole tiles with ``tile_vars``.
    """
    nt = len(tile_vars)
    if len(indices) < nt + 1 or tuple(indices[-nt:]) != tile_vars:
        return None
    lead = indices[:-nt]
    shape = buf.shape[:-nt]
    flat: PrimExpr = lead[0]
    for idx, extent in zip(lead[1:], shape[1:]):
        flat = Add(Mul(flat, extent), idx)
    return flat


def flat_stream(func: PrimFunc, pass_name: str) -> tuple[list, list[Stmt]]:
    """``(arenas, instructions)`` of a function after ``unroll_stream``."""
    arenas = []
    body = func.body
    while isinstance(body, Allocate):
        arenas.append(body.buffer)
        body = body.body
    if not isinstance(body, SeqStmt):
        raise VdlaLoweringError(f"{pass_name} needs the flat instruction stream of unroll_stream")
    return arenas, list(body.stmts)
