"""The thread pool of parallel loops (compiler/codegen/llvm/pool.py): exact results at one, two and three
threads from a JIT module and an exported library; idle workers asleep soon after a run with the default
spin (and seen running when the spin is long, so the probe can fail); many regions, concurrent callers and
nested parallel loops finish (the subprocess timeout is the watchdog)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla.runtime.thread_spin import SPIN_ENV

ROOT = Path(__file__).resolve().parents[2]

# Builds a kernel whose parallel row loop is large enough to open a pool region (parallel.MIN_PARALLEL_WORK),
# its column loop parallel too (nested: emitted serially), loads it as argv[1] says (jit / so), runs it
# argv[2] times at 1, 2 and 3 threads, checks every result exactly, sleeps 50 ms and prints every thread's
# state but the caller's ('S' asleep, 'R' running) and how many threads the run started; then two Python threads call it argv[3] times each at
# once (one of them runs serially while the other owns the pool), exact again.
_SCRIPT = r"""
import os, sys, threading, time
import numpy as np
from vdla.compiler.codegen.llvm import codegen, export_library, jit
from vdla.compiler.codegen.llvm.parallel import MIN_PARALLEL_WORK
from vdla.compiler.codegen.llvm.target import host_target
from vdla.compiler.tir.ir import BufferStore, For, ForKind, IntImm, PrimFunc, Var, decl_buffer
from vdla.runtime.cpu_module import load_module
cols = 256
rows = MIN_PARALLEL_WORK // cols + 3  # not a multiple of the team size
a, out = decl_buffer((rows, cols), "float32", "a"), decl_buffer((rows, cols), "float32", "out")
i, j = Var("i"), Var("j")
inner = For(j, IntImm(0), IntImm(cols), ForKind.PARALLEL, BufferStore(out, a[i, j] * 2.0 + i.astype("float32"), (i, j)))
module = codegen([PrimFunc("par", (a, out), For(i, IntImm(0), IntImm(rows), ForKind.PARALLEL, inner))], host_target())
if sys.argv[1] == "jit":
    mod = jit(module)
else:
    mod = load_module(export_library(module, os.path.join(sys.argv[4], "par.so")))
before = len(os.listdir("/proc/self/task"))
x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
want = x * np.float32(2) + np.arange(rows, dtype=np.float32)[:, None]
for n in (1, 2, 3):
    mod.set_num_threads(n)
    for _ in range(int(sys.argv[2])):
        res = np.zeros_like(x)
        mod(x, res)
        assert np.array_equal(res, want), n
time.sleep(0.05)
me = threading.get_native_id()
states = []
for tid in os.listdir("/proc/self/task"):
    if int(tid) != me:
        stat = open(f"/proc/self/task/{tid}/stat").read()
        states.append(stat[stat.rindex(")") + 2])
print("other threads:", "".join(sorted(states)), flush=True)
print("started:", len(os.listdir("/proc/self/task")) - before, flush=True)
mod.set_num_threads(2)
def caller() -> None:
    for _ in range(int(sys.argv[3])):
        res = np.zeros_like(x)
        mod(x, res)
        assert np.array_equal(res, want)
