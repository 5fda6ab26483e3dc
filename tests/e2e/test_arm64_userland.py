"""A whole module compiled for ``--board ultra96-v2`` runs in an arm64 Debian userland under qemu-user.

The userland is Debian's own arm64 packages (``python3``, ``python3-numpy``, ``libgomp1``), unpacked by
``mmdebstrap --variant=extract`` into the build cache once; our runtime, ``vdla_hw`` and the functional
simulator are copied beside it without the compiler, and ``python3 -m runtime run`` runs the module: its
AArch64 ``kernels.so`` (cross-linked against glibc) in that Python, the VDLA nodes on ``fsim``.  The outputs
must equal the x86 run of the same model compiled for this host, bit for bit.

Needs ``qemu-user`` and ``mmdebstrap`` (apt) and network access to a Debian mirror the first time.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from compiler.cli.main import main
from vdla_hw.cache import cache_dir

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("python3", "python3-numpy", "libgomp1")
#: numpy's BLAS is chosen by update-alternatives, which an extracted (not installed) userland did not run.
LIBRARY_PATH = "/usr/lib/aarch64-linux-gnu/blas:/usr/lib/aarch64-linux-gnu/lapack"


def arm64_userland() -> Path:
    root = cache_dir() / "arm64-userland" / "root"
    if (root / "usr" / "bin" / "python3").exists():
        return root
    if shutil.which("mmdebstrap") is None:
        pytest.fail("building the arm64 userland needs mmdebstrap: apt-get install mmdebstrap")
    root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mmdebstrap", "--variant=extract", "--architectures=arm64", f"--include={','.join(PACKAGES)}",
                    "bookworm", str(root), "http://deb.debian.org/debian"], check=True, timeout=1800)
    return root


@pytest.mark.slow
def test_digits_cnn_for_the_ultra96_runs_in_an_arm64_userland_equal_to_x86(tmp_path: Path) -> None:
    if shutil.which("qemu-aarch64") is None:
        pytest.fail("qemu-aarch64 is missing: apt-get install qemu-user")
    root = arm64_userland()
    assert main(["--quiet", "example", str(tmp_path)]) == 0
    common = ["compile", str(tmp_path / "model.onnx"), "--target", "vdla", "--config", "tiny",
              "--calibrate", str(tmp_path / "samples.npz")]
    assert main(["--quiet", *common, "--board", "ultra96-v2", "-o", str(tmp_path / "u96.vdla")]) == 0
    assert main(["--quiet", *common, "-o", str(tmp_path / "x86.vdla")]) == 0
    assert main(["run", str(tmp_path / "x86.vdla"), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "x86.npy")]) == 0
    site = tmp_path / "site"
    for package in ("runtime", "vdla_hw", "simulator"):
        shutil.copytree(ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__", "rtl", "harness"))
    assert not (site / "compiler").exists()
    proc = subprocess.run(["qemu-aarch64", "-L", str(root), "-E", f"LD_LIBRARY_PATH={LIBRARY_PATH}",
                           "-E", f"PYTHONPATH={site}", str(root / "usr" / "bin" / "python3"), "-m", "runtime", "run",
                           str(tmp_path / "u96.vdla"), "--input", str(tmp_path / "x.npy"),
                           "--output", str(tmp_path / "arm.npy")], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_array_equal(np.load(tmp_path / "arm.npy"), np.load(tmp_path / "x86.npy"))
