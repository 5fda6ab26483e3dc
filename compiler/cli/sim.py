"""``vdla sim FILE --backend NAME``: run a program bundle, or an assembled instruction image, on a backend.

Each backend declares its own options (``OPTIONS``, see :mod:`vdla.runtime.backends`);
they are added here as flags, grouped per backend, so a new backend brings its
flags without touching this command.  Backends whose module cannot be imported
on this machine contribute no flags; selecting one reports what is missing.
An option of another backend than the chosen one is an error, never ignored.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from vdla.compiler.cli.pool import add_pool_options, pool_executor
from vdla.runtime.backends import BackendError, BackendOption, backend_class, backend_names, check_options, get_backend
from vdla.runtime.file_checks import ZIP_MAGIC, read_bytes
from vdla.runtime.program import Program
from vdla.runtime.raw_program import DUMP_FORM, INPUT_FORM, build_raw_program, parse_dump, parse_input, save_dumps
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError

_TYPES = {"str": str, "int": int, "float": float}
_DESCRIPTION = """Run FILE on a backend: a program bundle (.vdlaprog, from `vdla demo --save` or Program.save),
or an instruction image (.bin) from `vdla asm`, whose micro-ops and DRAM contents are given
with --uops, --dram and --dump, e.g.

  vdla asm prog.s -o prog.bin --uops-out prog.uops --config tiny
  vdla sim prog.bin --config tiny --uops prog.uops --dram inp@16=x.npy --dram wgt@8=w.npy
      --dram acc@12=b.npy --dump out@64:2x4=y.npy

