"""The README's "Through the device pool" commands run as written (the port aside), background lines in the background."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from pool_harness import ROOT, START_TIMEOUT_S, free_port


def pool_deploy_lines() -> list[str]:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"^### Through the device pool.*?^```bash\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert match, "README.md has no ```bash block under '### Through the device pool'"
    return [ln.split(" #")[0].strip() for ln in match.group(1).splitlines() if ln.strip()]


def _start(line: str, cwd: Path, env: dict, marker: str) -> subprocess.Popen:
    proc = subprocess.Popen(shlex.split(line), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for out in proc.stdout:
            if out.startswith(marker):
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    assert ready.wait(START_TIMEOUT_S), f"{line} did not start"
    return proc


@pytest.mark.slow  # compiles a model and runs it on the emulated board
def test_readme_pool_deploy_commands_run(tmp_path: Path) -> None:
    lines = pool_deploy_lines()
    assert [ln.split()[:3] for ln in lines][:3] == [["vdla", "pool", "scheduler"], ["vdla", "pool", "worker"],
                                                   ["vdla", "fpga", "deploy"]]
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "VDLA_BOARD_DIR": str(tmp_path / "boards"), "VDLA_POOL_LOCK_DIR": str(tmp_path)}
    # What the lines before this block make: the project folder and a tiny-config module with an input.
    sys.path.insert(0, str(ROOT / "tests" / "graph"))
    from make_models import digits_split

    from vdla.compiler.examples import MODEL_PATH

    x_tr, _, x_te, _ = digits_split()
    np.savez(tmp_path / "calib.npz", x=x_tr[:16])
    np.save(tmp_path / "x.npy", x_te[:1])
    for setup in ("vdla fpga build --board pynq-z2 --config tiny -o pynq-z2-tiny --no-run",
                  f"vdla compile {MODEL_PATH} --target vdla --config tiny --calibrate calib.npz -o model.vdla"):
        subprocess.run(shlex.split(setup), cwd=tmp_path, env=env, check=True, capture_output=True)
    port = str(free_port())
    background: list[subprocess.Popen] = []
    try:
        for line in lines:
            line = line.replace("8786", port)
            if line.endswith("&"):
                marker = "scheduler at" if " scheduler" in line else "worker at"
                background.append(_start(line.rstrip("&").strip() + f" --port {port}" if marker == "scheduler at"
                                         else line.rstrip("&").strip(), tmp_path, env, marker))
                continue
            r = subprocess.run(shlex.split(line), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
                               check=False)
            assert r.returncode == 0, f"{line}\n{r.stdout}\n{r.stderr}"
            if " status " in line:
                assert "fpga-pynq_z2-" in r.stdout and "pynq1" in r.stdout
    finally:
        for proc in reversed(background):
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
