"""Cross-building for another architecture (the ARM processor of an FPGA board).

Two products, both from the same object code :meth:`LLVMModule.object_code` emits for the target:

* :func:`cross_link_library`: the module's ``kernels.so`` for the board, linked by the target's system
  cross linker when one is installed (``aarch64-linux-gnu-gcc``, ``arm-linux-gnueabihf-gcc``), else by
  the ``ziglang`` wheel (``zig cc -target aarch64-linux-gnu``).  Parallel loops call the thread pool
  (``pool.py``), compiled for the target and linked in, on the board's pthreads, like a native build.
* :func:`emulator_executable`: a static executable (musl, zig) of the module plus a small C driver that
  reads every buffer argument from a file, calls one function and writes the buffers back, which
  ``qemu-aarch64`` / ``qemu-arm`` runs on this machine (:func:`run_emulated`).  The module's thread pool is
  linked in (musl's pthreads), so parallel loops really run on several threads (``OMP_NUM_THREADS``).  Executables are cached per content hash in the build cache (``<cache>/cross/``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla_hw.errors import ToolchainError

from .module import LLVMModule, thread_pool_module
from .target import Target

INSTALL_QEMU = "apt-get install qemu-user (Debian/Ubuntu): it provides qemu-aarch64 and qemu-arm"
INSTALL_ZIG = "pip install ziglang (also in `pip install 'vdla[hw]'`), or install the target's cross gcc " \
              "(apt-get install gcc-aarch64-linux-gnu / gcc-arm-linux-gnueabihf)"


@dataclass(frozen=True)
class CrossArch:
    """How to link and emulate one architecture."""

    zig_shared: str
    """zig's target for a shared library against the board's glibc."""
    zig_static: str
    """zig's target for a static musl executable (emulation)."""
    gcc: str
    """The system cross compiler driver's name."""
    qemu: str
    zig_cpu: tuple[str, ...]
    """zig's ``-mcpu`` for the driver and the C library zig builds (once per CPU, minutes):
    the oldest CPU of the architecture's boards, whatever the kernels' own ``-mcpu``."""


ARCHES = {"aarch64": CrossArch("aarch64-linux-gnu", "aarch64-linux-musl", "aarch64-linux-gnu-gcc", "qemu-aarch64",
                               ()),
          "arm": CrossArch("arm-linux-gnueabihf", "arm-linux-musleabihf", "arm-linux-gnueabihf-gcc", "qemu-arm",
                           ("-mcpu=cortex_a9",))}


def cross_arch(target: Target) -> CrossArch:
    """The cross tools of ``target``'s architecture; a ToolchainError for one this module cannot cross-build."""
    try:
        return ARCHES[target.arch]
    except KeyError:
        raise ToolchainError(f"cannot cross-build for {target.arch} ({target.triple}): the cross-built "
                             f"architectures are {', '.join(ARCHES)}",
                             hint="compile for this host (--cpu-target llvm) or an ARM board") from None


def _zig() -> list[str]:
    try:
        import ziglang  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        raise ToolchainError("cross-linking for an ARM board needs a cross linker, and none is installed",
                             hint=INSTALL_ZIG) from None
    return [sys.executable, "-m", "ziglang", "cc"]


def linker_command(target: Target) -> tuple[list[str], str]:
    """The cross linker for a shared library of ``target``: ``(argv prefix, origin)``, origin ``system`` or
    ``ziglang``."""
    arch = cross_arch(target)
    if shutil.which(arch.gcc):
        return [arch.gcc], "system"
    return [*_zig(), "-target", arch.zig_shared, *arch.zig_cpu], "ziglang"


def _run(cmd: Sequence[str], what: str, cwd: str | None = None) -> None:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=900, cwd=cwd)
    if proc.returncode != 0:
        raise ToolchainError(f"{what} failed ({' '.join(cmd)}):\n{proc.stderr.strip()[-2000:]}",
                             hint="the linker's message above names what is missing")


def cross_link_library(mod: LLVMModule, path: str | os.PathLike[str], opt: int = 3) -> str:
    """Write ``mod`` (compiled for an ARM target) as a shared library for that target; returns the path."""
    base, _ = linker_command(mod.target)
    path = os.fspath(path)
    with tempfile.TemporaryDirectory(prefix="vdla_cross_") as tmp:
        obj = os.path.join(tmp, "module.o")
        Path(obj).write_bytes(mod.object_code(opt))
        cmd = [*base, "-shared", "-o", os.path.abspath(path), obj, "-lm"]
        if mod.uses_threads:
            pool = os.path.join(tmp, "pool.o")
            Path(pool).write_bytes(thread_pool_module(mod.target).object_code(opt))
            cmd += [pool, "-lpthread"]
        _run(cmd, f"linking {path} for {mod.target}", cwd=tmp)
    return path


