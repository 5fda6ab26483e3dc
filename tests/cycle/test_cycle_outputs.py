"""Timeline outputs and the ``cycle`` backend: Chrome trace, Gantt PNG, ``vdla sim`` flags."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vdla.compiler.cli.main import main
from vdla.runtime import run
from vdla.runtime.workloads import GemmTiling, tiled_gemm_program
from vdla.simulator.cycle import chrome_trace, run_cycle
from vdla.simulator.cycle.trace import UNITS
from vdla_hw.config import load_config


def _program():
    cfg = load_config("tiny")
    return tiled_gemm_program(cfg, 16, 16, 8, virtual_threads=2, tiling=GemmTiling(4, 2, 2))


def test_chrome_trace_has_a_track_per_unit_and_a_slice_per_instruction():
    program, _ = _program()
    result = run_cycle(program.config, program.instructions, program.dram, insn_addr=program.insn_addr, timeline=True)
    trace = json.loads(json.dumps(chrome_trace(result.timeline, result.stats.to_dict())))
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(names.values()) == sorted(UNITS)
    insns = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "insn"]
    assert len(insns) == program.insn_count
    gemm = next(e for e in insns if e["name"].startswith("GEMM#"))
    index = int(gemm["name"].split("#")[1])
    assert names[gemm["tid"]] == "compute"
    assert gemm["args"]["opcode"] == "GEMM" and gemm["args"]["iter_out"] == program.instructions[index].iter_out
    # Timestamps are microseconds at the config clock.
    assert gemm["ts"] == pytest.approx(gemm["args"]["start_cycle"] / program.config.clock_mhz, rel=1e-12)
    last_end = max(e["args"]["start_cycle"] + e["args"]["cycles"] for e in insns)
    assert last_end == result.stats.cycles
    assert trace["otherData"]["stats"]["cycles"] == result.stats.cycles


def test_backend_writes_trace_and_plot(tmp_path):
    program, expected = _program()
    result = run(program, "cycle", trace=tmp_path / "t.json", plot=tmp_path / "t.png")
    np.testing.assert_array_equal(result.read("out"), expected)
    assert result.cycles == result.extra["stats"]["cycles"] > 0
    assert json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fsim = run(program, "fsim")
    np.testing.assert_array_equal(result.dram, fsim.dram)
    assert dict(result.counters) == dict(fsim.counters)


def test_vdla_sim_cycle_json(tmp_path, capsys):
    program, _ = _program()
    path = program.save(tmp_path / "gemm.vdlaprog")
    trace, plot = tmp_path / "out.json", tmp_path / "out.png"
    code = main(["sim", str(path), "--backend", "cycle", "--trace", str(trace), "--plot", str(plot), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    stats = summary["extra"]["stats"]
    assert summary["cycles"] == stats["cycles"] > 0
    assert set(stats["units"]) == set(UNITS)
    assert 0 < stats["gemm_utilization"] <= 1 and 0 < stats["roofline_fraction"] <= 1
    assert trace.exists() and plot.exists()