callers = [threading.Thread(target=caller) for _ in range(2)]
for t in callers: t.start()
for t in callers: t.join()
print("done", flush=True)
"""


def _run(tmp_path: Path, how: str, regions: int = 3, concurrent: int = 3, spin_us: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in (SPIN_ENV, "OMP_NUM_THREADS")}
    if spin_us is not None:
        env[SPIN_ENV] = spin_us
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, how, str(regions), str(concurrent), str(tmp_path)],
                          capture_output=True, text=True, env={**env, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "done" in proc.stdout
    return proc.stdout


def _field(out: str, name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith(f"{name}:"))


@pytest.mark.parametrize("how", ["jit", "so"])
def test_results_exact_and_workers_asleep_after_a_run(tmp_path: Path, how: str) -> None:
    out = _run(tmp_path, how)
    assert _field(out, "started") == "2", "a team of three needs two workers"
    states = _field(out, "other threads")
    assert set(states) == {"S"}, f"a worker still runs 50 ms after the last region: {states}"


def test_a_long_spin_is_seen_running(tmp_path: Path) -> None:
    # The probe above can fail: with a 10 s spin the workers are still spinning 50 ms after the run.
    assert "R" in _field(_run(tmp_path, "jit", spin_us="10000000"), "other threads")


def test_no_spin_sleeps_at_once(tmp_path: Path) -> None:
    assert set(_field(_run(tmp_path, "so", spin_us="0"), "other threads")) == {"S"}


@pytest.mark.parametrize("spin_us", [None, "0"])
def test_many_regions_and_concurrent_callers_finish_exact(tmp_path: Path, spin_us: str | None) -> None:
    _run(tmp_path, "jit", regions=300, concurrent=300, spin_us=spin_us)


# Calls the pool's entry point directly with a Python body that records which threads ran it and holds each one
# 30 ms (so every awake worker joins): first teams of 3 (two workers started), then teams of 2 and 1.
_TEAM_SCRIPT = r"""
import ctypes, threading, time
import llvmlite.binding as llvm
from vdla.compiler.codegen.llvm.module import thread_pool_module
from vdla.compiler.codegen.llvm.pool import POOL_SYMBOL
from vdla.compiler.codegen.llvm.target import host_target
target = host_target()
engine = llvm.create_mcjit_compiler(thread_pool_module(target, hidden=False).optimized(3),
                                    target.target_machine(3, jit=True))
engine.finalize_object()
BODY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
parallel = ctypes.CFUNCTYPE(None, BODY, ctypes.c_void_p, ctypes.c_int32)(engine.get_function_address(POOL_SYMBOL))
seen, lock = set(), threading.Lock()
def body(data, n):
    with lock:
        seen.add(threading.get_native_id())
    time.sleep(0.03)
callback = BODY(body)
for n in (3, 2, 1):
    most = 0
    for _ in range(8):
        seen.clear()
        parallel(callback, None, n)
        most = max(most, len(seen))
    print(f"team {n}: {most}", flush=True)
"""


def test_a_team_never_exceeds_the_thread_count_asked() -> None:
    """Workers left from a larger team do not join a smaller one: the thread count is a limit."""
    env = {k: v for k, v in os.environ.items() if k not in (SPIN_ENV, "OMP_NUM_THREADS")}
    proc = subprocess.run([sys.executable, "-c", _TEAM_SCRIPT], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    most = {int(k.split()[1].rstrip(":")): int(v) for k, v in
            (line.rsplit(" ", 1) for line in proc.stdout.splitlines() if line.startswith("team"))}
    assert most[3] == 3, f"the probe never saw a team of three: {proc.stdout}"
    assert most[2] <= 2 and most[1] == 1, proc.stdout


@pytest.mark.parametrize("value", ["abc", "-5", "1.5", ""])
def test_a_bad_spin_setting_is_named_when_a_parallel_module_loads(monkeypatch, value: str) -> None:
    """The pool reads VDLA_SPIN_US with atoi, where a typo would mean 0: the runtime refuses it at load."""
    from vdla.compiler.codegen.llvm import codegen, jit
    from vdla.compiler.codegen.llvm.parallel import MIN_PARALLEL_WORK
    from vdla.compiler.codegen.llvm.target import host_target
    from vdla.compiler.tir.ir import BufferStore, For, ForKind, IntImm, PrimFunc, Var, decl_buffer
    from vdla_hw.errors import UsageError

    n = MIN_PARALLEL_WORK + 8
    a, out = decl_buffer((n,), "float32", "a"), decl_buffer((n,), "float32", "out")
    i = Var("i")
    module = codegen([PrimFunc("par", (a, out), For(i, IntImm(0), IntImm(n), ForKind.PARALLEL,
                                                    BufferStore(out, a[i] * 2.0, (i,))))], host_target())
    monkeypatch.setenv(SPIN_ENV, value)
    with pytest.raises(UsageError, match=f"{SPIN_ENV}=.*whole number of microseconds"):
        jit(module)
    monkeypatch.setenv(SPIN_ENV, "50")
    mod = jit(module)
    x = np.arange(n, dtype=np.float32)
    res = np.zeros_like(x)
    mod(x, res)
    assert np.array_equal(res, x * 2)
