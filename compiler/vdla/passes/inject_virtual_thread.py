"""inject_virtual_thread: interleave the iterations of a virtual-thread loop.

``for t in range(n) virtual_thread: body`` becomes ``n`` copies of ``body`` (``t``
replaced by its value, every buffer allocated inside renamed per thread, so each thread
gets its own SRAM region) merged statement by statement: loops with the same bounds are
fused and their bodies merged recursively, sequences are merged position by position, and
what cannot be merged further (an instruction) is emitted once per thread, thread 0
first; a run of consecutive LOADs of one thread counts as one statement, so each thread's
loads for a step stay together.  The result issues thread 1's loads before thread 0's GEMMs, so once dependency
tokens order them the load of one thread overlaps the compute of the other -- the
latency hiding of the decoupled pipeline.  Legal because virtual threads are
independent: they write disjoint outputs and private on-chip buffers.

An accumulator initialisation (a GEMM reset, or the MOV of the bias) reads nothing the load
module brings, so merged position by position it would issue for every thread before the
first thread's GEMMs: thread 1's MOV then waits for the STORE of its previous tile while
thread 0's GEMMs could run.  Each one moves down to right before the first statement that
shares a buffer with it (its thread's GEMMs), so a thread's init and GEMMs issue together and
the other thread's GEMMs cover its store -- into the first iteration of a loop over
input-channel chunks too, peeled off for it.  Only where the threads' tiles repeat (a loop
around the virtual threads runs more than once): in a thread's only tile there is no store
to wait for, and an early init fills the wait for the first loads instead.
"""

from __future__ import annotations

from vdla_hw.isa import AluOp

from vdla.compiler.tir import (Allocate, AttrStmt, Buffer, BufferHandle, BufferLoad, BufferStore, For, ForKind, IntImm,
                          Mutator, PrimExpr, PrimFunc, SeqStmt, Stmt, Var, seq)
from vdla.compiler.tir.functor import collect, fresh_copy, substitute

from ..intrin import ALU_UOP, GEMM_OVERWRITE_UOP, GEMM_RESET_UOP, UOP_SCOPE
from ..stmt import LOAD, int_arg, packed_call
from .common import const_extent, perfect_nest


class _ThreadCopy(Mutator):
    """``body`` for thread ``value`` of ``var``, with private copies of the buffers it allocates."""

    def __init__(self, var: Var, value: int):
        self.var, self.value = var, value
        self.renamed: dict[Buffer, Buffer] = {}

    def visit_Var(self, v: Var) -> PrimExpr:
        return IntImm(self.value, v.dtype) if v is self.var else v

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return self.renamed.get(buffer, buffer)

    def visit_Allocate(self, node: Allocate) -> Stmt:
        b = node.buffer
        name = f"{b.name}.vt{self.value}"
        self.renamed[b] = Buffer(Var(name, "handle"), name, b.shape, b.dtype, b.strides, b.elem_offset, b.scope)
        return Allocate(self.renamed[b], self.visit(node.body))


def _same_bounds(loops: list[For]) -> bool:
    first = loops[0]
    return all(lp.loop_var is first.loop_var and lp.min == first.min and lp.extent == first.extent
               and lp.kind == first.kind and lp.annotations == first.annotations for lp in loops)


def _merge(copies: list[Stmt], repeats: int) -> Stmt:
    """The thread copies merged position by position; ``repeats``: how often the loops around them
    run (each init sinks to its GEMMs where that is more than once)."""
    first = copies[0]
    if all(isinstance(c, For) for c in copies) and _same_bounds(copies):  # type: ignore[arg-type]
        body = _merge([c.body for c in copies], repeats * _iterations(first))  # type: ignore[arg-type]
        return For(first.loop_var, first.min, first.extent, first.kind, body, first.annotations)  # type: ignore[union-attr]
    if all(isinstance(c, SeqStmt) for c in copies):
        runs = [_load_runs(c.stmts) for c in copies]  # type: ignore[union-attr]
        if all(len(r) == len(runs[0]) for r in runs):
            cols = [seq(*col) if _is_load(col[0]) else _merge(list(col), repeats) for col in zip(*runs)]
            # Sinking pays off only when a thread's init would wait for the STORE of its previous
            # tile; in a thread's only tile an early init fills the wait for its first loads instead.
            return seq(*(_sink_inits(cols) if repeats > 1 else cols))
    if all(isinstance(c, Allocate) for c in copies):
        body = _merge([c.body for c in copies], repeats)  # type: ignore[union-attr]
        for c in reversed(copies):
            body = Allocate(c.buffer, body)  # type: ignore[union-attr]
        return body
    return seq(*copies)


def _iterations(loop: For) -> int:
    """The loop's iteration count (2 for "more than one" when it is not a constant)."""
    return loop.extent.value if isinstance(loop.extent, IntImm) else 2


def _flat(stmts: list[Stmt]) -> list[Stmt]:
    out: list[Stmt] = []
    for s in stmts:
        out.extend(_flat(list(s.stmts)) if isinstance(s, SeqStmt) else [s])
    return out


