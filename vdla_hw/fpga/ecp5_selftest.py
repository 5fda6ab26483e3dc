"""The ULX3S self-test: a program image in on-chip RAM, its expected result, and the top under Verilator.

The bitstream of :mod:`vdla_hw.fpga.ecp5_flow` carries no host: its block RAM is loaded at
configuration time with the DRAM image of one system-test program (``gemm_vt2`` of
:mod:`vdla.runtime.system_programs`: a tiled GEMM + bias + ReLU + requantize with two virtual
threads, so loads, GEMMs, ALU ops, stores and all four token queues are exercised), and a
second RAM holds the image the functional simulator leaves after running it. The top's
controller starts the program, waits for done and compares every word (see
``fpga_scripts/ulx3s/vdla_ulx3s_top.sv``); the LEDs show the verdict.

:func:`simulate_selftest` runs that very top (not the ``rtl`` backend's harness) under
Verilator with the same hex files, so the logic of the bitstream is checked before any board.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import ToolchainError
from vdla_hw.fpga.boards import FPGA_SCRIPTS_DIR
from vdla_hw.rtl_build import (
    BUILD_JOBS,
    VERILATOR_BUILD_ARGS,
    RtlBuildError,
    build_dir,
    rtl_sources,
    tool_env,
    verilator_bin,
)
from vdla_hw.toolchain import raise_if_interrupted

SCRIPTS_DIR = FPGA_SCRIPTS_DIR / "ulx3s_selftest"
TOP = "vdla_ulx3s_top"
TOP_SOURCES: tuple[str, ...] = ("vdla_axi_bram.sv", "vdla_ulx3s_top.sv")
"""The board-specific sources, compiled after the accelerator's (in this order)."""
BENCH = "tb_ulx3s"
SELFTEST_CASE = "gemm_vt2"
DRAM_HEX = "selftest_dram.hex"
EXPECT_HEX = "selftest_expect.hex"
SIM_MAX_CYCLES = 50_000_000

# led[] bits of vdla_ulx3s_top
LED_DONE, LED_PASS, LED_FAIL, LED_FAULT = 1 << 0, 1 << 1, 1 << 2, 1 << 3
STATE_DONE = 8
"""led[7:4] once the controller has finished: S_DONE of vdla_ulx3s_top.sv."""


@dataclass(frozen=True)
class SelftestImage:
    """The self-test's RAM contents and the parameters the top needs to run it."""

    config: str
    case: str
    mem_words: int
    """Bus words of on-chip DRAM (the program image rounded up to whole words)."""
    insn_addr: int
    insn_count: int
    dram: bytes
    """The initial image, ``mem_words`` bus words."""
    expect: bytes
    """The image after the run, as the functional simulator computes it."""

    def parameters(self) -> dict[str, int]:
        """The top's parameters (``MEM_WORDS``, ``INSN_ADDR``, ``INSN_COUNT``)."""
        return {"MEM_WORDS": self.mem_words, "INSN_ADDR": self.insn_addr, "INSN_COUNT": self.insn_count}


@dataclass(frozen=True)
class SelftestRun:
    """The LEDs of the top when the simulation stopped, and the clock cycles it took."""

    leds: int
    cycles: int

    @property
    def done(self) -> bool:
        return bool(self.leds & LED_DONE)

    @property
    def passed(self) -> bool:
        """Done, every word matched, no fault."""
        return self.done and bool(self.leds & LED_PASS) and not self.leds & (LED_FAIL | LED_FAULT)

    def describe(self) -> str:
        """The LEDs in words, e.g. ``done, pass``."""
        names = [n for bit, n in ((LED_DONE, "done"), (LED_PASS, "pass"), (LED_FAIL, "fail"), (LED_FAULT, "fault"))
                 if self.leds & bit]
        return ", ".join(names) or f"nothing (controller state {self.leds >> 4})"


