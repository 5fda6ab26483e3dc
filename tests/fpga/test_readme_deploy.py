"""The README's "Deploy to a board" commands run verbatim (with no Vivado on PATH, as here)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def deploy_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^## Deploy to a board\s*$.*?^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert match, "README.md has no ```bash block under '## Deploy to a board'"
    return [ln.strip() for ln in match.group(1).splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_readme_deploy_commands_run_and_write_what_they_name(tmp_path: Path):
    lines = deploy_lines()
    assert any(line.startswith("vdla fpga build") for line in lines)
    bin_dir = Path(sys.executable).parent  # this environment's `vdla`, and no vivado
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin", "PYTHONPATH": str(ROOT)}
    for line in lines:
        result = subprocess.run(line, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        words = shlex.split(line, comments=True)
        if "-o" in words:
            out = tmp_path / words[words.index("-o") + 1]
            assert (out / "build.tcl").is_file() and (out / "params.tcl").is_file()
