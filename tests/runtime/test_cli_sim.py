"""``vdla demo`` and ``vdla sim`` end to end through the CLI entry point."""

from __future__ import annotations

import json

from vdla.compiler.cli.main import main
from vdla.runtime.workloads import tiled_gemm_program
from vdla_hw import load_config


def _saved_gemm(path, m: int, k: int, n: int) -> None:
    program, _ = tiled_gemm_program(load_config("tiny"), m, k, n)
    program.save(path)


def test_demo_passes_saves_and_plots(tmp_path, capsys) -> None:
    path, plot = tmp_path / "demo.vdlaprog", tmp_path / "demo.png"
    assert main(["demo", "--save", str(path), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "latency hiding" in out and "GEMM utilization" in out
    assert plot.stat().st_size > 0
    assert main(["sim", str(path), "--backend", "fsim", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "fsim" and report["cycles"] is None
    assert report["counters"]["insn.FINISH"] == 1 and report["counters"]["macs"] > 0


def test_sim_json_counts_the_macs(tmp_path, capsys) -> None:
    path = tmp_path / "gemm.vdlaprog"
    _saved_gemm(path, 8, 16, 8)
    assert main(["sim", str(path), "--backend", "fsim", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counters"]["macs"] == 8 * 16 * 8


def test_sim_table_and_errors(tmp_path, capsys) -> None:
    path = tmp_path / "p.vdlaprog"
    _saved_gemm(path, 4, 4, 4)
    assert main(["sim", str(path)]) == 0
    assert "insn.GEMM" in capsys.readouterr().out
    assert main(["sim", str(path), "--backend", "nope"]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err
    assert main(["sim", str(path), "--max-steps", "2"]) == 2
    assert "watchdog" in capsys.readouterr().err
