"""The vector ALU against fsim on every preset (tiny by default) and other II / depths."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import load_config

HERE = Path(__file__).parent
MODULES = ["vdla_sram", "vdla_uop_loop", "vdla_alu"]


def _run(rtl_module, config, **env) -> None:
    rtl_module(config, "tb_alu", HERE, modules=MODULES, extra_sources=[HERE / "tb_alu.sv"], env=env)


def test_alu_tiny(rtl_module):
    _run(rtl_module, "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_alu_presets(rtl_module, config):
    _run(rtl_module, config, PER_OP=1)


@pytest.mark.slow
@pytest.mark.parametrize("ii,depth", [(2, 3), (2, 4), (3, 5), (3, 6)])
def test_alu_other_timing_tiny(rtl_module, ii, depth):
    cfg = load_config("tiny").replace(timing={"alu_ii": ii, "alu_pipeline_depth": depth})
    _run(rtl_module, cfg)
