"""LOAD with 2D strides and zero padding, against fsim, on tiny (default) and the other presets (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

HERE = Path(__file__).parent
MODULES = ["vdla_fifo", "vdla_skid", "vdla_sram", "vdla_dep_gate", "vdla_dma_rd", "vdla_sram_range", "vdla_sum_le", "vdla_tile_loader", "vdla_axi_rd_arb", "vdla_load"]


def _run(rtl_module, config, **env) -> None:
    rtl_module(config, "tb_load", HERE, modules=MODULES, extra_sources=[HERE / "tb_load.sv"], env=env)


def test_load_tiny(rtl_module):
    _run(rtl_module, "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_load_presets(rtl_module, config):
    _run(rtl_module, config, N_INSNS=6)