_DRIVER = r"""
/* Runs one function of a VDLA CPU module: argv = the function's name, then its buffer files in parameter
   order.  Each file is read into an aligned buffer, the function runs, every buffer is written back. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct entry { const char *name; int (*fn)(void **); };
#include "entries.h"

/* LLVM lowers round-half-even to a libm call where the ISA has no instruction for it (ARMv7); glibc has
   roundevenf (the board's library finds it there), musl does not: in the default rounding mode rint is it. */
#include <math.h>
__attribute__((weak)) float roundevenf(float x) { return rintf(x); }
__attribute__((weak)) double roundeven(double x) { return rint(x); }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: run FUNCTION BUFFER...\n"); return 2; }
  int (*fn)(void **) = 0;
  for (const struct entry *e = ENTRIES; e->name; e++)
    if (strcmp(e->name, argv[1]) == 0) fn = e->fn;
  if (!fn) { fprintf(stderr, "no function %s in the module\n", argv[1]); return 2; }
  argv++; argc--;
  int n = argc - 1;
  void **args = calloc(n > 0 ? n : 1, sizeof(void *));
  size_t *sizes = calloc(n > 0 ? n : 1, sizeof(size_t));
  for (int i = 0; i < n; i++) {
    int fd = open(argv[i + 1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { perror(argv[i + 1]); return 2; }
    sizes[i] = (size_t)st.st_size;
    args[i] = aligned_alloc(64, (sizes[i] + 63) / 64 * 64 + 64);
    for (size_t got = 0; got < sizes[i];) {
      ssize_t r = read(fd, (char *)args[i] + got, sizes[i] - got);
      if (r <= 0) { perror(argv[i + 1]); return 2; }
      got += (size_t)r;
    }
    close(fd);
  }
  int rc = fn(args);
  if (rc != 0) { fprintf(stderr, "function returned %d\n", rc); return 3; }
  for (int i = 0; i < n; i++) {
    int fd = open(argv[i + 1], O_WRONLY | O_TRUNC);
    if (fd < 0 || write(fd, args[i], sizes[i]) != (ssize_t)sizes[i]) { perror(argv[i + 1]); return 2; }
    close(fd);
  }
  return 0;
}
"""


def _cache_root() -> Path:
    from vdla_hw.cache import cache_dir

    return cache_dir() / "cross"


def _entries(mod: LLVMModule) -> str:
    decls = "".join(f"extern int {f.name}(void **);\n" for f in mod.functions)
    table = "".join(f'  {{"{f.name}", {f.name}}},\n' for f in mod.functions)
    return f"{decls}static const struct entry ENTRIES[] = {{\n{table}  {{0, 0}}\n}};\n"


def emulator_executable(mod: LLVMModule, opt: int = 3) -> Path:
    """A static executable of ``mod`` for its (ARM) target that runs any of its functions on files (see the
    module doc); built with zig and cached per hash of the object code, the driver and the target."""
    arch = cross_arch(mod.target)
    obj = mod.object_code(opt)
    pool = thread_pool_module(mod.target).object_code(opt) if mod.uses_threads else b""
    entries = _entries(mod)
    key = hashlib.sha256(b"\0".join([obj, pool, _DRIVER.encode(), entries.encode(), arch.zig_static.encode()])
                         ).hexdigest()[:24]
    exe = _cache_root() / key / "run"
    if exe.is_file():
        os.utime(exe.parent)
        return exe
    exe.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vdla_emu_", dir=exe.parent) as tmp:
        Path(tmp, "module.o").write_bytes(obj)
        Path(tmp, "driver.c").write_text(_DRIVER)
        Path(tmp, "entries.h").write_text(entries)
        objects = ["module.o"]
        if pool:
            Path(tmp, "pool.o").write_bytes(pool)
            objects.append("pool.o")
        _run([*_zig(), "-target", arch.zig_static, *arch.zig_cpu, "-static", "-O2", "driver.c", *objects,
              "-lm", "-o", "run"], f"building the {arch.qemu} executable of {mod.functions[0].name}", cwd=tmp)
        os.replace(Path(tmp, "run"), exe)
    return exe


