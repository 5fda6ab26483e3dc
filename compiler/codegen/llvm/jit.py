"""Compile an LLVM module in memory (MCJIT) or into a shared library (system linker)."""
from __future__ import annotations

import ctypes.util
import functools
import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from vdla.runtime.cpu_module import CpuModule, check_target
from vdla.runtime.openmp import load_openmp_runtime
from vdla_hw.errors import ToolchainError
from vdla_hw.toolchain import INSTALL_COMPILER, toolchain

from .module import THREADS_SYMBOL, LLVMModule
from .target import host_target
from .types import CodegenError


@functools.cache
def _load_libgomp() -> None:
    # MCJIT resolves external symbols in the process: make libgomp's visible once, loaded
    # with the runtime's wait policy (vdla.runtime.openmp).
    load_openmp_runtime()
    name = ctypes.util.find_library("gomp") or "libgomp.so.1"
    try:
        llvm.load_library_permanently(name)
    except RuntimeError as err:
        raise CodegenError(f"parallel loops need libgomp (ships with gcc) and it could not "
                           f"be loaded: {err}; install libgomp1 or remove parallel loops") \
            from None


def jit(mod: LLVMModule, opt: int = 3) -> CpuModule:
    """JIT-compile ``mod`` for immediate use in this process."""
    check_target(mod.meta(), "this module")
    if mod.uses_openmp:
        _load_libgomp()
    optimized = mod.optimized(opt)
    engine = llvm.create_mcjit_compiler(optimized, mod.target.target_machine(opt, jit=True))
    engine.finalize_object()
    return CpuModule(mod.meta(), engine.get_function_address, engine,
                     engine.get_global_value_address(THREADS_SYMBOL))


def export_library(mod: LLVMModule, path: str | os.PathLike[str], opt: int = 3,
                   cc: str | None = None) -> str:
    """Write ``mod`` as a shared library (object file + ``cc -shared``); returns the path.

    ``cc`` defaults to the C compiler :func:`vdla_hw.toolchain.toolchain` finds (``CC``, a
    system compiler, or the ``ziglang`` wheel); a missing one is a ToolchainError saying what
    to install. The library records its target in ``vdla_module_meta``;
    ``vdla.runtime.cpu_module.load_module`` loads it without the compiler.  A module for another
    architecture (an ARM board) is linked by that architecture's cross linker
    (:func:`~vdla.compiler.codegen.llvm.cross.cross_link_library`).
    """
    if mod.target.arch != host_target().arch and cc is None:
        from .cross import cross_link_library

        return cross_link_library(mod, path, opt)
    zig = False
    if cc is None:
        tools = toolchain()
        driver, zig = list(tools.cc), tools.origin == "ziglang"
    elif shutil.which(cc) is None:
        raise ToolchainError(f"exporting a shared library needs the C compiler driver {cc!r} as linker, and it is "
                             f"not on PATH", hint=INSTALL_COMPILER)
    else:
        driver = [cc]
    path = os.fspath(path)
    obj = mod.object_code(opt)
    with tempfile.TemporaryDirectory(prefix="vdla_export_") as tmp:
        obj_path = os.path.join(tmp, "module.o")
        with open(obj_path, "wb") as f:
            f.write(obj)
        cmd = [*driver, "-shared", "-o", path, obj_path, "-lm"]
        if mod.uses_openmp:
            # zig's linker finds no libgomp.so (a link that ships with gcc): name the runtime library.
            cmd.append(_gomp_runtime() if zig else "-lgomp")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ToolchainError(f"linking {path} failed ({' '.join(cmd)}):\n{proc.stderr.strip()}",
                             hint="the linker's message above names what is missing")
    return path


def _gomp_runtime() -> str:
    """The path of the installed OpenMP runtime ``libgomp.so.1``, from the dynamic linker's cache."""
    try:
        listing = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30,
                                 env={**os.environ, "PATH": os.environ.get("PATH", "") + ":/sbin:/usr/sbin"}).stdout
    except FileNotFoundError:
        listing = ""
    for line in listing.splitlines():
        name, _, where = line.strip().partition(" => ")
        if name.startswith("libgomp.so.1 ") and os.path.exists(where):
            return where
    raise ToolchainError("parallel CPU kernels link the OpenMP runtime libgomp.so.1, which is not installed",
                         hint="apt-get install libgomp1 (it ships with gcc), or compile without parallel loops")
