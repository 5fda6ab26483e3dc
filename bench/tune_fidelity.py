"""Benchmark: does the tuner's measurement hold in the model?  Per task, the speed-up of the tuned config
over the default that the tuner predicts, against the speed-up of that task's nodes in the model.

Per model (random weights, ``tests/models/zoo.py``, TorchScript export at batch 1):

1. **tune**: every task of the selected kinds (default: the convs and the dense layer) with ``--tuner``
   (default xgb) for ``--trials`` configs (default 16: a small run, to finish on a loaded 2-core machine),
   measured as ``vdla tune`` does (the ``model`` cache state after the model's flush, ``model_flush_bytes``
   of its weights, see ``vdla.compiler.autotune.measure.time_cpu``), on ``--workers`` local workers;
2. **predict**: the task's default and best configs re-timed by the measurements the tuner has known
   (``--predict``): ``model``, the tuner's since issue 28 part 3: the fused node (the kernel with the epilogue
   its nodes run, ``Task.epilogue``: bias, residual add, ReLU/clip), after a flush of the model's weight bytes
   (at most 32 MiB; since the eleventh session), the activations (input and residual) just written by their
   producer, one call per repeat; ``full``, the same after the full 32 MiB flush (the tuner's measurement of
   the tenth session); ``bare``, the bare kernel after the model's flush (the kernel before part 3);
   ``cold``, the bare kernel with everything evicted,
   then ~1 ms of back-to-back calls (the measurement before issue 28); in ``--predict-rounds`` interleaved
   rounds (fastest repeat of each); predicted speed-up = default / best;
3. **in the model**: the model built twice, default schedules and with every task's best config
   (what ``vdla compile --tuning-log`` does), both run on one thread and profiled node by node
   (``GraphModule.profile``: each node timed in its place in whole runs) in ``--rounds`` interleaved
   rounds, fastest run of each node; a task's in-model speed-up = the sum of its nodes' default times
   over the sum of their tuned times.  A node of the model is the task's kernel plus whatever the graph
   fused into it (bias, ReLU, a residual add); since issue 28 part 3 the task's epilogue is the one most
   of its nodes run (a task's nodes may differ: ResNet's blocks mix convs with and without a residual).

Judged per task: ``best``, the log's best config (what ``vdla compile --tuning-log`` applies), and
``challenger``, the fastest logged config that is not the default.  When the tuner's best is the default
itself, the ``best`` builds run one kernel twice and their agreement measures only the noise of both sides;
the challenger is a different kernel on every task, so it always asks the issue's question.  Three
predictions per pick: ``log`` (the tuner's own figures: the default's and the pick's standing costs in the
log), and the re-timings of ``--predict``.  Agreement: predicted / measured - 1 (the issue's target:
within 5%).  Also the whole model: the tuned build's total time against the total the predictions give
(default total minus every task's predicted saving).  The clock is the calling thread's CPU time on both
sides (the profiler's ``clock="thread"`` and the tuner's): the wall clock of a node call counts the slices
other processes hold the core, 2x on some nodes even in their best of 20 runs on this shared machine.

``--tuning-log LOG`` judges an existing log (e.g. a whole ``vdla tune`` run) as it is: nothing is tuned.

Run: ``python bench/tune_fidelity.py [--models resnet18] [--trials 16] [--resolution 224] [--rounds 15]
[--kinds conv2d_nchwc,dense_pack] [--tasks NAME,...] [--predict model,full,bare,cold] [--tuning-log LOG]``; writes ``bench/results/tune_fidelity.json`` (and the tuning log beside it).
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
from vdla.compiler.autotune.epilogue import node_epilogue  # noqa: E402
from vdla.compiler.autotune.database import ApplyBest, Database, Record, ranked, read_log  # noqa: E402
from vdla.compiler.autotune.executor import LocalExecutor  # noqa: E402
from vdla.compiler.autotune.footprint import model_weight_bytes  # noqa: E402
from vdla.compiler.autotune.measure import (FULL_FLUSH_BYTES, MeasureOptions, build_job, config_cost,  # noqa: E402
                                            model_flush_bytes, run_job)
from vdla.compiler.autotune.session import tune_tasks  # noqa: E402
from vdla.compiler.autotune.spills import spills_of  # noqa: E402
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
#: The configs judged per task (see :func:`contenders`).
LABELS = ("best", "challenger")
#: The re-timings a predicted speed-up may come from: name -> (cache state, whether the kernel runs the task's
#: epilogue, whether the flush before each call is the model's (``model_flush_bytes`` of its weights) or the full
#: 32 MiB).  ``model`` is the tuner's measurement (the fused node after the model's flush, since the eleventh
#: session); ``full`` the same after the full flush (the tuner's measurement of issue 28 part 3, tenth
#: session); ``bare`` the bare kernel after the model's flush; ``cold`` the measurement before issue 28.
RETIMINGS = {"model": ("model", True, True), "full": ("model", True, False), "bare": ("model", False, True),
             "cold": ("cold", False, False)}


class NodeRecorder:
    """A dispatcher recording which task each kernel asks for (answers nothing: the defaults)."""

    def __init__(self, cpu_target: str) -> None:
        self.cpu_target, self.seen = cpu_target, []  # type: tuple[str, list[tuple[str, dict[str, int]]]]

    def query(self, kind: str, workload: Mapping[str, int]) -> None:
        self.seen.append((kind, dict(workload)))
        return None


def _drafted_nodes(graph: Any, cpu_target: str) -> list[tuple[Any, Any, list[tuple[str, dict[str, int]]]]]:
    """Every ``fused`` node of the CPU-optimized graph: the node, its drafted kernel and the tasks it asked for."""
    found = []
    with using_target(parse_target(cpu_target)):
        g = optimize_for_cpu(graph)
        for n in g.nodes:
            if n.op != "fused":
                continue
            rec = NodeRecorder(cpu_target)
            with dispatch.dispatching(rec):
                draft = draft_kernel(n, g, n.name)
            found.append((n, draft, rec.seen))
    return found


def nodes_of_tasks(graph: Any, cpu_target: str) -> dict[str, list[str]]:
    """Task key -> the names of the model's nodes whose kernel runs that task (as ``build_model`` names them)."""
    found: dict[str, list[str]] = {}
    for n, _, seen in _drafted_nodes(graph, cpu_target):
        for kind, wl in seen:
            found.setdefault(make_task(kind, wl, cpu_target).key, []).append(n.name)
    return found