def _is_init(stmt: Stmt) -> bool:
    """A GEMM reset or overwrite or an ALU MOV scope: it writes its accumulators without reading them."""
    if not (isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE):
        return False
    call = packed_call(perfect_nest(stmt.body)[1])
    if call is None:
        return False
    return (call[0] in (GEMM_RESET_UOP, GEMM_OVERWRITE_UOP)
            or (call[0] == ALU_UOP and int_arg(call[1][4]) == AluOp.MOV))


def _blocks(init: Stmt, stmt: Stmt) -> bool:
    """Whether ``init`` must stay in front of ``stmt``: ``stmt`` touches the accumulators ``init``
    writes, or is not a micro-op scope (a DMA, which may write) and touches a buffer ``init`` reads.
    Micro-op scopes only read the input and weight buffers, so an overwriting GEMM moves past them."""
    written = {init.node.data}  # type: ignore[attr-defined]
    theirs = _buffers(stmt)
    if written & theirs:
        return True
    read = _buffers(init) - written
    return bool(read & theirs) and not (isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE)


def _buffers(stmt: Stmt) -> set[Var]:
    """The data variables of every buffer ``stmt`` names."""
    nodes = collect(stmt, lambda n: isinstance(n, (BufferHandle, BufferLoad, BufferStore)))
    return {n.buffer.data for n in nodes}


def _sink_inits(stmts: list[Stmt]) -> list[Stmt]:
    """``stmts`` (flattened) with every accumulator initialisation moved down to right before the
    first later statement sharing a buffer with it, or into it (see :func:`_enter`)."""
    out = _flat(stmts)
    k = len(out) - 1
    while k >= 0:
        if _is_init(out[k]):
            init = out.pop(k)
            j = k
            while j < len(out) and not _blocks(init, out[j]):
                j += 1
            inner = _enter(out[j], init) if j < len(out) else None
            if inner is None:
                out.insert(j, init)
            else:
                out[j] = inner
        k -= 1
    return out


def _enter(stmt: Stmt, init: Stmt) -> Stmt | None:
    """``stmt`` with ``init`` sunk into it, or None when it stays in front: through the allocations
    a merged loop body opens, and into a serial loop's first iteration, peeled off (the stream is
    unrolled anyway, so peeling costs no instruction)."""
    buffers: list[Buffer] = []
    body = stmt
    while isinstance(body, Allocate):
        buffers.append(body.buffer)
        body = body.body
    if isinstance(body, For):
        if not (body.kind == ForKind.SERIAL and isinstance(body.min, IntImm) and body.min.value == 0
                and isinstance(body.extent, IntImm) and body.extent.value >= 1):
            return None
        v, n = body.loop_var, body.extent.value
        first = seq(*_sink_inits([init, fresh_copy(body.body, {v: IntImm(0, v.dtype)})]))
        rest = [For(v, body.min, IntImm(n - 1, body.extent.dtype), body.kind,
                    substitute(body.body, {v: v + IntImm(1, v.dtype)}), body.annotations)] if n > 1 else []
        body = seq(first, *rest)
    elif buffers:
        body = seq(*_sink_inits([init, body]))
    else:
        return None
    for b in reversed(buffers):
        body = Allocate(b, body)
    return body


def _is_load(stmt: Stmt) -> bool:
    """A LOAD, or loops / sequences of nothing but LOADs."""
    if isinstance(stmt, For):
        return _is_load(stmt.body)
    if isinstance(stmt, SeqStmt):
        return all(_is_load(s) for s in stmt.stmts)
    call = packed_call(stmt)
    return call is not None and call[0] == LOAD


def _load_runs(stmts: tuple[Stmt, ...]) -> list[Stmt]:
    """``stmts`` with each run of consecutive LOADs made one sequence: a thread's loads for
    its next step stay together, so its compute can start once they are done instead of
    after the other threads' loads too."""
    out: list[Stmt] = []
    run: list[Stmt] = []
    for s in stmts:
        if _is_load(s):
            run.append(s)
            continue
        if run:
            out.append(SeqStmt(tuple(run)) if len(run) > 1 else run[0])
            run = []
        out.append(s)
    if run:
        out.append(SeqStmt(tuple(run)) if len(run) > 1 else run[0])
    return out


class _Inject(Mutator):
    def __init__(self) -> None:
        self.repeats = 1
        """Iterations of the loops around the statement visited: how often its tiles repeat."""

    def visit_For(self, loop: For) -> Stmt:
        if loop.kind != ForKind.VIRTUAL_THREAD:
            outer = self.repeats
            self.repeats *= _iterations(loop)
            try:
                return self.generic(loop)
            finally:
                self.repeats = outer
        body = self.visit(loop.body)  # inner virtual threads first
        return _merge([_ThreadCopy(loop.loop_var, t).visit(body) for t in range(const_extent(loop))], self.repeats)


def inject_virtual_thread(func: PrimFunc) -> PrimFunc:
    """Interleave every virtual-thread loop of ``func`` (see the module docstring)."""
    return func.with_body(_Inject().visit(func.body))
