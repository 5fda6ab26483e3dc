"""The ``fpga`` backend: a program on a board loaded with a bitstream, through the pynq API.

It is :class:`runtime.fpga.Board` behind ``run(program, backend="fpga", ...)``: the bitstream
folder comes from ``bitstream=`` (``vdla sim --bitstream DIR``) or ``$VDLA_FPGA_BITSTREAM``. On a
board the folder holds the Vivado build; emulated (``emulate=True``, ``--emulate`` or
``VDLA_FPGA_EMULATE=1``) the board is the Verilated RTL, and without a folder one is made for the
program's config (a PYNQ-Z2 manifest, build id as ``vdla fpga build`` would choose it). A loaded
board is kept for the next run of the same folder (a bitstream load takes seconds on a board).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar

from runtime.backends import BackendError, BackendOption
from runtime.fpga.board import (
    DEFAULT_TIMEOUT,
    EMULATE_ENV,
    Board,
    emulate_default,
    open_board,
)
from runtime.program import Program
from runtime.result import RunResult
from vdla_hw.config import HwConfig
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import Manifest, choose_build_id, read_manifest, write_manifest
from vdla_hw.rtl_build import cache_root

BITSTREAM_ENV = "VDLA_FPGA_BITSTREAM"
EMULATED_BOARD = "pynq-z2"
"""The board an emulated run without a bitstream folder pretends to be."""

_OPEN: dict[tuple[Path, bool], tuple[Manifest, Board]] = {}
"""Boards loaded by this process, by (folder, emulated), with the manifest they were loaded from."""


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
        from runtime.backends.rtl import RtlBackend

        reason = RtlBackend.unavailable()
        return f"pynq is not installed and the emulated board cannot be built: {reason}" if reason else None

    def run(self, program: Program, *, bitstream: str | Path | None = None, emulate: bool | None = None,
            timeout: float = DEFAULT_TIMEOUT, no_precheck: bool | None = False) -> RunResult:
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