def node_epilogues(graph: Any, cpu_target: str) -> dict[str, str]:
    """Node name -> the epilogue the node runs after its conv (``""``: none, or not a conv node)."""
    return {n.name: node_epilogue(n, draft.fuses_epilogue) for n, draft, _ in _drafted_nodes(graph, cpu_target)}


def contenders(task: Task, records: list[Record]) -> dict[str, dict[str, Any]]:
    """The configs of ``task`` whose speed-up over the default is judged: ``best``, the log's best (what
    ``ApplyBest`` and ``vdla compile --tuning-log`` apply), and ``challenger``, the fastest logged config that is
    not the default.  When the best is the default the two builds of the ``best`` comparison run one kernel and
    their "speed-up" says only how noisy the two sides are; the challenger is a different kernel on every task,
    so its comparison always asks the real question: does the tuner's measured ratio hold in the model?

    Each entry: the config, its standing record's cost and the default's (:func:`ranked`: the re-timed passes
    when the log has them), so ``tuning_speedup`` is the tuner's own prediction, read from its log."""
    template = template_for(task)
    default_key = template.default().key
    standing = {template.space.from_dict(r.config).key: r for r in ranked(records).values()}
    if not standing:
        raise RuntimeError(f"{task.name}: the log has no successful measurement")
    best_key = min(standing, key=lambda k: standing[k].cost)
    others = [k for k in standing if k != default_key]
    picks = {"best": best_key}
    if best_key == default_key and others:
        picks["challenger"] = min(others, key=lambda k: standing[k].cost)
    elif best_key != default_key:
        picks["challenger"] = best_key
    base = standing.get(default_key)
    return {label: {"config": standing[key].config, "is_default": key == default_key,
                    "tuning_cost": standing[key].cost,
                    "tuning_speedup": (base.cost / standing[key].cost) if base is not None else math.nan}
            for label, key in picks.items()}


