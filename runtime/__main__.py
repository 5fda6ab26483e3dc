"""``python -m vdla.runtime run MODEL.vdla --input X.npy``: run a compiled module with the runtime alone.

What a board runs (its Linux has the runtime and NumPy, not the compiler): the module's CPU kernels in this
process, its VDLA nodes on ``--backend`` (``fsim`` by default; ``fpga`` on the board's accelerator).  The
workstation's ``vdla run`` does the same with more options.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from vdla.runtime.graph_executor import load
from vdla_hw.errors import VdlaError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vdla.runtime", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run a module (.vdla) on one input")
    p.add_argument("module")
    p.add_argument("--input", required=True, metavar="X.npy", help="the input array (a one-input model)")
    p.add_argument("--backend", default="fsim", help="backend of the VDLA nodes (default: fsim)")
    p.add_argument("--threads", type=int, default=1, help="threads of the CPU kernels (0 = all; default: 1)")
    p.add_argument("--output", metavar="Y.npy", help="write the first output here")
    args = parser.parse_args(argv)
    try:
        module = load(args.module)
        module.set_num_threads(args.threads)
        outputs = module.run(np.load(args.input, allow_pickle=False), backend=args.backend)
    except VdlaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 2
    for name, y in zip(module.output_names, outputs):
        print(f"{name}: {y.dtype}{list(y.shape)} argmax {int(y.reshape(-1).argmax())}")
    if args.output:
        np.save(args.output, outputs[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
