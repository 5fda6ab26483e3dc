"""The board driver: a bitstream folder loaded through the pynq API, programs run on it.

:func:`open_board` reads the folder's ``bitstream.json``, loads the bitstream with
``pynq.Overlay``, maps the accelerator's registers with ``pynq.MMIO`` and checks that the
design is the one the folder describes (CONFIG_ID, BUILD_ID). :meth:`Board.run` then runs a
program with this register sequence (docs/fpga.md, "The fpga backend"):

1. read CONFIG_ID: refuse a program compiled for another config, naming both;
2. read STATUS: refuse to start while the accelerator is busy;
3. ``pynq.allocate`` one contiguous buffer, copy the program's image into it with its
   LOAD/STORE addresses moved to the buffer's physical address, ``flush()`` it;
4. write WINDOW_BASE/LIMIT (the job's buffer), INSN_ADDR (physical), INSN_COUNT, then CONTROL = start;
5. read STATUS until done, or until the watchdog's time runs out (then read CYCLES and
   STATUS and raise :class:`FpgaTimeoutError` naming them);
6. read CYCLES_LO, CYCLES_HI; ``invalidate()`` the buffer and copy the image back.

The same code drives a real board (the ``pynq`` package on the board's Linux) and the emulated
one (:mod:`vdla.runtime.fpga.emulated_pynq`, whose device is the Verilated RTL); only
:func:`_pynq_api` chooses between them.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from vdla.runtime.faults import raise_device_fault, read_fault
from vdla.runtime.fpga import emulated_pynq
from vdla.runtime.fpga.relocate import alignment, place_image, restore_image
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla_hw import regmap
from vdla_hw.config import HwConfig
from vdla_hw.errors import DeviceFaultError, ToolchainError, UnsupportedError
from vdla_hw.fpga.boards import BOARDS, get_board
from vdla_hw.fpga.manifest import (
    MANIFEST_NAME,
    check_files,
    manifest_config,
    read_manifest,
)
from vdla_hw.isa import opcode_of

EMULATE_ENV = "VDLA_FPGA_EMULATE"
DEFAULT_TIMEOUT = 600.0
"""Seconds the driver polls STATUS before it gives up on a run."""


class FpgaTimeoutError(DeviceFaultError):
    """The accelerator did not raise STATUS.done within the driver's watchdog time."""


def emulate_default() -> bool:
    """Whether ``emulate=None`` means the emulated board: ``VDLA_FPGA_EMULATE=1``."""
    return os.environ.get(EMULATE_ENV, "") not in ("", "0")


def _pynq_api(emulate: bool) -> ModuleType:
    """The pynq API to drive the board with: the real package, or the emulated stand-in."""
    if emulate:
        return emulated_pynq
    try:
        import pynq  # type: ignore[import-not-found]
    except ImportError:
        raise ToolchainError(
            "the fpga backend drives a board through the pynq package, which is not installed here",
            hint=f"on the board's Linux: pip install pynq; to run on the Verilated RTL instead, pass emulate=True "
                 f"(vdla: --emulate, or {EMULATE_ENV}=1)") from None
    return pynq


