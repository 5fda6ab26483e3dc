"""Benchmark: does the tuner's measurement hold in the model?  Per task, the speed-up of the tuned config
over the default that the tuner predicts, against the speed-up of that task's nodes in the model.

Per model (random weights, ``tests/models/zoo.py``, TorchScript export at batch 1):

1. **tune**: every task of the selected kinds (default: the convs and the dense layer) with ``--tuner``
   (default xgb) for ``--trials`` configs (default 16: a small run, to finish on a loaded 2-core machine),
   measured as ``vdla tune`` does (``MeasureOptions()``: the ``model`` cache state, see
   ``vdla.compiler.autotune.measure.time_cpu``), on ``--workers`` local workers;
2. **predict**: the task's default and best configs re-timed in both cache states the tuner has known,
   ``model`` (weights evicted, the input just written by its producer, one call per repeat) and ``cold``
   (the measurement before issue 28: everything evicted, then ~1 ms of back-to-back calls), in
   ``--predict-rounds`` interleaved rounds (fastest repeat of each); predicted speed-up = default / best;
3. **in the model**: the model built twice, default schedules and with every task's best config
   (what ``vdla compile --tuning-log`` does), both run on one thread and profiled node by node
   (``GraphModule.profile``: each node timed in its place in whole runs) in ``--rounds`` interleaved
   rounds, fastest run of each node; a task's in-model speed-up = the sum of its nodes' default times
   over the sum of their tuned times.  A node of the model is the task's kernel plus whatever the graph
   fused into it (bias, ReLU, a residual add, a layout change), which the tuner's kernel does not run.

Agreement per task: predicted / measured - 1 (the issue's target: within 5%).  Also the whole model:
the tuned build's total time against the total the predictions give (default total minus every task's
predicted saving).  The clock is the calling thread's CPU time on both sides (the profiler's
``clock="thread"`` and the tuner's): the wall clock of a node call counts the slices other processes
hold the core, 2x on some nodes even in their best of 20 runs on this shared machine.

Run: ``python bench/tune_fidelity.py [--models resnet18] [--trials 16] [--resolution 224] [--rounds 15]
[--kinds conv2d_nchwc,dense_pack]``; writes ``bench/results/tune_fidelity.json`` (and the tuning log beside it).
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_TUNE_FIDELITY_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Mapping  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from host import host_line, host_record  # noqa: E402
from zoo import export, make_model  # noqa: E402

from vdla.compiler.autotune import dispatch  # noqa: E402
from vdla.compiler.autotune.database import ApplyBest, Database, Record  # noqa: E402
from vdla.compiler.autotune.executor import LocalExecutor  # noqa: E402
from vdla.compiler.autotune.measure import CACHE_STATES, MeasureOptions, build_job, config_cost, run_job  # noqa: E402
from vdla.compiler.autotune.session import tune_tasks  # noqa: E402
from vdla.compiler.autotune.task import Task, extract_tasks, make_task  # noqa: E402
from vdla.compiler.autotune.template import template_for  # noqa: E402
from vdla.compiler.codegen.llvm import parse_target, using_target  # noqa: E402
from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.compiler.graph.lower_llvm import draft_kernel  # noqa: E402
from vdla.compiler.graph.passes import optimize_for_cpu  # noqa: E402

DEFAULT_KINDS = ("conv2d_nchwc", "depthwise_conv2d_nchwc", "depthwise_conv2d_nchw", "dense_pack")
#: The issue's target: the predicted speed-up within 5% of the in-model one, per node.
TARGET_AGREEMENT = 0.05


class NodeRecorder:
    """A dispatcher recording which task each kernel asks for (answers nothing: the defaults)."""

    def __init__(self, cpu_target: str) -> None:
        self.cpu_target, self.seen = cpu_target, []  # type: tuple[str, list[tuple[str, dict[str, int]]]]

    def query(self, kind: str, workload: Mapping[str, int]) -> None:
        self.seen.append((kind, dict(workload)))
        return None


def nodes_of_tasks(graph: Any, cpu_target: str) -> dict[str, list[str]]:
    """Task key -> the names of the model's nodes whose kernel runs that task (as ``build_model`` names them)."""
    found: dict[str, list[str]] = {}
    with using_target(parse_target(cpu_target)):
        g = optimize_for_cpu(graph)
        for n in g.nodes:
            if n.op != "fused":
                continue
            rec = NodeRecorder(cpu_target)
            with dispatch.dispatching(rec):
                draft_kernel(n, g, n.name)
            for kind, wl in rec.seen:
                found.setdefault(make_task(kind, wl, cpu_target).key, []).append(n.name)
    return found


