"""Dependency-token queues between two dependency gates, at each preset's queue depth."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

HERE = Path(__file__).parent
MODULES = ["vdla_fifo", "vdla_dep_gate"]


def _run(rtl_module, config: str) -> None:
    rtl_module(config, "tb_dep_queue", HERE, modules=MODULES, extra_sources=[HERE / "tb_dep_queue.sv"])


def test_dep_queue_tiny(rtl_module):
    _run(rtl_module, "tiny")


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_dep_queue_presets(rtl_module, config):
    _run(rtl_module, config)
