"""The thread pool of generated parallel loops, emitted in LLVM IR: ``vdla_parallel(fn, data, n)``.

Why our own pool and not libgomp's (``docs/cpu_speed.md``, "Two threads: the worker kept awake through a
run"): libgomp waits either passively (every region wakes a sleeping worker: ~15-20 us, and on the 2-core
Zen 4 MobileNetV2 on two threads took 5.3 ms instead of 3.6-4.0 with a spinning worker) or by spinning
``GOMP_SPINCOUNT`` pauses, and its caller then also spins at the barrier closing each region for a worker
that may not run at all: with the cores shared by other processes every such region wasted the whole spin
(MobileNetV2 7.1 ms passive, 10.5 ms with 1000 pauses, 24.9 ms with 10000).  This pool spins a bounded
time *between* regions and never waits for a thread that has not joined:

* ``vdla_parallel(fn, data, n)`` runs ``fn(data, n)`` on the caller and on every pool worker that joins
  while the region is open; ``fn`` (the trampoline of a parallel loop, ``parallel.py``) claims chunks of
  the iterations from a counter in ``data`` until none is left, so the work is done whoever joins.  When
  the caller's own ``fn`` returns it closes the region and waits only for the workers that joined (they
  are running a chunk); a worker that wakes up later finds it closed and goes back to waiting.  So on a
  loaded host a descheduled worker costs nothing: the caller runs its share.
* a worker waits for the next region by spinning (a pause / yield hint per load) for ``VDLA_SPIN_US``
  microseconds (default :data:`DEFAULT_SPIN_US`; 0 = sleep at once), then sleeps in a futex; the caller
  wakes sleepers with one ``FUTEX_WAKE``.  Between the nodes of a model run (a ctypes call, a serial node)
  the worker is awake; a few hundred microseconds after a run it sleeps.
* ``n`` <= 0 means ``OMP_NUM_THREADS``, else the number of online CPUs; 1 runs ``fn`` serially; a region
  takes at most ``n - 1`` workers (more may exist, started by an earlier, larger team).  A call
  made while the pool is in a region (from another thread, or from within a region) runs serially.
  Workers are started on first use (``pthread_create``) and live as long as the process.

State (one word each, sequentially consistent atomics where threads meet): ``gen`` (the futex word:
incremented per region), ``entry`` (bit 31: closed; below it the number of workers inside the region),
``busy`` (a caller owns the pool), ``sleepers``, and the region's ``fn``, ``data`` and ``n``, written by
the caller before ``entry`` reopens and read by a worker only after it has entered.

One pool per exported library (linked into it, hidden) and one per process for JIT-compiled modules
(:func:`pool_module`, kept alive for the process, ``jit.py``): workers never run code of a module that
can be freed except inside a region of it.
"""
from __future__ import annotations

import llvmlite.ir as ir

from vdla.runtime.thread_spin import DEFAULT_SPIN_US, SPIN_ENV

from .types import I32, I64, PTR, VOID

POOL_SYMBOL = "vdla_parallel"
"""The entry point: ``void vdla_parallel(void (*fn)(void *, int64_t), void *data, int32_t n)``."""

MAX_WORKERS = 63
"""Workers at most (a team of 64 threads)."""

CLOSED = 1 << 31
"""``entry``'s bit: the region takes no more workers."""

# Linux system call numbers (futex) and constants, per architecture.
_FUTEX_SYSCALL = {"x86_64": 202, "aarch64": 98, "arm": 240}
_FUTEX_WAIT_PRIVATE, _FUTEX_WAKE_PRIVATE = 128, 129
_CLOCK_MONOTONIC = 1
_SC_NPROCESSORS_ONLN = 84  # glibc's and musl's value
_POLL_EVERY = 64
"""Spin iterations between two clock reads and ``sched_yield`` calls (~2 us of pauses on the Zen 4)."""


def _callee(value: ir.Value, fty: ir.FunctionType) -> ir.Value:
    """``value`` (an opaque function pointer) made callable as ``fty``: llvmlite reads the callee's type
    from its ``function_type``, which only functions and typed pointers have."""
    value.__class__ = type("FunctionPointer", (type(value),), {"function_type": fty})
    return value


def _spin_hint(module: ir.Module, arch: str) -> tuple[ir.Function, list[ir.Value]]:
    """The CPU's spin-wait hint: x86 ``pause``, Arm ``yield``."""
    if arch == "x86_64":
        return ir.Function(module, ir.FunctionType(VOID, []), name="llvm.x86.sse2.pause"), []
    name = "llvm.aarch64.hint" if arch == "aarch64" else "llvm.arm.hint"
    return ir.Function(module, ir.FunctionType(VOID, [I32]), name=name), [ir.Constant(I32, 1)]