def without_spilling(task: Task, records: list[Record], limit: int) -> tuple[list[Record], dict[str, int]]:
    """``records`` of ``task`` without the configs the spill-aware tuner does not time (more than ``limit``
    ymm/zmm reloads from the stack, the default excepted: ``measure.MeasureOptions.max_spill_reloads``), as
    far as the picks go: the standing best and challenger are built and counted, a spilling one dropped and
    the next taken, until both are clean.  Returns the kept records and the dropped configs' reloads (by
    config key).  On a log written before spill counting this is the pick a spill-aware search would have
    kept among what the log measured (its leaders' round ranked the survivors beside the default)."""
    template = template_for(task)
    default_key = template.default().key
    dropped: dict[str, int] = {}
    checked: set[str] = set()
    while True:
        kept = [r for r in records if template.space.from_dict(r.config).key not in dropped]
        standing = {template.space.from_dict(r.config).key: r for r in ranked(kept).values()}
        order = sorted(standing, key=lambda k: standing[k].cost)
        picks = order[:1] + [next((k for k in order if k != default_key), order[0])] if order else []
        todo = [k for k in picks if k != default_key and k not in checked]
        if not todo:
            return kept, dropped
        for key in todo:
            checked.add(key)
            reloads = spills_of(build_job(task.to_json(), None, standing[key].config)).reloads
            if reloads > limit:
                dropped[key] = reloads


def predict(task: Task, picks: Mapping[str, Mapping[str, Any]], rounds: int,
            retimings: tuple[str, ...] = ("model", "full"), flush_bytes: int = FULL_FLUSH_BYTES) -> dict[str, Any]:
    """The default and every pick of ``task``, each built once per kernel (fused node, bare kernel), re-timed by
    every measurement of ``retimings`` (:data:`RETIMINGS`) in ``rounds`` interleaved rounds (here in this
    process: the tuning's workers are idle by now); ``flush_bytes``: the model's flush (``model_flush_bytes``),
    which the re-timings that take the model's flush use.  Per pick and re-timing: the costs and the predicted
    speed-up over the default."""
    template = template_for(task)
    configs = {"default": template.default().to_dict(),
               **{label: template.space.from_dict(p["config"]).to_dict() for label, p in picks.items()}}
    kernels = {fused: (task if fused else task.with_epilogue("")).to_json()
               for fused in {RETIMINGS[r][1] for r in retimings}}
    artifacts = {fused: {which: build_job(tj, None, cfg) for which, cfg in configs.items()}
                 for fused, tj in kernels.items()}
    costs = {r: {which: math.inf for which in configs} for r in retimings}
    for _ in range(rounds):
        for r in retimings:
            cache, fused, model_flush = RETIMINGS[r]
            options = MeasureOptions(cache=cache, flush_bytes=flush_bytes if model_flush else FULL_FLUSH_BYTES)
            for which, artifact in artifacts[fused].items():
                outcome = run_job(kernels[fused], None, artifact, options)
                if not outcome.correct:
                    raise RuntimeError(f"{task.name}: the {which} config gave a wrong result ({outcome.detail})")
                costs[r][which] = min(costs[r][which], config_cost(outcome.costs))
    return {label: {**dict(p), **{r: {"default": costs[r]["default"], "config": costs[r][label],
                                      "speedup": costs[r]["default"] / costs[r][label]} for r in retimings}}
            for label, p in picks.items()}


#: What a profiled run of a build follows (``--profile-after``): ``self``, an unprofiled run of the same build,
#: as a deployed model runs back to back; ``other``, the previous build's profiled run (the builds only taking
#: turns, the tenth and eleventh sessions' runs).  Two builds of the same schedules put MobileNetV2's
#: 32 x 112 x 112 depthwise 12-17% and its stem 2-3% faster after their own build than after the other
#: (``bench/build_aa.py``): another build's run leaves the node's arena in another cache state.
PROFILE_AFTER = ("self", "other")


