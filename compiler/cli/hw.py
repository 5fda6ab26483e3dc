"""``vdla hw``: the hardware single source of truth and what is generated from it.

Each sub-command is one function decorated with :func:`subcommand`: it adds its
parser to the ``hw`` group and binds the function that runs it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from vdla_hw.config import load_config
from vdla_hw.errors import UsageError
from vdla_hw.gen_docs import BUFFER_HEADER, DEFAULT_DOC_PATH, buffer_rows, derived_values, register_rows, render_isa_doc, write_isa_doc
from vdla_hw.formal.sby import SOLVERS

_AddParser = Callable[[argparse._SubParsersAction], None]
_SUBCOMMANDS: list[_AddParser] = []


def subcommand(add: _AddParser) -> _AddParser:
    """Register a function that adds one ``vdla hw`` sub-command (in definition order)."""
    _SUBCOMMANDS.append(add)
    return add


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("hw", help="hardware config, ISA docs and generated RTL packages")
    sub = group.add_subparsers(dest="hw_command", metavar="SUBCOMMAND", required=True)
    for add in _SUBCOMMANDS:
        add(sub)


@subcommand
def _gen_docs_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gen-docs", help="regenerate docs/isa.md from the config, ISA and presets")
    p.add_argument("-o", "--output", default=str(DEFAULT_DOC_PATH), help="output file, '-' for stdout (default: %(default)s)")
    p.set_defaults(func=_gen_docs)


def _gen_docs(args: argparse.Namespace) -> int:
    if args.output == "-":
        sys.stdout.write(render_isa_doc())
        return 0
    print(f"wrote {write_isa_doc(args.output)}")
    return 0


@subcommand
def _show_config_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("show-config", help="print a hardware config with its derived values")
    p.add_argument("--config", default="default", help="preset name or config .json path (default: default)")
    p.add_argument("--json", action="store_true", help="print the config as JSON, loadable with --config FILE.json")
    p.set_defaults(func=_show_config)


def _show_config(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    if args.json:
        print(cfg.to_json())
        return 0
    raw = {k: v for k, v in cfg.to_dict().items() if k != "timing"}
    sections = [
        (f"config {cfg.name}", list(raw.items())),
        ("timing", list(cfg.to_dict()["timing"].items())),
        ("derived", derived_values(cfg)),
    ]
    for title, rows in sections:
        print(f"{title}:")
        width = max(len(str(k)) for k, _ in rows)
        for key, value in rows:
            print(f"  {key:<{width}}  {value}")
    print("buffers:")
    table = [BUFFER_HEADER, *buffer_rows(cfg)]
    widths = [max(len(str(row[c])) for row in table) for c in range(len(BUFFER_HEADER))]
    for row in table:
        print("  " + "  ".join(f"{str(cell):>{w}}" for cell, w in zip(row, widths)))
    print("control registers (AXI-lite):")
    for offset, name, access, doc in register_rows():
        print(f"  {offset}  {name:<12}  {access}  {doc}")
    return 0


@subcommand
def _gen_pkg_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("gen-pkg", help="generate the SystemVerilog parameter package vdla_pkg for a config")
    p.add_argument("--config", default=None, help="preset name or config .json path (default: every preset)")
    p.add_argument("-o", "--output-dir", default=None, help="output folder (default: vdla_hw/rtl/generated)")
    p.set_defaults(func=_gen_pkg)


def _gen_pkg(args: argparse.Namespace) -> int:
    from vdla_hw.config import preset_names
    from vdla_hw.gen_sv import GENERATED_DIR, write_package

    out_dir = Path(args.output_dir) if args.output_dir else GENERATED_DIR
    configs = [args.config] if args.config else preset_names()
    for name in configs:
        print(f"wrote {write_package(load_config(name), out_dir)}")
    return 0


@subcommand
def _synth_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("synth", help="synthesize the RTL with yosys (xc7) and report LUT/FF/DSP/BRAM vs. a Zynq-7020")
    p.add_argument("--config", action="append", help="preset name or config .json path; repeatable (default: default)")
    p.add_argument("--all", action="store_true", help="every preset")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--no-cache", action="store_true", help="run yosys even when a cached result exists")
    p.set_defaults(func=_synth)


def _synth(args: argparse.Namespace) -> int:
    import json

    from vdla_hw.config import preset_names
    from vdla_hw.synth import format_table, synthesize

    names = preset_names() if args.all else (args.config or ["default"])
    results = [synthesize(name, use_cache=not args.no_cache) for name in names]
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(format_table(results))
    return 0


@subcommand
def _prove_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prove", help="prove the RTL's formal properties with SymbiYosys (k-induction or BMC per task)")
    p.add_argument("--config", default="tiny", help="preset name or config .json path (default: %(default)s)")
    p.add_argument("--rtl-dir", default=None, help="prove the module files in this folder (a changed copy of "
                                                   "vdla_hw/rtl) instead of the shipped RTL")
    p.add_argument("--task", action="append", help="run only this task (repeatable; see --list)")
    p.add_argument("--list", action="store_true", help="list the tasks with their method and properties, run nothing")
    p.add_argument("--solver", default=None, choices=SOLVERS,
                   help="engine for every task: an SMT solver under smtbmc (z3, boolector, yices) or ABC on the AIGER model "
                        "(abc-bmc3: bounded; abc-pdr: unbounded) (default: each task's own)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per task (default: %(default)s)")
    p.add_argument("--live-bound", default="recorded", type=live_bound_arg, metavar="{recorded,derived,N}",
                   help="N of the live_* tasks: the bound proven or the slowest run the solver found "
                        "(vdla_hw/formal/live_bounds.json), the a-priori sum in series, or N cycles for every live task "
                        "named (default: %(default)s; docs/rtl.md)")
    p.add_argument("--record", action="store_true",
                   help="keep what the live_* tasks settle in vdla_hw/formal/live_bounds.json: a pass as the proven N "
                        "(or, for a live_room_* task, the depth its queues are proven not to fill), an a_live_done "
                        "failure as a refuted N")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=_prove)


def live_bound_arg(text: str) -> str | int:
    """``--live-bound``'s value: ``recorded``, ``derived`` or a cycle count N >= 1 (argparse reports a bad one)."""
    if text in ("recorded", "derived"):
        return text
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither 'recorded', 'derived' nor a whole number of cycles "
                                         "(e.g. --live-bound 80)") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} cycles cannot bound a run (the start alone takes cycles); give N >= 1")
    return n


