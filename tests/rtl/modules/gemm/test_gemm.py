"""The GEMM core against fsim, on every preset (tiny by default) and extra pipeline depths."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import load_config

HERE = Path(__file__).parent
MODULES = ["vdla_sram", "vdla_uop_loop", "vdla_lut_mul", "vdla_gemm"]


def _run(rtl_module, config, **env) -> None:
    rtl_module(config, "tb_gemm", HERE, modules=MODULES, extra_sources=[HERE / "tb_gemm.sv"], env=env)


def test_gemm_tiny(rtl_module):
    _run(rtl_module, "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_gemm_presets(rtl_module, config):
    _run(rtl_module, config, N_INSNS=6)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [3, 4, 6])  # tiny's own 5 registers the operand tiles and the products; 4 only the tiles; 3 neither
def test_gemm_other_pipeline_depths_tiny(rtl_module, depth):
    cfg = load_config("tiny").replace(timing={"gemm_pipeline_depth": depth})
    _run(rtl_module, cfg)