def predict(task: Task, records: list[Record], rounds: int) -> dict[str, Any]:
    """The default and best logged configs of ``task``, each built once, re-timed in every cache state
    in ``rounds`` interleaved rounds (here in this process: the tuning's workers are idle by now)."""
    ok = [r for r in records if r.ok]
    best = min(ok, key=lambda r: r.cost)
    template = template_for(task)
    default, tuned = template.default(), template.space.from_dict(best.config)
    artifacts = {"default": build_job(task.to_json(), None, default.to_dict()),
                 "best": build_job(task.to_json(), None, tuned.to_dict())}
    costs: dict[str, dict[str, float]] = {c: {"default": math.inf, "best": math.inf} for c in CACHE_STATES}
    for _ in range(rounds):
        for cache in CACHE_STATES:
            for which, artifact in artifacts.items():
                outcome = run_job(task.to_json(), None, artifact, MeasureOptions(cache=cache))
                if not outcome.correct:
                    raise RuntimeError(f"{task.name}: the {which} config gave a wrong result ({outcome.detail})")
                costs[cache][which] = min(costs[cache][which], config_cost(outcome.costs))
    tuning_default = [r.cost for r in ok if template.space.from_dict(r.config).key == default.key]
    return {"best_config": best.config, "best_is_default": default.key == tuned.key,
            "tuning": {"default": min(tuning_default, default=math.inf), "best": best.cost},
            **{c: {**costs[c], "speedup": costs[c]["default"] / costs[c]["best"]} for c in CACHE_STATES}}


def profile_interleaved(modules: Mapping[str, Any], x: np.ndarray, rounds: int, quiet: bool) -> dict[str, dict[str, float]]:
    """Per module, per node: the fastest of ``rounds`` whole profiled runs, the modules taking turns."""
    best: dict[str, dict[str, float]] = {k: {} for k in modules}
    for m in modules.values():
        m.module.set_num_threads(1)
        m.run(x)
    for _ in tqdm(range(rounds), desc="profiling", unit="round", disable=quiet or not sys.stderr.isatty()):
        for name, m in modules.items():
            _, prof = m.module.profile(x, warmup=0, repeat=1, clock="thread")
            for row in prof.nodes:
                best[name][row.name] = min(best[name].get(row.name, math.inf), row.seconds)
    return best


