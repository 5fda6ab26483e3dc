"""Benchmark: does a kernel's time depend on where the stack is when it is called?

A kernel whose register tile spills reads its spill slots back from the stack, so where those slots fall
against its data streams moves with the stack pointer at the call, which differs between the tuner
(``measure.time_cpu``) and the graph runtime's loop, and between processes (Linux randomizes the stack's
start).  Per task of a tuning log and per config (the template's default, the log's best, and ``--config``
ones), the tuner's own measurement (``measure.run_job``: the fused node, the ``model`` cache state after the
``--flush-mib`` flush, the produced inputs rewritten, fastest repeat) is run at ``--depths`` call depths: from
inside 0, 1, ... nested ctypes callbacks, each of which moves the C stack by one callback frame.  Rounds
interleave every depth and config; each cell is the fastest of ``--rounds`` rounds.

Printed per task: each config's time at every depth, its spread (slowest depth over fastest), its speed-up
over the default at each depth, and its spill count (``vdla.compiler.autotune.spills``: reloads).  A config that does not spill moves by the noise only; the spread of one that
does is what the tuner can get wrong about it by calling it from one place.

Run: ``python bench/spill_stack.py [--tuning-log LOG] [--tasks NAME,...] [--config TASK='{"ow_block": 28}']
[--depths 12] [--rounds 3] [--flush-mib 13.3]``; writes ``bench/results/spill_stack.json``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import time
from pathlib import Path
from typing import Any, Callable

from host import finish_run, host_line, host_record

from vdla.compiler.autotune.database import ranked, read_log, records_by_task
from vdla.compiler.autotune.measure import MeasureOptions, build_job, run_job
from vdla.compiler.autotune.spills import spills_of
from vdla.compiler.autotune.task import Task
from vdla.compiler.autotune.template import template_for

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOG = ROOT / "bench" / "results" / "tune_fidelity_s10_mobilenet_v2_znver4.jsonl"
DEFAULT_TASKS = "dwc_32x112x112_k3s1,conv_3x224x224_32_k3s2"

_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)


def at_depth(depth: int, fn: Callable[[], float]) -> float:
    """``fn()`` called from inside ``depth`` nested ctypes callbacks (each a libffi closure's C frame, so
    the C stack at the call is deeper by one such frame per level)."""
    result = [0.0]

    def level(i: int) -> int:
        if i == 0:
            result[0] = fn()
            return 0
        return callbacks[i - 1](i - 1)

    callbacks = [_CALLBACK(level) for _ in range(depth + 1)]
    callbacks[depth](depth)
    return result[0]


def task_configs(task: Task, records: list[Any], extra: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The default, the log's best (if it differs) and the ``extra`` configs (each over the default's knobs)."""
    template = template_for(task)
    default = template.default().to_dict()
    configs = {"default": default}
    standing = list(ranked(records).values())
    if standing:
        best = min(standing, key=lambda r: r.cost)
        best_cfg = template.space.from_dict(best.config).to_dict()
        if best_cfg != default:
            configs["log best"] = best_cfg
    for cfg in extra:
        configs[json.dumps(cfg, sort_keys=True)] = template.space.from_dict({**default, **cfg}).to_dict()
    return configs


def bench_task(task: Task, configs: dict[str, dict[str, Any]], depths: int, rounds: int,
               flush_bytes: int) -> dict[str, Any]:
    """Every config's fastest time (s) at every depth, over ``rounds`` interleaved rounds."""
    tj = task.to_json()
    artifacts = {label: build_job(tj, None, cfg) for label, cfg in configs.items()}
    options = MeasureOptions(flush_bytes=flush_bytes)
    best = {label: [float("inf")] * depths for label in configs}
    for _ in range(rounds):
        for depth in range(depths):
            for label, artifact in artifacts.items():
                def once(artifact: bytes = artifact) -> float:
                    outcome = run_job(tj, None, artifact, options)
                    if not outcome.correct:
                        raise RuntimeError(f"{task.name}: a config gave a wrong result ({outcome.detail})")
                    return min(outcome.costs)
                best[label][depth] = min(best[label][depth], at_depth(depth, once))
    return {"task": task.name, "configs": configs, "seconds": best,
            "spread": {label: max(v) / min(v) for label, v in best.items()},
            "reloads": {label: spills_of(a).reloads for label, a in artifacts.items()}}


