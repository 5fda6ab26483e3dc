"""``bench/avx2_host/run.py``: a process under it sees an AVX2-only CPU (LLVM's host detection, our
``llvm`` target, PyTorch's dispatcher, onnxruntime's MLAS), runs no AVX-512 instruction at all, and a
model compiled there for the host is AVX2 code that agrees with the same model built without the
shim. Both modes: CPUID faulting where the CPU has it, patched CPUID/XGETBV sites elsewhere.

The patch mode disassembles the dispatching libraries once (about 4 minutes for torch's, cached
under ``cache_dir()/avx2_host`` per file version); later runs take seconds."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = "bench/avx2_host/run.py"

# The kernel's record of AVX-512 use per thread (bench/avx2_host/avx512_use.py says how it is read).
_ARCH_STATUS = r"""
import sys
sys.path.insert(0, "bench/avx2_host")
from avx512_use import used_avx512
"""

_PROBE = _ARCH_STATUS + r"""
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
out = compiled.run({"x": feed})[0].ravel()[:64].tolist()
import torch
torch.nn.functional.conv2d(torch.from_numpy(feed), torch.from_numpy(np.ones((8, 16, 3, 3), np.float32)))
print(json.dumps({"features": sorted(t.features), "zmm": "zmm" in asm, "ymm": "ymm" in asm,
                  "torch": torch.backends.cpu.get_cpu_capability(), "out": out, "used_avx512": used_avx512()}))
