"""unroll_stream: the loop program -> one straight-line stream of VDLA instructions.

The accelerator has no branches: fetch reads a flat instruction list.  This pass fully
unrolls every loop outside the instruction scopes (tile loops, chunk loops), substitutes
the loop values into each DMA statement and instruction scope, and folds their fields to
constants.  The result is ``Allocate(arenas, SeqStmt(instructions))``; the loops inside an
instruction scope (micro-op and instruction loops) are kept.
"""

from __future__ import annotations

from typing import Iterator

from vdla.compiler.tir import Allocate, AttrStmt, Evaluate, For, IfThenElse, IntImm, PrimFunc, SeqStmt, Stmt, Var, seq
from vdla.compiler.tir.functor import free_vars, substitute
from vdla.compiler.tir.ir import Call

from ..affine import eval_int, simplify
from ..stmt import UOP_SCOPE, is_instruction, packed_call
from .common import VdlaLoweringError, const_extent


def _instructions(stmt: Stmt, env: dict[Var, int]) -> Iterator[Stmt]:
    if isinstance(stmt, SeqStmt):
        for s in stmt.stmts:
            yield from _instructions(s, env)
    elif isinstance(stmt, For):
        var = stmt.loop_var
        for value in range(const_extent(stmt)):
            env[var] = value
            yield from _instructions(stmt.body, env)
        env.pop(var, None)
    elif isinstance(stmt, Allocate):
        raise VdlaLoweringError(f"allocation of {stmt.buffer.name} inside the loop program: run allocate_sram first")
    elif isinstance(stmt, IfThenElse):
        branch = stmt.then_case if eval_int(stmt.condition, env) else stmt.else_case
        if branch is not None:
            yield from _instructions(branch, env)
    elif isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE:
        used = {v: IntImm(env[v], v.dtype) for v in free_vars(stmt) if v in env}
        if not used:
            yield stmt
        else:
            body = substitute(stmt.body, used)
            yield AttrStmt(stmt.node, stmt.key, stmt.value, simplify_uop_nest(body))
    elif is_instruction(stmt):
        call = packed_call(stmt)
        assert call is not None
        name, args = call
        new = tuple(a if not isinstance(a.dtype, str) or a.dtype == "handle" else IntImm(eval_int(a, env)) for a in args)
        yield Evaluate(Call(stmt.value.dtype, stmt.value.op, (stmt.value.args[0],) + new))  # type: ignore[union-attr]
    else:
        raise VdlaLoweringError(f"unroll_stream: {type(stmt).__name__} `{stmt}` is not a VDLA instruction; "
                                f"every statement outside an instruction scope must be a DMA or a micro-op nest")


def simplify_uop_nest(body: Stmt) -> Stmt:
    """Fold the index arithmetic of a micro-op nest (after loop values were substituted) to simplest form."""
    if isinstance(body, For):
        return For(body.loop_var, body.min, body.extent, body.kind, simplify_uop_nest(body.body), body.annotations)
    if isinstance(body, IfThenElse):  # a guarded micro-op (fold_bias_store)
        return IfThenElse(body.condition, simplify_uop_nest(body.then_case), None)
    call = body.value  # type: ignore[union-attr]
    return Evaluate(Call(call.dtype, call.op, tuple(a if a.dtype == "handle" else simplify(a) for a in call.args)))


def unroll_stream(func: PrimFunc) -> PrimFunc:
    """Flatten ``func`` (after ``allocate_sram``) into its instruction stream."""
    arenas = []
    body = func.body
    while isinstance(body, Allocate):
        arenas.append(body.buffer)
        body = body.body
    stream: Stmt = seq(*_instructions(body, {}))
    if not isinstance(stream, SeqStmt):
        stream = SeqStmt((stream,))
    for buf in reversed(arenas):
        stream = Allocate(buf, stream)
    return func.with_body(stream)
