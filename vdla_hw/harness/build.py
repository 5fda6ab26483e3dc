"""Building the Verilator harness: ``vdla_top`` + the C++ DRAM model as one shared library.

One library per config and variant (plain, or with FST tracing compiled in), cached
under :func:`vdla_hw.rtl_build.build_dir` keyed by the RTL sources, the harness sources
and the build flags, so an unchanged design is built once and reused by every run, test
and benchmark.  A file lock makes concurrent builders (pytest-xdist workers, two
terminals) wait for one build instead of racing.
"""

from __future__ import annotations

import fcntl
import re
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.config import HwConfig, load_config
from vdla_hw.cache import enforce_cap
from vdla_hw.progress import bar, ticking
from vdla_hw.toolchain import find_make
from vdla_hw.rtl_build import BUILD_JOBS, VERILATOR_BUILD_ARGS, RtlBuildError, build_dir, rtl_sources, tool_env, verilator_bin

HARNESS_DIR = Path(__file__).resolve().parent
PROBE_SOURCES: tuple[Path, ...] = (HARNESS_DIR / "vdla_debug_probe.sv", HARNESS_DIR / "vdla_debug_bind.sv")
"""The simulation-only debug probe and its bind into ``vdla_top`` (also used by the cocotb system tests)."""
HARNESS_SOURCES: tuple[Path, ...] = (HARNESS_DIR / "harness.cpp", HARNESS_DIR / "axi_dram.h", HARNESS_DIR / "vl_print_hook.h",
                                     HARNESS_DIR / "lz4_compat" / "lz4.h", *PROBE_SOURCES)
TOP = "vdla_top"
LIB_NAME = "libvdla_harness.so"
DONE_PORTS = ("done", "irq")
"""Names the done output of ``vdla_top`` may have, in order of preference."""

# The model is evaluated millions of times per run: optimize it for speed (Verilator's
# default for the fast path is -Os; -O3 measured ~3% faster than -O2 on default).  No
# -march=native: the cache may be shared by machines with different CPUs.
# tool_env() supplies the wheel's precompiled-header fix.
_MAKE_FLAGS = ("OPT_FAST=-O3", "OPT_SLOW=-O1", "OPT_GLOBAL=-O2")
_VERILATOR_RUNTIME_OBJS = ("verilated.o", "verilated_dpi.o", "verilated_threads.o")
"""Objects Verilator's makefile compiles from its own runtime sources (not in the obj folder)."""
_PORT_RE = re.compile(r"VL_(IN|OUT|INOUT)(?:8|16|64|W)?\(&(\w+),(\d+),(\d+)")
_PROBE_RE = re.compile(r"/\*(\d+):(\d+)\*/\s*(vdla_top__DOT__u_probe__DOT__(dbg_\w+));")


@dataclass(frozen=True)
class PortInfo:
    """One port of the Verilated top: name, width in bits, direction."""

    name: str
    width: int
    is_input: bool


def harness_library(cfg: HwConfig | str, *, trace: bool = False, coverage: bool = False,
                    rtl_dir: Path | str | None = None, build_id: int = 0) -> Path:
    """The harness shared library for ``cfg`` (built on first use, then cached).

    ``trace=True`` selects a variant with FST tracing compiled in (slower per cycle,
    so it is only built when a waveform is asked for); ``coverage=True`` one with
    Verilator's line and toggle coverage (``vh_coverage_write``).  ``rtl_dir`` builds
    the RTL module files of another folder (a modified copy of ``vdla_hw/rtl``).  A non-zero
    ``build_id`` sets ``vdla_top``'s BUILD_ID parameter (an emulated bitstream's build id).
    """
    cfg = load_config(cfg)
    sources = rtl_sources(cfg, rtl_dir=rtl_dir)
    flags = _verilator_flags(trace, coverage)
    if not 0 <= build_id <= 0xFFFF_FFFF:
        raise ValueError(f"build_id {build_id} does not fit the 32-bit BUILD_ID register")
    if build_id:
        flags.append(f"-GBUILD_ID=32'h{build_id:08x}")
    purpose = "harness" + ("-fst" if trace else "") + ("-cov" if coverage else "")
    folder = build_dir(cfg, purpose, list(sources) + list(HARNESS_SOURCES), {"flags": flags, "make": _MAKE_FLAGS})
    lib = folder / LIB_NAME
    if lib.exists():
        return lib
    with _locked(folder / ".lock"):
        if not lib.exists():  # another process may have built it while we waited
            _build(folder, sources, flags, lib, cfg.name)
    enforce_cap()
    return lib


def _verilator_flags(trace: bool, coverage: bool = False) -> list[str]:
    flags = ["--cc", "--exe", "-O3", "--top-module", TOP, *VERILATOR_BUILD_ARGS,
             "-CFLAGS", "-fPIC", "-CFLAGS", f"-I{HARNESS_DIR}", "-CFLAGS", "-DVL_VERILATED_INCLUDE='\"vl_print_hook.h\"'",
             "-LDFLAGS", "-shared", "-o", LIB_NAME]
    if trace:
        flags += ["--trace-fst", "-CFLAGS", "-DVDLA_TRACE"]
    if coverage:
        flags += ["--coverage-line", "--coverage-toggle", "-CFLAGS", "-DVDLA_COVERAGE"]
    return flags


