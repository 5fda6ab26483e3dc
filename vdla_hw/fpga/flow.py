"""One entry point for every board's bitstream flow: :func:`build_bitstream` picks it from the board table."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import UsageError
from vdla_hw.fpga.boards import get_board


@dataclass(frozen=True)
class BuildResult:
    """What a flow wrote and, when it ran, what it produced."""

    board: str
    config: str
    """The config's label (``'name' (digest)``)."""
    project_dir: Path
    ran: bool
    """True when the tools ran and the bitstream exists; False when only the project was written."""
    run_hint: str
    """The shell command that builds the written project (on a machine with the tools)."""
    outputs: dict[str, Path] = field(default_factory=dict)
    """Produced files by name (bitstream, reports ...); empty when not run."""
    summary: dict[str, str] = field(default_factory=dict)
    """Figures the flow reports (clock, slack, resources ...) as text; empty when not run."""
    build_id: int = 0
    """The BUILD_ID the design was given (:func:`vdla_hw.fpga.manifest.choose_build_id`)."""
    bitstream_files: dict[str, Path] = field(default_factory=dict)
    """The files the board's driver loads, by role: ``bit`` and (Zynq boards) ``hwh``; empty when not run."""


def build_bitstream(board_name: str, config: HwConfig | str, out_dir: Path, *, run: bool = True,
                    seed: int | None = None, target_mhz: float | None = None,
                    pnr_options: str | None = None, synth_options: str | None = None) -> BuildResult:
    """Write (and with ``run``, build) the project of ``config`` for the board called ``board_name``.

    The folder's ``bitstream.json`` (:mod:`vdla_hw.fpga.manifest`) is written with the project
    and rewritten with the bitstream's files once the tools have produced them. ``seed``,
    ``target_mhz``, ``pnr_options`` and ``synth_options`` (nextpnr's placement seed, the frequency it
    works towards, its placer/router options, :func:`vdla_hw.fpga.ecp5_pnr_options.parse_pnr_options`,
    and yosys's ``synth_ecp5`` flags, :func:`vdla_hw.fpga.ecp5_synth_options.parse_synth_options`) are
    taken by the ECP5 self-test flow only.
    """
    from vdla_hw.fpga.manifest import choose_build_id, write_manifest

    board = get_board(board_name)
    options = {k: v for k, v in {"seed": seed, "target_mhz": target_mhz, "pnr_options": pnr_options,
                                 "synth_options": synth_options}.items() if v is not None}
    if options and board.flow != "ecp5_flow":
        flags = " and ".join(f"--{k.replace('_', '-')}" for k in options)
        raise UsageError(f"{flags} {'is' if len(options) == 1 else 'are'} taken by the ECP5 self-test flow only, not by "
                         f"the {board.name} board's {board.flow}", hint=f"drop {flags}, or build --board ulx3s-selftest")
    cfg = load_config(config)
    flow = importlib.import_module(f"vdla_hw.fpga.{board.flow}")
    out_dir = Path(out_dir).resolve()
    build_id = choose_build_id(board, cfg)
    write_manifest(out_dir, board, cfg, build_id)
    result = flow.build(board, cfg, out_dir, run=run, build_id=build_id, **options)
    if result.ran:
        write_manifest(out_dir, board, cfg, build_id, result.bitstream_files)
    return result