def emit_pool(module: ir.Module, arch: str, hidden: bool) -> ir.Function:
    """Define the pool (:data:`POOL_SYMBOL` and its worker, globals internal) in ``module`` for ``arch``
    (``x86_64``, ``aarch64`` or ``arm``); ``hidden``: the entry point is not exported from a shared library."""
    if arch not in _FUTEX_SYSCALL:
        raise ValueError(f"no thread pool for the architecture {arch!r}")
    long = ir.IntType(32 if arch == "arm" else 64)  # C long, time_t of clock_gettime, pthread_t

    def glob(name: str, ty: ir.Type, init: int | None = 0) -> ir.GlobalVariable:
        g = ir.GlobalVariable(module, ty, name=f"vdla_pool_{name}")
        g.linkage = "internal"
        g.initializer = ir.Constant(ty, init) if init is not None else ir.Constant(ty, None)
        g.align = 64 if name in ("gen", "entry") else None  # the words threads poll on their own lines
        return g

    gen, entry, busy, sleepers = glob("gen", I32), glob("entry", I32, CLOSED), glob("busy", I32), glob("sleepers", I32)
    workers, default_n, spin_ns = glob("workers", I32), glob("default_n", I32), glob("spin_ns", I64, -1)
    job_fn, job_data, job_n = glob("fn", PTR, None), glob("data", PTR, None), glob("n", I64)

    def decl(name: str, ret: ir.Type, args: list[ir.Type], var_arg: bool = False) -> ir.Function:
        f = module.globals.get(name)
        return f if f is not None else ir.Function(module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)

    syscall = decl("syscall", long, [long], var_arg=True)
    clock_gettime = decl("clock_gettime", I32, [I32, PTR])
    getenv, atoi = decl("getenv", PTR, [PTR]), decl("atoi", I32, [PTR])
    sysconf = decl("sysconf", long, [I32])
    sched_yield = decl("sched_yield", I32, [])
    pthread_create = decl("pthread_create", I32, [PTR, PTR, PTR, PTR])
    hint_fn, hint_args = _spin_hint(module, arch)
    body_ty = ir.FunctionType(VOID, [PTR, I64])

    def cstring(name: str, text: str) -> ir.GlobalVariable:
        data = bytearray(text.encode() + b"\0")
        g = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(8), len(data)), name=f"vdla_pool_{name}")
        g.linkage, g.global_constant = "internal", True
        g.initializer = ir.Constant(ir.ArrayType(ir.IntType(8), len(data)), data)
        return g

    spin_env, threads_env = cstring("spin_env", SPIN_ENV), cstring("threads_env", "OMP_NUM_THREADS")

    def internal(name: str, ret: ir.Type, args: list[ir.Type]) -> tuple[ir.Function, ir.IRBuilder]:
        f = ir.Function(module, ir.FunctionType(ret, args), name=f"vdla_pool_{name}")
        f.linkage = "internal"
        return f, ir.IRBuilder(f.append_basic_block("entry"))

    def env_int(b: ir.IRBuilder, name: ir.GlobalVariable, fallback: ir.Value) -> ir.Value:
        """``atoi(getenv(name))`` when set, else ``fallback`` (i32)."""
        s = b.call(getenv, [name])
        have = b.icmp_unsigned("!=", s, ir.Constant(PTR, None))
        with b.if_else(have) as (then, otherwise):
            with then:
                bb_then = b.block
                v_then = b.call(atoi, [s])
            with otherwise:
                bb_else = b.block
        phi = b.phi(I32)
        phi.add_incoming(v_then, bb_then)
        phi.add_incoming(fallback, bb_else)
        return phi

    # now_ns(): CLOCK_MONOTONIC in nanoseconds.  Not inlined: inlined, LLVM moved the timespec through vector
    # registers and the stack, which bench/conv_spills.py's count of a library's spills would include.
    now_ns, b = internal("now_ns", I64, [])
    now_ns.attributes.add("noinline")
    ts_ty = ir.LiteralStructType([long, long])
    ts = b.alloca(ts_ty)
    b.call(clock_gettime, [ir.Constant(I32, _CLOCK_MONOTONIC), ts])
    sec = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True, source_etype=ts_ty), typ=long)
    nsec = b.load(b.gep(ts, [ir.Constant(I32, 0), ir.Constant(I32, 1)], inbounds=True, source_etype=ts_ty), typ=long)
    b.ret(b.add(b.mul(b.sext(sec, I64), ir.Constant(I64, 1_000_000_000)), b.sext(nsec, I64)))

    def futex(b: ir.IRBuilder, op: int, val: ir.Value) -> None:
        args = [ir.Constant(long, _FUTEX_SYSCALL[arch]), gen, ir.Constant(I32, op), val]
        if op == _FUTEX_WAIT_PRIVATE:
            args.append(ir.Constant(PTR, None))  # no timeout
        b.call(syscall, args)

    # worker(arg): wait for a region, enter it if still open, run fn, leave; forever.
    worker, b = internal("worker", PTR, [PTR])
    bb = {k: worker.append_basic_block(k) for k in ("spin", "poll", "clock", "time", "sleep", "got", "try", "enter")}
    seen0 = b.load_atomic(gen, "acquire", 4, typ=I32)
    limit = b.load(spin_ns, typ=I64)  # set by the first vdla_parallel, before any worker starts
    b.branch(bb["spin"])
    entry_block = b.block

    b.position_at_end(bb["spin"])  # a new wait: start the clock
    seen = b.phi(I32)
    seen.add_incoming(seen0, entry_block)
    t0 = b.call(now_ns, [])
    b.branch(bb["poll"])

    b.position_at_end(bb["poll"])
    i = b.phi(I32)
    i.add_incoming(ir.Constant(I32, 0), bb["spin"])
    g = b.load_atomic(gen, "acquire", 4, typ=I32)
    changed = b.icmp_unsigned("!=", g, seen)
    b.cbranch(changed, bb["got"], bb["clock"])

    b.position_at_end(bb["clock"])
    b.call(hint_fn, hint_args)
    i_next = b.add(i, ir.Constant(I32, 1))
    check = b.icmp_unsigned("==", b.and_(i_next, ir.Constant(I32, _POLL_EVERY - 1)), ir.Constant(I32, 0))
    b.cbranch(check, bb["time"], bb["poll"])
    i.add_incoming(i_next, bb["clock"])

    b.position_at_end(bb["time"])  # let a thread waiting for this core (the caller, on a loaded host) run
    b.call(sched_yield, [])
    over = b.icmp_signed(">=", b.sub(b.call(now_ns, []), t0), limit)
    b.cbranch(over, bb["sleep"], bb["poll"])
    i.add_incoming(i_next, bb["time"])

    b.position_at_end(bb["sleep"])  # announce, then sleep unless gen moved (the kernel compares atomically)
    b.atomic_rmw("add", sleepers, ir.Constant(I32, 1), "seq_cst")
    futex(b, _FUTEX_WAIT_PRIVATE, seen)
    b.atomic_rmw("sub", sleepers, ir.Constant(I32, 1), "seq_cst")
    b.branch(bb["spin"])
    seen.add_incoming(seen, bb["sleep"])

    b.position_at_end(bb["got"])  # a new region: try to enter it
    b.branch(bb["try"])
    b.position_at_end(bb["try"])
    e = b.load_atomic(entry, "acquire", 4, typ=I32)
    closed = b.icmp_unsigned("!=", b.and_(e, ir.Constant(I32, CLOSED)), ir.Constant(I32, 0))
    # A team of n holds n - 1 workers: more may exist (an earlier region asked for more threads), and the
    # thread count the caller set is a limit, not a hint.  job_n is the open region's (written before it
    # opened); of a closed one it is not used.
    team = b.trunc(b.load(job_n, typ=I64), I32)
    full = b.icmp_signed(">=", b.and_(e, ir.Constant(I32, CLOSED - 1)), b.sub(team, ir.Constant(I32, 1)))
    enter_try = worker.append_basic_block("cas")
    b.cbranch(b.or_(closed, full), bb["spin"], enter_try)
    seen.add_incoming(g, bb["try"])
    b.position_at_end(enter_try)
    res = b.cmpxchg(entry, e, b.add(e, ir.Constant(I32, 1)), "acq_rel", "acquire")
    b.cbranch(b.extract_value(res, 1), bb["enter"], bb["try"])

    b.position_at_end(bb["enter"])
    f = b.load(job_fn, typ=PTR)
    d = b.load(job_data, typ=PTR)
    n = b.load(job_n, typ=I64)
    b.call(_callee(f, body_ty), [d, n])
    b.atomic_rmw("sub", entry, ir.Constant(I32, 1), "release")
    b.branch(bb["spin"])
    seen.add_incoming(g, bb["enter"])

    # vdla_parallel(fn, data, n)
    par = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I32]), name=POOL_SYMBOL)
    if hidden:
        par.visibility = "hidden"
    fn_arg, data_arg, n_arg = par.args
    _callee(fn_arg, body_ty)
    b = ir.IRBuilder(par.append_basic_block("entry"))
    serial, pooled = par.append_basic_block("serial"), par.append_basic_block("pooled")
    # First call: the spin time and the default team size, from the environment.
    with b.if_then(b.icmp_signed("<", b.load(spin_ns, typ=I64), ir.Constant(I64, 0)), likely=False):
        us = env_int(b, spin_env, ir.Constant(I32, DEFAULT_SPIN_US))
        us = b.select(b.icmp_signed("<", us, ir.Constant(I32, 0)), ir.Constant(I32, 0), us)
        b.store(b.mul(b.sext(us, I64), ir.Constant(I64, 1000)), spin_ns)
        cpus = b.call(sysconf, [ir.Constant(I32, _SC_NPROCESSORS_ONLN)])
        cpus = cpus if arch == "arm" else b.trunc(cpus, I32)
        dn = env_int(b, threads_env, cpus)
        b.store(dn, default_n)
    nt = b.select(b.icmp_signed(">", n_arg, ir.Constant(I32, 0)), n_arg, b.load(default_n, typ=I32))
    nt = b.select(b.icmp_signed(">", nt, ir.Constant(I32, MAX_WORKERS + 1)), ir.Constant(I32, MAX_WORKERS + 1), nt)
    several = b.icmp_signed(">", nt, ir.Constant(I32, 1))
    claim = par.append_basic_block("claim")
    b.cbranch(several, claim, serial)

    b.position_at_end(claim)  # own the pool, or run serially (nested or concurrent caller)
    owned = b.extract_value(b.cmpxchg(busy, ir.Constant(I32, 0), ir.Constant(I32, 1), "acquire", "monotonic"), 1)
    b.cbranch(owned, pooled, serial)

    b.position_at_end(serial)
    b.call(fn_arg, [data_arg, ir.Constant(I64, 1)])
    b.ret_void()

    b.position_at_end(pooled)
    # Start workers up to nt - 1 (only the owner gets here); one that fails to start is simply absent.
    have = b.load(workers, typ=I32)
    want = b.sub(nt, ir.Constant(I32, 1))
    grow, publish = par.append_basic_block("grow"), par.append_basic_block("publish")
    b.cbranch(b.icmp_signed("<", have, want), grow, publish)
    b.position_at_end(grow)
    tid = b.alloca(long)
    b.call(pthread_create, [tid, ir.Constant(PTR, None), worker, ir.Constant(PTR, None)])
    b.store(b.add(b.load(workers, typ=I32), ir.Constant(I32, 1)), workers)
    b.cbranch(b.icmp_signed("<", b.load(workers, typ=I32), want), grow, publish)

    b.position_at_end(publish)
    b.store(fn_arg, job_fn)
    b.store(data_arg, job_data)
    b.store(b.sext(nt, I64), job_n)
    b.store_atomic(ir.Constant(I32, 0), entry, "release", 4)  # open, nobody inside
    b.atomic_rmw("add", gen, ir.Constant(I32, 1), "seq_cst")
    asleep = b.icmp_signed(">", b.load_atomic(sleepers, "seq_cst", 4, typ=I32), ir.Constant(I32, 0))
    with b.if_then(asleep):
        futex(b, _FUTEX_WAKE_PRIVATE, ir.Constant(I32, MAX_WORKERS))
    b.call(fn_arg, [data_arg, b.sext(nt, I64)])
    # Close, then wait for the workers inside (each is running a chunk it claimed).
    b.atomic_rmw("or", entry, ir.Constant(I32, CLOSED), "seq_cst")
    wait, pause, done = (par.append_basic_block(k) for k in ("wait", "pause", "done"))
    closing = b.block
    b.branch(wait)
    b.position_at_end(wait)
    k = b.phi(I32)
    k.add_incoming(ir.Constant(I32, 0), closing)
    inside = b.and_(b.load_atomic(entry, "acquire", 4, typ=I32), ir.Constant(I32, CLOSED - 1))
    b.cbranch(b.icmp_unsigned("!=", inside, ir.Constant(I32, 0)), pause, done)
    b.position_at_end(pause)  # a worker inside may be descheduled: now and then let it have the core
    b.call(hint_fn, hint_args)
    k_next = b.add(k, ir.Constant(I32, 1))
    with b.if_then(b.icmp_unsigned("==", b.and_(k_next, ir.Constant(I32, 1023)), ir.Constant(I32, 0))):
        b.call(sched_yield, [])
    k.add_incoming(k_next, b.block)
    b.branch(wait)
    b.position_at_end(done)
    b.store_atomic(ir.Constant(I32, 0), busy, "release", 4)
    b.ret_void()
    return par


def pool_ir(triple: str, arch: str, hidden: bool) -> str:
    """A module holding only the pool, for ``triple``: linked into exported libraries, JIT-compiled once."""
    m = ir.Module(name="vdla_pool")
    m.triple = triple
    emit_pool(m, arch, hidden)
    return str(m)
