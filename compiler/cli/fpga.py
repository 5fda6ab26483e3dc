"""``vdla fpga``: bitstreams for FPGA boards.

``vdla fpga build --board B --config C [-o DIR]`` writes the board's project for the config into DIR
and runs the board's tools when they are installed. When they are not (Vivado is not on PATH), the
project is still written and the command fails (status 2) naming the missing tool and the command
that builds the folder on another machine; ``--no-run`` writes the project and succeeds.

``vdla fpga deploy --board B --bitstream DIR --pool ADDR [--worker NAME]`` ships a built folder to
the pool's board workers of B (``vdla pool worker ADDR --board B``), which check it and then offer
``fpga-<board>-<config digest>`` (docs/fpga.md, "Deploy").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from vdla.compiler.cli.pool import add_tls_options, pool_executor
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError
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
    p.add_argument("--config", default=None, help="preset name or config .json path (default: the board's own preset, "
                   "else default)")
    p.add_argument("-o", "--output", default=None,
                   help="project folder (default: ./vdla-fpga-<board>-<config>)")
    p.add_argument("--no-run", action="store_true", help="only write the project; do not run the tools")
    p.add_argument("--seed", type=int, default=None, metavar="N",
                   help="ECP5 boards: nextpnr's placement seed (default 1); another seed gives another placement")
    p.add_argument("--seeds", default=None, metavar="A-B",
                   help="ECP5 boards: place and route once per seed (e.g. 1-4 or 1,3,7) into DIR/seed<N> and print "
                   "each seed's Fmax and the median; DIR itself then holds the best placement's bitstream")
    p.add_argument("--target-mhz", type=float, default=None, metavar="F",
                   help="ECP5 boards: the clock frequency the placer and router work towards (the LPF's FREQUENCY "
                   "and nextpnr --freq; default the board's oscillator, 25 MHz on the ULX3S)")
    p.add_argument("--pnr-options", default=None, metavar="SPEC",
                   help="ECP5 boards: nextpnr placer/router options, comma-separated: timing-weight=N "
                   "(--placer-heap-timingweight), critexp=N (--placer-heap-critexp), tmg-ripup (--tmg-ripup)")
    p.add_argument("--synth-options", default=None, metavar="FLAGS",
                   help="ECP5 boards: yosys synth_ecp5 flags, comma-separated: nowidelut, dff, cmp2softlogic, nodffe "
                   "(each synthesised netlist is cached apart)")
    p.set_defaults(func=_build)

    p = sub.add_parser("deploy", help="ship a bitstream folder to the pool's board workers, which check and offer it",
                       description="Send a folder written by vdla fpga build to every board worker of the board "
                       "(vdla pool worker ADDR --board B), or the one --worker names. Each verifies the files "
                       "against the manifest, loads the bitstream, checks CONFIG_ID and BUILD_ID and runs a "
                       "self-test program bit-exact against the functional model; only then does it offer "
                       "fpga-<board>-<config digest>.")
    p.add_argument("--board", required=True, help=f"the board: {', '.join(BOARDS)}")
    p.add_argument("--bitstream", required=True, metavar="DIR", help="the folder vdla fpga build wrote")
    p.add_argument("--pool", required=True, metavar="ADDR", help="the pool's scheduler, e.g. tcp://127.0.0.1:8786")
    p.add_argument("--worker", metavar="NAME", help="deploy to this board worker only (default: every one of --board)")
    p.add_argument("--timeout", type=float, default=1800.0, metavar="S",
                   help="seconds to wait for the workers' checks (default: 1800)")
    add_tls_options(p)
    p.set_defaults(func=_deploy)

    p = sub.add_parser("program", help="load a built bitstream onto an open board (ULX3S) with openFPGALoader",
                       description="Load the bitstream of a folder written by vdla fpga build onto the board on USB: "
                       "into the FPGA's SRAM (until power-off), or with --flash into its configuration flash.")
    p.add_argument("--board", required=True, help="the board: ulx3s (the SoC) or ulx3s-selftest")
    p.add_argument("--bitstream", required=True, metavar="DIR", help="the folder vdla fpga build wrote")
    p.add_argument("--flash", action="store_true", help="write the configuration flash (kept over power cycles)")
    p.set_defaults(func=_program)

    p = sub.add_parser("boards", help="list the boards and their parts")
    p.set_defaults(func=_boards)

    p = sub.add_parser("gen-scripts", help="regenerate fpga_scripts/<board>/board.tcl from the board table")
    p.set_defaults(func=_gen_scripts)


def _default_config(board: str) -> str:
    """The config a board is built for when --config is not given: its preset (the board table's), else default."""
    from vdla_hw.fpga.boards import get_board

    return get_board(board).default_config or "default"


def _build(args: argparse.Namespace) -> int:
    cfg = load_config(args.config or _default_config(args.board))
    out = Path(args.output) if args.output else Path(f"vdla-fpga-{args.board}-{cfg.name}")
    if args.seeds is not None:
        return _sweep(args, cfg, out)
    result = build_bitstream(args.board, cfg, out, run=not args.no_run, seed=args.seed, target_mhz=args.target_mhz,
                             pnr_options=args.pnr_options, synth_options=args.synth_options)
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


def _sweep(args: argparse.Namespace, cfg, out: Path) -> int:
    """``--seeds``: one placement per seed, each into ``out/seed<N>`` with its manifest, then the table."""
    from vdla_hw.fpga.ecp5_flow import RESULT_FILE, Ecp5Result, SeedSweep, keep_best_placement, parse_seeds
    from vdla_hw.fpga.ecp5_pnr_options import parse_pnr_options
    from vdla_hw.fpga.ecp5_synth_options import parse_synth_options

    if args.seed is not None:
        raise UsageError("--seed and --seeds were both given", hint="give one seed with --seed, or a sweep with --seeds")
    if args.no_run:
        raise UsageError("--seeds places and routes, which --no-run skips", hint="drop --no-run (or --seeds)")
    seeds = parse_seeds(args.seeds)
    pnr = parse_pnr_options(args.pnr_options)  # refused here, before the first placement
    synth = parse_synth_options(args.synth_options)
    results = []
    for seed in seeds:
        build_bitstream(args.board, cfg, out / f"seed{seed}", seed=seed, target_mhz=args.target_mhz,
                        pnr_options=args.pnr_options, synth_options=args.synth_options)
        folder = (out / f"seed{seed}").resolve()
        results.append(Ecp5Result.from_json(json.loads((folder / RESULT_FILE).read_text()), folder))
    sweep = SeedSweep(config=cfg.name, board=args.board, target_mhz=results[0].target_mhz, results=tuple(results),
                      pnr_options=pnr.spec(), synth_options=synth.spec())
    print(sweep.table())
    (out / "seeds.json").write_text(json.dumps(sweep.to_json(), indent=2) + "\n")
    best = keep_best_placement(out, sweep)
    print(f"wrote {out / 'seeds.json'} and a folder per seed under {out}; {out} holds the best placement "
          f"(seed {best.seed}, {best.fmax_mhz:.2f} MHz): {best.bitstream.name}")
    return 0


def _deploy(args: argparse.Namespace) -> int:
    if args.board not in BOARDS and args.board.replace("_", "-") not in BOARDS:
        raise UsageError(f"unknown board {args.board!r}; boards: {', '.join(BOARDS)}")
    from vdla.runtime.pool.deploy import deploy, load_bundle

    bundle = load_bundle(args.bitstream, args.board)  # a bad folder fails here, before the pool is contacted
    with pool_executor(args) as executor:
        outcomes = deploy(executor, bundle, args.board, worker=args.worker, timeout_s=args.timeout)
    print(f"deployed {args.bitstream} to {len(outcomes)} board worker(s) of {args.board}:")
    errors = []
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            errors.append(outcome)
            print(f"  FAILED, not offered: {outcome}")
            continue
        print(f"  {outcome.worker}: offers {outcome.kind} (config {outcome.config_name!r}, "
              f"build 0x{outcome.build_id:08x})")
        for check in outcome.checks:
            print(f"    ok  {check}")
    if errors:
        raise errors[0]
    return 0


def _program(args: argparse.Namespace) -> int:
    from vdla_hw.fpga.program import program_board

    result = program_board(args.board, args.bitstream, flash=args.flash)
    where = "configuration flash" if result.flash else "SRAM (until power-off)"
    print(f"loaded {result.bitstream} onto the {result.board}'s {where}")
    print(f"  {' '.join(result.command)}")
    return 0


def _boards(args: argparse.Namespace) -> int:
    for board in BOARDS.values():
        print(f"{board.name:<15} {board.part:<22} {board.flow:<10} {board.title}")
        if board.resources is not None:
            r = board.resources
            print(f"{'':<15} {r.luts:,} LUTs, {r.ffs:,} FFs, {r.dsps:,} DSPs, {r.bram36:g} BRAM36 ({r.family})")
        for note in board.notes:
            print(f"{'':<15} {note}")
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