def selftest_image(cfg: HwConfig | str) -> SelftestImage:
    """The self-test program of ``cfg`` laid out for the on-chip RAM, with its fsim result."""
    from vdla.runtime.backends import run
    from vdla.runtime.system_programs import build_case

    cfg = load_config(cfg)
    program = build_case(cfg, SELFTEST_CASE)
    final = run(program, "fsim").dram
    words = -(-program.dram.size // cfg.bus_bytes)
    size = words * cfg.bus_bytes

    def padded(image: np.ndarray) -> bytes:
        out = np.zeros(size, np.uint8)
        out[:image.size] = image
        return out.tobytes()

    return SelftestImage(cfg.name, SELFTEST_CASE, words, program.insn_addr, program.insn_count,
                         padded(program.dram), padded(final))


def hex_lines(image: bytes, word_bytes: int) -> str:
    """``$readmemh`` text: one bus word per line, byte 0 in the least significant bits."""
    return "".join(image[i:i + word_bytes][::-1].hex() + "\n" for i in range(0, len(image), word_bytes))


def write_hex_files(image: SelftestImage, cfg: HwConfig, folder: Path) -> None:
    """Write :data:`DRAM_HEX` and :data:`EXPECT_HEX` (the names the top reads) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DRAM_HEX).write_text(hex_lines(image.dram, cfg.bus_bytes))
    (folder / EXPECT_HEX).write_text(hex_lines(image.expect, cfg.bus_bytes))


def top_sources(cfg: HwConfig) -> list[Path]:
    """The accelerator's sources for ``cfg`` followed by the board top's."""
    return rtl_sources(cfg) + [SCRIPTS_DIR / name for name in TOP_SOURCES]


def build_selftest_sim(cfg: HwConfig | str, image: SelftestImage) -> Path:
    """Build (cached) the Verilator binary of :data:`BENCH` around the top for ``image``; returns it."""
    cfg = load_config(cfg)
    sources = top_sources(cfg) + [SCRIPTS_DIR / f"{BENCH}.sv"]
    params = [f"-G{k}={v}" for k, v in image.parameters().items()]
    args = ["--binary", "--timing", *VERILATOR_BUILD_ARGS, "--top-module", BENCH, *params]
    work = build_dir(cfg, "ulx3s-selftest-sim", sources, {"args": args})
    binary = work / "obj" / f"V{BENCH}"
    if binary.exists():
        return binary
    cmd = [str(verilator_bin()), *args, "--Mdir", "obj", "-j", str(BUILD_JOBS), *map(str, sources)]
    proc = subprocess.run(cmd, check=False, cwd=work, env=tool_env(), capture_output=True, text=True)
    (work / "build.log").write_text(proc.stdout + proc.stderr)
    raise_if_interrupted(proc.returncode)
    if proc.returncode != 0 or not binary.exists():
        raise RtlBuildError(f"Verilator could not build the ULX3S self-test bench for {cfg.label()} "
                            f"(exit {proc.returncode}); see {work / 'build.log'}")
    return binary


_LEDS = re.compile(r"LEDS ([01]{8}) CYCLES (\d+)")


def run_selftest_sim(binary: Path, run_dir: Path, max_cycles: int = SIM_MAX_CYCLES) -> SelftestRun:
    """Run the bench in ``run_dir`` (which holds the hex files) until the top reports done."""
    proc = subprocess.run([str(binary), "+verilator+seed+1"], check=False, cwd=run_dir, capture_output=True, text=True,
                          timeout=max(60, max_cycles // 100_000))
    (run_dir / "sim.log").write_text(proc.stdout + proc.stderr)
    raise_if_interrupted(proc.returncode)
    found = _LEDS.search(proc.stdout)
    if proc.returncode != 0 or found is None:
        raise ToolchainError(f"the self-test simulation in {run_dir} ended without a LED report "
                             f"(exit {proc.returncode}); see {run_dir / 'sim.log'}")
    return SelftestRun(int(found.group(1), 2), int(found.group(2)))


def simulate_selftest(cfg: HwConfig | str, run_dir: Path) -> SelftestRun:
    """Write the self-test's hex files into ``run_dir`` and simulate the board top on them."""
    cfg = load_config(cfg)
    image = selftest_image(cfg)
    write_hex_files(image, cfg, run_dir)
    return run_selftest_sim(build_selftest_sim(cfg, image), run_dir)
