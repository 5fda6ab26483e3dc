"""The driver of a board the host reaches over a serial port: the ULX3S SoC (docs/fpga_ulx3s.md).

:func:`open_serial_board` opens the port named by ``port`` at the baud of the bitstream folder's
``soc.json``, then checks, in order, before anything runs:

1. a UART bridge answers (the SoC's identifier ROM reads back): otherwise the bitstream is not
   loaded, the port is another device's or the baud is wrong -- each named in the error;
2. the identifier names a VDLA SoC; the SDRAM is initialised (the sequence litedram generated for
   the SDRAM, issued through the controller's DFI injector, as LiteX's BIOS would);
3. CONFIG_ID and BUILD_ID are the folder's config digest and build id;
4. the system program ``gemm`` (GEMM, ALU, loads, stores, dependency tokens) runs and its DRAM
   equals fsim's, bit for bit.

:meth:`SerialBoard.run` then runs a program as the Zynq driver does (:mod:`vdla.runtime.fpga.board`):
CONFIG_ID check, the ISA's static rules and the fsim pre-check, STATUS not busy, the image written
into the SDRAM at :data:`PROGRAM_BASE` with its addresses moved there, WINDOW_BASE/LIMIT set to the
image, INSN_ADDR/INSN_COUNT/start, STATUS polled with a watchdog, the FAULT registers turned into
fsim's error when the design stopped a program, CYCLES read, and the bytes the program's STOREs may have written
read back (the accelerator writes DRAM only through STORE; the rest of the image is what was
uploaded). Large transfers show progress.

The same code drives the simulated SoC: its port is a pseudo-terminal
(:class:`vdla_hw.fpga.ulx3s_sim.SimulatedUlx3s`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from vdla.runtime.fpga.board import DEFAULT_TIMEOUT, precheck_program, start_and_wait
from vdla.runtime.fpga.relocate import alignment, place_image, restore_image, store_ranges
from vdla.runtime.fpga.serial_link import BoardNotAnsweringError, SerialLink, transfer_bar
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla_hw import regmap
from vdla_hw.config import HwConfig
from vdla_hw.errors import BadFileError, DeviceFaultError, UsageError
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import MANIFEST_NAME, manifest_config, read_manifest
from vdla_hw.fpga.ulx3s_soc import SOC_FILE, SOC_FORMAT
from vdla_hw.isa import opcode_of

PROGRAM_BASE = 1 << 20
"""Where in the SDRAM a program's image goes: not 0, so the relocation is exercised as on a Zynq."""
SELFTEST = "gemm"
IDENT_PREFIX = "VDLA "
IDENT_WORDS = 64


def read_soc_info(folder: Path) -> dict[str, Any]:
    """The folder's ``soc.json``; a :class:`BadFileError` names what is wrong."""
    path = Path(folder) / SOC_FILE
    fix = f"rebuild the folder with `vdla fpga build --board ulx3s -o {folder}`"
    if not path.is_file():
        raise BadFileError(f"{folder} has no {SOC_FILE}: it is not a ULX3S SoC build", hint=fix)
    try:
        info = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise BadFileError(f"{path} is not valid JSON ({exc})", hint=fix) from None
    if info.get("format") != SOC_FORMAT:
        raise BadFileError(f"{path} has format {info.get('format')!r}; this vdla reads {SOC_FORMAT!r}", hint=fix)
    return info


