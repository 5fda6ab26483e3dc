"""``vdla dse``: sweep hardware configs against a workload and find the perf/area Pareto front.

    vdla dse --layers resnet18 --sweep block=8,16,32 bus=64,128 inp_depth=2048 wgt_depth=1024 acc_depth=2048 lut_macs=0 -o out
    vdla dse --model m.onnx --sweep acc_depth=1024,2048 --config default -o dse_out

Per config: its RTL linted, yosys resources, the boards it fits, (with ``--fmax``) nextpnr's Fmax
on the ECP5-85F, every layer compiled and timed on the cycle model.  Prints a table and writes
``DIR/dse.json`` and ``DIR/pareto.png`` (latency against LUTs, DSPs and block RAM).  Results are
cached per config; a failing config is reported with its reason and the sweep goes on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vdla.compiler.cli.pool import add_pool_options, pool_executor
from vdla_hw.config import load_config
from vdla_hw.errors import UsageError


def register(subparsers: argparse._SubParsersAction) -> None:
    from vdla.compiler.dse.sweep import describe_params

    p = subparsers.add_parser("dse", help="design-space exploration: sweep hardware configs, Pareto plots of latency vs area",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--layers", metavar="resnet18[:C2,C9]",
                      help="ResNet-18's conv layers C2-C12 (or those named after the colon)")
    what.add_argument("--model", metavar="M.onnx", help="an ONNX model: the layers the graph compiler puts on the VDLA")
    p.add_argument("--sweep", nargs="+", required=True, metavar="NAME=V1,V2",
                   help=f"parameters and their values (the sweep is their product). {describe_params()}; "
                        "or any config field, e.g. log_acc_buff_size=16,17 or timing.alu_ii=2,3")
    p.add_argument("--placement", choices=("cost", "all"), default="cost",
                   help="--model: place kernels as `vdla compile` does ('cost', the default: the cost rule judged on "
                        "the board's host) or every kernel the VDLA can run ('all')")
    p.add_argument("--config", default="default", help="the base config the sweep changes (preset or .json; default: default)")
    p.add_argument("--quick", action="store_true", help="a representative subset of ResNet-18's layers (C5, C8, C11)")
    p.add_argument("--jobs", type=int, default=1, help="configs evaluated at once (local processes, or in flight on --pool)")
    p.add_argument("--fmax", action="store_true",
                   help="place and route on the ECP5-85F (nextpnr) where the config fits, for its Fmax (slow)")
    p.add_argument("--no-cache", action="store_true", help="re-measure every config (results are still stored)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="folder for dse.json and pareto.png")
    add_pool_options(p)
    p.set_defaults(func=cmd_dse)


def cmd_dse(args: argparse.Namespace) -> int:
    from vdla.compiler.dse.plots import plot_pareto
    from vdla.compiler.dse.report import format_table, to_json, write_json
    from vdla.compiler.dse.run import run_sweep
    from vdla.compiler.dse.sweep import parse_sweep, sweep_points
    from vdla.compiler.dse.workloads import onnx_model, resnet18

    if args.jobs < 1:
        raise UsageError(f"--jobs must be at least 1, got {args.jobs}")
    params = parse_sweep(args.sweep)
    base = load_config(args.config)
    if args.model:
        if args.quick:
            raise UsageError("--quick picks ResNet-18 layers; it does not apply to --model")
        workloads = onnx_model(args.model, args.placement)
    else:
        name, _, names = args.layers.partition(":")
        if name.strip().lower() != "resnet18":
            raise UsageError(f"unknown layer set {args.layers!r}", hint="use --layers resnet18 (or resnet18:C2,C9), or --model M.onnx")
        workloads = resnet18(args.quick, names or None)
    points = sweep_points(base, params)
    out = Path(args.output)
    executor = pool_executor(args) if args.pool else None
    try:
        results = run_sweep(points, workloads, jobs=args.jobs, fmax=args.fmax, use_cache=not args.no_cache,
                            executor=executor)
    finally:
        if executor is not None:
            executor.close()
    print(format_table(results))
    meta = {"workloads": workloads.name, "layers": list(workloads.layers), "model": workloads.model,
            "base_config": base.label(), "sweep": [f"{n}={','.join(v)}" for n, v in params], "fmax": args.fmax}
    json_path = write_json(out / "dse.json", to_json(results, meta))
    measured = sum(r.ok for r in results)
    print(f"{measured} of {len(results)} configs measured; wrote {json_path}", end="")
    if measured:
        png = plot_pareto(results, out / "pareto.png", f"{workloads.name} on {base.name} + {' '.join(args.sweep)}")
        print(f" and {png}")
    else:
        print(" (no plot: no config was measured)")
    return 0 if measured else 1
