"""The Zynq boards' Vivado Tcl, executed in a real Tcl interpreter with Vivado's commands stubbed.

For each board the project folder written by :func:`vdla_hw.fpga.vivado.write_project` is sourced
exactly as ``vivado -mode batch -source build.tcl`` would; the recorded calls must ask for the
board's part, every RTL file plus the config's generated package, the config's clock, the ports
and interfaces of the block design and the register window of :mod:`vdla_hw.regmap`.
"""

from __future__ import annotations

import tkinter
from pathlib import Path

import pytest
from vivado_stub import VivadoStub

from vdla_hw import regmap
from vdla_hw.config import load_config
from vdla_hw.fpga.boards import BOARDS, Board
from vdla_hw.fpga.flow import build_bitstream
from vdla_hw.fpga.manifest import choose_build_id, read_manifest
from vdla_hw.fpga.vivado import board_tcl, write_project
from vdla_hw.fpga.wrapper import CTRL_INTF, MEM_INTF, WRAPPER_TOP, generate_wrapper
from vdla_hw.gen_sv import generate_package
from vdla_hw.rtl_build import RTL_DIR, rtl_sources

ZYNQ_BOARDS = [b for b in BOARDS.values() if b.flow == "vivado"]
EXPECTED = {  # the three boards and their parts, written out independently of the table
    "pynq-z2": ("xc7z020clg400-1", "processing_system7"),
    "ultra96-v2": ("xczu3eg-sbva484-1-e", "zynq_ultra_ps_e"),
    "zcu104": ("xczu7ev-ffvc1156-2-e", "zynq_ultra_ps_e"),
}


def _run(board: Board, cfg, tmp_path: Path, **stub_opts) -> VivadoStub:
    build = write_project(board, cfg, tmp_path / "proj")
    stub = VivadoStub(build.parent, **stub_opts)
    stub.source(build)
    return stub


def _dict(call) -> dict[str, str]:
    words = call.args[call.args.index("-dict") + 1].split()
    return dict(zip(words[::2], words[1::2]))


def test_the_three_zynq_boards_are_in_the_table():
    assert {b.name: (b.part, b.ps.ip) for b in ZYNQ_BOARDS} == EXPECTED