@dataclass
class SerialBoard:
    """A ULX3S SoC on a serial port; the interface of :class:`vdla.runtime.fpga.board.Board`."""

    board: str
    config: HwConfig
    folder: Path
    info: dict[str, Any]
    link: SerialLink = field(repr=False)
    config_id: int = 0
    build_id: int = 0
    identifier: str = ""
    emulated: bool = False
    simulated: bool = False
    """True when the port is the simulated SoC's pseudo-terminal."""
    checks: list[str] = field(default_factory=list)

    # ---- registers ------------------------------------------------------------------------------
    def read(self, name: str) -> int:
        """Read the accelerator's register ``name`` (vdla_hw.regmap) over the bridge."""
        return self.link.read32(self.info["vdla_base"] + regmap.offset(name))

    def write(self, name: str, value: int) -> None:
        """Write the accelerator's register ``name`` over the bridge."""
        self.link.write32(self.info["vdla_base"] + regmap.offset(name), value)

    # ---- SDRAM ----------------------------------------------------------------------------------
    def write_dram(self, offset: int, data: np.ndarray, desc: str = "") -> None:
        """Write bytes into the SDRAM at ``offset`` (the accelerator's address)."""
        self.link.write_bytes(self.info["sdram_base"] + offset, data, desc=desc)

    def read_dram(self, offset: int, nbytes: int, desc: str = "") -> np.ndarray:
        """Read ``nbytes`` of the SDRAM from ``offset``."""
        return self.link.read_bytes(self.info["sdram_base"] + offset, nbytes, desc=desc)

    def init_sdram(self) -> None:
        """Issue the SDRAM's init sequence through the DFI injector, then hand the SDRAM to the controller."""
        dfii = self.info["dfii"]
        ctrl = dfii["sdram_dfii_control"]
        on = 0x02 | 0x04 | 0x08  # software control: CKE, ODT, RESET_N up, SEL (hardware) down
        self.link.write32(ctrl, on)
        for _, a, ba, kind, value, delay_us in self.info["sdram_init"]:
            if kind == "control":
                self.link.write32(ctrl, value)
            else:
                self.link.write32(dfii["sdram_dfii_pi0_address"], a)
                self.link.write32(dfii["sdram_dfii_pi0_baddress"], ba)
                self.link.write32(dfii["sdram_dfii_pi0_command"], value)
                self.link.write32(dfii["sdram_dfii_pi0_command_issue"], 1)
            if delay_us:
                # litedram's delays are in microseconds at most; each bridge write takes longer
                # than the short ones already, so only the power-up wait needs a sleep.
                time.sleep(delay_us * 1e-6)
        self.link.write32(ctrl, 0x01)  # hardware control
        self.link.read32(ctrl)  # the writes have landed before the SDRAM is used

    # ---- running --------------------------------------------------------------------------------
    def run(self, program: Program, *, timeout: float = DEFAULT_TIMEOUT, precheck: bool = True) -> RunResult:
        """Run ``program``: the final DRAM image and the design's cycle count (see the module docstring)."""
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        regmap.check_config_id(self.read("CONFIG_ID"), program.config)
        precheck_program(program, precheck)
        status = self.read("STATUS")
        if status & regmap.STATUS_BUSY:
            raise DeviceFaultError(f"the accelerator on {self.board} is still busy (STATUS {status:#x}) from an "
                                   "earlier run that did not finish",
                                   hint="press the board's reset button (PWR) or load the bitstream again "
                                        "(vdla fpga program)")
        cfg = program.config
        align = alignment(cfg)
        base = -(-PROGRAM_BASE // align) * align
        placed = place_image(program, base)
        nbytes = -(-placed.size // 4) * 4
        if base + nbytes > self.info["sdram_size"]:
            raise UsageError(f"the program's DRAM image ({placed.size:,} bytes) does not fit the board's "
                             f"{self.info['sdram_size'] >> 20} MiB SDRAM from {base:#x}",
                             hint="split the model into smaller programs (vdla compile) or use a smaller batch")
        image = np.zeros(nbytes, dtype=np.uint8)
        image[:placed.size] = placed
        t_up = time.perf_counter()
        self.write_dram(base, image, desc="program -> SDRAM")
        t0 = time.perf_counter()
        polls, wall, cycles = start_and_wait(self.read, self.write, self.board, program, base, timeout,
                                             "press the board's reset button or load the bitstream again to reset "
                                             "the accelerator")
        t_down = time.perf_counter()
        back = image.copy()
        ranges = [(s, min(e, nbytes)) for s, e in store_ranges(program) if s < nbytes]
        read = sum(e - s for s, e in ranges)
        with transfer_bar(read, "SDRAM -> host", self.link.progress) as pbar:
            for start, end in ranges:
                back[start:end] = self.read_dram(base + start, end - start)
                pbar.update(end - start)
        back = back[:placed.size]
        t_end = time.perf_counter()
        final = restore_image(program, placed, back)
        counters = Counter(opcode_of(i).name for i in program.instructions)
        extra = {"board": self.board, "emulated": self.emulated, "simulated": self.simulated, "build_id": self.build_id, "port": self.link.port,
                 "physical_address": base, "status_polls": polls, "wall_seconds": wall,
                 "upload_seconds": t0 - t_up, "download_seconds": t_end - t_down, "upload_bytes": nbytes,
                 "download_bytes": read,
                 "baud": self.link.baud}
        return RunResult("fpga", program, final,
                         {"instructions": program.insn_count, **{f"insn.{k}": v for k, v in sorted(counters.items())}},
                         cycles, extra)

    def close(self) -> None:
        """Close the serial port."""
        self.link.close()


def self_test(board: SerialBoard | Any) -> str:
    """Run the system program :data:`SELFTEST` on ``board`` and compare it with fsim bit for bit."""
    from vdla.runtime.system_programs import build_case
    from vdla.simulator.fsim import run_fsim

    program = build_case(board.config, SELFTEST)
    got = board.run(program).dram
    expected = run_fsim(program.config, program.instructions, program.dram).dram
    if not np.array_equal(got, expected):
        bad = int(np.count_nonzero(got != expected))
        raise DeviceFaultError(f"self-test failed on {board.board}: program {SELFTEST!r} left {bad} DRAM bytes that "
                               "differ from fsim's",
                               hint="the board's SDRAM or link is unreliable: reseat the USB cable, reload the "
                                    "bitstream, lower the clock (soc.json) and rebuild")
    return f"self-test {SELFTEST!r} bit-exact vs fsim"


def open_serial_board(bitstream_dir: Path | str, port: str, *, timeout: float = 5.0, selftest: bool = True,
                      progress: bool = True) -> SerialBoard:
    """Open the ULX3S SoC on ``port`` and prove it is the folder's design (see the module docstring).

    ``timeout`` is how long one bridge read may wait for the board.
    """
    folder = Path(bitstream_dir).resolve()
    manifest = read_manifest(folder)
    cfg = manifest_config(folder, manifest)
    brd = get_board(manifest.board)
    if not brd.serial:
        raise UsageError(f"{folder} is a bitstream for {brd.name}, which is not driven over a serial port",
                         hint="drop --port (a Zynq board runs the driver on its own Linux)")
    info = read_soc_info(folder)
    if info.get("config_digest") != cfg.digest or int(info.get("build_id", -1)) != manifest.build_id:
        raise BadFileError(f"{folder / SOC_FILE} describes another build than {folder / MANIFEST_NAME}",
                           hint="the folder's files do not belong together: rebuild it with `vdla fpga build`")
    link = SerialLink(port, int(info["baud"]), timeout=timeout, progress=progress)
    board = SerialBoard(brd.name, cfg, folder, info, link)
    try:
        link.drain()
        board.identifier = _identify(board, port)
        board.init_sdram()
        board.config_id = board.read("CONFIG_ID")
        board.build_id = board.read("BUILD_ID")
        regmap.check_config_id(board.config_id, cfg)
        board.checks.append(f"CONFIG_ID 0x{board.config_id:08x} = config {cfg.name!r} (digest {cfg.digest})")
        if board.build_id != manifest.build_id:
            raise DeviceFaultError(
                f"the bitstream loaded on the {brd.name} at {port} has build id {board.build_id:#010x}, but "
                f"{folder / MANIFEST_NAME} describes build {manifest.build_id:#010x}",
                hint=f"load this folder's bitstream: vdla fpga program --board {brd.name} --bitstream {folder}")
        board.checks.append(f"BUILD_ID 0x{board.build_id:08x} = manifest")
        if selftest:
            board.checks.append(self_test(board))
    except BaseException:
        board.close()
        raise
    return board


def _identify(board: SerialBoard, port: str) -> str:
    base = board.info.get("identifier_base")
    try:
        words = board.link.read_words(base, IDENT_WORDS)
    except BoardNotAnsweringError as exc:
        raise BoardNotAnsweringError(
            f"no VDLA SoC answers on {port} at {board.link.baud} baud: {exc}",
            hint=f"load the bitstream (vdla fpga program --board {board.board} --bitstream {board.folder}), check "
                 "that this is the board's FTDI port, and that no other program holds it") from None
    chars = bytes(int(w) & 0xFF for w in words).split(b"\0", 1)[0]
    ident = chars.decode("ascii", errors="replace")
    if not ident.startswith(IDENT_PREFIX):
        raise DeviceFaultError(f"the device on {port} answers as {ident!r}, not as a VDLA SoC",
                               hint=f"load the VDLA bitstream: vdla fpga program --board {board.board} "
                                    f"--bitstream {board.folder}")
    board.checks.append(f"identifier {ident!r}")
    return ident
