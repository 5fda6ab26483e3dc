"""vdla demo: a ResNet-18 convolution compiled for VDLA, run on the cycle model with and without
latency hiding, checked bit-exactly against NumPy, and drawn as a timeline."""

from __future__ import annotations

import argparse

from vdla.compiler.vdla.demo import run_demo
from vdla.compiler.vdla.topi import RESNET18_CONVS


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("demo", help="compile a ResNet-18 conv for VDLA, time it with and without latency hiding",
                              description=__doc__)
    p.add_argument("--layer", default="C10", choices=list(RESNET18_CONVS), help="ResNet-18 conv layer (default: C10)")
    p.add_argument("--config", default="default", help="hardware preset name or .json path (default: default)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the data (default: 0)")
    p.add_argument("--plot", default="vdla_demo.png", help="Gantt chart PNG of both runs (default: vdla_demo.png)")
    p.add_argument("--save", metavar="PATH", help="also save the 2-thread program bundle (run it with: vdla sim PATH)")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    runs = run_demo(args.layer, args.config, args.seed, args.plot, args.save)
    if not all(r.bit_exact for r in runs):
        print("  FAIL: the compiled convolution differs from NumPy")
        return 1
    print("  PASS")
    return 0
