"""``vdla tune``: search schedule configs of a model's operators and log every measurement.

    vdla tune model.onnx --target llvm --trials 64 --log tune.jsonl
    vdla tune model.onnx --target vdla --trials 64 --log tune.jsonl --resume --tuner xgb
    vdla tune model.onnx --target vdla --trials 64 --log tune.jsonl --pool tcp://127.0.0.1:8786
    vdla compile model.onnx --tuning-log tune.jsonl -o model.vdla

A killed run continues with ``--resume``: configs already in the log are not measured again.
With ``--pool ADDR`` the measurements run on a device pool (docs/pool.md) instead of local worker
processes; a job the pool gives up on (after its retries) is logged as that config's error record.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

import numpy as np

from vdla.compiler.cli.pool import add_pool_options, pool_executor
from vdla_hw.errors import UsageError

TUNER_CHOICES = ("xgb", "ga", "random", "grid")
DEFAULT_TRIALS = 64
DEFAULT_BUDGET_MIN = 30.0
"""A whole run starts no batch after 30 minutes; with 64 trials a ResNet-18 ``llvm`` run (12 tasks) needs
~1.2 s per trial to finish them all (docs/autotune.md: the budget)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("tune", help="auto-tune the operators of an ONNX model into a tuning log",
                              description="Measure schedule configs of every tunable operator of a model "
                                          "(CPU timing or VDLA cycle-model cycles) and append them to a JSON-lines log.")
    p.add_argument("model", help="the ONNX file")
    p.add_argument("--target", choices=("llvm", "vdla"), default="llvm", help="llvm (CPU, fp32) or vdla (int8)")
    p.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                   help=f"configs to measure per task (the log's count included; default: {DEFAULT_TRIALS})")
    p.add_argument("--time-budget", type=float, default=DEFAULT_BUDGET_MIN, metavar="MIN",
                   help="start no batch after MIN minutes in all: each task gets an even share of what is left "
                        f"(default: {DEFAULT_BUDGET_MIN:g}; 0: no limit)")
    p.add_argument("--log", required=True, metavar="TUNE.jsonl", help="the tuning log to write")
    p.add_argument("--resume", action="store_true", help="continue an existing log (skip measured configs)")
    p.add_argument("--tuner", choices=TUNER_CHOICES, default="xgb", help="search strategy (default: xgb)")
    p.add_argument("--batch", type=int, default=8, help="configs measured per batch (default: 8)")
    p.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1),
                   help="local measurement worker processes (default: 2, or 1 on a one-core machine; not used with "
                        "--pool); CPU timing runs alone either way")
    p.add_argument("--transfer", action="append", default=[], metavar="OLD.jsonl",
                   help="earlier logs whose records of similar tasks train the xgb model (repeatable)")
    p.add_argument("--config", default="default", help="hardware preset name or .json path (vdla; default: default)")
    p.add_argument("--calibrate", metavar="DATA.npz",
                   help="calibration inputs (vdla; optional: the tasks depend only on shapes, random ones are used)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape, e.g. x=1,3,224,224 (repeatable)")
    p.add_argument("--cpu-target", default="llvm", help="LLVM target of the CPU kernels (default: this host)")
    p.add_argument("--curves", metavar="DIR", help="where to write a tuning-curve PNG per task "
                                                   "(default: <log>_curves next to the log)")
    p.add_argument("--seed", type=int, default=0, help="seed of the tuners (default: 0)")
    p.add_argument("--retime", type=int, default=3, metavar="K",
                   help="after each timed (llvm) task's search, time its K best configs and the default again side "
                        "by side and let that round name the best (default: 3; 0 keeps the first samples)")
    p.add_argument("--retime-passes", type=int, default=2, metavar="P",
                   help="passes of a re-timing round, in alternating order; each config costs the upper median of "
                        "its passes (default: 2, the slower of two; more on a loaded host)")
    p.add_argument("--retime-again", action="store_true",
                   help="run a new re-timing round for every task of a resumed log, even one that measured nothing "
                        "new (e.g. --resume --retime-again --retime-passes 6 after a run on a loaded host)")
    p.add_argument("--build-timeout", type=float, metavar="SEC",
                   help="wall-clock seconds a config's build may take before it is logged as a timeout (default: "
                        "the measurement's, MeasureOptions.build_timeout_s; raise it on a loaded or lowered-priority "
                        "host, where a Winograd kernel's build can take minutes)")
    p.add_argument("--max-spill-reloads", default=None, metavar="N",
                   help="an AVX-512 config whose kernel reloads more than N vectors from the stack (spilled registers) "
                        "is logged as 'spills' and not timed: its time moves with the stack position of the call; "
                        "'keep' times every config (default: MeasureOptions' limit, 2; the default config is always "
                        "timed; AVX2 configs are always timed)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_pool_options(p)
    p.set_defaults(func=cmd_tune)


def _spill_limit(text: str) -> int | None:
    """``--max-spill-reloads``: a number of reloads, or ``keep`` (None: spilling configs are timed)."""
    if text == "keep":
        return None
    if not text.isdigit():
        raise UsageError(f"--max-spill-reloads takes a number of reloads >= 0 or 'keep', got {text!r}")
    return int(text)


def _samples(graph: object, path: str | None) -> list[dict[str, np.ndarray]]:
    from vdla.compiler.cli.model import _calibration

    names = [n.name for n in graph.input_nodes]  # type: ignore[attr-defined]
    if path:
        samples = _calibration(path, names)
    else:
        rng = np.random.default_rng(0)
        samples = [{n.name: rng.standard_normal(n.type.shape).astype(n.type.dtype)
                    for n in graph.input_nodes} for _ in range(2)]  # type: ignore[attr-defined]
    for s in samples:
        for n in graph.input_nodes:  # type: ignore[attr-defined]
            s[n.name] = np.asarray(s[n.name], n.type.dtype).reshape(n.type.shape)
    return samples


def _executor(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Where the measurements run: the pool of ``--pool``, else ``--workers`` local processes."""
    if args.pool:
        return pool_executor(args)
    from vdla.compiler.autotune.executor import LocalExecutor

    return LocalExecutor(workers=args.workers)


def cmd_tune(args: argparse.Namespace) -> int:
    from vdla.compiler.autotune.database import Database, read_log
    from vdla.compiler.autotune.footprint import model_weight_bytes
    from vdla.compiler.autotune.measure import FULL_FLUSH_BYTES, MeasureOptions, model_flush_bytes
    from vdla.compiler.autotune.session import tune_tasks
    from vdla.compiler.autotune.task import extract_tasks
    from vdla.compiler.cli.model import _shapes
    from vdla.compiler.frontend.onnx import from_onnx
    from vdla_hw.config import load_config

    if args.trials < 1 or args.batch < 1 or args.workers < 1:
        raise UsageError("--trials, --batch and --workers must be positive")
    if args.retime < 0:
        raise UsageError(f"--retime must be a count of configs >= 0 (0: no re-timing), got {args.retime}")
    if args.retime_passes < 1:
        raise UsageError(f"--retime-passes must be at least 1, got {args.retime_passes}")
    if args.retime_again and not args.retime:
        raise UsageError("--retime-again runs a re-timing round: it needs --retime K with K >= 1")
    if args.build_timeout is not None and not args.build_timeout > 0:
        raise UsageError(f"--build-timeout must be a number of seconds > 0, got {args.build_timeout}")
    spill_limit = _spill_limit(args.max_spill_reloads) if args.max_spill_reloads is not None else None
    if not args.time_budget >= 0:
        raise UsageError(f"--time-budget must be a number of minutes >= 0 (0: no limit), got {args.time_budget}")
    log = Path(args.log)
    if log.exists() and log.stat().st_size and not args.resume:
        raise UsageError(f"{log} already holds tuning records",
                         hint="pass --resume to continue it, or name a new --log file")
    graph = from_onnx(args.model, shapes=_shapes(args.shape) or None)
    cfg = load_config(args.config)
    if args.target == "vdla":
        tasks = extract_tasks(graph, "vdla", config=cfg, calibrate=_samples(graph, args.calibrate))
    else:
        tasks = extract_tasks(graph, "llvm", cpu_target=args.cpu_target)
    if not tasks:
        print(f"{args.model}: no tunable operators for target {args.target}")
        return 0
    db = Database(log)
    for extra in args.transfer:
        db.records[:0] = [r for r in read_log(extra) if r.task.key not in {t.key for t in tasks}]
    where = f"pool {args.pool}" if args.pool else f"{args.workers} local worker{'s' if args.workers > 1 else ''}"
    budget = f" within {args.time_budget:g} min" if args.time_budget else ""
    print(f"tuning {len(tasks)} tasks of {args.model} for {args.target} ({tasks[0].target}, host {tasks[0].host}), "
          f"up to {args.trials} trials each{budget} with {args.tuner} on {where}; log {log}")
    curves = Path(args.curves) if args.curves else log.with_name(log.stem + "_curves")
    flush_bytes = FULL_FLUSH_BYTES  # VDLA tasks cost cycles: no flush applies
    if args.target != "vdla":
        # The flush before each timed call: what passes through the caches between two runs of a node.
        flush_bytes = model_flush_bytes(model_weight_bytes(graph, args.cpu_target))
        print(f"timing each call after a {flush_bytes / 2**20:.1f} MiB cache flush (the model's weights, "
              f"at most {FULL_FLUSH_BYTES >> 20} MiB: every operand evicted)")
    options = MeasureOptions(flush_bytes=flush_bytes)
    if args.build_timeout is not None:
        options = dataclasses.replace(options, build_timeout_s=args.build_timeout)
    if args.max_spill_reloads is not None:
        options = dataclasses.replace(options, max_spill_reloads=spill_limit)
    with _executor(args) as executor:
        outcomes = tune_tasks(tasks, db, executor, args.trials, args.tuner, args.batch,
                              cfg.to_dict() if args.target == "vdla" else None,
                              options=options, curves=curves, quiet=args.quiet,
                              seed=args.seed, budget_s=60 * args.time_budget or None, retime=args.retime,
                              retime_passes=args.retime_passes, retime_again=args.retime_again)
    for o in outcomes:
        unit = o.best.unit if o.best else ""
        best = f"{o.best.cost:.4g} {unit}" if o.best else "no config ran"
        gain = f" ({o.default_cost / o.best.cost:.2f}x the default)" if o.best and o.default_cost < float("inf") else ""
        searched = len({r.config_key for r in db.of_task(o.task)})
        fused = f" with {o.task.epilogue}" if o.task.epilogue else ""  # timed as the fused node
        print(f"  {o.task.name} x{o.task.weight}{fused}: best {best}{gain}; {searched} configs measured")
    print(f"tuning curves in {curves}")
    return 0
