"""``vdla fpga build``: the project is written; Vivado runs when on PATH, else the error says what to do."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main
from vdla_hw.config import load_config
from vdla_hw.fpga.boards import BOARDS

STUB = Path(__file__).with_name("vivado_stub.py")


def _fake_vivado(bin_dir: Path, body: str) -> None:
    bin_dir.mkdir()
    script = bin_dir / "vivado"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)


@pytest.fixture
def no_vivado(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def test_without_vivado_the_project_is_written_and_the_error_says_how_to_build_it(no_vivado, tmp_path, capsys):
    out = tmp_path / "proj"
    assert main(["fpga", "build", "--board", "pynq-z2", "--config", "tiny", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Vivado is not installed here (no `vivado` on PATH)" in err
    assert f"cd {out} && vivado -mode batch" in err and "-source build.tcl" in err
    assert "xc7z020clg400-1" in err and "--no-run" in err
    assert len(err.strip().splitlines()) == 2  # one line and its hint, no traceback
    for name in ("build.tcl", "board.tcl", "params.tcl", "config.json", "src/vdla_pkg_tiny.sv", "src/vdla_top.sv",
                 "src/vdla_zynq_top.v"):
        assert (out / name).is_file(), name
    assert load_config(out / "config.json") == load_config("tiny")


def test_no_run_writes_the_project_and_succeeds(no_vivado, tmp_path, capsys):
    out = tmp_path / "proj"
    assert main(["fpga", "build", "--board", "ultra96-v2", "--config", "default", "-o", str(out), "--no-run"]) == 0
    stdout = capsys.readouterr().out
    assert f"cd {out} && vivado -mode batch" in stdout
    assert "set vdla_part xczu3eg-sbva484-1-e" in (out / "board.tcl").read_text()


def test_with_vivado_on_path_the_build_runs_and_reports(tmp_path, monkeypatch, capsys):
    # `vivado` here is the stubbed-Vivado Tcl interpreter: the real subprocess path of the CLI runs.
    bin_dir = tmp_path / "bin"
    _fake_vivado(bin_dir, f'exec {sys.executable} {STUB} "$@"')
    monkeypatch.setenv("PATH", str(bin_dir))
    out = tmp_path / "proj"
    assert main(["fpga", "build", "--board", "zcu104", "--config", "tiny", "-o", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "wns_ns" in stdout and "0.215" in stdout
    assert f"reg_base               0x{BOARDS['zcu104'].ps.reg_base:08X}" in stdout
    assert str(out / "out" / "vdla.bit") in stdout and (out / "out" / "vdla.hwh").is_file()


def test_a_failing_vivado_is_reported_with_its_log(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    _fake_vivado(bin_dir, "exit 3")
    monkeypatch.setenv("PATH", str(bin_dir))
    out = tmp_path / "proj"
    assert main(["fpga", "build", "--board", "pynq-z2", "--config", "tiny", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Vivado failed (exit 3)" in err and str(out / "vivado.log") in err


def test_a_vivado_that_writes_no_bitstream_is_reported_even_over_an_earlier_build(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    _fake_vivado(bin_dir, "exit 0")
    monkeypatch.setenv("PATH", str(bin_dir))
    stale = tmp_path / "p" / "out"
    stale.mkdir(parents=True)
    for name in ("vdla.bit", "vdla.hwh", "vdla.xsa", "utilization.rpt", "timing_summary.rpt", "summary.txt"):
        (stale / name).write_text("from an earlier build\n")
    assert main(["fpga", "build", "--board", "pynq-z2", "--config", "tiny", "-o", str(tmp_path / "p")]) == 2
    assert "did not write vdla.bit" in capsys.readouterr().err


def test_unknown_board_names_the_known_ones(tmp_path, capsys):
    assert main(["fpga", "build", "--board", "de10-nano", "--config", "tiny", "-o", str(tmp_path / "p")]) == 2
    err = capsys.readouterr().err
    assert "unknown board 'de10-nano'" in err and "pynq-z2" in err and "zcu104" in err
    assert not (tmp_path / "p").exists()


def test_boards_lists_every_board(capsys):
    assert main(["fpga", "boards"]) == 0
    out = capsys.readouterr().out
    for board in BOARDS.values():
        assert board.name in out and board.part in out
    assert "53,200 LUTs, 106,400 FFs, 220 DSPs, 140 BRAM36 (xc7)" in out  # the PYNQ-Z2's Zynq-7020


def test_ulx3s_no_run_writes_the_self_test_top_its_constraints_and_ram_images(tmp_path, capsys):
    out = tmp_path / "ulx"
    assert main(["fpga", "build", "--board", "ulx3s-selftest", "--config", "tiny", "--no-run", "-o", str(out)]) == 0
    assert "vdla fpga build --board ulx3s-selftest --config tiny" in capsys.readouterr().out
    for name in ("ulx3s.lpf", "vdla_ulx3s_top.sv", "vdla_axi_bram.sv", "vdla_top.sv", "vdla_pkg_tiny.sv",
                 "selftest_dram.hex", "selftest_expect.hex"):
        assert (out / name).stat().st_size > 0, name
    # The RAM image holds the program: not all zero, and the expected image differs from it (outputs written).
    dram, expect = ((out / n).read_text().split() for n in ("selftest_dram.hex", "selftest_expect.hex"))
    assert len(dram) == len(expect) and any(int(w, 16) for w in dram) and dram != expect


def test_ulx3s_soc_defaults_to_the_ulx3s_preset_at_the_soc_clock(tmp_path, capsys):
    """The board's own preset is ``ulx3s`` (sized for the 85F with the SoC around it); its clock is the SoC's."""
    import json

    out = tmp_path / "soc"
    assert main(["fpga", "build", "--board", "ulx3s", "--no-run", "-o", str(out)]) == 0
    cfg = load_config("ulx3s")
    assert f"config 'ulx3s' ({cfg.digest})" in capsys.readouterr().out
    soc = json.loads((out / "soc.json").read_text())
    assert soc["config"] == "ulx3s" and soc["config_digest"] == cfg.digest
    assert soc["sys_clk_hz"] == cfg.clock_mhz * 1e6  # the board runs the accelerator at the config's clock
    assert (out / "gateware" / "vdla_ulx3s_soc.v").stat().st_size > 0


@pytest.mark.slow
def test_ulx3s_build_gives_a_bitstream_and_nextpnr_fmax(tmp_path, capsys):
    out = tmp_path / "ulx"
    assert main(["fpga", "build", "--board", "ulx3s-selftest", "--config", "tiny", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Fmax (nextpnr)" in printed and "self-test (Verilator)" in printed
    bits = list(out.glob("*.bit"))
    assert len(bits) == 1 and bits[0].stat().st_size > 100_000