def _prove(args: argparse.Namespace) -> int:
    import json

    from vdla_hw.formal.prove import format_results, prove
    from vdla_hw.formal.tasks import proof_tasks

    # The whole-machine liveness tasks (minutes to hours) run when named or listed, not by default.
    bound = args.live_bound
    tasks = proof_tasks(args.config, whole_machine=bool(args.task or args.list), tight=bound != "derived",
                        live_n=bound if isinstance(bound, int) else None)
    if args.task:
        known = {t.name for t in tasks}
        unknown = [n for n in args.task if n not in known]
        if unknown:
            raise UsageError(f"unknown proof task(s) {unknown} for config {args.config}",
                             hint=f"choose from: {', '.join(sorted(known))}")
        tasks = [t for t in tasks if t.name in args.task]
    if args.list:
        for t in tasks:
            print(f"{t.name:22} {t.top:22} {t.method:22} {t.solver:9} {', '.join(t.properties)}")
        return 0
    if args.rtl_dir and not Path(args.rtl_dir).is_dir():
        raise UsageError(f"--rtl-dir {args.rtl_dir} is not a folder", hint="point it at a copy of vdla_hw/rtl")
    if args.record and args.rtl_dir:
        raise UsageError("--record keeps the bounds of the shipped RTL, and --rtl-dir proves another",
                         hint="drop --record for a changed RTL (the verdict is printed all the same)")
    if args.solver:
        from vdla_hw.formal.sby import check_engine
        from vdla_hw.rtl_build import RtlBuildError

        for t in tasks:
            try:
                check_engine(t, args.solver)
            except RtlBuildError as exc:
                raise UsageError(str(exc), hint="name only BMC tasks with --task, or choose another --solver") from None
    results = prove(args.config, tasks, rtl_dir=args.rtl_dir, solver=args.solver, timeout=args.timeout)
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(format_results(results))
    if args.record:
        from vdla_hw.formal.live_bound import record_result

        for r in results:
            line = record_result(args.config, r)
            if line:
                print(f"recorded: {line}", file=sys.stderr if args.json else sys.stdout)
    return 0 if all(r.passed for r in results) else 1


@subcommand
def _test_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("test", help="run the RTL regression (cocotb on Verilator) through pytest")
    p.add_argument("--config", default=None,
                   help="a preset name (its tests, slow ones included) or a config .json path (the regression re-run "
                        "on that config)")
    p.add_argument("--all", action="store_true", help="the full regression, slow tests included")
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments (after --)")
    p.set_defaults(func=_test)


# Read by tests/rtl/rtl_configs.py: the config the parametrized RTL tests run on instead of the presets.
TEST_CONFIG_ENV = "VDLA_HW_TEST_CONFIG"


