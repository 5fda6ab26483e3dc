"""Entry point of the ``vdla`` console command.

Each command group lives in its own module under ``vdla.compiler.cli`` and exposes
``register(subparsers)``, which adds its sub-commands with ``set_defaults(func=...)``.
A command function returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import traceback
import warnings

from vdla_hw.errors import VdlaError
from vdla_hw.progress import set_quiet

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 70  # EX_SOFTWARE of sysexits.h
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it

# Command-group modules, in the order they appear in ``vdla --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "asm",
    "hw",
    "sim",
    "demo",
    "compile_op",
    "model",
    "fuzz",
    "example",
    "cache",
    "pool",
    "tune",
    "fpga",
    "dse",
)


_RST_LITERAL = re.compile(r"``(.+?)``")
_RST_ROLE = re.compile(r":(?:class|func|mod|meth|data|attr|exc):`~?([^`]+)`")


class PlainArgumentParser(argparse.ArgumentParser):
    """An argument parser whose help is plain text.

    Command modules use their docstrings (reStructuredText for the API docs) as descriptions;
    the markup is dropped here, once, for every command and sub-command parser.
    """

    def format_help(self) -> str:
        return _RST_ROLE.sub(r"\1", _RST_LITERAL.sub(r"\1", super().format_help()))


def build_parser() -> argparse.ArgumentParser:
    # Sub-parsers inherit the parser class, so nested groups (vdla hw ..., vdla pool ...) are plain too.
    parser = PlainArgumentParser(prog="vdla", description="The VDLA deep-learning compiler and accelerator toolkit.")
    parser.add_argument("--quiet", action="store_true", help="no progress bars (they are only drawn on a terminal)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(f"vdla.compiler.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``vdla`` command.

    Exit status: 0 on success; 2 for an error the user can fix (a :class:`VdlaError`, or a file
    that cannot be opened), printed as one line and a hint; 130 on Ctrl-C; 70 for anything else,
    which is a bug in the tools and is printed with its traceback.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.quiet:
        set_quiet()
    # Warnings the tools raise for the user (e.g. a large waveform) read as one line each.
    warnings.formatwarning = lambda message, *_args, **_kw: f"warning: {message}\n"
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader of our output went away (e.g. `vdla ... | head`): not an error of ours.
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"vdla {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except VdlaError as exc:
        print(f"vdla {args.command}: error: {exc}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return EXIT_USER_ERROR
    except OSError as exc:
        if exc.filename is None:
            raise
        # A path the user named that cannot be opened or written (missing, a directory, no
        # permission): the OS's own words name the file and the cause.
        print(f"vdla {args.command}: error: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return EXIT_USER_ERROR


def run(argv: list[str] | None = None) -> int:
    """:func:`main`, with any other exception reported as an internal error (status 70)."""
    try:
        return main(argv)
    except Exception:  # noqa: BLE001 - the last resort: a bug, shown in full and asked to be reported
        traceback.print_exc()
        print("vdla: internal error (a bug in vdla, not in your input); please report it with the "
              "command line and the traceback above", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(run())
