"""``vdla.core``: the same sources as ``build.tcl``, and FuseSoC (edalize) lints the design with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from vdla_hw.config import load_config
from vdla_hw.fpga.boards import BOARDS
from vdla_hw.fpga.fusesoc import core_vlnv
from vdla_hw.fpga.vivado import source_names, write_project
from vdla_hw.fpga.wrapper import WRAPPER_TOP
from vdla_hw.rtl_build import tool_env


def _fusesoc(proj: Path, cfg) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "fusesoc.main", "--cores-root", ".", "run", "--target", "lint", core_vlnv(cfg)]
    return subprocess.run(cmd, cwd=proj, env=tool_env(), capture_output=True, text=True, timeout=600, check=False)


def test_core_lists_exactly_the_tcl_sources(tmp_path: Path):
    board, cfg = BOARDS["ultra96-v2"], load_config("default")
    proj = write_project(board, cfg, tmp_path / "proj").parent
    core = yaml.safe_load((proj / "vdla.core").read_text())
    files = core["filesets"]["rtl"]["files"] + core["filesets"]["wrapper"]["files"]
    assert files == source_names(cfg)
    assert all((proj / f).is_file() for f in files)
    assert core["targets"]["synth"]["tools"]["vivado"]["part"] == board.part
    assert core["targets"]["synth"]["toplevel"] == WRAPPER_TOP


def test_fusesoc_lint_target_runs_verilator_on_the_design_and_fails_on_a_broken_source(tmp_path: Path):
    cfg = load_config("tiny")
    proj = write_project(BOARDS["pynq-z2"], cfg, tmp_path / "proj").parent
    result = _fusesoc(proj, cfg)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--lint-only" in (proj / "build").joinpath(core_vlnv(cfg).replace(":", "_"), "lint-verilator",
                                                       "Makefile").read_text()
    with (proj / "src" / "vdla_fifo.sv").open("a") as f:
        f.write("module broken_by_the_test(; endmodule\n")
    broken = _fusesoc(proj, cfg)
    assert broken.returncode != 0 and "vdla_fifo.sv" in broken.stdout + broken.stderr