def bench_model(name: str, args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    import torch

    net = make_model(name, image_size=args.resolution)
    x = np.random.default_rng(0).standard_normal((1, 3, args.resolution, args.resolution)).astype(np.float32)
    model = export(net, torch.from_numpy(x), "torchscript")
    graph = from_onnx(model)
    kinds = tuple(args.kinds.split(","))
    tasks = [t for t in extract_tasks(graph, "llvm", cpu_target=args.cpu_target) if t.kind in kinds]
    node_map = nodes_of_tasks(graph, args.cpu_target)
    log = log_dir / f"tune_fidelity_{name}.jsonl"
    if log.exists() and not args.resume:
        log.unlink()
    db = Database(log)
    t0 = time.perf_counter()
    with LocalExecutor(workers=args.workers) as executor:
        options = MeasureOptions(build_timeout_s=args.build_timeout, run_timeout_s=args.build_timeout)
        tune_tasks(tasks, db, executor, args.trials, args.tuner, args.batch, options=options, quiet=args.quiet)
        tune_s = time.perf_counter() - t0
    predictions = {t.key: predict(t, db.of_task(t), args.predict_rounds)
                   for t in tqdm(tasks, desc="predicting", unit="task", disable=args.quiet)}
    default = build_model(graph, target="llvm", name=name, cpu_target=args.cpu_target)
    apply = ApplyBest(db.records, "llvm", args.cpu_target)
    with dispatch.dispatching(apply):
        tuned = build_model(graph, target="llvm", name=name, cpu_target=args.cpu_target)
    times = profile_interleaved({"default": default, "tuned": tuned}, x, args.rounds, args.quiet)
    rows = []
    for t in tasks:
        p = predictions[t.key]
        nodes = node_map.get(t.key, [])
        d = sum(times["default"][n] for n in nodes)
        b = sum(times["tuned"][n] for n in nodes)
        measured = d / b if b > 0 else math.nan
        rows.append({"task": t.name, "kind": t.kind, "weight": t.weight, "nodes": nodes,
                     "model_default_s": d, "model_tuned_s": b, "measured_speedup": measured,
                     **{f"predicted_{c}": p[c]["speedup"] for c in CACHE_STATES},
                     **{f"agreement_{c}": p[c]["speedup"] / measured - 1 for c in CACHE_STATES},
                     "prediction": p})
    total_default, total_tuned = sum(times["default"].values()), sum(times["tuned"].values())
    # The tuned total the predictions give: every task's nodes sped up by its predicted factor.
    predicted_total = {c: total_default - sum(r["model_default_s"] * (1 - 1 / r[f"predicted_{c}"]) for r in rows)
                       for c in CACHE_STATES}
    return {"model": name, "resolution": args.resolution, "trials": args.trials, "tuner": args.tuner,
            "tune_seconds": tune_s, "tasks": rows, "applied": apply.applied, "fallbacks": apply.fallbacks,
            "model_default_s": total_default, "model_tuned_s": total_tuned,
            "predicted_tuned_s": predicted_total, "log": str(log)}


def print_table(r: dict[str, Any]) -> None:
    print(f"\n{r['model']} @ {r['resolution']} px, {r['trials']} {r['tuner']} trials per task "
          f"(tuning {r['tune_seconds']:.0f} s); per task, speed-up of the tuned config over the default:")
    print(f"{'task':34s} {'x':>2s} {'in model':>9s} {'pred (model)':>13s} {'agree':>7s} {'pred (cold)':>12s} "
          f"{'agree':>7s}  node ms default -> tuned")
    for t in r["tasks"]:
        print(f"{t['task']:34s} {t['weight']:2d} {t['measured_speedup']:9.3f} {t['predicted_model']:13.3f} "
              f"{t['agreement_model']:+7.1%} {t['predicted_cold']:12.3f} {t['agreement_cold']:+7.1%}  "
              f"{1e3 * t['model_default_s']:.3f} -> {1e3 * t['model_tuned_s']:.3f}")
    for c in CACHE_STATES:
        within = sum(abs(t[f"agreement_{c}"]) <= TARGET_AGREEMENT for t in r["tasks"])
        mean = float(np.mean([abs(t[f"agreement_{c}"]) for t in r["tasks"]])) if r["tasks"] else math.nan
        print(f"  {c:5s} measurement: {within}/{len(r['tasks'])} tasks within {TARGET_AGREEMENT:.0%}, "
              f"mean |disagreement| {mean:.1%}; predicted tuned model {1e3 * r['predicted_tuned_s'][c]:.2f} ms")
    print(f"  model: default {1e3 * r['model_default_s']:.2f} ms, tuned {1e3 * r['model_tuned_s']:.2f} ms "
          f"({r['model_default_s'] / r['model_tuned_s']:.3f}x; sum of the fastest node times)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet18", help="comma-separated zoo model names (default: resnet18)")
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--trials", type=int, default=16, help="tuning trials per task (default: 16)")
    ap.add_argument("--tuner", default="xgb")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--kinds", default=",".join(DEFAULT_KINDS), help="task kinds to tune (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved profiled runs of each build (default: 15)")
    ap.add_argument("--predict-rounds", type=int, default=3, help="re-timing rounds of default and best (default: 3)")
    ap.add_argument("--build-timeout", type=float, default=900.0,
                    help="seconds a build (and a run) job may take (default: 900: a loaded machine)")
    ap.add_argument("--cpu-target", default="llvm")
    ap.add_argument("--resume", action="store_true", help="keep and continue an existing tuning log")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "tune_fidelity.json"))
    args = ap.parse_args()
    if min(args.trials, args.rounds, args.predict_rounds, args.workers, args.batch) < 1:
        ap.error("--trials, --rounds, --predict-rounds, --workers and --batch must be positive")
    print(host_line())
    print(f"load {os.getloadavg()[0]:.1f}; one thread")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.models.split(","):
        r = bench_model(name, args, out.parent)
        print_table(r)
        results.append(r)
    out.write_text(json.dumps({"host": host_record(), "clock": "thread CPU time",
                               "target_agreement": TARGET_AGREEMENT, "results": results}, indent=1, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
