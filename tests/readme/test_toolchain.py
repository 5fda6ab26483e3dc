"""The C/C++ toolchain lookup: CXX/CC, then the system compilers, then the ziglang wheel; a clear
error naming what to install when there is none."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla_hw.errors import ToolchainError
from vdla_hw.rtl_build import tool_env
from vdla_hw.toolchain import find_toolchain

ROOT = Path(__file__).resolve().parents[2]
COMPILER_NAME = re.compile(r"(^|-)(c\+\+|g\+\+|gcc|cc|clang.*|ar|ld(\..*)?|as|cpp|ranlib)(-[0-9.]+)?$")


def _system_tools() -> dict[str, str]:
    found = {n: shutil.which(n) for n in ("g++", "gcc", "ar")}
    if not all(found.values()):
        pytest.skip(f"no system compiler on this machine ({found}); the ziglang tests below cover it")
    return found  # type: ignore[return-value]


def stripped_path(tmp_path: Path) -> str:
    """A PATH with every program of this machine except compilers, linkers and archivers."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        for tool in sorted(Path(folder).glob("*")) if Path(folder).is_dir() else []:
            if not COMPILER_NAME.search(tool.name) and not (bin_dir / tool.name).exists():
                (bin_dir / tool.name).symlink_to(tool)
    return os.pathsep.join([str(Path(sys.executable).parent), str(bin_dir)])


def test_system_compilers_are_found_on_path(tmp_path: Path) -> None:
    tools = _system_tools()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, target in (("g++", tools["g++"]), ("gcc", tools["gcc"]), ("ar", tools["ar"])):
        (bin_dir / name).symlink_to(target)
    found = find_toolchain({"PATH": str(bin_dir)}, need_make=False)
    assert (found.origin, found.cxx, found.cc, found.bin_dir) == ("system", ("g++",), ("gcc",), None)


def test_cxx_and_cc_from_the_environment_come_first(tmp_path: Path) -> None:
    tools = _system_tools()
    found = find_toolchain({"PATH": os.environ["PATH"], "CXX": tools["g++"], "CC": tools["gcc"]}, need_make=False)
    assert (found.origin, found.cxx, found.cc) == ("env", (tools["g++"],), (tools["gcc"],))
    # Verilator's makefile assigns CXX itself: the choice must reach make on its command line
    flags = tool_env({"PATH": os.environ["PATH"], "CXX": tools["g++"]})["MAKEFLAGS"].split()
    assert f"CXX={tools['g++']}" in flags and f"LINK={tools['g++']}" in flags
    with pytest.raises(ToolchainError, match=r"CXX='no-such-c\+\+' names a compiler that is not on PATH"):
        find_toolchain({"PATH": os.environ["PATH"], "CXX": "no-such-c++"}, need_make=False)


def test_without_a_system_compiler_the_ziglang_wheel_compiles_and_links(tmp_path: Path) -> None:
    pytest.importorskip("ziglang", reason="the ziglang wheel is in the hw extra: pip install 'vdla[hw]'")
    env = {"PATH": stripped_path(tmp_path), "VDLA_CACHE_DIR": str(tmp_path / "cache"), "HOME": os.environ.get("HOME", "/root")}
    found = find_toolchain(env, need_make=False)
    assert found.origin == "ziglang" and found.bin_dir is not None
    assert {p.name for p in found.bin_dir.iterdir()} >= {"c++", "g++", "cc", "gcc", "ar"}
    src = tmp_path / "dot.c"
    src.write_text("long dot(const signed char* a, const signed char* b, int n)"
                   " { long s = 0; for (int i = 0; i < n; ++i) s += a[i] * b[i]; return s; }\n")
    lib = tmp_path / "libdot.so"
    # `cc` resolves to the zig wrapper through the PATH the toolchain hands out
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", str(lib), str(src)], env=found.env(env), check=True,
                   timeout=600)
    dot = ctypes.CDLL(str(lib)).dot
    dot.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    dot.restype = ctypes.c_long
    a, b = (np.random.default_rng(s).integers(-128, 128, 64, dtype=np.int8) for s in (1, 2))
    assert dot(a.ctypes.data, b.ctypes.data, 64) == int(a.astype(np.int64) @ b.astype(np.int64))


