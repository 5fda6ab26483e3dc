"""Entry point of the ``vdla`` console command.

Each command group lives in its own module under ``compiler.cli`` and exposes
``register(subparsers)``, which adds its sub-commands with ``set_defaults(func=...)``.
A command function returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Command-group modules, in the order they appear in ``vdla --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "asm",
    "hw",
    "sim",
    "demo",
    "compile_op",
    "model",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vdla", description="The VDLA deep-learning compiler and accelerator toolkit.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"compiler.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``vdla`` command; user errors print one clear line and exit with status 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader of our output went away (e.g. `vdla ... | head`): not an error of ours.
        sys.stderr.close()
        return 0
    except (ValueError, OSError, RuntimeError) as exc:
        # User-caused errors (bad config, malformed program, missing file, deadlock) are
        # reported as one line naming the cause; tracebacks are for bugs only.
        print(f"vdla {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
