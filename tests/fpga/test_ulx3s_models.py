"""Slow: real models on the simulated ULX3S SoC through the serial driver, bit-exact.

The digits CNN of the README compiled for the board's config (every VDLA node runs on the whole SoC
under Verilator, the CPU nodes on the host) against the same module on fsim, and a ResNet-18 layer
compiled for the board's config against NumPy. Minutes each: the simulated UART moves under 1 kB/s.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler.examples import MODEL_PATH
from vdla.compiler.vdla import VdlaTarget
from vdla.compiler.vdla.topi import RESNET18_CONVS, Requantize, check_conv2d, compile_conv2d, requant_shift
from vdla.runtime.graph_executor import load
from vdla_hw.fpga.boards import get_board

sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))

from make_models import digits_split  # noqa: E402

CONFIG = get_board("ulx3s").default_config


def compile_digits(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """The README's digits model compiled for the board's config (``vdla compile``), and one input."""
    x_tr, _, x_te, _ = digits_split()
    np.savez(tmp_path / "calib.npz", x=x_tr[:16])
    model = tmp_path / "digits.vdla"
    subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "compile", str(MODEL_PATH), "--target", "vdla",
                    "--config", CONFIG, "--calibrate", str(tmp_path / "calib.npz"), "-o", str(model)],
                   check=True, capture_output=True)
    return model, x_te[:1]


@pytest.mark.slow
def test_digits_cnn_on_the_simulated_ulx3s_is_bit_exact(tmp_path: Path) -> None:
    model, x = compile_digits(tmp_path)
    module = load(model)
    want = module.run(x, backend="fsim")
    got = module.run(x, backend="fpga", board="ulx3s", port="sim")
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


@pytest.mark.slow
def test_vdla_run_of_the_digits_cnn_on_the_simulated_ulx3s_as_the_readme_shows(tmp_path: Path) -> None:
    """The README's `vdla run model.vdla --input x.npy --backend fpga --board ulx3s --port ...` line, with
    the simulated SoC's port: the command's output equals fsim's."""
    model, x = compile_digits(tmp_path)
    np.save(tmp_path / "x.npy", x)
    cmd = [sys.executable, "-m", "vdla.compiler.cli.main", "run", str(model), "--input", str(tmp_path / "x.npy")]
    subprocess.run([*cmd, "--output", str(tmp_path / "fsim.npy")], check=True, capture_output=True, cwd=tmp_path)
    proc = subprocess.run([*cmd, "--backend", "fpga", "--board", "ulx3s", "--port", "sim", "--output",
                           str(tmp_path / "board.npy")], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert np.array_equal(np.load(tmp_path / "board.npy"), np.load(tmp_path / "fsim.npy"))


@pytest.mark.slow
def test_resnet18_layer_on_the_simulated_ulx3s_is_bit_exact() -> None:
    wl = RESNET18_CONVS["C11"]  # 1x1, 256 -> 512, 14x14 stride 2: the smallest image of the ResNet-18 convs
    compiled = compile_conv2d(wl, VdlaTarget.from_config(CONFIG), epilogue=Requantize(shift=requant_shift(wl)))
    ok, result, _, _ = check_conv2d(compiled, backend="fpga", board="ulx3s", port="sim", timeout=3600)
    assert ok and result.extra["simulated"] and result.cycles > 0