def test_no_compiler_at_all_says_what_to_install(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['ziglang'] = None  # as if the wheel were not installed\n"
        "from vdla_hw.errors import ToolchainError\n"
        "from vdla.runtime.backends.rtl import RtlBackend\n"
        "from vdla_hw.toolchain import find_toolchain\n"
        "try:\n"
        "    find_toolchain(need_make=False)\n"
        "except ToolchainError as exc:\n"
        "    print(exc); print(exc.hint)\n"
        "print(RtlBackend.unavailable())\n"
    )
    env = {**os.environ, "PATH": stripped_path(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop("CXX", None)
    env.pop("CC", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("a C++ compiler (c++, g++ or clang++) and a C compiler")
    assert "ziglang wheel is not installed" in lines[0]
    assert "apt-get install g++" in lines[1] and "pip install ziglang" in lines[1]
    assert "a C++ compiler" in lines[2] and "pip install ziglang" in lines[2]


@pytest.mark.slow
def test_the_rtl_backend_builds_and_runs_with_only_the_ziglang_wheel(tmp_path: Path) -> None:
    """The Verilated harness compiled by zig c++ (no system compiler on PATH) runs bit-exactly."""
    pytest.importorskip("ziglang", reason="the ziglang wheel is in the hw extra: pip install 'vdla[hw]'")
    code = (
        "import numpy as np\n"
        "from vdla.runtime import run\n"
        "from vdla.runtime.workloads import tiled_gemm_program\n"
        "from vdla_hw import load_config\n"
        "from vdla_hw.toolchain import toolchain\n"
        "assert toolchain().origin == 'ziglang', toolchain()\n"
        "p, ref = tiled_gemm_program(load_config('tiny'), 16, 16, 16, virtual_threads=2)\n"
        "r = run(p, backend='rtl')\n"
        "assert (r.read('out') == ref).all() and (r.dram == run(p, backend='fsim').dram).all()\n"
    )
    env = {**os.environ, "PATH": stripped_path(tmp_path), "PYTHONPATH": str(ROOT),
           "VDLA_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("CXX", None)
    env.pop("CC", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=3600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


@pytest.mark.slow
def test_vdla_compile_links_with_only_the_ziglang_wheel(tmp_path: Path) -> None:
    """A model compiled and linked by zig cc (OpenMP runtime named by path) gives the system build's output."""
    pytest.importorskip("ziglang", reason="the ziglang wheel is in the hw extra: pip install 'vdla[hw]'")
    base = {**os.environ, "PYTHONPATH": str(ROOT)}
    base.pop("CXX", None)
    base.pop("CC", None)
    stripped = {**base, "PATH": stripped_path(tmp_path), "VDLA_CACHE_DIR": str(tmp_path / "cache")}
    vdla = [sys.executable, "-m", "vdla.compiler.cli.main"]
    subprocess.run([*vdla, "example", "."], cwd=tmp_path, env=base, check=True, timeout=120)
    outputs = {}
    for label, env in (("zig", stripped), ("system", base)):
        module, y = f"m_{label}.vdla", f"y_{label}.npy"
        for cmd in (["compile", "model.onnx", "--target", "vdla", "--calibrate", "samples.npz", "-o", module],
                    ["run", module, "--input", "x.npy", "--output", y]):
            proc = subprocess.run([*vdla, *cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, f"{label}: {cmd}\n{proc.stdout}\n{proc.stderr}"
        outputs[label] = np.load(tmp_path / y)
    np.testing.assert_array_equal(outputs["zig"], outputs["system"])
