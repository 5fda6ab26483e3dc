"""The board table's seam: ``vdla fpga build`` reaches a board's flow through its ``flow`` field."""

from __future__ import annotations

import hashlib
import sys
import types
from pathlib import Path

import pytest

from vdla.compiler.cli.main import main
from vdla_hw.fpga import boards
from vdla_hw.fpga.boards import Board
from vdla_hw.fpga.flow import BuildResult
from vdla_hw.fpga.manifest import read_manifest


def test_a_board_of_another_flow_is_built_by_its_flow_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys):
    calls = []

    def build(board, cfg, out_dir, *, run, build_id):
        calls.append((board.name, cfg.name, out_dir, run, build_id))
        (out_dir / "top.bit").write_bytes(b"bits")
        return BuildResult(board=board.name, config=cfg.label(), project_dir=out_dir, ran=run, run_hint="make",
                           outputs={"top.bit": out_dir / "top.bit"}, summary={"fmax_mhz": "61.2"},
                           build_id=build_id, bitstream_files={"bit": out_dir / "top.bit"})

    flow = types.ModuleType("vdla_hw.fpga.openflow")
    flow.build = build
    monkeypatch.setitem(sys.modules, "vdla_hw.fpga.openflow", flow)
    monkeypatch.setitem(boards.BOARDS, "openboard", Board("openboard", "An open board", "LFE5U-85F", "openflow"))
    out = tmp_path / "p"
    assert main(["fpga", "build", "--board", "openboard", "--config", "tiny", "-o", str(out)]) == 0
    manifest = read_manifest(out)
    assert calls == [("openboard", "tiny", out, True, manifest.build_id)]
    assert (manifest.board, manifest.config, manifest.files) == ("openboard", "tiny", {"bit": "top.bit"})
    assert manifest.sha256["bit"] == hashlib.sha256(b"bits").hexdigest()
    stdout = capsys.readouterr().out
    assert "fmax_mhz" in stdout and "61.2" in stdout and str(out / "top.bit") in stdout
