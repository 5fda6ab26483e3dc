"""The whole ULX3S SoC under Verilator, its USB serial port a pseudo-terminal.

:func:`soc_sim_binary` generates the SoC's simulation variant (:mod:`vdla_hw.fpga.ulx3s_soc`,
``variant="sim"``) and builds it with ``fpga_scripts/ulx3s/soc_sim_main.cpp``, once per config,
build id and source hash, in the build cache. :class:`SimulatedUlx3s` starts it and gives the pty's
path: the host driver (``vdla.runtime.fpga.serial_board``) opens that path exactly as it opens the
board's ``/dev/ttyUSB0``. :func:`sim_bitstream_folder` writes a bitstream folder for the simulated
board (manifest, config, ``soc.json``) so the driver's checks run as on the board.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import ToolchainError
from vdla_hw.fpga import ulx3s_soc
from vdla_hw.fpga.boards import FPGA_SCRIPTS_DIR, get_board
from vdla_hw.fpga.manifest import choose_build_id, write_manifest
from vdla_hw.progress import ticking
from vdla_hw.rtl_build import BUILD_JOBS, build_dir, rtl_sources, tool_env, verilator_bin

MAIN = FPGA_SCRIPTS_DIR / "ulx3s" / "soc_sim_main.cpp"
BINARY = f"V{ulx3s_soc.TOP}"
BOARD = "ulx3s"
_VERILATOR_ARGS = ("--cc", "--exe", "--build", "-O3", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-MULTIDRIVEN",
                   "-Wno-WIDTHEXPAND", "-Wno-WIDTHTRUNC", "--x-assign", "fast", "--x-initial", "fast",
                   "--output-split", "20000", "-MAKEFLAGS", "OPT_FAST=-O2 OPT_SLOW=-O1 OPT_GLOBAL=-O1")


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def soc_sim_binary(cfg: HwConfig | str, build_id: int, *, progress: bool = True) -> tuple[Path, dict]:
    """The Verilated SoC of ``cfg`` with ``build_id`` (built on first use) and its ``soc.json``."""
    cfg = load_config(cfg)
    soc_src = Path(ulx3s_soc.__file__)
    sources = list(rtl_sources(cfg)) + [soc_src, MAIN]
    folder = build_dir(cfg, f"ulx3s-soc-sim-{build_id:08x}", sources,
                       {"args": _VERILATOR_ARGS, "clk": ulx3s_soc.soc_clock_mhz(cfg), "baud": ulx3s_soc.BAUD})
    binary = folder / "obj" / BINARY
    info_file = folder / ulx3s_soc.SOC_FILE
    if binary.exists() and info_file.exists():
        return binary, json.loads(info_file.read_text())
    with _locked(folder / ".lock"):
        if not (binary.exists() and info_file.exists()):
            _build(cfg, build_id, folder, progress)
    return binary, json.loads(info_file.read_text())


def _build(cfg: HwConfig, build_id: int, folder: Path, progress: bool) -> None:
    params = ulx3s_soc.SocParams(cfg, build_id, "sim", sys_clk_mhz=ulx3s_soc.soc_clock_mhz(cfg))
    ulx3s_soc.generate(params, folder)
    gateware = folder / "gateware"
    verilog = gateware / f"{ulx3s_soc.TOP}.v"
    cmd = [str(verilator_bin()), *_VERILATOR_ARGS, "-j", str(BUILD_JOBS), "--top-module", ulx3s_soc.TOP,
           "--Mdir", str(folder / "obj"), *map(str, rtl_sources(cfg)), str(verilog), str(MAIN)]
    with ticking(f"Verilating the ULX3S SoC ({cfg.name})"):
        proc = subprocess.run(cmd, cwd=gateware, env=tool_env(), capture_output=True, text=True, check=False)
    (folder / "build.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not (folder / "obj" / BINARY).exists():
        raise ToolchainError(f"Verilator could not build the simulated ULX3S SoC for {cfg.label()} "
                             f"(exit {proc.returncode})", hint=f"see {folder / 'build.log'}")


def sim_bitstream_folder(cfg: HwConfig | str, folder: Path | None = None) -> Path:
    """A bitstream folder for the simulated ULX3S of ``cfg``: manifest, config and ``soc.json``.

    Its build id is the one ``vdla fpga build --board ulx3s`` chooses, so the simulated SoC
    and the bitstream carry the same BUILD_ID. Defaults to a folder in the build cache.
    """
    from vdla_hw.rtl_build import cache_root

    cfg = load_config(cfg)
    board = get_board(BOARD)
    build_id = choose_build_id(board, cfg)
    _, info = soc_sim_binary(cfg, build_id)
    folder = Path(folder) if folder is not None else cache_root() / f"ulx3s-sim-{cfg.name}-{cfg.digest}-{build_id:08x}"
    write_manifest(folder, board, cfg, build_id)
    (folder / ulx3s_soc.SOC_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return folder


class SimulatedUlx3s:
    """A running simulated board: ``port`` is its pty (pass it where a board's port goes)."""

    def __init__(self, cfg: HwConfig | str, *, progress: bool = True, start_timeout: float = 30.0) -> None:
        cfg = load_config(cfg)
        self.folder = sim_bitstream_folder(cfg)
        build_id = json.loads((self.folder / "bitstream.json").read_text())["build_id"]
        binary, info = soc_sim_binary(cfg, build_id, progress=progress)
        self.info = info
        cycles_per_bit = info["sys_clk_hz"] / info["baud"]
        self._proc = subprocess.Popen([str(binary), f"{cycles_per_bit:.6f}"], cwd=binary.parent.parent / "gateware",
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.port = self._read_port(start_timeout)

    def _read_port(self, timeout: float) -> str:
        assert self._proc.stdout is not None
        deadline = time.monotonic() + timeout
        line = b""
        while not (line.endswith(b"\n") and line.startswith(b"PTY ")):
            if line.endswith(b"\n"):
                line = b""  # a line Verilator printed first
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._proc.stdout], [], [], max(0.0, left))
            if not ready:
                self.close()
                raise ToolchainError(f"the simulated ULX3S did not open its pty within {timeout:g} s")
            chunk = os.read(self._proc.stdout.fileno(), 1)
            if not chunk:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                self.close()
                raise ToolchainError(f"the simulated ULX3S exited before opening its pty: {err.strip()}")
            line += chunk
        text = line.decode().strip()
        if not text.startswith("PTY "):
            self.close()
            raise ToolchainError(f"the simulated ULX3S printed {text!r} instead of its pty")
        return text[4:]

    def close(self) -> None:
        """Stop the simulation."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> SimulatedUlx3s:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
