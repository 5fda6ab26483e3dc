"""The README's ULX3S commands that need no board run verbatim, on the simulated SoC (`--port sim`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def sim_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^## VDLA on a ULX3S over USB\s*$.*?^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert match, "README.md has no ```bash block under '## VDLA on a ULX3S over USB'"
    return [ln.strip() for ln in match.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_readme_ulx3s_commands_run_on_the_simulated_soc(tmp_path: Path) -> None:
    lines = sim_lines()
    assert any("--board ulx3s --port sim" in line for line in lines)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(ROOT)}
    for line in lines:
        result = subprocess.run(line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                                check=False)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        if "--port sim" in line:
            assert "backend fpga" in result.stdout
            fpga_out = np.load(tmp_path / "prog_out.npy")
            fsim = line.replace(" --backend fpga --board ulx3s --port sim", "").replace("prog_out.npy", "fsim_out.npy")
            subprocess.run(fsim, shell=True, cwd=tmp_path, env=env, check=True, capture_output=True)
            assert np.array_equal(fpga_out, np.load(tmp_path / "fsim_out.npy"))