DRAM addresses count elements of their kind, as the LOAD/STORE instructions do.
Options of one backend are refused with another backend.
"""
_RAW_OPTIONS = ("uops", "uops_addr", "dram", "dump")

def _add_backend_options(parser: argparse.ArgumentParser) -> None:
    seen: set[str] = set()
    for name in backend_names():
        try:
            cls = backend_class(name)
        except BackendError:
            continue
        options: tuple[BackendOption, ...] = getattr(cls, "OPTIONS", ())
        fresh = [o for o in options if o.flag not in seen]
        if not fresh:
            continue
        group = parser.add_argument_group(f"{name} backend options")
        for opt in fresh:
            seen.add(opt.flag)
            # Defaults stay None so each backend applies its own default for options it shares.
            if opt.kind == "flag":
                group.add_argument(opt.flag, dest=opt.dest, action="store_true", default=None, help=opt.help)
            else:
                group.add_argument(opt.flag, dest=opt.dest, type=_TYPES[opt.kind], default=None,
                                   metavar=opt.metavar, help=f"{opt.help} (default: {opt.default})")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sim", help="run a program bundle or an assembled .bin on a backend (fsim, cycle, rtl)",
                              description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="program bundle (.vdlaprog) or instruction image (.bin from vdla asm)")
    p.add_argument("--backend", default="fsim", help=f"backend name: {', '.join(backend_names())} (default: fsim)")
    p.add_argument("--config", help="hardware preset name or .json path: the config of a .bin (default: default); "
                                    "for a bundle, refuse it unless it was compiled for this config")
    p.add_argument("--json", action="store_true", help="print the result summary as JSON")
    raw = p.add_argument_group("instruction image (.bin) options")
    raw.add_argument("--uops", metavar="FILE.uops", help="micro-op words from vdla asm --uops-out")
    raw.add_argument("--uops-addr", type=int, metavar="N", help="micro-op element address of --uops (default: 0)")
    raw.add_argument("--dram", action="append", default=[], metavar=INPUT_FORM,
                     help="a 2-D integer matrix written in KIND's tile layout at element ADDR before the run; "
                          "KIND: inp, wgt, acc, out (repeatable)")
    raw.add_argument("--dump", action="append", default=[], metavar=DUMP_FORM,
                     help="after the run, save the ROWSxCOLS matrix of KIND at element ADDR (repeatable)")
    add_pool_options(p)
    _add_backend_options(p)
    p.set_defaults(func=cmd_sim)


def backend_options(args: argparse.Namespace, backend: Any) -> dict[str, Any]:
    """The options of ``backend`` the user set; an option of another backend is a :class:`UsageError`."""
    own = {o.dest for o in backend.OPTIONS}
    for name in backend_names():
        try:
            cls = backend_class(name)
        except BackendError:
            continue
        for opt in getattr(cls, "OPTIONS", ()):
            if opt.dest not in own and getattr(args, opt.dest, None) is not None:
                takes = ", ".join(o.flag for o in backend.OPTIONS) or "no options"
                raise UsageError(f"{opt.flag} is an option of the {name} backend and does nothing on "
                                 f"{backend.name!r}; {backend.name} takes {takes}",
                                 hint=f"drop {opt.flag}, or run with --backend {name}")
    return {d: getattr(args, d) for d in own if getattr(args, d, None) is not None}


def load_program(args: argparse.Namespace) -> tuple[Program, tuple[Any, ...]]:
    """The program FILE names (a bundle or a raw image with its options) and the dumps to write after it."""
    data = read_bytes(args.file, "a VDLA program bundle (.vdlaprog) or an instruction image (.bin)")
    raw_given = [f"--{d.replace('_', '-')}" for d in _RAW_OPTIONS if getattr(args, d) not in (None, [])]
    if data.startswith(ZIP_MAGIC):
        if raw_given:
            raise UsageError(f"{args.file} is a program bundle, which holds its own DRAM and micro-ops; "
                             f"{', '.join(raw_given)} only go with an instruction image (.bin)",
                             hint=f"drop {', '.join(raw_given)}")
        return Program.from_bytes(data, args.file, load_config(args.config) if args.config else None), ()
    if args.uops_addr is not None and args.uops is None:
        raise UsageError("--uops-addr places the micro-ops of --uops, which is missing", hint="add --uops FILE.uops")
    dumps = tuple(parse_dump(t) for t in args.dump)
    inputs = tuple(parse_input(t) for t in args.dram)
    program = build_raw_program(load_config(args.config or "default"), args.file, args.uops, args.uops_addr or 0,
                                inputs, dumps)
    return program, dumps


def format_counters(counters: dict[str, int]) -> str:
    """Counters as an aligned two-column table, zero-valued entries left out."""
    rows = [(k, v) for k, v in counters.items() if v]
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"  {k:<{width}}  {v:>14,}" for k, v in rows)


def cmd_sim(args: argparse.Namespace) -> int:
    if args.pool:
        # The backend need only run on the pool's workers, not here.
        backend = backend_class(args.backend)()
    else:
        backend = get_backend(args.backend)
    options = backend_options(args, backend)
    check_options(backend, options)
    program, dumps = load_program(args)
    if args.pool:
        from vdla.runtime.pool.tasks import submit_program

        with pool_executor(args) as executor:
            result = submit_program(executor, program, args.backend, **options).result()
    else:
        result = backend.run(program, **options)
    save_dumps(result, dumps)
    if args.json:
        json.dump({"file": args.file, "config": program.config.name, **result.summary()}, sys.stdout, indent=2)
        print()
        return 0
    cycles = "" if result.cycles is None else f", {result.cycles:,} cycles"
    print(f"{args.file}: {program.insn_count} instructions on config {program.config.name!r}, backend {result.backend}{cycles}")
    print(format_counters(dict(result.counters)))
    for dump in dumps:
        print(f"  {dump.kind}@{dump.addr} {dump.shape[0]}x{dump.shape[1]} -> {dump.file}")
    # A backend may render its own extra outputs (the cycle model's stall table, ...).
    describe = getattr(backend, "describe_extra", None)
    if describe is not None:
        print(describe(result))
    else:
        for key, value in result.extra.items():
            print(f"  {key}: {value}")
    return 0
