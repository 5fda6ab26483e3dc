"""HwConfig validation, presets, (de)serialization and replace."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla_hw.config import (
    RANGES,
    TIMING_RANGES,
    ConfigError,
    HwConfig,
    TimingConfig,
    from_dict,
    load_config,
    preset_names,
)
from vdla_hw.isa import INSN_BITS, UOP_BITS

PRESETS = preset_names()


def default_dict() -> dict:
    return load_config("default").to_dict()


def test_presets_exist_and_are_named_after_their_file():
    assert {"default", "tiny", "wide"} <= set(PRESETS)
    for name in PRESETS:
        assert load_config(name).name == name


def test_default_is_the_published_design():
    c = load_config("default")
    assert (c.batch, c.block_in, c.block_out) == (1, 16, 16)
    assert (c.inp_width, c.wgt_width, c.acc_width, c.out_width) == (8, 8, 32, 8)
    sizes = [1 << getattr(c, f"log_{b}_buff_size") for b in ("uop", "inp", "wgt", "acc")]
    assert sizes == [32 << 10, 32 << 10, 256 << 10, 128 << 10]
    assert (c.bus_width, c.clock_mhz, c.macs_per_cycle) == (64, 100.0, 256)
    assert (c.inp_buff_depth, c.wgt_buff_depth, c.acc_buff_depth, c.uop_buff_depth) == (2048, 1024, 2048, 8192)


@pytest.mark.parametrize("name", PRESETS)
def test_dict_and_json_round_trip(name, tmp_path):
    cfg = load_config(name)
    assert from_dict(cfg.to_dict()) == cfg
    assert from_dict(json.loads(cfg.to_json())) == cfg
    path = tmp_path / "cfg.json"
    path.write_text(cfg.to_json())
    assert load_config(path) == cfg and load_config(str(path)) == cfg
    assert load_config(cfg) is cfg


def test_replace_validates_and_keeps_the_original():
    base = load_config("default")
    wider = base.replace(log_block_in=5, log_inp_buff_size=16)
    assert (wider.block_in, base.block_in) == (32, 16)
    assert wider.inp_buff_depth == base.inp_buff_depth
    merged = base.replace(timing={"alu_ii": 3})
    assert merged.timing.alu_ii == 3 and merged.timing.dram_latency == base.timing.dram_latency
    whole = base.replace(timing=TimingConfig(dram_latency=7))
    assert whole.timing == TimingConfig(dram_latency=7)
    assert base.replace(name="x").replace(name="default") == base
    with pytest.raises(ConfigError, match="cmd_queue_depth = 3 is not a power of two"):
        base.replace(cmd_queue_depth=3)
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['block_in'\]"):
        base.replace(block_in=32)


@pytest.mark.parametrize("key", ["cmd_queue_depth", "dep_queue_depth"])
@pytest.mark.parametrize("value", [3, 100, 513])
def test_queue_depth_must_be_a_power_of_two(key, value):
    with pytest.raises(ConfigError, match=rf"default\.{key} = {value} is not a power of two; use e\.g\. \d+"):
        from_dict({**default_dict(), key: value})


@pytest.mark.parametrize("key", sorted(RANGES))
def test_out_of_range_values(key):
    lo, hi = RANGES[key]
    for value in (lo - 1, hi + 1):
        with pytest.raises(ConfigError, match=rf"default\.{key} = {value} is out of range: allowed \[{lo}, {hi}\]"):
            from_dict({**default_dict(), key: value})


@pytest.mark.parametrize("key", sorted(TIMING_RANGES))
def test_out_of_range_timing(key):
    lo, hi = TIMING_RANGES[key]
    d = default_dict()
    for value in (lo - 1, hi + 1):
        with pytest.raises(ConfigError, match=rf"default\.timing\.{key} = {value} is out of range: allowed \[{lo}, {hi}\]"):
            from_dict({**d, "timing": {**d["timing"], key: value}})


@pytest.mark.parametrize("value", ["4", 4.0, True, None])
def test_non_integer_values(value):
    with pytest.raises(ConfigError, match=r"default\.log_block_in must be an integer in \[1, 6\]"):
        from_dict({**default_dict(), "log_block_in": value})


def test_other_scalar_rules():
    d = default_dict()
    with pytest.raises(ConfigError, match=r"clock_mhz = 0 is out of range: allowed \[1, 2000\] MHz"):
        from_dict({**d, "clock_mhz": 0})
    with pytest.raises(ConfigError, match=r"dram_burst_bytes = 96 must be a power of two >= the bus width in bytes \(8\)"):
        from_dict({**d, "timing": {**d["timing"], "dram_burst_bytes": 96}})
    with pytest.raises(ConfigError, match=r"dram_burst_bytes = 8 must be a power of two >= the bus width in bytes \(64\)"):
        from_dict({**d, "log_bus_width": 9, "timing": {**d["timing"], "dram_burst_bytes": 8}})


@pytest.mark.parametrize(
    "changes, buf, log_size, tile, allowed",
    [
        ({"log_block_in": 6, "log_inp_buff_size": 6}, "inp", 6, 64, "[7, 22]"),
        ({"log_wgt_buff_size": 8}, "wgt", 8, 256, "[9, 22]"),
        ({"log_block_in": 6, "log_block_out": 6, "log_wgt_buff_size": 12}, "wgt", 12, 4096, "[13, 22]"),
        ({"log_acc_buff_size": 6}, "acc", 6, 64, "[7, 22]"),
    ],
)
def test_buffer_smaller_than_two_tiles(changes, buf, log_size, tile, allowed):
    """The tile size is derived (shape x width), so the allowed minimum moves with the shape."""
    message = (
        rf"default\.log_{buf}_buff_size = {log_size} \({1 << log_size} B\) is smaller than two "
        rf"{tile}-byte {buf} tiles; allowed {re.escape(allowed)}"
    )
    with pytest.raises(ConfigError, match=message):
        from_dict({**default_dict(), **changes})


def test_buffer_too_large_for_the_gemm_instruction():
    with pytest.raises(ConfigError, match=r"default: the gemm fields need 130 bits but only 128 are available \(.*dst_factor_out\(12\).*\); .*log_acc_buff_size = 18"):
        from_dict({**default_dict(), "log_acc_buff_size": 18})


def test_buffer_too_large_for_the_micro_op():
    # Small micro-op buffer keeps GEMM within 128 bits; wide acc and inp indices overflow the 32-bit micro-op.
    d = {**default_dict(), "log_uop_buff_size": 6, "log_acc_buff_size": 18, "log_inp_buff_size": 16}
    with pytest.raises(ConfigError, match=r"default: the uop fields need 34 bits but only 32 are available \(dst\(12\) \+ src\(12\) \+ wgt\(10\)\); .*log_acc_buff_size = 18"):
        from_dict(d)


def test_accumulator_narrower_than_the_product():
    with pytest.raises(ConfigError, match=r"log_acc_width = 4 gives 16-bit accumulators, narrower than the 16x16-bit product"):
        from_dict({**default_dict(), "log_inp_width": 4, "log_wgt_width": 4, "log_acc_width": 4})


def test_unknown_and_missing_keys():
    d = default_dict()
    with pytest.raises(ConfigError, match=r"unknown config key\(s\) \['log_foo'\]; allowed keys: \[.*'log_batch'"):
        from_dict({**d, "log_foo": 1})
    with pytest.raises(ConfigError, match=r"unknown timing key\(s\) \['dram_lat'\]; allowed keys: \[.*'dram_latency'"):
        from_dict({**d, "timing": {"dram_lat": 3}})
    del d["name"]
    with pytest.raises(ConfigError, match="config is missing the required key 'name'"):
        from_dict(d)
    with pytest.raises(ConfigError, match="config.name must be a non-empty string, got ''"):
        from_dict({**default_dict(), "name": ""})
    with pytest.raises(ConfigError, match="config.timing must be a JSON object, got list"):
        from_dict({**default_dict(), "timing": []})
    with pytest.raises(ConfigError, match="a hardware config must be a JSON object, got list"):
        from_dict([])  # type: ignore[arg-type]


def test_bad_files_and_names(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x",')
    with pytest.raises(ConfigError, match=r"bad\.json: not valid JSON"):
        load_config(bad)
    with pytest.raises(ConfigError, match=r"hardware config file '.*missing\.json' does not exist"):
        load_config(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match=r"no hardware preset named 'huge'; presets: \['default', 'tiny', 'ulx3s', 'wide'\], or pass a \.json path"):
        load_config("huge")


@settings(max_examples=80, deadline=None)
@given(st.fixed_dictionaries({k: st.integers(lo, hi) for k, (lo, hi) in RANGES.items()}))
def test_random_configs_validate_or_raise_config_error(values):
    """Any in-range combination is either a consistent config or a ConfigError -- never another exception."""
    values = {**values, "cmd_queue_depth": 1 << (values["cmd_queue_depth"].bit_length() - 1)}
    values["dep_queue_depth"] = 1 << (values["dep_queue_depth"].bit_length() - 1)
    try:
        cfg = HwConfig(name="random", **values)
    except ConfigError:
        return
    isa = cfg.isa
    assert all(layout.used_bits <= INSN_BITS for key, layout in isa.layouts.items() if key != "uop")
    assert isa.uop.used_bits <= UOP_BITS
    for buf in ("uop", "inp", "wgt", "acc"):
        assert getattr(cfg, f"{buf}_buff_depth") >= 2
    assert from_dict(cfg.to_dict()) == cfg


def test_gemm_lut_macs_cannot_exceed_the_core():
    base = load_config("default")
    assert base.replace(gemm_lut_macs=base.macs_per_cycle).gemm_lut_macs == 256
    with pytest.raises(ConfigError, match=r"default\.gemm_lut_macs = 257 exceeds the GEMM core's 256"):
        base.replace(gemm_lut_macs=257)


def test_axi_r_slice_is_a_read_latency_cycle_and_neutral_at_zero() -> None:
    """`timing.axi_r_slice`: 0 leaves a config's JSON and digest as before the field existed; the
    cycle model's read latency is the DRAM's plus the slice (tiny sets 1, docs/rtl.md)."""
    import dataclasses

    from vdla.runtime.backends import get_backend
    from vdla.runtime.workloads import tiled_gemm_program
    from vdla_hw.config import load_config

    default, tiny = load_config("default"), load_config("tiny")
    assert "axi_r_slice" not in default.timing.to_dict() and default.timing.read_latency == default.timing.dram_latency
    assert tiny.timing.axi_r_slice == 1 and tiny.timing.read_latency == tiny.timing.dram_latency + 1
    unsliced = dataclasses.replace(tiny, timing=dataclasses.replace(tiny.timing, axi_r_slice=0))
    assert unsliced.digest != tiny.digest
    cycles = [get_backend("cycle").run(tiled_gemm_program(cfg, 4, 8, 8, seed=0)[0]).cycles for cfg in (unsliced, tiny)]
    assert cycles[1] > cycles[0]
