"""``vdla demo`` and ``vdla sim`` end to end through the CLI entry point."""

from __future__ import annotations

import json

from compiler.cli.main import main


def test_demo_passes_and_saves(tmp_path, capsys) -> None:
    path = tmp_path / "demo.vdlaprog"
    assert main(["demo", "--config", "tiny", "--m", "8", "--k", "16", "--n", "8", "--save", str(path)]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "MACs" in out
    assert main(["sim", str(path), "--backend", "fsim", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["backend"] == "fsim" and report["cycles"] is None
    assert report["counters"]["macs"] == 8 * 16 * 8
    assert report["counters"]["insn.FINISH"] == 1


def test_default_demo_exit_code_zero(capsys) -> None:
    assert main(["demo"]) == 0
    assert "PASS" in capsys.readouterr().out


def test_sim_table_and_errors(tmp_path, capsys) -> None:
    path = tmp_path / "p.vdlaprog"
    assert main(["demo", "--config", "tiny", "--m", "4", "--k", "4", "--n", "4", "--save", str(path)]) == 0
    capsys.readouterr()
    assert main(["sim", str(path)]) == 0
    assert "insn.GEMM" in capsys.readouterr().out
    assert main(["sim", str(path), "--backend", "nope"]) == 2
    assert "unknown backend 'nope'" in capsys.readouterr().err
    assert main(["sim", str(path), "--max-steps", "2"]) == 2
    assert "watchdog" in capsys.readouterr().err
