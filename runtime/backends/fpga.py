"""The ``fpga`` backend: a program on a board loaded with a bitstream, through the pynq API.

It is :class:`vdla.runtime.fpga.Board` behind ``run(program, backend="fpga", ...)``: the bitstream
folder comes from ``bitstream=`` (``vdla sim --bitstream DIR``) or ``$VDLA_FPGA_BITSTREAM``. On a
board the folder holds the Vivado build; emulated (``emulate=True``, ``--emulate`` or
``VDLA_FPGA_EMULATE=1``) the board is the Verilated RTL, and without a folder one is made for the
program's config (a PYNQ-Z2 manifest, build id as ``vdla fpga build`` would choose it). A loaded
board is kept for the next run of the same folder (a bitstream load takes seconds on a board).
"""

from __future__ import annotations

import os
from pathlib import Path
import atexit
from typing import Any, ClassVar

from vdla.runtime.backends import BackendError, BackendOption
from vdla.runtime.fpga.board import (
    DEFAULT_TIMEOUT,
    EMULATE_ENV,
    Board,
    emulate_default,
    open_board,
)
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla_hw.config import HwConfig
from vdla_hw.fpga.boards import BOARDS, get_board
from vdla_hw.fpga.manifest import Manifest, choose_build_id, read_manifest, write_manifest
from vdla_hw.rtl_build import cache_root

BITSTREAM_ENV = "VDLA_FPGA_BITSTREAM"
PORT_ENV = "VDLA_FPGA_PORT"
EMULATED_BOARD = "pynq-z2"
"""The board an emulated run without a bitstream folder pretends to be."""

SIM_PORT = "sim"
"""``--port sim``: the simulated SoC instead of a board on a serial port."""

_OPEN: dict[tuple[Path, bool | str], tuple[Manifest, Any]] = {}
"""Boards loaded by this process, by (folder, emulated or port), with the manifest they were loaded from."""
_SIMS: dict[str, Any] = {}
"""Simulated serial boards this process started, by config digest (stopped at exit)."""


def emulated_bitstream(cfg: HwConfig, board: str = EMULATED_BOARD) -> Path:
    """A bitstream folder for the emulated ``board`` with ``cfg`` (only its manifest: the RTL is the bitstream)."""
    brd = get_board(board)
    build_id = choose_build_id(brd, cfg)
    folder = cache_root() / f"fpga-emulated-{brd.name}-{cfg.name}-{cfg.digest}-{build_id:08x}"
    if not (folder / "bitstream.json").is_file():
        write_manifest(folder, brd, cfg, build_id)
    return folder


class FpgaBackend:
    """Runs a program on an FPGA board (or the emulated one); see the module docstring."""

    name: ClassVar[str] = "fpga"
    OPTIONS: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("--bitstream", "bitstream", f"bitstream folder written by `vdla fpga build` (default: "
                      f"${BITSTREAM_ENV})", "str", None, "DIR"),
        BackendOption("--emulate", "emulate", f"run on the emulated board, the Verilated RTL (or {EMULATE_ENV}=1)",
                      "flag", None),
        BackendOption("--timeout", "timeout", "watchdog: most seconds to wait for the accelerator", "float",
                      DEFAULT_TIMEOUT, "S"),
        BackendOption("--board", "board", "the board (its bitstream folder names it too); ulx3s is driven over "
                      f"--port", "str", None, "NAME"),
        BackendOption("--port", "port", f"serial port of a board driven over USB serial, e.g. /dev/ttyUSB0, or "
                      f"'{SIM_PORT}' for the simulated ULX3S SoC (or ${PORT_ENV})", "str", None, "PORT"),
        BackendOption("--no-precheck", "no_precheck", "skip the functional pre-check on fsim (faster on a board; a "
                      "faulty program may then hang the accelerator or overwrite memory)", "flag", False),
    )

    @classmethod
    def unavailable(cls) -> str | None:
        """Why neither a board (pynq) nor the emulated one (Verilator) can run here, or None."""
        try:
            import pynq  # type: ignore[import-not-found]  # noqa: F401
            return None
        except ImportError:
            pass
        from vdla.runtime.backends.rtl import RtlBackend

        reason = RtlBackend.unavailable()
        return f"pynq is not installed and the emulated board cannot be built: {reason}" if reason else None

    def run(self, program: Program, *, bitstream: str | Path | None = None, emulate: bool | None = None,
            timeout: float = DEFAULT_TIMEOUT, no_precheck: bool | None = False, board: str | None = None,
            port: str | None = None) -> RunResult:
        port = port or os.environ.get(PORT_ENV)
        if board is not None:
            get_board(board)  # an unknown name is refused here, listing the boards
        if port is not None or (board is not None and get_board(board).serial):
            return self._run_serial(program, bitstream, board, port, timeout, bool(no_precheck), bool(emulate))
        emulate = emulate_default() if emulate is None else emulate
        folder = bitstream or os.environ.get(BITSTREAM_ENV)
        if folder is None:
            if not emulate:
                raise BackendError(
                    f"the fpga backend needs a bitstream folder: pass bitstream=DIR (vdla: --bitstream DIR) or set "
                    f"{BITSTREAM_ENV}; build one with `vdla fpga build`, or run on the emulated board (--emulate)")
            folder = emulated_bitstream(program.config)
        folder = Path(folder).resolve()
        manifest = read_manifest(folder)  # a wrong folder is named before anything is loaded
        key = (folder, emulate)
        loaded, board = _OPEN.get(key, (None, None))
        if board is not None and loaded != manifest:
            # The folder was redeployed since: its bitstream, not the one loaded earlier, must run.
            del _OPEN[key]
            board.close()
            board = None
        if board is None:
            board = open_board(folder, emulate=emulate)
            _OPEN[key] = (manifest, board)
        try:
            return board.run(program, timeout=timeout, precheck=not no_precheck)
        except BaseException:
            # The accelerator may be left busy or half-loaded: the next run loads the bitstream again.
            _OPEN.pop(key, None)
            board.close()
            raise

    def _run_serial(self, program: Program, bitstream: str | Path | None, board: str | None, port: str | None,
                    timeout: float, no_precheck: bool, emulate: bool) -> RunResult:
        """A board on a serial port (or ``port='sim'``: the simulated SoC) through the serial driver."""
        if emulate:
            raise BackendError(f"--emulate is the emulated Zynq board; a serial board is simulated with --port {SIM_PORT}")
        key, dev = open_serial(program.config, bitstream, board, port)
        try:
            return dev.run(program, timeout=timeout, precheck=not no_precheck)
        except BaseException:
            _OPEN.pop(key, None)
            dev.close()
            raise


