"""``vdla sim FILE --backend NAME``: run a saved program bundle on a backend.

Each backend declares its own options (``OPTIONS``, see :mod:`runtime.backends`);
they are added here as flags, grouped per backend, so a new backend brings its
flags without touching this command.  Backends whose module cannot be imported
on this machine contribute no flags; selecting one reports what is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from compiler.cli.pool import add_pool_options, pool_executor
from runtime.backends import BackendError, BackendOption, backend_class, backend_names, check_options, get_backend
from runtime.program import Program

_TYPES = {"str": str, "int": int, "float": float}


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
    p = subparsers.add_parser("sim", help="run a saved program bundle on a backend (fsim, cycle, rtl, fpga)",
                              description=__doc__)
    p.add_argument("file", help="program bundle written by Program.save / vdla demo --save")
    p.add_argument("--backend", default="fsim", help=f"backend name: {', '.join(backend_names())} (default: fsim)")
    p.add_argument("--json", action="store_true", help="print the result summary as JSON")
    add_pool_options(p)
    _add_backend_options(p)
    p.set_defaults(func=cmd_sim)


def backend_options(args: argparse.Namespace, backend: Any) -> dict[str, Any]:
    """The options of ``backend`` the user set on the command line."""
    return {o.dest: getattr(args, o.dest) for o in backend.OPTIONS if getattr(args, o.dest, None) is not None}


def format_counters(counters: dict[str, int]) -> str:
    """Counters as an aligned two-column table, zero-valued entries left out."""
    rows = [(k, v) for k, v in counters.items() if v]
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"  {k:<{width}}  {v:>14,}" for k, v in rows)


def cmd_sim(args: argparse.Namespace) -> int:
    program = Program.load(args.file)
    if args.pool:
        # The backend need only run on the pool's workers, not here.
        backend = backend_class(args.backend)()
        options = backend_options(args, backend)
        check_options(backend, options)
        from runtime.pool.tasks import submit_program

        with pool_executor(args) as executor:
            result = submit_program(executor, program, args.backend, **options).result()
    else:
        backend = get_backend(args.backend)
        options = backend_options(args, backend)
        check_options(backend, options)
        result = backend.run(program, **options)
    if args.json:
        json.dump({"file": args.file, "config": program.config.name, **result.summary()}, sys.stdout, indent=2)
        print()
        return 0
    cycles = "" if result.cycles is None else f", {result.cycles:,} cycles"
    print(f"{args.file}: {program.insn_count} instructions on config {program.config.name!r}, backend {result.backend}{cycles}")
    print(format_counters(dict(result.counters)))
    # A backend may render its own extra outputs (the cycle model's stall table, ...).
    describe = getattr(backend, "describe_extra", None)
    if describe is not None:
        print(describe(result))
    else:
        for key, value in result.extra.items():
            print(f"  {key}: {value}")
    return 0