@pytest.mark.parametrize("board", ZYNQ_BOARDS, ids=lambda b: b.name)
@pytest.mark.parametrize("config", ["tiny", "default"])
def test_build_tcl_asks_for_part_sources_clock_ports_and_address_map(board: Board, config: str, tmp_path: Path):
    cfg = load_config(config)
    stub = _run(board, cfg, tmp_path)
    proj = tmp_path / "proj"
    ps = board.ps

    # part
    (create,) = stub.named("create_project")
    assert create.option("-part") == board.part

    # sources: every RTL file of the repository and the config's package, as copies of the originals
    added = [Path(p) for p in stub.named("add_files")[0].args[-1].split()]
    names = {p.name for p in added}
    assert {p.name for p in RTL_DIR.glob("*.sv")} <= names
    assert f"vdla_pkg_{cfg.name}.sv" in names and f"{WRAPPER_TOP}.v" in names
    assert [p.name for p in added[:-1]] == [p.name for p in rtl_sources(cfg)]
    assert all(p.parent == proj / "src" for p in added)
    for original in rtl_sources(cfg):
        assert (proj / "src" / original.name).read_text() == original.read_text()
    assert (proj / "src" / f"vdla_pkg_{cfg.name}.sv").read_text() == generate_package(cfg)
    assert (proj / "src" / f"{WRAPPER_TOP}.v").read_text() == generate_wrapper(cfg)

    # the PS, its clock from the config, its ports enabled
    cells = {c.args[-1]: c for c in stub.named("create_bd_cell")}
    assert cells["ps"].option("-vlnv") == f"xilinx.com:ip:{ps.ip}"
    assert cells["vdla"].option("-reference") == WRAPPER_TOP
    ps_props = _dict(next(c for c in stub.named("set_property") if c.args[-1] == "ps"))
    assert float(ps_props[f"CONFIG.{ps.clock_prop}"]) == cfg.clock_mhz
    assert int(ps_props[f"CONFIG.{ps.hp_width_prop}"]) == min(cfg.bus_width, max(ps.hp_widths))
    for key, value in ps.enable_props:
        assert ps_props[f"CONFIG.{key}"] == value

    # interfaces: GP master -> interconnect -> registers; accelerator master -> interconnect -> HP port
    links = {a: b for c in stub.named("connect_bd_intf_net") for a, b in [c.args]}
    ctrl_ic = links[f"ps/{ps.gp_intf}"].split("/")[0]
    assert links[f"{ctrl_ic}/M00_AXI"] == f"vdla/{CTRL_INTF}"
    mem_ic = links[f"vdla/{MEM_INTF}"].split("/")[0]
    assert links[f"{mem_ic}/M00_AXI"] == f"ps/{ps.hp_intf}"
    assert cells[ctrl_ic].option("-vlnv") == cells[mem_ic].option("-vlnv") == "xilinx.com:ip:smartconnect"

    # one clock net from the PS's fabric clock to the accelerator, both PS ports and the interconnects
    nets = [set(c.args) for c in stub.named("connect_bd_net")]
    clock = next(n for n in nets if f"ps/{ps.clk_pin}" in n)
    assert {"vdla/clk", f"ps/{ps.gp_aclk_pin}", f"ps/{ps.hp_aclk_pin}", f"{ctrl_ic}/aclk", f"{mem_ic}/aclk"} <= clock
    assert {"vdla/irq", f"ps/{ps.irq_pin}"} in nets
    reset = next(n for n in nets if "vdla/rst_n" in n)
    assert "rst/peripheral_aresetn" in reset and {f"ps/{ps.rstn_pin}", "rst/ext_reset_in"} in nets

    # address map: the register window at the board's base in the PS's space, sized by regmap
    reg = next(c for c in stub.named("assign_bd_address") if c.option("-offset"))
    assert int(reg.option("-offset"), 16) == ps.reg_base
    window = int(reg.option("-range"))
    assert window >= 1 << regmap.AXIL_ADDR_WIDTH and window >= 4096
    assert reg.option("-target_address_space") == f"ps/{ps.address_space}"
    assert reg.args[-2] == f"vdla/{CTRL_INTF}/reg0"
    assert any(c.option("-target_address_space") == f"vdla/{MEM_INTF}" for c in stub.named("assign_bd_address"))

    # synthesis, then implementation to the bitstream, then reports and the pynq pair
    assert stub.index("launch_runs", "synth_1") < stub.index("wait_on_run", "synth_1") \
        < stub.index("launch_runs", "impl_1") < stub.index("wait_on_run", "impl_1") < stub.index("open_run", "impl_1")
    assert stub.named("launch_runs")[1].option("-to_step") == "write_bitstream"
    out = proj / "out"
    assert stub.named("report_utilization")[0].option("-file") == str(out / "utilization.rpt")
    assert stub.named("report_timing_summary")[0].option("-file") == str(out / "timing_summary.rpt")
    assert stub.index("open_run", "impl_1") < stub.index("report_utilization")
    assert (out / "vdla.bit").read_bytes().endswith(b"bitstream") and (out / "vdla.hwh").exists()
    assert stub.named("write_hw_platform")[0].option("-file") == str(out / "vdla.xsa")

    summary = dict(line.split(None, 1) for line in (out / "summary.txt").read_text().splitlines())
    assert summary["board"] == board.name and summary["config_digest"] == cfg.digest
    for r in regmap.REGISTERS:
        assert int(summary[f"reg_{r.name.lower()}"], 16) == ps.reg_base + r.offset
    assert {k: summary[k] for k in ("luts", "ffs", "dsps", "ramb36")} == {"luts": "3", "ffs": "2", "dsps": "1",
                                                                         "ramb36": "0"}
    assert all("IS_PRIMITIVE" in c.option("-filter") for c in stub.named("get_cells"))


