"""``vdla hw test --config``: a config file reaches the RTL tests (it is no test-name filter)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from vdla_hw.config import load_config

ROOT = Path(__file__).resolve().parents[2]


def _vdla(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_config_file_runs_the_regression_on_that_config(tmp_path: Path) -> None:
    cfg = load_config("tiny").replace(name="my_cfg", cmd_queue_depth=8)
    path = tmp_path / "my config.json"  # a space: the printed command must quote it
    path.write_text(cfg.to_json())
    proc = _vdla("hw", "test", "--config", str(path), "--", "--collect-only", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    printed = proc.stdout.splitlines()[0]
    words = shlex.split(printed)
    assert words[0] == f"VDLA_HW_TEST_CONFIG={path}"
    assert words[words.index("-k") + 1] == "my_cfg"
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    assert len(ids) >= 10, proc.stdout
    assert all("[my_cfg" in i or "-my_cfg" in i for i in ids), ids
    # the backend comparison, the system tests and the module tests all re-run on it
    for where in ("backend/test_rtl_backend.py", "system/test_system.py", "modules/alu/test_alu.py"):
        assert any(where in i for i in ids), where


def test_a_preset_is_a_name_filter_and_a_bad_path_is_a_user_error(tmp_path: Path) -> None:
    proc = _vdla("hw", "test", "--config", "tiny", "--", "--collect-only", cwd=tmp_path)
    assert proc.returncode == 0 and "VDLA_HW_TEST_CONFIG" not in proc.stdout
    assert shlex.split(proc.stdout.splitlines()[0])[-3:] == ["-k", "tiny", "--collect-only"]
    proc = _vdla("hw", "test", "--config", str(tmp_path / "missing.json"), cwd=tmp_path)
    assert proc.returncode == 2 and "missing.json" in proc.stderr and "Traceback" not in proc.stderr
