"""libgomp is loaded with a passive wait policy unless the user chose one (vdla.runtime.openmp)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Loads an exported parallel module through the runtime (what `vdla run` and GraphModule do),
# then asks libgomp for its settings: omp_display_env(verbose) prints what it read at load time,
# GOMP_SPINCOUNT among them (300000 by default, 0 when passive, 3e10 when active).
_SCRIPT = r"""
import ctypes, os, sys
import numpy as np
from vdla.compiler.codegen.llvm import codegen, export_library
from vdla.compiler.codegen.llvm.target import host_target
from vdla.compiler.tir.ir import BufferStore, For, ForKind, IntImm, PrimFunc, Var, decl_buffer
from vdla.runtime.cpu_module import load_module
a, out = decl_buffer((64,), "float32", "a"), decl_buffer((64,), "float32", "out")
i = Var("i")
f = PrimFunc("par", (a, out), For(i, IntImm(0), IntImm(64), ForKind.PARALLEL, BufferStore(out, a[i] * 2.0, (i,))))
path = os.path.join(sys.argv[1], "par.so")
export_library(codegen([f], host_target()), path)
mod = load_module(path)
mod.set_num_threads(2)
x, res = np.arange(64, dtype=np.float32), np.zeros(64, np.float32)
mod(x, res)
assert (res == 2 * x).all()
print("env after load:", os.environ.get("OMP_WAIT_POLICY"), flush=True)
ctypes.CDLL("libgomp.so.1").omp_display_env(1)
"""


def _run(tmp_path: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, str(tmp_path)], capture_output=True, text=True,
                          env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout + proc.stderr


def test_libgomp_waits_passively_by_default_and_environment_is_restored(tmp_path: Path) -> None:
    out = _run(tmp_path)
    assert "GOMP_SPINCOUNT = '0'" in out
    assert "env after load: None" in out


def test_user_wait_policy_is_obeyed(tmp_path: Path) -> None:
    assert "GOMP_SPINCOUNT = '30000000000'" in _run(tmp_path, OMP_WAIT_POLICY="active")


def test_user_spin_count_is_left_alone(tmp_path: Path) -> None:
    assert "GOMP_SPINCOUNT = '100000'" in _run(tmp_path, GOMP_SPINCOUNT="100000")
