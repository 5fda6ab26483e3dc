"""``vdla example [DIR]``: write the files the README's tour uses (a model, calibration data, an
input and an assembly program) into a folder."""

from __future__ import annotations

import argparse

from vdla.compiler.examples import write_example


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("example", help="write the README tour's files (model.onnx, samples.npz, x.npy, prog.s)",
                              description=__doc__)
    p.add_argument("directory", nargs="?", default=".", help="where to write them (default: the current folder)")
    p.add_argument("--force", action="store_true", help="overwrite files that already exist")
    p.set_defaults(func=cmd_example)


def cmd_example(args: argparse.Namespace) -> int:
    for path in write_example(args.directory, overwrite=args.force):
        print(f"wrote {path}")
    return 0
