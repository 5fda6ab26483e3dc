"""Compile an LLVM module in memory (MCJIT) or into a shared library (system linker)."""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from vdla.runtime.cpu_module import CpuModule, check_target
from vdla_hw.errors import ToolchainError
from vdla_hw.toolchain import INSTALL_COMPILER, toolchain

from .module import THREADS_SYMBOL, LLVMModule, thread_pool_module
from .pool import POOL_SYMBOL
from .target import host_target


@functools.cache
def _thread_pool() -> llvm.ExecutionEngine:
    # JIT modules call the process's one pool (pool.py), compiled here once and never freed: its workers
    # outlive every module (a module's own pool would leave them spinning in freed code).  MCJIT resolves
    # the modules' external vdla_parallel to it.
    target = host_target()
    engine = llvm.create_mcjit_compiler(thread_pool_module(target, hidden=False).optimized(3),
                                        target.target_machine(3, jit=True))
    engine.finalize_object()
    llvm.add_symbol(POOL_SYMBOL, engine.get_function_address(POOL_SYMBOL))
    return engine


def jit(mod: LLVMModule, opt: int = 3) -> CpuModule:
    """JIT-compile ``mod`` for immediate use in this process."""
    check_target(mod.meta(), "this module")
    if mod.uses_threads:
        _thread_pool()
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
    if cc is None:
        driver = list(toolchain().cc)
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
        if mod.uses_threads:  # the library's own thread pool, on libc's pthreads
            pool_path = os.path.join(tmp, "pool.o")
            with open(pool_path, "wb") as f:
                f.write(thread_pool_module(mod.target).object_code(opt))
            cmd += [pool_path, "-lpthread"]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ToolchainError(f"linking {path} failed ({' '.join(cmd)}):\n{proc.stderr.strip()}",
                             hint="the linker's message above names what is missing")
    return path
