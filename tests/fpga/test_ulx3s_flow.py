"""The ULX3S SoC flow's reading of nextpnr's report, and (slow) the SoC bitstream closing timing at
the clock its config states (issue 26; docs/fpga_ulx3s.md)."""

from __future__ import annotations

import json

import pytest

from vdla.compiler.cli.main import main
from vdla_hw.config import load_config
from vdla_hw.fpga import ulx3s_soc
from vdla_hw.fpga.ulx3s_flow import critical_path


def _step(kind: str, cell: str, port: str, delay: float) -> dict:
    return {"type": kind, "delay": delay, "from": {"cell": cell, "port": port}, "to": {"cell": cell, "port": port}}


def test_the_critical_path_names_its_ends_its_delay_split_and_the_modules_it_crosses() -> None:
    sys_path = [_step("clk-to-q", "vdla_top.u_fetch.left_FF_Q", "Q", 0.5),
                _step("routing", "vdla_top.u_fetch.left_FF_Q", "Q", 2.0),
                _step("logic", "vdla_top.u_rd_fetch.beats_LUT4", "F", 0.25),
                _step("routing", "$nextpnr_CCU2C_1", "F", 1.5),
                _step("logic", "vdla_top.u_fault.addr_FF", "DI", 0.25),
                _step("setup", "vdla_top.u_fault.addr_FF", "M", 0.0)]
    io_path = [_step("clk-to-q", "serial_rx_FF", "Q", 50.0)]  # longer, but not a clock-to-same-clock path
    report = {"critical_paths": [
        {"from": "posedge $glbnet$sdrio_clk", "to": "posedge $glbnet$sdrio_clk", "path": sys_path},
        {"from": "<async>", "to": "posedge $glbnet$sdrio_clk", "path": io_path}]}
    path = critical_path(report)
    assert path == {"from": "vdla_top.u_fetch.left_FF_Q.Q", "to": "vdla_top.u_fault.addr_FF.M", "ns": 4.5,
                    "logic_ns": 1.0, "routing_ns": 3.5,
                    "through": ["vdla_top.u_fetch", "vdla_top.u_rd_fetch", "vdla_top.u_fault"]}
    assert critical_path({"critical_paths": []}) is None
    assert critical_path({}) is None


@pytest.mark.slow
def test_the_ulx3s_soc_bitstream_closes_at_its_configs_clock(tmp_path, capsys) -> None:
    """The whole SoC with the board's preset: yosys, nextpnr (routed) and ecppack; the routed Fmax
    reaches the SoC clock, which is the preset's ``clock_mhz`` (~17 min here with the tools' CPU)."""
    out = tmp_path / "soc"
    assert main(["fpga", "build", "--board", "ulx3s", "--config", "ulx3s", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Fmax (nextpnr)" in printed and "timing met" in printed and "critical path" in printed
    cfg = load_config("ulx3s")
    result = json.loads((out / "ulx3s_result.json").read_text())
    assert result["sys_clk_mhz"] == cfg.clock_mhz == ulx3s_soc.soc_clock_mhz(cfg)
    assert result["timing_met"] and result["fmax_mhz"] >= result["constraint_mhz"] == cfg.clock_mhz
    assert (out / result["bitstream"]).stat().st_size > 100_000