def _build(folder: Path, sources: list[Path], flags: list[str], lib: Path, name: str) -> None:
    obj = folder / "obj"
    log = folder / "build.log"
    env = tool_env()
    if "--trace-fst" in flags:
        flags = flags + _lz4_flags(folder, env)
    cmd = [str(verilator_bin()), *flags, "--Mdir", str(obj), *map(str, sources), *map(str, PROBE_SOURCES),
           str(HARNESS_DIR / "harness.cpp")]
    with log.open("w") as out:
        with ticking(f"verilating vdla_top ({name})"):
            _run(cmd, folder, env, out, log, "verilating vdla_top")
        ports = parse_ports(obj / f"V{TOP}.h")
        probes = parse_probes(obj / f"V{TOP}___024root.h")
        (obj / "vdla_ports.h").write_text(ports_header(ports, probes))
        make = [find_make(env), "-C", str(obj), "-f", f"V{TOP}.mk", f"-j{BUILD_JOBS}", *_MAKE_FLAGS]
        # Progress: object files written so far out of one per C++ source (Verilator's runtime
        # sources are compiled too), plus the final link.
        runtime_objs = len(_VERILATOR_RUNTIME_OBJS) + int("--trace-fst" in flags)  # + verilated_fst_c.o
        total = len(list(obj.glob("*.cpp"))) + runtime_objs + 1
        with bar(desc=f"compiling the Verilated model ({name})", total=total, unit="file") as progress:
            def done() -> int:
                return len(list(obj.glob("*.o"))) + int((obj / LIB_NAME).exists())

            _run(make, folder, env, out, log, "compiling the harness", on_tick=lambda: progress.update(done() - progress.n))
    built = obj / LIB_NAME
    if not built.exists():
        raise RtlBuildError(f"the harness build finished without producing {built}; see {log}")
    tmp = lib.with_suffix(".tmp")
    tmp.write_bytes(built.read_bytes())
    tmp.replace(lib)  # atomic: a reader never sees a half-written library


def _lz4_flags(folder: Path, env: dict[str, str]) -> list[str]:
    """Flags that let Verilator's FST writer build without the LZ4 development package.

    The writer includes ``<lz4.h>`` and links ``-llz4``.  Where only the runtime library
    ``liblz4.so.1`` is installed, point the compiler at the two declarations in
    ``lz4_compat/`` and the linker at a ``liblz4.so`` link to the runtime library.
    """
    flags: list[str] = []
    probe = subprocess.run(["c++", "-E", "-x", "c++", "-"], input="#include <lz4.h>\n", capture_output=True, text=True,
                           env=env)
    if probe.returncode:
        flags += ["-CFLAGS", f"-I{HARNESS_DIR / 'lz4_compat'}"]
    if not _library_path("liblz4.so", env):
        runtime = _library_path("liblz4.so.1", env)
        if runtime is None:
            raise RtlBuildError("FST tracing needs the LZ4 library, which is not installed: apt-get install liblz4-dev "
                                "(or run without --fst)")
        libdir = folder / "lz4_lib"
        libdir.mkdir(exist_ok=True)
        link = libdir / "liblz4.so"
        link.unlink(missing_ok=True)
        link.symlink_to(runtime)
        flags += ["-LDFLAGS", f"-L{libdir}"]
    return flags


def _library_path(name: str, env: dict[str, str]) -> Path | None:
    """Where the C++ compiler's linker finds library file ``name``, if anywhere."""
    out = subprocess.run(["c++", f"-print-file-name={name}"], capture_output=True, text=True, env=env).stdout.strip()
    return Path(out) if out and Path(out).is_absolute() and Path(out).exists() else None


def _run(cmd: list[str], cwd: Path, env: dict[str, str], out, log: Path, what: str,  # type: ignore[no-untyped-def]
         on_tick: Callable[[], None] | None = None) -> None:
    """Run ``cmd`` with its output in ``log``; ``on_tick`` is called twice a second while it runs."""
    out.write("$ " + " ".join(cmd) + "\n")
    out.flush()
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT) as proc:
        while True:
            try:
                code = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if on_tick:
                    on_tick()
    if on_tick:
        on_tick()
    if code:
        tail = "\n".join(log.read_text().splitlines()[-25:])
        raise RtlBuildError(f"{what} failed (exit {code}); full log: {log}\n{tail}")


def parse_ports(header: Path) -> list[PortInfo]:
    """Ports of the Verilated top, read from its generated header."""
    ports = [PortInfo(name, int(msb) - int(lsb) + 1, kind == "IN")
             for kind, name, msb, lsb in _PORT_RE.findall(header.read_text())]
    names = {p.name for p in ports}
    if not any(d in names for d in DONE_PORTS):
        raise RtlBuildError(f"{TOP} has no done output (expected one of {DONE_PORTS}); ports: {sorted(names)}")
    return ports


def parse_probes(root_header: Path) -> list[tuple[str, str, int]]:
    """The debug probe's signals in the Verilated root class: (name, C++ member, width)."""
    return [(name, member, int(msb) - int(lsb) + 1) for msb, lsb, member, name in _PROBE_RE.findall(root_header.read_text())]


def ports_header(ports: list[PortInfo], probes: list[tuple[str, str, int]]) -> str:
    """The ``vdla_ports.h`` the harness includes: the ports, the probe signals and the done port."""
    names = {p.name for p in ports}
    done = next(d for d in DONE_PORTS if d in names)
    lines = ["// Generated by vdla_hw/harness/build.py from the Verilated headers. Do not edit.",
             "#pragma once", f"#define VDLA_DONE_PORT {done}", "#define VDLA_PORTS(X) \\"]
    lines += [f"  X({p.name}, {p.width}) \\" for p in ports]
    lines += ["", "#define VDLA_PROBES(X) \\"]
    lines += [f"  X({name}, {member}, {width}) \\" for name, member, width in probes]
    lines.append("")
    return "\n".join(lines) + "\n"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
