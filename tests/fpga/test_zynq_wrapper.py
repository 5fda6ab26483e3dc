"""The Verilog wrapper IP integrator instantiates: linted with Verilator against the real RTL."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from vdla_hw.config import load_config, preset_names
from vdla_hw.fpga.wrapper import (
    WRAPPER_TOP,
    ctrl_signals,
    generate_wrapper,
    mem_signals,
)
from vdla_hw.rtl_build import lint_command, tool_env


def _lint(cfg, text: str, tmp_path: Path) -> subprocess.CompletedProcess:
    wrapper = tmp_path / f"{WRAPPER_TOP}.v"
    wrapper.write_text(text)
    return subprocess.run(lint_command(cfg, top=WRAPPER_TOP) + [str(wrapper)], capture_output=True, text=True,
                          env=tool_env(), timeout=300, check=False)


@pytest.mark.parametrize("config", preset_names())
def test_wrapper_lints_clean_against_vdla_top(config: str, tmp_path: Path):
    cfg = load_config(config)
    result = _lint(cfg, generate_wrapper(cfg), tmp_path)
    assert result.returncode == 0, result.stderr


def test_lint_catches_a_wrapper_that_does_not_match_the_rtl(tmp_path: Path):
    cfg = load_config("tiny")
    # A bus one bit too narrow (as if the wrapper and the config disagreed) must not lint clean.
    text = generate_wrapper(cfg).replace(f"[{cfg.bus_width - 1}:0] m_axi_mem_wdata",
                                         f"[{cfg.bus_width - 2}:0] m_axi_mem_wdata")
    assert text != generate_wrapper(cfg)
    result = _lint(cfg, text, tmp_path)
    assert result.returncode != 0 and "m_axi_mem_wdata" in result.stderr


def test_wrapper_declares_every_axi_signal_in_its_interface():
    cfg = load_config("default")
    text = generate_wrapper(cfg)
    for intf, signals in (("s_axi_ctrl", ctrl_signals()), ("m_axi_mem", mem_signals(cfg))):
        for sig in signals:
            assert f'"xilinx.com:interface:aximm:1.0 {intf} {sig.name.upper()}"' in text
            assert f"{intf}_{sig.name}" in text
    assert f"DATA_WIDTH {cfg.bus_width}" in text and "PROTOCOL AXI4LITE" in text
