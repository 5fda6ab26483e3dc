"""The README's "Deploy to a board" commands run verbatim (with no Vivado on PATH, as here)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def deploy_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^## Deploy to a board\s*$.*?^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert match, "README.md has no ```bash block under '## Deploy to a board'"
    return [ln.strip() for ln in match.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_readme_deploy_commands_run_and_write_what_they_name(tmp_path: Path):
    lines = deploy_lines()
    assert any(line.startswith("vdla fpga build") for line in lines)
    assert any("--backend fpga" in line for line in lines)
    bin_dir = Path(sys.executable).parent  # this environment's `vdla`, and no vivado
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "PYTHONPATH": str(ROOT)}
    for line in lines:
        result = subprocess.run(line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        words = shlex.split(line, comments=True)
        if words[:3] == ["vdla", "fpga", "build"] and "-o" in words:
            out = tmp_path / words[words.index("-o") + 1]
            board = words[words.index("--board") + 1]
            # A Vivado project (Tcl scripts) or, for the open ECP5 flow, its top, constraints and RAM image;
            # and the manifest of every board's folder.
            wanted = {"ulx3s-selftest": ("ulx3s.lpf", "selftest_dram.hex"),
                      "ulx3s": ("soc.json", "gateware/vdla_ulx3s_soc.v", "gateware/vdla_ulx3s_soc.lpf")}.get(
                          board, ("build.tcl", "params.tcl"))
            assert all((out / name).is_file() for name in wanted + ("bitstream.json",)), (line, wanted)
        if "--backend fpga" in line:  # the emulated board ran it: its result is fsim's
            assert "backend fpga" in result.stdout and "emulated: True" in result.stdout
            dump = next(w.split("=", 1)[1] for w in words if w.startswith("out@"))
            fpga_out = np.load(tmp_path / dump)
            fsim = [w for w in words if w not in ("--emulate",)]
            fsim = fsim[: fsim.index("--backend")] + ["--backend", "fsim"]
            subprocess.run(shlex.join(fsim), shell=True, cwd=tmp_path, env=env, capture_output=True, check=True)
            np.testing.assert_array_equal(fpga_out, np.load(tmp_path / dump))
