"""libgomp is loaded with a passive wait policy unless the user chose one (vdla.runtime.openmp): its
idle threads sleep after a run, parallel regions give exact results at one and two threads, and
many regions, nested loops and concurrent callers do not deadlock."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Loads an exported parallel module through the runtime (what `vdla run` and GraphModule do), runs
# a region large enough to open a libgomp team (parallel.MIN_PARALLEL_WORK) at one and two threads,
# then sleeps 50 ms and prints every thread's state but the
# caller's ('S' asleep, 'R' running); then two Python threads call it at once; then it asks libgomp for its settings: omp_display_env(verbose)
# prints what it read at load time, GOMP_SPINCOUNT among them (300000 by default, 0 when passive,
# 3e10 when active).  The subprocess's timeout is the watchdog of the loop of regions.
_SCRIPT = r"""
import ctypes, os, sys, threading, time
import numpy as np
from vdla.compiler.codegen.llvm import codegen, export_library
from vdla.compiler.codegen.llvm.parallel import MIN_PARALLEL_WORK
from vdla.compiler.codegen.llvm.target import host_target
from vdla.compiler.tir.ir import BufferStore, For, ForKind, IntImm, PrimFunc, Var, decl_buffer
from vdla.runtime.cpu_module import load_module
cols = 256
rows = MIN_PARALLEL_WORK // cols
a, out = decl_buffer((rows, cols), "float32", "a"), decl_buffer((rows, cols), "float32", "out")
i, j = Var("i"), Var("j")
body = For(j, IntImm(0), IntImm(cols), ForKind.PARALLEL,  # nested in a parallel loop: runs serially
           BufferStore(out, a[i, j] * 2.0 + i.astype("float32"), (i, j)))
f = PrimFunc("par", (a, out), For(i, IntImm(0), IntImm(rows), ForKind.PARALLEL, body))
path = os.path.join(sys.argv[1], "par.so")
export_library(codegen([f], host_target()), path)
mod = load_module(path)
x = np.random.default_rng(0).standard_normal((rows, cols)).astype(np.float32)
want = x * np.float32(2) + np.arange(rows, dtype=np.float32)[:, None]
for n in (1, 2):
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
def caller() -> None:
    for _ in range(int(sys.argv[3])):
        res = np.zeros_like(x)
        mod(x, res)
        assert np.array_equal(res, want)
callers = [threading.Thread(target=caller) for _ in range(2)]
for t in callers: t.start()
for t in callers: t.join()
print("env after load:", os.environ.get("OMP_WAIT_POLICY"), os.environ.get("GOMP_SPINCOUNT"), flush=True)
ctypes.CDLL("libgomp.so.1").omp_display_env(1)
"""


def _run(tmp_path: Path, regions: int = 3, concurrent: int = 3, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path), str(regions), str(concurrent)],
                          capture_output=True, text=True, env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def _thread_states(out: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("other threads:"))


def test_libgomp_waits_passively_by_default_and_environment_is_restored(tmp_path: Path) -> None:
    out = _run(tmp_path)
    assert "GOMP_SPINCOUNT = '0'" in out
    assert "env after load: None None" in out
    states = _thread_states(out)
    assert states, "no libgomp worker was started: the region ran serially"
    assert set(states) == {"S"}, f"a pool thread still runs 50 ms after the last region: {states}"


def test_an_unbounded_spin_is_seen_running(tmp_path: Path) -> None:
    # The probe of the test above can fail: with OMP_WAIT_POLICY=active a worker spins on.
    out = _run(tmp_path, OMP_WAIT_POLICY="active")
    assert "GOMP_SPINCOUNT = '30000000000'" in out
    assert "R" in _thread_states(out)


def test_user_spin_count_is_left_alone(tmp_path: Path) -> None:
    assert "GOMP_SPINCOUNT = '100000'" in _run(tmp_path, GOMP_SPINCOUNT="100000")


@pytest.mark.parametrize("spin", ["runtime", "2000"])
def test_many_regions_and_concurrent_callers_finish_exact(tmp_path: Path, spin: str) -> None:
    env = {} if spin == "runtime" else {"GOMP_SPINCOUNT": spin}
    _run(tmp_path, regions=300, concurrent=150, **env)
