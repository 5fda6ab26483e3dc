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


@pytest.mark.slow
def test_digits_cnn_on_the_simulated_ulx3s_is_bit_exact(tmp_path: Path) -> None:
    x_tr, _, x_te, _ = digits_split()
    np.savez(tmp_path / "calib.npz", x=x_tr[:16])
    model = tmp_path / "digits.vdla"
    subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "compile", str(MODEL_PATH), "--target", "vdla",
                    "--config", CONFIG, "--calibrate", str(tmp_path / "calib.npz"), "-o", str(model)],
                   check=True, capture_output=True)
    module = load(model)
    x = x_te[:1]
    want = module.run(x, backend="fsim")
    got = module.run(x, backend="fpga", board="ulx3s", port="sim")
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


@pytest.mark.slow
def test_resnet18_layer_on_the_simulated_ulx3s_is_bit_exact() -> None:
    wl = RESNET18_CONVS["C11"]  # 1x1, 256 -> 512, 14x14 stride 2: the smallest image of the ResNet-18 convs
    compiled = compile_conv2d(wl, VdlaTarget.from_config(CONFIG), epilogue=Requantize(shift=requant_shift(wl)))
    ok, result, _, _ = check_conv2d(compiled, backend="fpga", board="ulx3s", port="sim", timeout=3600)
    assert ok and result.extra["simulated"] and result.cycles > 0