def print_task(r: dict[str, Any]) -> None:
    labels = list(r["configs"])
    print(f"\n{r['task']}: fastest ms by call depth ({', '.join(f'{k}: {v}' for k, v in r['configs'].items())})")
    print("depth  " + "  ".join(f"{k[:22]:>22s}" for k in labels) + "  " +
          "  ".join(f"{'default/' + k[:14]:>22s}" for k in labels[1:]))
    for d in range(len(r["seconds"]["default"])):
        times = [r["seconds"][k][d] for k in labels]
        ratios = [times[0] / t for t in times[1:]]
        print(f"{d:5d}  " + "  ".join(f"{t * 1e3:22.4f}" for t in times) + "  " + "  ".join(f"{x:22.3f}" for x in ratios))
    print("spread " + "  ".join(f"{r['spread'][k]:22.3f}" for k in labels) + "   (slowest depth / fastest)")
    print("reload " + "  ".join(f"{r['reloads'][k]:22d}" for k in labels) + "   (ymm/zmm reloads from the stack)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tuning-log", default=str(DEFAULT_LOG), help="the log whose tasks and best configs are timed")
    ap.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated task names (default: %(default)s)")
    ap.add_argument("--config", action="append", default=[], metavar="TASK=JSON",
                    help="a further config of TASK, knobs over its default's (e.g. dwc_32x112x112_k3s1='{\"ow_block\": 28}')")
    ap.add_argument("--depths", type=int, default=12, help="call depths 0 .. N-1 (default: 12)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--flush-mib", type=float, default=13.3, help="the flush before each call (MobileNetV2's weights: 13.3)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "spill_stack.json"))
    args = ap.parse_args()
    if args.depths < 1 or args.rounds < 1:
        ap.error("--depths and --rounds must be at least 1")
    extra: dict[str, list[dict[str, Any]]] = {}
    for item in args.config:
        name, sep, knobs = item.partition("=")
        if not sep:
            ap.error(f"--config {item!r}: expected TASK=JSON, e.g. dwc_32x112x112_k3s1='{{\"ow_block\": 28}}'")
        try:
            extra.setdefault(name, []).append(json.loads(knobs))
        except json.JSONDecodeError as exc:
            ap.error(f"--config {item!r}: the knobs are not JSON ({exc})")
    by_name = records_by_task(read_log(args.tuning_log))
    names = [n for n in args.tasks.split(",") if n]
    missing = [n for n in names + list(extra) if n not in by_name]
    if missing:
        ap.error(f"tasks {missing} are not in {args.tuning_log}; it has {sorted(by_name)}")
    print(host_line())
    load_before = os.getloadavg()
    print(f"load {load_before[0]:.1f}; one thread; the tuner's measurement (model cache state, {args.flush_mib} MiB flush)")
    results = []
    t0 = time.perf_counter()
    for name in names:
        task = by_name[name][0].task
        r = bench_task(task, task_configs(task, by_name[name], extra.get(name, [])), args.depths, args.rounds,
                       int(args.flush_mib * 2**20))
        print_task(r)
        results.append(r)
    out = {"host": host_record(), "load_average_before": load_before, "load_average_after": os.getloadavg(),
           "clock": "thread CPU time", "tuning_log": str(args.tuning_log), "depths": args.depths,
           "rounds": args.rounds, "flush_mib": args.flush_mib, "seconds": time.perf_counter() - t0,
           "results": results}
    finish_run(out, args.output)


if __name__ == "__main__":
    main()