def open_serial(cfg: HwConfig, bitstream: str | Path | None, board: str | None,
                port: str | None) -> tuple[tuple[Path, str], Any]:
    """The serial board (:class:`vdla.runtime.fpga.serial_board.SerialBoard`) for ``cfg`` on ``port``, opened and
    checked once per process and folder; ``port='sim'`` starts the simulated SoC of ``cfg``."""
    serial_boards = [b.name for b in BOARDS.values() if b.serial]
    name = board or (read_manifest(Path(bitstream)).board if bitstream else serial_boards[0])
    brd = get_board(name)
    if not brd.serial:
        raise BackendError(f"--port drives a board over a serial port; {brd.name} is not one (those are: "
                           f"{', '.join(serial_boards)})")
    if port is None:
        raise BackendError(f"the {brd.name} is driven over its USB serial port: pass port=... (vdla: --port "
                           f"/dev/ttyUSB0, or --port {SIM_PORT} for the simulated SoC) or set {PORT_ENV}")
    if port == SIM_PORT:
        from vdla_hw.fpga.ulx3s_sim import SimulatedUlx3s

        sim = _SIMS.get(cfg.digest)
        if sim is None:
            sim = _SIMS[cfg.digest] = SimulatedUlx3s(cfg)
        folder, real_port, link_timeout = sim.folder, sim.port, 120.0
    else:
        folder = Path(bitstream or os.environ.get(BITSTREAM_ENV) or f"vdla-fpga-{brd.name}-{cfg.name}")
        if not folder.is_dir():
            raise BackendError(f"no bitstream folder {folder}: the driver needs the folder `vdla fpga build` wrote "
                               f"for the board (its soc.json, manifest and config); pass --bitstream DIR, or build "
                               f"it: vdla fpga build --board {brd.name} --config {cfg.name} -o {folder}")
        real_port, link_timeout = port, 5.0
    folder = Path(folder).resolve()
    manifest = read_manifest(folder)
    key = (folder, real_port)
    loaded, dev = _OPEN.get(key, (None, None))
    if dev is not None and loaded != manifest:
        del _OPEN[key]
        dev.close()
        dev = None
    if dev is None:
        from vdla.runtime.fpga.serial_board import open_serial_board

        dev = open_serial_board(folder, real_port, timeout=link_timeout)
        dev.simulated = port == SIM_PORT
        _OPEN[key] = (manifest, dev)
    return key, dev


def _stop_sims() -> None:
    for key in list(_OPEN):
        if isinstance(key[1], str):
            _OPEN.pop(key)[1].close()
    while _SIMS:
        _SIMS.popitem()[1].close()


atexit.register(_stop_sims)