def profile_interleaved(modules: Mapping[str, Any], x: np.ndarray, rounds: int, quiet: bool,
                        after: str = "self") -> dict[str, dict[str, float]]:
    """Per module, per node: the fastest of ``rounds`` whole profiled runs, the modules taking turns; with
    ``after="self"`` each profiled run right after an unprofiled run of the same module (:data:`PROFILE_AFTER`)."""
    if after not in PROFILE_AFTER:
        raise ValueError(f"after={after!r} is not one of {PROFILE_AFTER}")
    best: dict[str, dict[str, float]] = {k: {} for k in modules}
    for m in modules.values():
        m.module.set_num_threads(1)
        m.run(x)
    for _ in tqdm(range(rounds), desc="profiling", unit="round", disable=quiet or not sys.stderr.isatty()):
        for name, m in modules.items():
            if after == "self":
                m.run(x)
            _, prof = m.module.profile(x, warmup=0, repeat=1, clock="thread")
            for row in prof.nodes:
                best[name][row.name] = min(best[name].get(row.name, math.inf), row.seconds)
    return best


def tuning_records(tasks: list[Task], args: argparse.Namespace, log_dir: Path, name: str,
                   flush_bytes: int) -> tuple[list[Record], float, str]:
    """The tuning log's records for ``tasks``: ``--tuning-log`` read as it is (nothing tuned), or a fresh (or
    ``--resume``d) tuning of ``--trials`` configs per task.  Returns the records, the tuning seconds, the log path."""
    if args.tuning_log:
        return read_log(args.tuning_log), 0.0, str(args.tuning_log)
    log = log_dir / f"tune_fidelity_{name}.jsonl"
    if log.exists() and not args.resume:
        log.unlink()
    db = Database(log)
    t0 = time.perf_counter()
    with LocalExecutor(workers=args.workers) as executor:
        options = MeasureOptions(build_timeout_s=args.build_timeout, run_timeout_s=args.build_timeout,
                                 flush_bytes=flush_bytes)
        tune_tasks(tasks, db, executor, args.trials, args.tuner, args.batch, options=options, quiet=args.quiet)
    return db.records, time.perf_counter() - t0, str(log)


def picked_records(records: list[Record], tasks: list[Task], picks: Mapping[str, Mapping[str, Any]], label: str) -> list[Record]:
    """The records of each task's ``label`` pick only, so that ``ApplyBest`` applies exactly that config."""
    chosen = {t.key: template_for(t).space.from_dict(picks[t.key][label]["config"]).key
              for t in tasks if label in picks[t.key]}
    by_key = {t.key: t for t in tasks}
    return [r for r in records if r.task.key in chosen
            and template_for(by_key[r.task.key]).space.from_dict(r.config).key == chosen[r.task.key]]


