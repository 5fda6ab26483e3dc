"""A whole module compiled for ``--board ultra96-v2`` runs in an arm64 Debian userland under qemu-user.

The userland is Debian's own arm64 packages (``python3``, ``python3-numpy``, ``libgomp1``), unpacked by
``mmdebstrap --variant=extract`` into the build cache once; our runtime, ``vdla_hw`` and the functional
simulator are copied beside it without the compiler, and ``python3 -m vdla.runtime run`` runs the module: its
AArch64 ``kernels.so`` (cross-linked against glibc) in that Python, the VDLA nodes on ``fsim``.  The outputs
must equal the x86 run of the same model compiled for this host: bit for bit for the int8 digits CNN on
``--target vdla``; within :data:`RESNET_RTOL` / :data:`RESNET_ATOL_SCALE` for the float ResNet-18 on ``--target
llvm``, whose AArch64 kernels LLVM reassociates and fuses (FMA) differently from the x86 ones.

The userland is one entry of the build cache (``arm64-userland``): ``vdla cache info`` lists it and
``vdla cache trim|clear`` evict it like any other.

Needs ``qemu-user`` and ``mmdebstrap`` (apt) and network access to a Debian mirror the first time.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import onnx
from e2e_models import rand_input, resnet18_onnx

from vdla.compiler.cli.main import main
from vdla_hw.cache import ARM64_USERLAND, cache_dir, mark_used

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("python3", "python3-numpy", "libgomp1")
#: numpy's BLAS is chosen by update-alternatives, which an extracted (not installed) userland did not run.
LIBRARY_PATH = "/usr/lib/aarch64-linux-gnu/blas:/usr/lib/aarch64-linux-gnu/lapack"
#: ResNet-18's float outputs, arm64 against x86: the relative tolerance, and the absolute one as a fraction of
#: the largest output (the same bound tests/e2e/test_resnet18.py holds llvm to against onnxruntime).
RESNET_RTOL = 1e-4
RESNET_ATOL_SCALE = 1e-4


def arm64_userland() -> Path:
    entry = cache_dir() / ARM64_USERLAND
    root = entry / "root"
    if (root / "usr" / "bin" / "python3").exists():
        mark_used(entry)
        return root
    if shutil.which("mmdebstrap") is None:
        pytest.fail("building the arm64 userland needs mmdebstrap: apt-get install mmdebstrap")
    root.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mmdebstrap", "--variant=extract", "--architectures=arm64", f"--include={','.join(PACKAGES)}",
                    "bookworm", str(root), "http://deb.debian.org/debian"], check=True, timeout=1800)
    mark_used(entry)
    return root


def run_in_userland(root: Path, module: Path, x: Path, out: Path, site: Path) -> None:
    """``python3 -m vdla.runtime run module`` in the arm64 userland under qemu-aarch64, with only ``runtime``,
    ``vdla_hw``, ``simulator`` and the ``vdla`` package marker on its path (copied into ``site``, the
    repository's layout: ``vdla/__init__.py`` maps ``vdla.runtime`` to ``site/runtime``)."""
    for package in ("runtime", "vdla_hw", "simulator"):
        shutil.copytree(ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__", "rtl", "harness"))
    (site / "vdla").mkdir()
    shutil.copy(ROOT / "vdla" / "__init__.py", site / "vdla" / "__init__.py")
    assert not (site / "compiler").exists()
    proc = subprocess.run(["qemu-aarch64", "-L", str(root), "-E", f"LD_LIBRARY_PATH={LIBRARY_PATH}",
                           "-E", f"PYTHONPATH={site}", str(root / "usr" / "bin" / "python3"), "-m", "vdla.runtime", "run",
                           str(module), "--input", str(x), "--output", str(out)],
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stderr[-3000:]


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
    run_in_userland(root, tmp_path / "u96.vdla", tmp_path / "x.npy", tmp_path / "arm.npy", tmp_path / "site")
    np.testing.assert_array_equal(np.load(tmp_path / "arm.npy"), np.load(tmp_path / "x86.npy"))


@pytest.mark.slow
def test_resnet18_llvm_for_the_ultra96_runs_in_an_arm64_userland_close_to_x86(tmp_path: Path) -> None:
    if shutil.which("qemu-aarch64") is None:
        pytest.fail("qemu-aarch64 is missing: apt-get install qemu-user")
    root = arm64_userland()
    onnx.save(resnet18_onnx(64), str(tmp_path / "resnet18.onnx"))
    np.save(tmp_path / "x.npy", rand_input((1, 3, 64, 64)))
    common = ["compile", str(tmp_path / "resnet18.onnx"), "--target", "llvm"]
    assert main(["--quiet", *common, "--board", "ultra96-v2", "-o", str(tmp_path / "u96.vdla")]) == 0
    assert main(["--quiet", *common, "-o", str(tmp_path / "x86.vdla")]) == 0
    assert main(["run", str(tmp_path / "x86.vdla"), "--input", str(tmp_path / "x.npy"),
                 "--output", str(tmp_path / "x86.npy")]) == 0
    run_in_userland(root, tmp_path / "u96.vdla", tmp_path / "x.npy", tmp_path / "arm.npy", tmp_path / "site")
    arm, x86 = np.load(tmp_path / "arm.npy"), np.load(tmp_path / "x86.npy")
    assert arm.shape == x86.shape == (1, 1000) and np.isfinite(arm).all()
    print(f"resnet18@64 arm64 vs x86: max abs difference {float(np.abs(arm - x86).max()):.3g} "
          f"(largest output {float(np.abs(x86).max()):.3g})")
    np.testing.assert_allclose(arm, x86, rtol=RESNET_RTOL, atol=RESNET_ATOL_SCALE * float(np.abs(x86).max()))
