"""The ULX3S (ECP5-85F) flow: the self-test top under Verilator, and the full open bitstream flow (slow).

The self-test top is the design the bitstream holds: the accelerator of a config, its DRAM as
block RAM loaded with a system-test program, and a checker comparing the RAM after the run with
the functional simulator's image. Simulating it here checks the bitstream's logic, not only
that it places.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vdla_hw.config import load_config
from vdla_hw.errors import ToolchainError, UnsupportedError, UsageError
from vdla_hw.fpga import ecp5_selftest as st
from vdla_hw.fpga.ecp5_flow import (
    BOARDS,
    board_record,
    build_ecp5,
    check_fits,
    parse_report,
    top_module_stats,
)


@pytest.fixture(scope="module")
def tiny_bench() -> tuple[st.SelftestImage, Path]:
    cfg = load_config("tiny")
    image = st.selftest_image(cfg)
    return image, st.build_selftest_sim(cfg, image)


def test_hex_words_put_byte_zero_in_the_low_bits() -> None:
    assert st.hex_lines(bytes(range(16)), 8) == "0706050403020100\n0f0e0d0c0b0a0908\n"


def test_selftest_image_changes_the_output_words() -> None:
    image = st.selftest_image("tiny")
    cfg = load_config("tiny")
    assert len(image.dram) == len(image.expect) == image.mem_words * cfg.bus_bytes
    assert image.dram != image.expect  # the program writes results the checker must see
    assert image.insn_addr % 16 == 0 and image.insn_count > 2


def test_selftest_top_passes_under_verilator(tiny_bench, tmp_path: Path) -> None:
    image, binary = tiny_bench
    st.write_hex_files(image, load_config("tiny"), tmp_path)
    run = st.run_selftest_sim(binary, tmp_path)
    assert run.passed, run.describe()
    assert run.leds >> 4 == st.STATE_DONE  # the controller reached its final state
    assert run.cycles > 100


def test_selftest_top_fails_on_one_wrong_expected_byte(tiny_bench, tmp_path: Path) -> None:
    """The checker really compares: flip one byte the program writes, and the fail LED lights."""
    image, binary = tiny_bench
    cfg = load_config("tiny")
    changed = [i for i, (a, b) in enumerate(zip(image.dram, image.expect)) if a != b]
    expect = bytearray(image.expect)
    expect[changed[-1]] ^= 0x01
    st.write_hex_files(image, cfg, tmp_path)
    (tmp_path / st.EXPECT_HEX).write_text(st.hex_lines(bytes(expect), cfg.bus_bytes))
    run = st.run_selftest_sim(binary, tmp_path)
    assert run.done and not run.passed
    assert run.leds & st.LED_FAIL and not run.leds & st.LED_FAULT, run.describe()


def test_selftest_top_reports_a_fault_on_a_store_outside_the_ram(tiny_bench, tmp_path: Path) -> None:
    """A STORE re-encoded to a DRAM address beyond the on-chip RAM lights the fault LED."""
    import dataclasses

    from vdla_hw.isa import INSN_BYTES, MemInsn, Opcode

    image, binary = tiny_bench
    cfg = load_config("tiny")
    lo, hi = image.insn_addr, image.insn_addr + image.insn_count * INSN_BYTES
    insns = cfg.isa.decode_program(image.dram[lo:hi])
    k = next(i for i, insn in enumerate(insns) if isinstance(insn, MemInsn) and insn.opcode == Opcode.STORE)
    beyond = len(image.dram) // cfg.out_elem_bytes + 16
    insns[k] = dataclasses.replace(insns[k], dram_base=beyond)
    dram = bytearray(image.dram)
    dram[lo:hi] = cfg.isa.encode_program(insns).tobytes()
    st.write_hex_files(image, cfg, tmp_path)
    (tmp_path / st.DRAM_HEX).write_text(st.hex_lines(bytes(dram), cfg.bus_bytes))
    run = st.run_selftest_sim(binary, tmp_path)
    assert run.done and not run.passed
    assert run.leds & st.LED_FAULT, run.describe()


def test_unknown_board_names_the_known_ones() -> None:
    with pytest.raises(UsageError, match="ulx3s"):
        board_record("ulx4s")


def test_a_design_too_big_for_the_board_is_refused_by_name() -> None:
    cfg = load_config("default")
    with pytest.raises(UnsupportedError, match=r"DP16KD \(the LFE5U-85F has 208\)"):
        check_fits({"LUT4": 1000, "DP16KD": 400}, BOARDS["ulx3s-selftest"], cfg)
    check_fits({"LUT4": 1000, "DP16KD": 200}, BOARDS["ulx3s-selftest"], cfg)


def test_report_parsing_takes_the_clock_fmax_and_the_utilization() -> None:
    report = {"fmax": {"$glbnet$clk": {"achieved": 41.5, "constraint": 25.0}},
              "utilization": {"DP16KD": {"used": 7, "available": 208}}}
    assert parse_report(report) == (41.5, 25.0, {"DP16KD": {"used": 7, "available": 208}})


def test_the_top_is_found_when_yosys_re_derived_it_for_its_parameters() -> None:
    """chparam of BUILD_ID's 32-bit value makes yosys rename the top ``$paramod$<hash>\\vdla_ulx3s_top``."""
    plain, derived = {"num_cells": 1}, {"num_cells": 2}
    assert top_module_stats({"\\vdla_ulx3s_top": plain, "\\vdla_top": {}}, "vdla_ulx3s_top") is plain
    assert top_module_stats({"$paramod$1001bb3e\\vdla_ulx3s_top": derived}, "vdla_ulx3s_top") is derived
    with pytest.raises(ToolchainError, match="no module 'vdla_ulx3s_top'"):
        top_module_stats({"\\vdla_top": plain}, "vdla_ulx3s_top")


@pytest.mark.slow
def test_full_flow_for_tiny_gives_a_bitstream_and_nextpnr_fmax(tmp_path: Path) -> None:
    result = build_ecp5("tiny", tmp_path / "out", progress=False, use_cache=False)
    assert result.bitstream.parent == tmp_path / "out"
    assert result.bitstream.stat().st_size > 50_000
    assert result.bitstream.read_bytes()[:32].startswith(b"\xff\x00Part: LFE5U-85F")
    assert result.fmax_mhz > 0 and result.constraint_mhz == 25.0
    assert 0 < result.luts <= result.utilization["TRELLIS_COMB"]["available"]
    assert 0 < result.ffs and 0 < result.brams and result.dsps >= 0
    report = json.loads(result.report.read_text())
    assert parse_report(report)[0] == pytest.approx(result.fmax_mhz, abs=0.01)
    assert "Max frequency for clock" in result.logs["nextpnr"].read_text()
    assert f"Fmax {result.fmax_mhz:.2f} MHz" in result.describe()
    # a second build of the same config comes from the cache, with the same numbers
    again = build_ecp5("tiny", tmp_path / "again", progress=False)
    assert (again.luts, again.fmax_mhz) == (result.luts, result.fmax_mhz)
