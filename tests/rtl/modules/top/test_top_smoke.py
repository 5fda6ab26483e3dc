"""vdla_top runs a small program touching every instruction and leaves DRAM as fsim does."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import preset_names

HERE = Path(__file__).parent


def test_top_tiny(rtl_module):
    rtl_module("tiny", "vdla_top", HERE)


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test([c for c in preset_names() if c != "tiny"]))
def test_top_presets(rtl_module, config):
    rtl_module(config, "vdla_top", HERE)
