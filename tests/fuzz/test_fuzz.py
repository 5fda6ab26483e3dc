"""``vdla fuzz``: legal random programs, bit-exact agreement of the backends, shrinking and coverage."""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.cli.main import main as vdla
from vdla.fuzz.campaign import Settings, run_campaign
from vdla.fuzz.coverage import Coverage, bins_of
from vdla.fuzz.generator import build_program, draw_plan
from vdla.fuzz.plan import DataSpec, GemmOp, LoadOp, Loop, Plan, PlanError, Round, StoreOp, UopLoadOp, check_plan
from vdla.fuzz.runner import Runner
from vdla.fuzz.shrink import save_regression, shrink_plan
from vdla.runtime.backends.cycle import CycleBackend
from vdla.runtime.result import RunResult
from vdla_hw.config import load_config
from vdla_hw.isa import AluInsn, AluOp, MemType, Uop

CI_SEED = 2026


@pytest.fixture(scope="module")
def tiny():
    return load_config("tiny")


def _one_round(loads, computes, stores, threads: int = 1, rounds: int = 1) -> Plan:
    rnd = Round(tuple(loads), tuple(computes), tuple(stores))
    return Plan(threads, DataSpec(1, 16, 16, 16, 16), (rnd,) * rounds)


def test_check_plan_rejects_reads_of_unwritten_sram(tiny) -> None:
    uops = UopLoadOp(0, (Uop(0, 0, 0),))
    load = LoadOp(MemType.INP, 0, 0, 1, 1, 1)
    store = StoreOp(0, 0, 1, 1, 1)
    # The weights of the GEMM were never loaded; the accumulator it adds to never written.
    with pytest.raises(PlanError, match="never written"):
        check_plan(tiny, _one_round([load], [uops, GemmOp(Loop(0, 1))], [store]))
    reset = GemmOp(Loop(0, 1), reset=True)
    wgt = LoadOp(MemType.WGT, 0, 0, 1, 1, 1)
    check_plan(tiny, _one_round([load, wgt], [uops, reset, GemmOp(Loop(0, 1))], [store]))


def test_check_plan_rejects_unordered_reuse_across_threads(tiny) -> None:
    """Two threads reusing the same SRAM in consecutive rounds race; one thread (round r waits r-1) does not."""
    uops = UopLoadOp(0, (Uop(0, 0, 0),))
    plan = _one_round([LoadOp(MemType.INP, 0, 0, 1, 1, 1), LoadOp(MemType.WGT, 0, 0, 1, 1, 1)],
                      [uops, GemmOp(Loop(0, 1), reset=True), GemmOp(Loop(0, 1))], [StoreOp(0, 0, 1, 1, 1)], rounds=2)
    check_plan(tiny, plan)
    with pytest.raises(PlanError, match="overwrite"):
        check_plan(tiny, replace(plan, threads=2))


def test_generator_draws_legal_plans_that_cover_the_isa(tiny) -> None:
    coverage = Coverage.for_config(tiny)
    for seed in range(150):
        plan = draw_plan(tiny, seed)
        check_plan(tiny, plan)
        program, origins = build_program(tiny, plan)
        assert len(origins) == program.insn_count == plan.insn_count
        coverage.add(bins_of(tiny, plan, program.instructions))
    groups = coverage.summary()["groups"]
    # Every memory type with and without padding/strides, every ALU op with each operand kind,
    # every thread count: the static bins the issue lists, reached by 150 programs.
    # every legal token-flag combination of every module included.
    for group in ("load", "store", "alu", "threads", "edge", "tokens"):
        assert groups[group]["reached"] == groups[group]["total"], (group, coverage.unreached)


def test_draw_plan_is_deterministic(tiny) -> None:
    assert draw_plan(tiny, 7) == draw_plan(tiny, 7)
    assert draw_plan(tiny, 7) != draw_plan(tiny, 8)


def test_short_fixed_seed_fuzz_all_backends_agree(tiny) -> None:
    """The default-CI fuzz: fixed seeds on tiny, fsim vs cycle vs the Verilated RTL, whole DRAM bit-exact."""
    result = run_campaign(Settings("tiny", count=150, seed=CI_SEED), quiet=True)
    assert len(result.records) == 150
    assert not result.failures, [(r.seed, r.failure) for r in result.failures[:3]]
    errors = result.cycle_errors()
    assert errors is not None and errors["max"] <= 0.25
    assert all(r.cycles["rtl"] and r.cycles["cycle"] for r in result.records)


def _plant_alu_max_bug(monkeypatch) -> None:
    """A planted bug in the cycle backend: after any ALU MAX with an accumulator operand, the first
    byte the last STORE wrote comes back flipped."""
    real = CycleBackend.run

    def buggy(self, program, **options) -> RunResult:
        result = real(self, program, **options)
        if any(isinstance(i, AluInsn) and i.alu_op == AluOp.MAX and not i.use_imm for i in program.instructions):
            store = [i for i in program.instructions if getattr(i, "opcode", None) is not None and i.opcode.name == "STORE"][-1]
            dram = result.dram.copy()
            dram[store.dram_base * program.config.out_elem_bytes] ^= 0x5A
            result = replace(result, dram=dram)
        return result

    monkeypatch.setattr(CycleBackend, "run", buggy)


def test_planted_mismatch_shrinks_to_a_few_instructions_and_the_regression_reproduces(tiny, tmp_path, monkeypatch) -> None:
    _plant_alu_max_bug(monkeypatch)
    runner = Runner(("fsim", "cycle"))
    seed = next(s for s in range(200) if runner.run(build_program(tiny, draw_plan(tiny, s))[0])[0].failure)
    plan = draw_plan(tiny, seed)
    failure = runner.run(build_program(tiny, plan)[0])[0].failure
    assert failure.kind == "mismatch" and failure.backend == "cycle"
    shrunk = shrink_plan(tiny, plan, failure, runner)
    # A load, a micro-op load, a write of the accumulator, the ALU MAX, the store and FINISH.
    assert shrunk.program.insn_count <= 7 < plan.insn_count
    assert any(isinstance(i, AluInsn) and i.alu_op == AluOp.MAX for i in shrunk.program.instructions)
    assert "out+" in shrunk.failure.detail and "last written by instruction" in shrunk.failure.detail
    paths = save_regression(shrunk, tmp_path, "planted", "fsim", 0.25)
    assert {p.suffix for p in paths} == {".vdlaprog", ".s", ".py"}
    assert "ALU MAX acc" in paths[1].read_text()
    spec = importlib.util.spec_from_file_location("planted_regression", paths[2])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(AssertionError, match="cycle differs from fsim"):
        module.test_planted()
    monkeypatch.undo()
    module.test_planted()  # the fixed backend passes the saved regression


def test_cli_fuzz_summary_json_and_bad_input(tmp_path, capsys) -> None:
    out = tmp_path / "fz"
    assert vdla(["fuzz", "--config", "tiny", "--count", "20", "--backends", "fsim,cycle", "--quiet",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert re.search(r"agreeing\s+20/20", text) and "functional coverage" in text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["programs"] == 20 and summary["agreeing"] == 20 and summary["coverage"]["reached"] > 50
    assert vdla(["fuzz", "--config", "tiny", "--count", "0"]) == 2
    assert vdla(["fuzz", "--config", "tiny", "--backends", "fsim,nope"]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["tiny", "default", "wide"])
def test_long_fuzz_every_preset(preset: str) -> None:
    result = run_campaign(Settings(preset, count=1000 if preset == "tiny" else 200, seed=CI_SEED + 1), quiet=True)
    assert not result.failures, [(r.seed, r.failure) for r in result.failures[:3]]
