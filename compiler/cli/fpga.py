"""``vdla fpga``: bitstreams for FPGA boards.

``vdla fpga build --board B --config C [-o DIR]`` writes the board's project for the config into DIR
and runs the board's tools when they are installed. When they are not (Vivado is not on PATH), the
project is still written and the command fails (status 2) naming the missing tool and the command
that builds the folder on another machine; ``--no-run`` writes the project and succeeds.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vdla_hw.config import load_config
from vdla_hw.fpga.boards import BOARDS
from vdla_hw.fpga.flow import build_bitstream

_BUILD_DESCRIPTION = (
    "Write the board's project for the config into a folder and run the board's tools when they are installed. "
    "Without them (no vivado on PATH) the project is still written and the command exits 2 naming the missing "
    "tool and the command that builds the folder elsewhere; --no-run only writes the project and exits 0.")


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("fpga", help="build bitstreams for FPGA boards")
    sub = group.add_subparsers(dest="fpga_command", metavar="SUBCOMMAND", required=True)

    p = sub.add_parser("build", help="write a board's project for a config and build its bitstream",
                       description=_BUILD_DESCRIPTION)
    p.add_argument("--board", required=True, help=f"target board: {', '.join(BOARDS)}")
    p.add_argument("--config", default="default", help="preset name or config .json path (default: default)")
    p.add_argument("-o", "--output", default=None,
                   help="project folder (default: ./vdla-fpga-<board>-<config>)")
    p.add_argument("--no-run", action="store_true", help="only write the project; do not run the tools")
    p.set_defaults(func=_build)

    p = sub.add_parser("boards", help="list the boards and their parts")
    p.set_defaults(func=_boards)

    p = sub.add_parser("gen-scripts", help="regenerate fpga_scripts/<board>/board.tcl from the board table")
    p.set_defaults(func=_gen_scripts)


def _build(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    out = Path(args.output) if args.output else Path(f"vdla-fpga-{args.board}-{cfg.name}")
    result = build_bitstream(args.board, cfg, out, run=not args.no_run)
    print(f"wrote the {result.board} project for config {result.config} to {result.project_dir}")
    print(f"build id 0x{result.build_id:08x} (bitstream.json)")
    if not result.ran:
        print(f"build it on a machine with the board's tools: {result.run_hint}")
        return 0
    for key, value in result.summary.items():
        print(f"  {key:<22} {value}")
    for name, path in result.outputs.items():
        print(f"  {name:<22} {path}")
    return 0


def _boards(args: argparse.Namespace) -> int:
    for board in BOARDS.values():
        print(f"{board.name:<12} {board.part:<22} {board.flow:<8} {board.title}")
        for note in board.notes:
            print(f"{'':<12} {note}")
    return 0


def _gen_scripts(args: argparse.Namespace) -> int:
    from vdla_hw.fpga.vivado import board_tcl

    for board in BOARDS.values():
        if board.flow != "vivado":
            continue
        path = board.scripts_dir / "board.tcl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(board_tcl(board))
        print(f"wrote {path}")
    return 0
