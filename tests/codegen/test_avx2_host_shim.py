"""``bench/avx2_host/run.py``: a process under it sees an AVX2-only CPU (LLVM's host detection, our
``llvm`` target, PyTorch's dispatcher), and a model compiled there for the host is AVX2 code that
agrees with the same model built without the shim."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_PROBE = r"""
import json, sys
import numpy as np
sys.path.insert(0, ".")
from vdla.compiler.codegen.llvm.target import host_target
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model

t = host_target()
rng = np.random.default_rng(0)
b = GraphBuilder()
x = b.input("x", (1, 16, 10, 10), "float32")
w = b.const((rng.standard_normal((32, 16, 3, 3)) * 0.2).astype(np.float32))
g = b.build([b.op("relu", [b.op("conv2d", [x, w], "c", padding=(1, 1, 1, 1))])])
feed = rng.standard_normal((1, 16, 10, 10)).astype(np.float32)
compiled = build_model(g, target="llvm")
asm = compiled.llvm_module.assembly()
import torch
print(json.dumps({"features": sorted(t.features), "zmm": "zmm" in asm, "ymm": "ymm" in asm,
                  "torch": torch.backends.cpu.get_cpu_capability(),
                  "out": compiled.run({"x": feed})[0].ravel()[:64].tolist()}))
"""


def _cpuid_faulting() -> bool:
    return "cpuid_fault" in Path("/proc/cpuinfo").read_text().split()


@pytest.mark.skipif(not _cpuid_faulting(), reason="the CPU (or hypervisor) has no CPUID faulting for the shim")
def test_a_process_under_the_shim_sees_and_compiles_for_avx2_only() -> None:
    run = subprocess.run([sys.executable, "bench/avx2_host/run.py", "--", sys.executable, "-c", _PROBE],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    masked = json.loads(run.stdout.strip().splitlines()[-1])
    assert "avx2" in masked["features"] and "fma" in masked["features"]
    assert not [f for f in masked["features"] if f.startswith(("avx512", "amx", "avxvnni"))]
    assert masked["torch"] == "AVX2"
    assert masked["ymm"] and not masked["zmm"]  # our host-target build really is AVX2 code
    plain = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stderr[-2000:]
    unmasked = json.loads(plain.stdout.strip().splitlines()[-1])
    # The same conv on both ISAs agrees to float rounding.
    assert max(abs(a - b) for a, b in zip(masked["out"], unmasked["out"])) <= 1e-4 * max(map(abs, unmasked["out"]))


def test_the_launcher_names_a_missing_command() -> None:
    run = subprocess.run([sys.executable, "bench/avx2_host/run.py", "--", "no_such_command_here"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 127
    assert "no such command: 'no_such_command_here'" in run.stderr and "Traceback" not in run.stderr