@dataclass
class Board:
    """One loaded bitstream: ``board`` (name), ``config``, ``config_id`` and ``build_id`` as the
    design's registers read them (see the module docstring)."""

    board: str
    config: HwConfig
    config_id: int
    build_id: int
    folder: Path
    emulated: bool
    _pynq: ModuleType = field(repr=False)
    _device: Any = field(repr=False)
    _overlay: Any = field(repr=False)
    _mmio: Any = field(repr=False)

    # ---- registers ----------------------------------------------------------------------------
    def read(self, name: str) -> int:
        """Read the control register ``name`` (vdla_hw.regmap) over MMIO."""
        return int(self._mmio.read(regmap.offset(name)))

    def write(self, name: str, value: int) -> None:
        """Write the control register ``name`` over MMIO."""
        self._mmio.write(regmap.offset(name), int(value))

    @property
    def device(self) -> Any:
        """The pynq device (the emulated one records the register trace: ``device.trace``)."""
        return self._device

    # ---- running ------------------------------------------------------------------------------
    def run(self, program: Program, *, timeout: float = DEFAULT_TIMEOUT, precheck: bool = True) -> RunResult:
        """Run ``program``; returns the final DRAM image and the design's cycle count.

        The accelerator's DRAM window is set to the job's buffer: a LOAD/STORE outside it, or an
        SRAM range fault, stops the design, which raises fsim's error from the FAULT registers.
        ``precheck`` first runs the program on fsim (as the rtl backend does): a program that
        would read unwritten SRAM or deadlock is refused with fsim's error instead of giving
        wrong results or hanging the accelerator until the next bitstream load. ``timeout`` is the watchdog (seconds of polling STATUS).
        """
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        regmap.check_config_id(self.read("CONFIG_ID"), program.config)
        precheck_program(program, precheck)
        status = self.read("STATUS")
        if status & regmap.STATUS_BUSY:
            raise DeviceFaultError(f"the accelerator on {self.board} is still busy (STATUS {status:#x}) from an "
                                   "earlier run that did not finish",
                                   hint="reload the bitstream (open the board again) to reset it")
        align = alignment(program.config)
        nbytes = -(-program.dram.size // program.config.bus_bytes) * program.config.bus_bytes
        buf = self._pynq.allocate((nbytes + align,), dtype=np.uint8, target=self._device)
        try:
            skip = -buf.physical_address % align
            base = buf.physical_address + skip
            placed = place_image(program, base)
            buf[:] = 0
            buf[skip: skip + placed.size] = placed
            buf.flush()  # the CPU wrote through its cache; the accelerator reads DRAM
            polls, wall, cycles = start_and_wait(self.read, self.write, self.board, program, base, timeout,
                                                 "reload the bitstream (open the board again) to reset the accelerator")
            buf.invalidate()  # drop stale cache lines before reading what the accelerator wrote
            final = restore_image(program, placed, np.array(buf[skip: skip + placed.size]))
        finally:
            buf.freebuffer()
        counters = Counter(opcode_of(i).name for i in program.instructions)
        extra = {"board": self.board, "emulated": self.emulated, "build_id": self.build_id,
                 "physical_address": base, "status_polls": polls, "wall_seconds": wall}
        return RunResult("fpga", program, final,
                         {"instructions": program.insn_count, **{f"insn.{k}": v for k, v in sorted(counters.items())}},
                         cycles, extra)

    def close(self) -> None:
        """Release the device (the emulated one frees its simulation)."""
        if self.emulated and self._device is not None:
            self._device.close()
            self._device = None


def precheck_program(program: Program, precheck: bool) -> None:
    """The rtl backend's checks: the ISA's static rules always, fsim's run when ``precheck``."""
    from vdla.simulator.checks import check_opcodes, check_program
    from vdla.simulator.errors import (
        DeadlockError,
        MemoryAccessError,
        SimTimeoutError,
        SimulationError,
    )
    from vdla.simulator.fsim import run_fsim

    check_program(program.config, program.instructions)
    check_opcodes(program.dram, program.insn_addr, program.insn_count)
    if not precheck:
        return
    try:
        run_fsim(program.config, program.instructions, program.dram)
    except SimTimeoutError:
        return  # only fsim's step limit: a long program, left to the board
    except SimulationError as exc:
        what = ("hang the accelerator until the bitstream is reloaded" if isinstance(exc, DeadlockError) else
                "read or overwrite memory it does not own" if isinstance(exc, MemoryAccessError) else
                "give results that differ from fsim's or from run to run")
        args = (exc.blocked, exc.queues) if isinstance(exc, DeadlockError) else ()
        raise type(exc)(f"{exc} (found by the fpga backend's functional pre-check, before loading the program: on "
                        f"the board it would {what})", *args) from exc


VIVADO_OUTPUTS = {"bit": "out/vdla.bit", "hwh": "out/vdla.hwh"}
"""Where ``build.tcl`` writes the files pynq loads (fpga_scripts/vivado/build.tcl)."""


def _bitfile(folder: Path, manifest: Any) -> Path:
    """The ``.bit`` to load (its ``.hwh`` beside it): the manifest's, checked against their SHA-256.

    A folder built by running ``build.tcl`` by hand (on another machine) has a manifest without
    files; its Vivado outputs are used as they are -- the BUILD_ID register still proves after
    loading that the bitstream is this folder's build.
    """
    files = check_files(folder, manifest)
    if "bit" not in files:
        files = {role: folder / rel for role, rel in VIVADO_OUTPUTS.items() if (folder / rel).is_file()}
    if "bit" not in files or "hwh" not in files:
        raise DeviceFaultError(
            f"{folder} holds no bitstream: Vivado has not built it ({MANIFEST_NAME} lists no bit/hwh files and "
            f"there is no {VIVADO_OUTPUTS['bit']} with its .hwh)",
            hint=f"build it where Vivado is installed (see {folder / 'build.tcl'}), copy the folder back, or run "
                 f"emulated ({EMULATE_ENV}=1)")
    return files["bit"]


def open_board(bitstream_dir: Path | str, *, emulate: bool | None = None,
               slice_cycles: int = emulated_pynq.SLICE_CYCLES) -> Board:
    """Load the bitstream folder ``bitstream_dir`` (``vdla fpga build`` output) onto a board.

    ``emulate=None`` uses the real pynq device when ``VDLA_FPGA_EMULATE`` is unset, else the
    emulated one; ``emulate=True``: the "FPGA" is the Verilated RTL of the folder's config with
    its build id (``slice_cycles``: cycles it runs between two register reads while busy).
    """
    folder = Path(bitstream_dir).resolve()
    manifest = read_manifest(folder)
    cfg = manifest_config(folder, manifest)
    board = get_board(manifest.board)
    if board.serial:
        raise UnsupportedError(f"the {board.name} is driven over its USB serial port, not through pynq",
                               hint=f"pass the port: vdla ... --backend fpga --board {board.name} --port /dev/ttyUSB0 "
                                    f"(or --port sim for the simulated SoC); see docs/fpga_ulx3s.md")
    if board.ps is None:
        zynq = ", ".join(b.name for b in BOARDS.values() if b.ps is not None)
        raise UnsupportedError(f"board {board.name} has no processor to run a driver: its bitstream runs the built-in "
                               f"self-test (docs/fpga_ecp5.md)",
                               hint=f"build for a Zynq board ({zynq}) to run programs with the fpga backend")
    emulate = emulate_default() if emulate is None else emulate
    pynq = _pynq_api(emulate)
    if emulate:
        device = emulated_pynq.EmulatedDevice(f"emulated {board.name}", slice_cycles=slice_cycles)
        bitfile = folder / manifest.files.get("bit", MANIFEST_NAME)
    else:
        device, bitfile = None, _bitfile(folder, manifest)
    overlay = pynq.Overlay(str(bitfile), device=device)
    ip = overlay.ip_dict[emulated_pynq.IP_NAME]
    mmio = pynq.MMIO(ip["phys_addr"], ip["addr_range"], device=device)
    loaded = Board(board.name, cfg, 0, 0, folder, emulate, pynq, device, overlay, mmio)
    try:
        loaded.config_id = loaded.read("CONFIG_ID")
        loaded.build_id = loaded.read("BUILD_ID")
        regmap.check_config_id(loaded.config_id, cfg)
        if loaded.build_id != manifest.build_id:
            raise DeviceFaultError(
                f"the bitstream loaded on {board.name} has build id {loaded.build_id:#010x}, but {folder / MANIFEST_NAME} "
                f"describes build {manifest.build_id:#010x}",
                hint="the folder's files do not belong together: rebuild it with `vdla fpga build`")
    except BaseException:
        loaded.close()
        raise
    return loaded


def start_and_wait(read: Callable[[str], int], write: Callable[[str, int], None], board: str, program: Program,
                   base: int, timeout: float, reset_hint: str) -> tuple[int, float, int]:
    """Run ``program``, placed at DRAM byte ``base``, through the control registers: grant the window of its
    image, start, wait (watchdog ``timeout``), raise the simulators' error for a FAULT; (polls, wall s, cycles).

    One sequence for every board driver (Zynq over MMIO, the ULX3S over its serial bridge)."""
    t0 = time.perf_counter()
    # The job's image is all the accelerator may touch: its DMA faults outside it.
    write("WINDOW_BASE", base)
    write("WINDOW_LIMIT", base + program.dram.size)
    write("INSN_ADDR", base + program.insn_addr)
    write("INSN_COUNT", program.insn_count)
    write("CONTROL", regmap.CONTROL_START)
    polls = wait_done(read, board, program, base, t0 + timeout, timeout, reset_hint)
    wall = time.perf_counter() - t0
    fault = read_fault(read)
    if fault is not None:  # the simulators' error, in the program's own addresses
        raise_device_fault(program, (0, program.dram.size), fault)
    return polls, wall, read("CYCLES_LO") | (read("CYCLES_HI") << 32)


def wait_done(read: Callable[[str], int], board: str, program: Program, base: int, deadline: float, timeout: float,
              reset_hint: str) -> int:
    """Poll STATUS through ``read`` until the accelerator is done; the number of polls.

    Past ``deadline`` the watchdog raises :class:`FpgaTimeoutError` with STATUS, CYCLES and the program's place,
    and ``reset_hint`` (how this kind of board resets its accelerator)."""
    polls = 0
    while True:
        status = read("STATUS")
        polls += 1
        if status & regmap.STATUS_DONE:
            return polls
        if time.perf_counter() > deadline:
            cycles = read("CYCLES_LO") | (read("CYCLES_HI") << 32)
            raise FpgaTimeoutError(
                f"watchdog: the accelerator on {board} did not finish within {timeout:g} s "
                f"({polls} STATUS reads): STATUS {status:#x} (busy={bool(status & regmap.STATUS_BUSY)}), "
                f"CYCLES {cycles:,}, INSN_ADDR {base + program.insn_addr:#x}, INSN_COUNT {program.insn_count}",
                hint="a program whose dependency tokens never arrive hangs the accelerator: run it on fsim to "
                     "find the instruction (vdla sim --backend fsim), or raise the timeout if it is that long; "
                     + reset_hint)
