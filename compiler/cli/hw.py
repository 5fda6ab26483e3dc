"""``vdla hw``: the hardware single source of truth and what is generated from it.

Each sub-command is one function decorated with :func:`subcommand`: it adds its
parser to the ``hw`` group and binds the function that runs it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from vdla_hw.config import load_config
from vdla_hw.gen_docs import BUFFER_HEADER, DEFAULT_DOC_PATH, buffer_rows, derived_values, render_isa_doc, write_isa_doc

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
    return 0
