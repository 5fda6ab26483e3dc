"""Every config that validates elaborates: each RTL elaboration check (``$fatal``) is a validation rule.

The RTL's ``$fatal`` calls are read from the sources, so a new elaboration check without a
matching entry in ``RTL_CHECKS`` fails here.  An entry either names config changes that would
reach the check (validation must refuse each with a ``ConfigError`` naming the field and the
rule) or a property of the derived values that no legal config can break (checked over the
presets and the corners of the ranges).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vdla_hw.config import (
    RANGES,
    ConfigError,
    HwConfig,
    TimingConfig,
    from_dict,
    load_config,
    preset_names,
)

RTL_DIR = Path(__file__).parents[2] / "vdla_hw" / "rtl"
_FATAL = re.compile(r'\$fatal\(\s*1\s*,\s*"([^"]*)"')


@dataclass(frozen=True)
class RtlCheck:
    """One ``$fatal`` of the RTL: its module, a fragment of its message, and how validation covers it."""

    module: str
    fragment: str
    rejects: tuple[tuple[dict[str, Any], str], ...] = ()
    """Config changes (on the tiny preset) that reach the check, each with the error it must raise."""
    holds: Callable[[HwConfig], bool] | None = None
    """For checks no config field reaches: the property every legal config has."""


def _t(**timing: int) -> dict[str, Any]:
    return {"timing": timing}


RTL_CHECKS: tuple[RtlCheck, ...] = (
    RtlCheck("vdla_alu", "the ALU pipeline needs at least 3 stages",
             rejects=((_t(alu_pipeline_depth=2), r"timing\.alu_pipeline_depth = 2: .*at least 3 stages"),)),
    RtlCheck("vdla_alu", "timing.alu_ii = %0d must be >= 2",
             rejects=((_t(alu_ii=1), r"timing\.alu_ii = 1 must be >= 2"),
                      (_t(alu_pipeline_depth=7, alu_ii=3), r"timing\.alu_ii = 3 .*alu_pipeline_depth - 3 = 4"))),
    RtlCheck("vdla_gemm", "the GEMM pipeline needs at least 3 stages",
             rejects=((_t(gemm_pipeline_depth=2), r"timing\.gemm_pipeline_depth = 2: .*at least 3 stages"),)),
    RtlCheck("vdla_gemm", "ACC_WIDTH = %0d is narrower than an input x weight product",
             rejects=(({"log_acc_width": 4, "log_inp_width": 4}, r"log_acc_width = 4 gives 16-bit .*narrower"),)),
    RtlCheck("vdla_gemm", "GEMM_LUT_MACS = %0d must be in",
             rejects=(({"gemm_lut_macs": 17}, r"gemm_lut_macs = 17 exceeds the GEMM core's 16 multipliers"),)),
    RtlCheck("vdla_store", "timing.store_pipeline_depth = %0d; allowed 0..3",
             rejects=((_t(store_pipeline_depth=4), r"timing\.store_pipeline_depth = 4 is out of range: allowed \[0, 3\]"),
                      (_t(store_pipeline_depth=-1), r"timing\.store_pipeline_depth = -1 is out of range"))),
    RtlCheck("vdla_axi_rd_arb", "AXI_R_SLICE = %0d; allowed 0 or 1",
             rejects=((_t(axi_r_slice=2), r"timing\.axi_r_slice = 2 is out of range: allowed \[0, 1\]"),
                      (_t(axi_r_slice=-1), r"timing\.axi_r_slice = -1 is out of range"))),
    RtlCheck("vdla_dma_rd", "DRAM_BURST_BYTES = %0d gives %0d beats per burst",
             rejects=(({"log_bus_width": 5, **_t(dram_burst_bytes=2048)}, r"dram_burst_bytes = 2048 is 512 beats"),)),
    RtlCheck("vdla_dma_wr", "DRAM_BURST_BYTES = %0d gives %0d beats per burst",
             rejects=(({"log_bus_width": 5, **_t(dram_burst_bytes=4096)}, r"at most 256 beats per burst"),)),
    RtlCheck("vdla_dma_wr", "DMA_MAX_BURSTS = %0d must be at least 1",
             rejects=((_t(dma_max_bursts=0), r"timing\.dma_max_bursts = 0 is out of range"),)),
    RtlCheck("vdla_axi_rd_arb", "DMA_MAX_BURSTS = %0d must be at least 1",
             rejects=((_t(dma_max_bursts=0), r"timing\.dma_max_bursts = 0 is out of range"),)),
    RtlCheck("vdla_dma_rd", "DMA_NARROW_ROWS = %0d must be at least 1",
             rejects=((_t(dma_narrow_rows=0), r"timing\.dma_narrow_rows = 0 is out of range"),)),
    RtlCheck("vdla_dma_wr", "DMA_NARROW_ROWS = %0d must be at least 1",
             rejects=((_t(dma_narrow_rows=0), r"timing\.dma_narrow_rows = 0 is out of range"),)),
    RtlCheck("vdla_top", "the AXI data width (%0d) must equal the config's bus width",
             rejects=(({"log_bus_width": 4}, r"log_bus_width = 4 is out of range"),
                      ({"log_bus_width": 11}, r"log_bus_width = 11 is out of range"))),
    RtlCheck("vdla_sram", "DEPTH = %0d must be a power of two >= 2",
             rejects=(({"log_block_out": 4, "log_acc_buff_size": 6}, r"log_acc_buff_size = 6 \(64 B\) is smaller than two 64-byte"),
                      ({"log_uop_buff_size": 2}, r"log_uop_buff_size = 2 is out of range"))),
    RtlCheck("vdla_fifo", "DEPTH = %0d must be at least 1",
             rejects=(({"cmd_queue_depth": 0}, r"cmd_queue_depth = 0 is out of range"),
                      ({"dep_queue_depth": 0}, r"dep_queue_depth = 0 is out of range"))),
    # Reached by no config field: widths and counts the design fixes or derives from log2 values.
    RtlCheck("vdla_fifo", "WIDTH = %0d must be at least 1", holds=lambda c: c.inp_width >= 1),
    RtlCheck("vdla_dma_rd", "ELEM_BITS = %0d must be a power of two >= 8", holds=lambda c: _elem_bits_ok(c)),
    RtlCheck("vdla_dma_wr", "ELEM_BITS = %0d must be a power of two >= 8", holds=lambda c: _elem_bits_ok(c)),
    RtlCheck("vdla_lut_mul", "XW must be >= 1 and YW even and >= 2",
             holds=lambda c: c.inp_width >= 1 and c.wgt_width >= 2 and c.wgt_width % 2 == 0),
    RtlCheck("vdla_uop_loop", "II = %0d must be at least 1", holds=lambda c: c.timing.alu_ii >= 1),
    RtlCheck("vdla_uop_loop", "II_FAST = %0d must be at least 1", holds=lambda c: c.timing.alu_copy_ii >= 1),
    RtlCheck("vdla_axi_rd_arb", "N = %0d must be at least 1", holds=lambda c: True),
    RtlCheck("vdla_skid", "WIDTH = %0d must be at least 1", holds=lambda c: True),
    # The generated package's struct widths: the staleness tests keep the package current.
    RtlCheck("vdla_top", "an instruction struct of vdla_pkg is not INSN_BITS", holds=lambda c: True),
)


def _elem_bits_ok(cfg: HwConfig) -> bool:
    bits = [8 * getattr(cfg, f"{b}_elem_bytes") for b in ("uop", "inp", "wgt", "acc", "out")]
    return all(b >= 8 and b & (b - 1) == 0 for b in bits)


def _rtl_fatals() -> list[tuple[str, str]]:
    return [(path.stem, message) for path in sorted(RTL_DIR.glob("*.sv"))
            for message in _FATAL.findall(path.read_text())]


def _matches(check: RtlCheck, module: str, message: str) -> bool:
    return check.module == module and check.fragment in message


def test_every_rtl_fatal_has_a_rule():
    fatals = _rtl_fatals()
    assert len(fatals) >= 15, "the RTL's $fatal calls were not found; did the parser break?"
    for module, message in fatals:
        covering = [c for c in RTL_CHECKS if _matches(c, module, message)]
        assert len(covering) == 1, f"{module}: $fatal {message!r} has {len(covering)} entries in RTL_CHECKS"
    for check in RTL_CHECKS:
        assert any(_matches(check, m, msg) for m, msg in fatals), f"stale entry {check.module}: {check.fragment!r}"
        assert bool(check.rejects) != (check.holds is not None)


@pytest.mark.parametrize("check", [c for c in RTL_CHECKS if c.rejects], ids=lambda c: f"{c.module}:{c.fragment[:30]}")
def test_validation_refuses_what_the_rtl_would_stop(check: RtlCheck):
    base = load_config("tiny").to_dict()
    for change, message in check.rejects:
        data = {**base, **change, "timing": {**base["timing"], **change.get("timing", {})}}
        with pytest.raises(ConfigError, match=message):
            from_dict(data)


def _corners() -> list[HwConfig]:
    """The presets and the narrowest and widest element/tile shapes validation accepts."""
    configs = [load_config(p) for p in preset_names()]
    small = {k: RANGES[k][0] for k in ("log_inp_width", "log_wgt_width", "log_out_width", "log_batch",
                                        "log_block_in", "log_block_out")} | {"gemm_lut_macs": 0}
    big = {"log_inp_width": 3, "log_wgt_width": 3, "log_acc_width": 5, "log_out_width": 4, "log_batch": 3,
           "log_block_in": 6, "log_block_out": 6, "log_wgt_buff_size": 20, "log_acc_buff_size": 20,
           "log_inp_buff_size": 20, "log_bus_width": 9, "gemm_lut_macs": 0}
    for change in (small, big):
        base = load_config("tiny").to_dict()
        base["timing"]["dram_burst_bytes"] = max(base["timing"]["dram_burst_bytes"], 8 << change.get("log_bus_width", 3))
        configs.append(from_dict({**base, **change}))
    return configs


@pytest.mark.parametrize("check", [c for c in RTL_CHECKS if c.holds], ids=lambda c: f"{c.module}:{c.fragment[:30]}")
def test_unreachable_checks_hold_on_legal_configs(check: RtlCheck):
    for cfg in _corners():
        assert check.holds(cfg), f"{cfg.label()} breaks {check.module}: {check.fragment}"


def test_defaults_have_one_source():
    """The dataclass defaults are the default preset's values: both ways give the same hardware."""
    assert HwConfig(name="default") == load_config("default")
    assert HwConfig(name="default").digest == load_config("default").digest
    assert TimingConfig() == load_config("default").timing


@pytest.mark.parametrize("log_bus_width,cycles", [(5, 4), (6, 2), (7, 1), (9, 1)])
def test_fetch_rate_follows_the_bus(log_bus_width: int, cycles: int):
    base = load_config("default").to_dict()
    base["timing"]["dram_burst_bytes"] = 512
    cfg = from_dict({**base, "log_bus_width": log_bus_width})
    assert cfg.fetch_cycles_per_insn == cycles


def test_a_stored_fetch_rate_is_refused_with_the_reason():
    data = load_config("default").to_dict()
    data["timing"]["fetch_cycles_per_insn"] = 2
    with pytest.raises(ConfigError, match="fetch_cycles_per_insn is no longer a config key: it is derived from log_bus_width"):
        from_dict(data)
