"""Fetch dispatch by module, in program order, on tiny (default) and the other presets (slow)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

HERE = Path(__file__).parent
MODULES = ["vdla_fifo", "vdla_dma_rd", "vdla_sum_le", "vdla_fetch"]


def _run(rtl_module, config) -> None:
    rtl_module(config, "tb_fetch", HERE, modules=MODULES, extra_sources=[HERE / "tb_fetch.sv"])


def test_fetch_tiny(rtl_module):
    _run(rtl_module, "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_fetch_presets(rtl_module, config):
    _run(rtl_module, config)