def qemu_for(target: Target) -> str:
    """The path of the qemu-user emulator of ``target``'s architecture; a ToolchainError naming the
    package otherwise."""
    name = cross_arch(target).qemu
    found = shutil.which(name)
    if found is None:
        raise ToolchainError(f"{name} is not installed: running {target.arch} code on this machine needs "
                             f"qemu-user", hint=INSTALL_QEMU)
    return found


def run_emulated(mod: LLVMModule, function: str, arrays: Sequence[np.ndarray], *, threads: int = 2,
                 timeout_s: float = 600.0) -> list[np.ndarray]:
    """Run ``function`` of ``mod`` (an ARM module) under qemu-user on copies of ``arrays`` (one per buffer
    parameter, in order); returns the arrays as the function left them (outputs written)."""
    fn = EmulatedLibrary(mod, threads=threads, timeout_s=timeout_s)[function]
    copies = tuple(np.array(a, dtype=p.dtype, order="C") for a, p in zip(arrays, fn.params))
    fn(*copies)
    return list(copies)


@dataclass(frozen=True)
class EmulatedParam:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


class EmulatedFunction:
    """One function of an :class:`EmulatedLibrary`, with the interface of ``vdla.runtime.cpu_module.Function``
    (``check``, ``pack``, ``call_unchecked``, ``__call__``): each call is one qemu-user process."""

    def __init__(self, library: EmulatedLibrary, name: str, params: tuple[EmulatedParam, ...]):
        self.library, self.name, self.params = library, name, params

    def check(self, arrays: tuple[np.ndarray, ...]) -> None:
        if len(arrays) != len(self.params):
            raise ToolchainError(f"{self.name} takes {len(self.params)} arrays, got {len(arrays)}")
        for i, (p, a) in enumerate(zip(self.params, arrays)):
            if a.shape != p.shape or a.dtype != p.dtype or not a.flags.c_contiguous:
                raise ToolchainError(f"argument {i} ({p.name}) of {self.name} is {a.dtype}{list(a.shape)}, "
                                     f"expected a C-contiguous {p.dtype}{list(p.shape)}")

    def pack(self, arrays: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
        return tuple(arrays)

    def call_unchecked(self, arrays: tuple[np.ndarray, ...]) -> None:
        self.library.call(self.name, arrays)

    def __call__(self, *arrays: np.ndarray) -> None:
        self.check(arrays)
        self.call_unchecked(arrays)


class EmulatedLibrary:
    """A cross-built module run under qemu-user, in place of a loaded ``vdla.runtime.cpu_module.CpuModule``: the
    graph executor runs a whole model with it (CPU kernels emulated, VDLA nodes on their backend)."""

    def __init__(self, mod: LLVMModule, *, threads: int = 2, timeout_s: float = 600.0):
        self.mod, self.timeout_s = mod, timeout_s
        self.threads = threads
        self.qemu = qemu_for(mod.target)
        self.exe = emulator_executable(mod)
        self.functions = {f.name: EmulatedFunction(self, f.name, tuple(
            EmulatedParam(p.name, p.shape, np.dtype(p.dtype)) for p in f.params)) for f in mod.functions}
        self.calls = 0

    def __getitem__(self, name: str) -> EmulatedFunction:
        try:
            return self.functions[name]
        except KeyError:
            raise ToolchainError(f"no function {name!r} in the module; it has {sorted(self.functions)}") from None

    def set_num_threads(self, n: int) -> None:
        self.threads = n if n > 0 else 2

    def call(self, name: str, arrays: Sequence[np.ndarray]) -> None:
        """Run ``name`` under qemu on ``arrays`` and write the results back into them."""
        tool = os.path.basename(self.qemu)
        with tempfile.TemporaryDirectory(prefix="vdla_qemu_") as tmp:
            files = []
            for i, a in enumerate(arrays):
                files.append(os.path.join(tmp, f"{i}.bin"))
                a.tofile(files[-1])
            try:
                proc = subprocess.run([self.qemu, str(self.exe), name, *files], capture_output=True, text=True,
                                      timeout=self.timeout_s, env={**os.environ, "OMP_NUM_THREADS": str(self.threads)})
            except subprocess.TimeoutExpired:
                raise ToolchainError(f"{name} under {tool} did not finish in {self.timeout_s:.0f} s",
                                     hint="a smaller workload, or a longer timeout_s") from None
            if proc.returncode != 0:
                raise ToolchainError(f"{name} under {tool} exited with status {proc.returncode}: "
                                     f"{proc.stderr.strip()[-1000:]}")
            for a, f in zip(arrays, files):
                a[...] = np.fromfile(f, dtype=a.dtype).reshape(a.shape)
        self.calls += 1