"""

# onnxruntime runs a conv (MLAS's SGEMM/conv kernels) and a matmul.
_ORT_PROBE = _ARCH_STATUS + r"""
import json, sys
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1)
w = numpy_helper.from_array(rng.standard_normal((32, 16, 3, 3)).astype(np.float32), "w")
m = numpy_helper.from_array(rng.standard_normal((32 * 30 * 30, 64)).astype(np.float32), "m")
graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
     helper.make_node("Reshape", ["c", "shape"], ["r"]), helper.make_node("MatMul", ["r", "m"], ["y"])],
    "probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 30, 30])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])],
    [w, m, numpy_helper.from_array(np.array([1, -1], np.int64), "shape")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
for _ in range(int(sys.argv[1])):
    y = sess.run(None, {"x": rng.standard_normal((1, 16, 30, 30)).astype(np.float32)})[0]
print(json.dumps({"y": float(np.abs(y).sum()), "used_avx512": used_avx512()}))
"""


def _has_cpuid_faulting() -> bool:
    return "cpuid_fault" in Path("/proc/cpuinfo").read_text().split()


def _shim_unusable() -> str:
    """Why neither mode can run here ('' when one can)."""
    if platform.machine() != "x86_64" or sys.platform != "linux":
        return "the AVX2 shim is for x86-64 Linux"
    if os.environ.get("VDLA_AVX2_HOST_MODE"):
        return "this test process already runs under bench/avx2_host, which does not nest"
    if not _has_cpuid_faulting() and shutil.which("objdump") is None:
        return "no CPUID faulting, and no objdump for the patch mode's site table (install binutils)"
    return ""


needs_shim = pytest.mark.skipif(bool(_shim_unusable()), reason=_shim_unusable() or "usable")
needs_patch = pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("objdump") is None
                                 or bool(os.environ.get("VDLA_AVX2_HOST_MODE")),
                                 reason="the patch mode needs x86-64 and objdump, outside another shim")


def test_the_shim_refuses_to_run_inside_itself() -> None:
    # Nested, the inner shim would find the libraries already patched, and two SIGILL handlers would pass an
    # unlisted trap back and forth (a spin, not the death of the process).
    run = subprocess.run([sys.executable, RUN, "--", "true"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         env={**os.environ, "VDLA_AVX2_HOST_MODE": "patch"})
    assert run.returncode == 2 and "already running under bench/avx2_host" in run.stderr, run.stderr


def _last_json(run: subprocess.CompletedProcess[str]) -> dict:
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@needs_shim
def test_a_process_under_the_shim_sees_and_compiles_for_avx2_only() -> None:
    run = subprocess.run([sys.executable, RUN, "--", sys.executable, "-c", _PROBE],
                         cwd=ROOT, capture_output=True, text=True, timeout=1200)
    masked = _last_json(run)
    assert "avx2" in masked["features"] and "fma" in masked["features"]
    assert not [f for f in masked["features"] if f.startswith(("avx512", "amx", "avxvnni"))]
    assert masked["torch"] == "AVX2"
    assert masked["ymm"] and not masked["zmm"]  # our host-target build really is AVX2 code
    unmasked = _last_json(subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True,
                                         timeout=600))
    # The same conv on both ISAs agrees to float rounding.
    assert max(abs(a - b) for a, b in zip(masked["out"], unmasked["out"])) <= 1e-4 * max(map(abs, unmasked["out"]))
    if "avx512f" in unmasked["features"] and unmasked["used_avx512"] is not None:
        # On an AVX-512 host the same process without the shim does use AVX-512 (glibc, torch, our
        # code), so the kernel's record can tell; under the shim no thread ever did.
        assert unmasked["used_avx512"]
        assert not masked["used_avx512"]


def _ort_under_patch(trace: Path, runs: int) -> dict:
    return _last_json(subprocess.run([sys.executable, RUN, "--mode", "patch", "--trace", str(trace), "--",
                                      sys.executable, "-c", _ORT_PROBE, str(runs)],
                                     cwd=ROOT, capture_output=True, text=True, timeout=1200))


@needs_patch
def test_onnxruntime_reads_the_masked_cpu_and_runs_no_avx512(tmp_path: Path) -> None:
    trace = tmp_path / "cpuid.log"
    masked = _ort_under_patch(trace, 1)
    lines = trace.read_text().splitlines()
    ort_lines = [ln for ln in lines if ln.startswith("onnxruntime_pybind11_state")]
    leaf7 = [ln.split() for ln in ort_lines if ln.split()[1:3] == ["cpuid", "00000007.00000000"]]
    xcr0 = [ln.split() for ln in ort_lines if ln.split()[1:3] == ["xgetbv", "00000000"]]
    assert leaf7 and xcr0, "onnxruntime asked neither CPUID leaf 7 nor XCR0 through a patched site:\n" + "\n".join(lines)
    # Fields: library kind leaf "at" address "real" eax ebx ecx edx "told" eax ebx ecx edx.
    for f in leaf7:  # AVX512F (EBX bit 16) hidden, AVX2 (EBX bit 5) kept
        assert not int(f[12], 16) & (1 << 16) and int(f[12], 16) & (1 << 5)
    for f in xcr0:  # XCR0: AVX (bit 2) kept, the AVX-512 state (bits 5-7) hidden
        told = int(f[11], 16)
        assert told & 0x4 and not told & 0xe0
    unmasked = _last_json(subprocess.run([sys.executable, "-c", _ORT_PROBE, "1"], cwd=ROOT, capture_output=True,
                                         text=True, timeout=600))
    assert abs(masked["y"] - unmasked["y"]) <= 1e-4 * unmasked["y"]
    real_avx512 = any(int(f[7], 16) & (1 << 16) for f in leaf7)
    if real_avx512 and unmasked["used_avx512"] is not None:
        assert unmasked["used_avx512"]  # MLAS takes its AVX-512 kernels without the shim ...
        assert not masked["used_avx512"]  # ... and none under it


# Executes a ud2 of its own (one the site table does not list).
_UD2 = r"""
import ctypes, mmap
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(b"\x0f\x0b\xc3")
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
print("survived")
"""


@needs_patch
def test_a_real_illegal_instruction_still_kills_the_process_with_sigill() -> None:
    plain = subprocess.run([sys.executable, "-c", _UD2], capture_output=True, text=True, timeout=60)
    assert plain.returncode == -signal.SIGILL
    run = subprocess.run([sys.executable, RUN, "--mode", "patch", "--", sys.executable, "-c", _UD2], cwd=ROOT,
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == -signal.SIGILL, run.stderr[-2000:]
    assert "survived" not in run.stdout


@pytest.mark.skipif(_has_cpuid_faulting() or bool(os.environ.get("VDLA_AVX2_HOST_MODE")),
                    reason="the CPU has CPUID faulting (the fault mode works here), or this process is already "
                           "under the shim")
def test_the_fault_mode_says_why_it_cannot_run() -> None:
    run = subprocess.run([sys.executable, RUN, "--mode", "fault", "--", sys.executable, "-c", "pass"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 3
    assert "no CPUID faulting" in run.stderr and "Traceback" not in run.stderr


def test_the_launcher_names_a_missing_command() -> None:
    run = subprocess.run([sys.executable, RUN, "--", "no_such_command_here"], cwd=ROOT,
                         capture_output=True, text=True, timeout=1200)
    assert run.returncode == 127
    assert "no such command: 'no_such_command_here'" in run.stderr and "Traceback" not in run.stderr


@needs_patch
def test_inference_traps_nothing_after_start_up(tmp_path: Path) -> None:
    """The patched sites run while the libraries pick their kernels, not per inference: the same
    number of traps for 1 and for 10 onnxruntime runs (a hot-path trap would distort every timing)."""
    counts = []
    for runs in (1, 10):
        trace = tmp_path / f"cpuid{runs}.log"
        _ort_under_patch(trace, runs)
        counts.append(sorted(ln for ln in trace.read_text().splitlines() if ln.startswith("hits ")))
    assert any(ln.startswith("hits onnxruntime_pybind11_state") for ln in counts[0]), counts[0]
    assert counts[0] == counts[1]
