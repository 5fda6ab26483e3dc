"""Helpers shared by the cocotb module tests (imported inside the simulator process)."""

from __future__ import annotations

import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge

from vdla_hw.config import HwConfig, from_dict

CLOCK_NS = 10


def test_config() -> HwConfig:
    """The config the pytest side built this design for."""
    return from_dict(json.loads(os.environ["VDLA_CONFIG_JSON"]))


def env_int(name: str, default: int) -> int:
    """An integer parameter handed over by the pytest sweep."""
    return int(os.environ.get(name, default))


async def start(dut, reset_cycles: int = 4) -> None:
    """Start the clock and pulse the active-low reset ``rst_n`` (if the design has one)."""
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())
    if hasattr(dut, "rst_n"):
        dut.rst_n.value = 0
        await ClockCycles(dut.clk, reset_cycles)
        dut.rst_n.value = 1
    await RisingEdge(dut.clk)


def to_int(signal) -> int:
    return int(signal.value)