def bench_model(name: str, args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    import torch

    net = make_model(name, image_size=args.resolution)
    x = np.random.default_rng(0).standard_normal((1, 3, args.resolution, args.resolution)).astype(np.float32)
    model = export(net, torch.from_numpy(x), "torchscript")
    graph = from_onnx(model)
    kinds = tuple(args.kinds.split(","))
    tasks = [t for t in extract_tasks(graph, "llvm", cpu_target=args.cpu_target) if t.kind in kinds]
    if args.tasks:
        wanted = set(args.tasks.split(","))
        tasks = [t for t in tasks if t.name in wanted]
        if not tasks:
            raise SystemExit(f"--tasks {args.tasks}: no task of {name} has these names (they are as the table "
                             f"prints them, e.g. conv_64x56x56_256_k1s1)")
    retimings = tuple(args.predict.split(","))
    node_map, epilogue_of = nodes_of_tasks(graph, args.cpu_target), node_epilogues(graph, args.cpu_target)
    # The flush before each timed call, as `vdla tune` sizes it for this model.
    flush_bytes = model_flush_bytes(model_weight_bytes(graph, args.cpu_target))
    print(f"  {name}: the model's flush {flush_bytes / 2**20:.1f} MiB (full: {FULL_FLUSH_BYTES >> 20} MiB)")
    records, tune_s, log = tuning_records(tasks, args, log_dir, name, flush_bytes)
    by_task: dict[str, list[Record]] = {}
    for r in records:
        by_task.setdefault(r.task.key, []).append(r)
    missing = [t.name for t in tasks if not any(r.ok for r in by_task.get(t.key, []))]
    if missing:
        print(f"  not in the log (judged as the default): {', '.join(missing)}")
    tasks = [t for t in tasks if t.name not in missing]
    dropped: dict[str, dict[str, int]] = {}
    if args.max_spill_reloads is not None:
        for t in tasks:
            by_task[t.key], gone = without_spilling(t, by_task[t.key], args.max_spill_reloads)
            if gone:
                dropped[t.name] = gone
                print(f"  {t.name}: dropped {len(gone)} spilling pick(s) ({', '.join(f'{v} reloads' for v in gone.values())})")
    picks = {t.key: contenders(t, by_task[t.key]) for t in tasks}
    predictions = {t.key: predict(t, picks[t.key], args.predict_rounds, retimings, flush_bytes)
                   for t in tqdm(tasks, desc="predicting", unit="task", disable=args.quiet)}
    modules = {"default": build_model(graph, target="llvm", name=name, cpu_target=args.cpu_target)}
    applied: dict[str, Any] = {}
    for label in LABELS:
        if label == "challenger" and all(picks[t.key].get("challenger") == picks[t.key]["best"] for t in tasks):
            continue  # every best is a non-default config: the challenger build is the tuned build
        apply = ApplyBest(picked_records(records, tasks, picks, label), "llvm", args.cpu_target)
        with dispatch.dispatching(apply):
            modules[label] = build_model(graph, target="llvm", name=name, cpu_target=args.cpu_target)
        applied[label] = {"applied": apply.applied, "fallbacks": apply.fallbacks}
    times = profile_interleaved(modules, x, args.rounds, args.quiet, args.profile_after)
    rows = []
    for t in tasks:
        nodes = node_map.get(t.key, [])
        d = sum(times["default"][n] for n in nodes)
        row: dict[str, Any] = {"task": t.name, "kind": t.kind, "weight": t.weight, "epilogue": t.epilogue,
                               "nodes": nodes, "node_epilogues": [epilogue_of.get(n, "") for n in nodes],
                               "node_default_s": {n: times["default"][n] for n in nodes},
                               "node_tuned_s": {label: {n: times[label if label in modules else "best"][n]
                                                        for n in nodes} for label in predictions[t.key]},
                               "model_default_s": d, "comparisons": {}}
        for label, p in predictions[t.key].items():
            build = label if label in modules else "best"
            b = sum(times[build][n] for n in nodes)
            measured = d / b if b > 0 else math.nan
            row["comparisons"][label] = {
                **p, "model_s": b, "measured_speedup": measured,
                "agreement": {src: pred / measured - 1 for src, pred in predicted_speedups(p).items()}}
        rows.append(row)
    totals = {k: sum(v.values()) for k, v in times.items()}
    # The tuned total the predictions give: every task's nodes sped up by its predicted factor.
    predicted_total = {src: totals["default"] - sum(
        r["model_default_s"] * (1 - 1 / predicted_speedups(r["comparisons"]["best"])[src]) for r in rows)
        for src in ("log", *retimings)}
    return {"model": name, "profile_after": args.profile_after, "max_spill_reloads": args.max_spill_reloads, "spill_dropped": dropped,
            "retimings": list(retimings), "resolution": args.resolution, "trials": None if args.tuning_log else args.trials,
            "tuner": args.tuner, "tune_seconds": tune_s, "tasks": rows, "not_in_log": missing, "builds": applied,
            "model_totals_s": totals, "predicted_tuned_s": predicted_total, "log": log, "flush_bytes": flush_bytes}


def predicted_speedups(p: Mapping[str, Any]) -> dict[str, float]:
    """Per source of prediction (the tuner's log, each re-timing of :data:`RETIMINGS` run): the predicted speed-up."""
    return {"log": p["tuning_speedup"], **{r: p[r]["speedup"] for r in RETIMINGS if r in p}}


def agreement_summary(rows: list[dict[str, Any]], label: str, src: str, distinct_only: bool) -> tuple[int, int, float]:
    """(tasks within the target, tasks judged, mean |disagreement|) of ``label``'s comparisons by ``src``."""
    vals = [r["comparisons"][label]["agreement"][src] for r in rows if label in r["comparisons"]
            and not (distinct_only and r["comparisons"][label]["is_default"])]
    vals = [v for v in vals if math.isfinite(v)]
    within = sum(abs(v) <= TARGET_AGREEMENT for v in vals)
    return within, len(vals), float(np.mean(np.abs(vals))) if vals else math.nan


def print_table(r: dict[str, Any]) -> None:
    how = f"{r['trials']} {r['tuner']} trials per task (tuning {r['tune_seconds']:.0f} s)" if r["trials"] else \
        f"the log {r['log']}"
    print(f"\n{r['model']} @ {r['resolution']} px, {how}; per task and pick, speed-up over the default:")
    sources = ("log", *r["retimings"])
    print(f"{'task':34s} {'x':>2s} {'epilogue':14s} {'pick':10s} {'in model':>9s} "
          + " ".join(f"{s:>7s} {'agree':>7s}" for s in sources) + "  node ms default -> pick")
    for t in r["tasks"]:
        for label, c in t["comparisons"].items():
            tag = label + ("=dflt" if c["is_default"] else "")
            pred, agree = predicted_speedups(c), c["agreement"]
            print(f"{t['task']:34s} {t['weight']:2d} {t['epilogue'] or '-':14s} {tag:10s} {c['measured_speedup']:9.3f} "
                  + " ".join(f"{pred[s]:7.3f} {agree[s]:+7.1%}" for s in sources)
                  + f"  {1e3 * t['model_default_s']:.3f} -> {1e3 * c['model_s']:.3f}")
    for src in sources:
        parts = []
        for label, distinct in (("best", True), ("challenger", True), ("best", False)):
            within, n, mean = agreement_summary(r["tasks"], label, src, distinct)
            name = f"{label}{'' if distinct else ' (incl. = default)'}"
            parts.append(f"{name} {within}/{n} (mean |d| {mean:.1%})")
        print(f"  {src:5s} prediction within {TARGET_AGREEMENT:.0%}: " + "; ".join(parts)
              + f"; predicted tuned model {1e3 * r['predicted_tuned_s'][src]:.2f} ms")
    tot = r["model_totals_s"]
    print("  model (sum of the fastest node times): " + ", ".join(f"{k} {1e3 * v:.2f} ms" for k, v in tot.items())
          + f"; tuned {tot['default'] / tot['best']:.3f}x the default")


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
    ap.add_argument("--profile-after", choices=PROFILE_AFTER, default="self",
                    help="what each build's profiled run follows: an unprofiled run of itself (as a deployed model "
                         "runs) or the other build's run (the builds only taking turns, before the twelfth session)")
    ap.add_argument("--predict", default="model,full",
                    help="re-timings of default and picks, of " + ",".join(RETIMINGS) + " (default: %(default)s)")
    ap.add_argument("--tasks", default="", help="judge only these tasks (names as printed; default: every task)")
    ap.add_argument("--predict-rounds", type=int, default=3, help="re-timing rounds of default and best (default: 3)")
    ap.add_argument("--build-timeout", type=float, default=900.0,
                    help="seconds a build (and a run) job may take (default: 900: a loaded machine)")
    ap.add_argument("--cpu-target", default="llvm")
    ap.add_argument("--resume", action="store_true", help="keep and continue an existing tuning log")
    ap.add_argument("--tuning-log", default="",
                    help="judge this `vdla tune` log as it is (nothing tuned; tasks it lacks are listed)")
    ap.add_argument("--max-spill-reloads", type=int, default=None,
                    help="judge the picks a spill-aware tuner keeps: a pick whose kernel reloads more vectors than "
                         "this from the stack is dropped for the next (default: the log's picks as they are)")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "tune_fidelity.json"))
    args = ap.parse_args()
    if min(args.trials, args.rounds, args.predict_rounds, args.workers, args.batch) < 1:
        ap.error("--trials, --rounds, --predict-rounds, --workers and --batch must be positive")
    unknown = [r for r in args.predict.split(",") if r not in RETIMINGS]
    if unknown or not args.predict:
        ap.error(f"--predict {args.predict}: unknown re-timing(s) {unknown}; choose from {', '.join(RETIMINGS)}")
    if args.tuning_log and not Path(args.tuning_log).is_file():
        ap.error(f"--tuning-log {args.tuning_log}: no such file (pass a log written by `vdla tune`)")
    if args.tuning_log and args.resume:
        ap.error("--tuning-log judges a log as it is; --resume continues this bench's own log: pass one of them")
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
