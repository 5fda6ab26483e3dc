"""vdla_fifo: a sweep of widths and depths, including the queue depths of the presets."""

from __future__ import annotations

from pathlib import Path

import pytest
from rtl_configs import configs_under_test

from vdla_hw.config import load_config

HERE = Path(__file__).parent
TINY = load_config("tiny")

# (width, depth): depth 1, a non-power of two and a command queue of the tiny preset by
# default (the token queues' depth runs in the dep_queue test); more shapes under slow.
CASES = [(1, 1), (8, 3), (128, TINY.cmd_queue_depth)]
MORE = [(1, TINY.dep_queue_depth), (16, 2), (3, 7)]


def _run(rtl_module, config: str, width: int, depth: int) -> None:
    rtl_module(config, "vdla_fifo", HERE, modules=["vdla_fifo"], parameters={"WIDTH": width, "DEPTH": depth},
               env={"FIFO_WIDTH": width, "FIFO_DEPTH": depth})


@pytest.mark.parametrize("width,depth", CASES, ids=[f"tiny-w{w}-d{d}" for w, d in CASES])
def test_fifo(rtl_module, width, depth):
    _run(rtl_module, "tiny", width, depth)


@pytest.mark.slow
@pytest.mark.parametrize("width,depth", MORE, ids=[f"tiny-w{w}-d{d}" for w, d in MORE])
def test_fifo_more_shapes(rtl_module, width, depth):
    _run(rtl_module, "tiny", width, depth)


@pytest.mark.slow
@pytest.mark.parametrize("config", configs_under_test(["default", "wide"]))
def test_fifo_preset_depths(rtl_module, config):
    cfg = load_config(config)
    for width, depth in ((128, cfg.cmd_queue_depth), (1, cfg.dep_queue_depth)):
        _run(rtl_module, config, width, depth)