def test_command(config: str | None, run_all: bool, pytest_args: list[str]) -> tuple[list[str], dict[str, str]]:
    """The pytest command line of ``vdla hw test`` and the environment variables it adds.

    A preset name selects the tests whose id names it; a config file is handed to the tests
    through :data:`TEST_CONFIG_ENV` (a test-name filter alone would match nothing) and its name
    selects the tests that re-run on it.
    """
    import vdla_hw
    from vdla_hw.config import preset_names

    tests = Path(vdla_hw.__file__).resolve().parent.parent / "tests" / "rtl"
    if not tests.is_dir():
        raise UsageError(f"the RTL tests are not at {tests}", hint="run `vdla hw test` from a clone of the repository")
    cmd = [sys.executable, "-m", "pytest", str(tests), "-q"]
    env: dict[str, str] = {}
    if run_all or config:
        cmd += ["-m", "slow or not slow"]
    if config:
        cfg = load_config(config)  # a bad path or config is reported here, not as "0 tests ran"
        if config not in preset_names():
            env[TEST_CONFIG_ENV] = str(Path(config).resolve())
        # Every RTL test id names its config (test_x[tiny], test_x_tiny ...).
        cmd += ["-k", cfg.name]
    cmd += [a for a in pytest_args if a != "--"]
    return cmd, env


def _test(args: argparse.Namespace) -> int:
    import os
    import shlex
    import subprocess

    cmd, env = test_command(args.config, args.all, args.pytest_args)
    print(" ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.join(cmd)]), flush=True)
    repo = Path(cmd[3]).parent.parent
    return subprocess.call(cmd, cwd=repo, env={**os.environ, **env})


@subcommand
def _shell_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("shell", help="a Python prompt holding the Verilated design (pyverilator): peek, poke, step, "
                                     "load and run programs, print queue and token state")
    p.add_argument("--config", default="tiny", help="preset name or config .json path (default: tiny)")
    p.add_argument("--top", default="vdla_top", help="RTL module to load (default: vdla_top, the accelerator; the "
                                                     "program helpers need it)")
    p.add_argument("--load", metavar="PROGRAM", help="a saved program (.vdla) to load into DRAM first")
    run = p.add_mutually_exclusive_group()
    run.add_argument("-c", dest="code", metavar="CODE", help="run CODE in the shell's namespace instead of a prompt")
    run.add_argument("--script", metavar="FILE", help="run the Python file FILE in the shell's namespace")
    p.set_defaults(func=_shell)


SHELL_BANNER = """vdla hw shell: {top} on config {config} (pyverilator)
  hw                     the HwShell (runtime/hw_shell.py); its methods are also plain names:
  peek(name) poke(name, v) step(n) eval() reset() signals('part')    any port or dotted internal signal
  load(program|path) start() run(max_cycles) state() read(buffer) read_dram(off, n) write_reg(r, v) read_reg(r)
  cfg, np, Program, tiled_gemm_program(cfg, m, k, n), fsim(program)  (fsim(program).dram: the reference DRAM)"""


def shell_namespace(shell: "object") -> dict[str, object]:
    """The names a ``vdla hw shell`` session starts with."""
    import numpy as np

    from vdla.runtime import Program, run
    from vdla.runtime.workloads import tiled_gemm_program

    names = ("peek", "poke", "step", "eval", "reset", "signals", "load", "start", "run", "state", "read",
             "read_dram", "write_reg", "read_reg", "debug")
    ns: dict[str, object] = {n: getattr(shell, n) for n in names}
    ns.update(hw=shell, cfg=getattr(shell, "cfg"), np=np, Program=Program, tiled_gemm_program=tiled_gemm_program,
              fsim=lambda program: run(program, backend="fsim"))
    return ns


def _shell(args: argparse.Namespace) -> int:
    import code

    from vdla.runtime.hw_shell import HwShell

    script = None
    if args.script:
        path = Path(args.script)
        if not path.is_file():
            raise UsageError(f"script {args.script!r} does not exist", hint="give the path of a Python file")
        script = (path.read_text(), str(path))
    elif args.code is not None:
        script = (args.code, "<-c>")
    cfg = load_config(args.config)
    shell = HwShell(cfg, top=args.top)
    if args.load:
        shell.load(args.load)
    ns = shell_namespace(shell)
    if script is not None:
        exec(compile(script[0], script[1], "exec"), ns)  # the user's own code, as `python -c`
        return 0
    code.interact(banner=SHELL_BANNER.format(top=shell.top, config=cfg.name), local=ns, exitmsg="")
    return 0
