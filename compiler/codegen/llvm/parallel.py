"""Parallel loops on the thread pool ``vdla_parallel`` (``pool.py``).

A ``parallel`` loop is outlined into two functions:

* a *body* function ``(captured values..., begin, end)`` running iterations
  ``[begin, end)`` serially; its pointer parameters are ``noalias`` (distinct buffers, as
  in the kernel itself), which keeps LLVM's alias analysis as precise as in serial code;
* a *trampoline* ``(closure*, threads)`` that the pool runs on the caller and on every worker that
  joins the region: it unpacks the closure and claims chunks of the iteration space from a shared
  counter in the closure (an atomic add; a chunk is ``ceil(extent / (CHUNKS_PER_THREAD x threads))``
  iterations, at least one; the whole range for a team of one) until none is left, calling the body
  on each.

Why claimed chunks and not a static split: on a loaded host (a laptop, a shared machine) a
team thread is often descheduled when the region starts.  With a static split the caller
finishes its half and then waits for the other half, i.e. for the scheduler to run that thread
(milliseconds); with claimed chunks the running threads take the work a descheduled one has not
started (and the pool does not wait for a worker that has not joined).
On a quiet host the chunks are contiguous runs as before, so locality is unchanged.

The parent stores the captured values into a stack closure and calls
``vdla_parallel(trampoline, closure, vdla_num_threads)``; a thread count of 0 means the pool's
default (``OMP_NUM_THREADS`` or the number of cores). Parallel loops nested inside a parallel
region run serially, and so does one with too little known work (:func:`runs_serially`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from ...tir.functor import stmt_children, walk
from ...tir.ir import Buffer, BufferStore, Evaluate, For, IntImm, Node, Stmt, Var
from ..symbols import c_identifier
from .types import I32, I64, PTR, VOID, opaque_alloca

if TYPE_CHECKING:
    from .emitter import FunctionEmitter

CHUNKS_PER_THREAD = 1
"""Chunks per thread of the team.  One: each chunk is a thread's static share (contiguous, the same
locality as a static split), and a share whose thread is late is taken by one that runs.  Four (finer
balancing) measured no better on ResNet-50 at two threads and used up to 18% more CPU time in one run
(``docs/cpu_speed.md``); at this host's load the difference between 1, 4 and a static split is inside
the noise."""


MIN_PARALLEL_WORK = 1 << 16
"""A parallel loop whose work (:func:`region_work`: stores it executes, a vector store counting once)
is known at compile time and below this runs serially, with no pool region.  When every region woke a
sleeping libgomp worker (~15-20 us on the 2-core Zen 4, the worker starting that much after the caller)
the threshold was 2^18: MobileNetV2's depthwise 3 x 3 nodes of 10-30 us took 18-43 us on two threads
(``docs/cpu_speed.md``, "Two threads on a quiet host").  With the pool's worker awake between the regions
of a run (``pool.py``) smaller regions gain: MobileNetV2 on two threads 3.44-3.57 ms at 2^16 against
3.72-3.85 at 2^18 (2^15 and 2^14 within the noise of 2^16), ResNet-18 tied, ResNet-50 1% faster
(``docs/cpu_speed.md``, "Two threads: the worker kept awake through a run").  A store count under-weights
a region whose time is memory traffic or a register-tiled reduction (a dense layer's 1000 x 80 vector
stores read 5 MB of weights): such a region below the threshold loses its two-thread gain."""


def region_work(stmt: Stmt) -> int | None:
    """Stores ``stmt`` executes (each ``BufferStore`` or ``Evaluate`` once per iteration of its
    enclosing loops; both branches of an ``if`` counted), or None when a loop extent in it is not a
    compile-time constant."""
    if isinstance(stmt, (BufferStore, Evaluate)):
        return 1
    inner = 0
    for child in stmt_children(stmt):
        w = region_work(child)
        if w is None:
            return None
        inner += w
    if isinstance(stmt, For):
        if not isinstance(stmt.extent, IntImm):
            return None
        return stmt.extent.value * inner
    return inner


def runs_serially(loop: For) -> bool:
    """Whether a parallel ``loop`` is emitted as a serial loop: its work is known at compile time and
    below :data:`MIN_PARALLEL_WORK`."""
    work = region_work(loop)
    return work is not None and work < MIN_PARALLEL_WORK


def used_vars(stmt: Stmt) -> set[Var]:
    """Every variable ``stmt`` reads, including buffer data handles and the variables of
    buffer shapes, strides and offsets."""
    out: set[Var] = set()

    def visit(n: Node) -> bool:
        if isinstance(n, Var):
            out.add(n)
        elif isinstance(n, Buffer):
            out.add(n.data)
            for e in (n.elem_offset, *n.shape, *n.strides):
                walk(e, visit)
        return True

    walk(stmt, visit)
    return out


def emit_parallel_for(em: FunctionEmitter, loop: For) -> None:
    """Emit ``loop`` (kind parallel) as a region of the thread pool."""
    from .emitter import FunctionEmitter

    ctx = em.ctx
    used = used_vars(loop.body)
    captured = [v for v in em.vars if v in used and v is not loop.loop_var]
    values = [em.vars[v] for v in captured]
    ity = em.expr(loop.min).type
    name = ctx.fresh_name(f"{em.fn.name}_par")

    # Body: (captured..., begin, end) -> runs [begin, end) serially.
    body_ty = ir.FunctionType(VOID, [v.type for v in values] + [ity, ity])
    body_fn = ir.Function(ctx.module, body_ty, name=f"{name}_body")
    body_fn.linkage = "internal"
    for arg, var in zip(body_fn.args, captured):
        arg.name = c_identifier(var.name)
        if isinstance(arg.type, ir.PointerType):
            arg.add_attribute("noalias")
    inner = FunctionEmitter(ctx, body_fn, dict(zip(captured, body_fn.args[:len(captured)])),
                            in_parallel=True)
    inner.loop(loop.loop_var, body_fn.args[-2], body_fn.args[-1], loop.body)
    inner.finish()

    # Trampoline: unpack the closure, claim chunks from the shared counter, call the body.
    closure_ty = ir.LiteralStructType([v.type for v in values] + [I64, I64, I64])
    tramp = ir.Function(ctx.module, ir.FunctionType(VOID, [PTR, I64]), name=name)
    tramp.linkage = "internal"
    b = ir.IRBuilder(tramp.append_basic_block("entry"))
    clo = tramp.args[0]

    def field_ptr(i: int) -> ir.Value:
        return b.gep(clo, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True,
                     source_etype=closure_ty)

    def field(i: int) -> ir.Value:
        return b.load(field_ptr(i), typ=closure_ty.elements[i])

    args = [field(i) for i in range(len(values))]
    lo, ext = field(len(values)), field(len(values) + 1)
    counter = field_ptr(len(values) + 2)
    nt = tramp.args[1]
    parts = b.mul(nt, ir.Constant(I64, CHUNKS_PER_THREAD))
    chunk = b.sdiv(b.add(ext, b.sub(parts, ir.Constant(I64, 1))), parts)  # ceil: no short tail chunk
    chunk = b.select(b.icmp_signed("<", chunk, ir.Constant(I64, 1)), ir.Constant(I64, 1), chunk)
    # A team of one runs the whole range in one call, as the serial loop would.
    chunk = b.select(b.icmp_signed("==", nt, ir.Constant(I64, 1)), ext, chunk)
    claim, done = tramp.append_basic_block("claim"), tramp.append_basic_block("done")
    b.branch(claim)
    b.position_at_end(claim)
    start = b.atomic_rmw("add", counter, chunk, "monotonic")
    more = tramp.append_basic_block("run")
    b.cbranch(b.icmp_signed("<", start, ext), more, done)
    b.position_at_end(more)
    stop = b.add(start, chunk)
    stop = b.select(b.icmp_signed("<", stop, ext), stop, ext)
    begin, end = b.add(lo, start), b.add(lo, stop)
    if ity != I64:
        begin, end = b.trunc(begin, ity), b.trunc(end, ity)
    b.call(body_fn, args + [begin, end])
    b.branch(claim)
    b.position_at_end(done)
    b.ret_void()

    # Parent: fill the closure and run the team.
    slot = opaque_alloca(em.allocas, closure_ty, f"{name}_closure")
    fields = values + [em.to_i64(em.expr(loop.min), loop.min.dtype),
                       em.to_i64(em.expr(loop.extent), loop.extent.dtype), ir.Constant(I64, 0)]
    for i, v in enumerate(fields):
        p = em.b.gep(slot, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True,
                     source_etype=closure_ty)
        em.b.store(v, p)
    nthreads = em.b.load(ctx.num_threads_global(), typ=I32)
    em.b.call(ctx.thread_pool(), [tramp, slot, nthreads])
