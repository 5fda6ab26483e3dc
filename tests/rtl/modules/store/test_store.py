"""STORE with requantization (shift, ReLU, clip) and narrowing, against fsim, on tiny (default) and the other presets (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import load_config

HERE = Path(__file__).parent
MODULES = ["vdla_fifo", "vdla_sram", "vdla_dep_gate", "vdla_dma_wr", "vdla_sram_range", "vdla_sum_le", "vdla_store"]


def _run(rtl_module, config, **env) -> None:
    rtl_module(config, "tb_store", HERE, modules=MODULES, extra_sources=[HERE / "tb_store.sv"], env=env)


def test_store_tiny(rtl_module):
    _run(rtl_module, "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_store_presets(rtl_module, config):
    _run(rtl_module, config, N_INSNS=6)


@pytest.mark.slow
@pytest.mark.parametrize("depth", [0, 1, 3])  # tiny's own is 2 (test_store_tiny)
def test_store_pipeline_depths_tiny(rtl_module, depth):
    _run(rtl_module, load_config("tiny").replace(timing={"store_pipeline_depth": depth}))