@pytest.mark.parametrize("board", ZYNQ_BOARDS, ids=lambda b: b.name)
def test_clock_comes_from_the_config(board: Board, tmp_path: Path):
    cfg = load_config("tiny").replace(clock_mhz=142.5)
    stub = _run(board, cfg, tmp_path, actual_clock_mhz="142.857")
    ps_props = _dict(next(c for c in stub.named("set_property") if c.args[-1] == "ps"))
    assert ps_props[f"CONFIG.{board.ps.clock_prop}"] == "142.5"
    summary = (tmp_path / "proj" / "out" / "summary.txt").read_text()
    assert "clock_mhz_requested 142.5\n" in summary and "clock_mhz_actual 142.857\n" in summary


def test_board_files_give_the_ps_preset(tmp_path: Path):
    board = BOARDS["pynq-z2"]
    with_files = _run(board, load_config("tiny"), tmp_path / "a", board_parts=("tul.com.tw:pynq-z2:part0:1.0",))
    assert ("board_part", "tul.com.tw:pynq-z2:part0:1.0", "vdla") in [c.args for c in with_files.named("set_property")]
    (auto,) = with_files.named("apply_bd_automation")
    config = auto.option("-config")
    assert "apply_board_preset 1" in config and "FIXED_IO, DDR" in config
    without = _run(board, load_config("tiny"), tmp_path / "b")
    assert not any(c.args[0] == "board_part" for c in without.named("set_property"))
    assert "apply_board_preset 0" in without.named("apply_bd_automation")[0].option("-config")


@pytest.mark.parametrize("run", ["synth_1", "impl_1"])
def test_a_failed_run_stops_the_build_naming_it(run: str, tmp_path: Path):
    with pytest.raises(tkinter.TclError, match=f"Vivado run {run} failed .*runme.log"):
        _run(BOARDS["zcu104"], load_config("tiny"), tmp_path, failing_run=run)
    assert not (tmp_path / "proj" / "out" / "vdla.bit").exists()


@pytest.mark.parametrize("board", ZYNQ_BOARDS, ids=lambda b: b.name)
def test_committed_board_scripts_are_generated_from_the_table(board: Board):
    assert (board.scripts_dir / "board.tcl").read_text() == board_tcl(board), "run `vdla fpga gen-scripts`"


def test_docs_board_table_matches_the_board_table():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "fpga.md").read_text()
    for board in ZYNQ_BOARDS:
        base = f"0x{board.ps.reg_base >> 16:04X}_{board.ps.reg_base & 0xFFFF:04X}"
        row = f"| `{board.name}` | {board.part} | `{board.ps.ip}` | {board.ps.gp_intf}, {base} | {board.ps.hp_intf} ("
        assert row in doc, row


@pytest.mark.parametrize("board", ZYNQ_BOARDS, ids=lambda b: b.name)
def test_the_build_id_of_the_manifest_reaches_the_accelerator_cell(board: Board, tmp_path: Path):
    """``vdla fpga build`` picks the build id, records it in bitstream.json and sets it on the block
    design's cell, whose wrapper hands it to vdla_top's BUILD_ID parameter."""
    result = build_bitstream(board.name, "tiny", tmp_path / "proj", run=False)
    manifest = read_manifest(tmp_path / "proj")
    assert manifest.build_id == result.build_id == choose_build_id(board, load_config("tiny")) != 0
    assert (manifest.board, manifest.config, manifest.files) == (board.name, "tiny", {})
    stub = VivadoStub(tmp_path / "proj")
    stub.source(tmp_path / "proj" / "build.tcl")
    assert ("CONFIG.BUILD_ID", str(manifest.build_id), "vdla") in [c.args for c in stub.named("set_property")]
    wrapper = (tmp_path / "proj" / "src" / f"{WRAPPER_TOP}.v").read_text()
    assert "parameter [31:0] BUILD_ID" in wrapper and "vdla_top #(.BUILD_ID(BUILD_ID)) u_vdla" in wrapper


def test_the_build_id_follows_the_sources_and_the_config():
    board = BOARDS["pynq-z2"]
    tiny, default = load_config("tiny"), load_config("default")
    assert choose_build_id(board, tiny) == choose_build_id(board, tiny)
    ids = {choose_build_id(board, tiny), choose_build_id(board, default), choose_build_id(BOARDS["zcu104"], tiny)}
    assert len(ids) == 3
