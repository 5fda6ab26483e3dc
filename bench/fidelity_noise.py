"""Benchmark: how noisy are the two sides of ``bench/tune_fidelity.py`` on small nodes?  The same kernel
against itself (A/A), by the tuner's re-timing and in the model.

Per model and task (default: MobileNetV2's small depthwise nodes and its dense layer):

1. **tuner side**: the task's default config (the fused node, as ``vdla tune`` times it) built twice and
   timed by ``measure.run_job`` in ``--rounds`` interleaved rounds, once per flush of ``--flush`` in each
   round: ``model`` (the model's weight bytes, ``model_flush_bytes``, what the tuner uses since the eleventh
   session), ``full`` (32 MiB, the tenth session's), or a size in MiB.  Each disjoint group of ``--group``
   rounds gives one A/A ratio, build 1's fastest repeat over build 2's, as ``tune_fidelity.py
   --predict-rounds G`` would predict a "speed-up" of a kernel over itself;
2. **in the model**: the model built twice with default schedules, profiled node by node in
   ``--profile-rounds`` interleaved rounds (``GraphModule.profile``, thread CPU time, as ``tune_fidelity.py``
   does); each disjoint group of ``--profile-group`` rounds gives one A/A ratio per node (fastest of each).

Printed per task: the fastest time of each side (and the tuner's over the model's), and the A/A ratios'
root mean square distance from 1 and the largest: the noise a predicted or measured speed-up carries.

Run: ``python bench/fidelity_noise.py [--models mobilenet_v2] [--tasks NAME,...] [--flush model,full,8]
[--rounds 20] [--group 5] [--profile-rounds 60] [--profile-group 15]``; writes
``bench/results/fidelity_noise.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_FIDELITY_NOISE_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Sequence  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from host import host_line, host_record  # noqa: E402
from tune_fidelity import nodes_of_tasks  # noqa: E402
from zoo import export, make_model  # noqa: E402

from vdla.compiler.autotune.footprint import model_weight_bytes  # noqa: E402
from vdla.compiler.autotune.measure import (FULL_FLUSH_BYTES, MeasureOptions, build_job,  # noqa: E402
                                            model_flush_bytes, run_job)
from vdla.compiler.autotune.task import Task, extract_tasks  # noqa: E402
from vdla.compiler.autotune.template import template_for  # noqa: E402
from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402

#: MobileNetV2's nodes of 9-70 us that the tenth session's fidelity runs missed by 7-19%, and its dense layer.
DEFAULT_TASKS = ("dwc_576x14x14_k3s2,dwc_960x7x7_k3s1,dwc_192x28x28_k3s2,dwc_576x14x14_k3s1,dwc_144x56x56_k3s2,"
                 "conv_144x28x28_32_k1s1,dense_1x1280x1008")


def flush_sizes(spec: str, model_flush: int) -> dict[str, int]:
    """``--flush``: name -> bytes (``model``: the model's flush, ``full``: 32 MiB, a number: that many MiB)."""
    sizes = {}
    for item in spec.split(","):
        if item == "model":
            sizes[item] = model_flush
        elif item == "full":
            sizes[item] = FULL_FLUSH_BYTES
        else:
            try:
                mib = float(item)
            except ValueError:
                raise SystemExit(f"--flush {spec}: {item!r} is not model, full or a size in MiB") from None
            if not mib >= 0:
                raise SystemExit(f"--flush {spec}: a size in MiB is >= 0, got {item}")
            sizes[f"{mib:g}MiB"] = int(mib * 2**20)
    return sizes


def aa_ratios(a: Sequence[float], b: Sequence[float], group: int) -> list[float]:
    """One ratio per disjoint group of ``group`` rounds: the fastest of ``a``'s over the fastest of ``b``'s
    (each entry of ``a``/``b`` one round's fastest)."""
    return [min(a[g:g + group]) / min(b[g:g + group]) for g in range(0, min(len(a), len(b)) - group + 1, group)]


def spread(ratios: Sequence[float]) -> dict[str, float]:
    """The A/A ratios' root mean square and largest distance from 1."""
    d = np.abs(np.asarray(ratios, float) - 1.0)
    if not d.size:
        return {"rms": math.nan, "max": math.nan}
    return {"rms": float(np.sqrt(np.mean(d ** 2))), "max": float(d.max())}


def tuner_side(task: Task, flushes: dict[str, int], rounds: int) -> dict[str, list[list[list[float]]]]:
    """Per flush, per build (two of the default config): per round, the repeats' seconds."""
    tj = task.to_json()
    config = template_for(task).default().to_dict()
    builds = [build_job(tj, None, config) for _ in range(2)]
    samples: dict[str, list[list[list[float]]]] = {f: [[], []] for f in flushes}
    for _ in range(rounds):
        for name, size in flushes.items():
            for i, artifact in enumerate(builds):
                outcome = run_job(tj, None, artifact, MeasureOptions(flush_bytes=size))
                if not outcome.correct:
                    raise RuntimeError(f"{task.name}: the default config gave a wrong result ({outcome.detail})")
                samples[name][i].append(list(outcome.costs))
    return samples


def model_side(graph: Any, name: str, x: np.ndarray, nodes: set[str], rounds: int) -> list[dict[str, list[float]]]:
    """Per build (two, default schedules): per node of ``nodes``, its time in each profiled round."""
    modules = [build_model(graph, target="llvm", name=name) for _ in range(2)]
    for m in modules:
        m.module.set_num_threads(1)
        m.run(x)
    times: list[dict[str, list[float]]] = [{n: [] for n in nodes} for _ in modules]
    for _ in range(rounds):
        for i, m in enumerate(modules):
            _, prof = m.module.profile(x, warmup=0, repeat=1, clock="thread")
            for row in prof.nodes:
                if row.name in nodes:
                    times[i][row.name].append(row.seconds)
    return times


def bench_model(name: str, args: argparse.Namespace) -> dict[str, Any]:
    import torch

    net = make_model(name, image_size=224)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    graph = from_onnx(export(net, torch.from_numpy(x), "torchscript"))
    wanted = args.tasks.split(",")
    tasks = [t for t in extract_tasks(graph, "llvm") if t.name in wanted]
    missing = sorted(set(wanted) - {t.name for t in tasks})
    if missing:
        raise SystemExit(f"--tasks: {name} has no task {', '.join(missing)} (names as tune_fidelity.py prints them)")
    model_flush = model_flush_bytes(model_weight_bytes(graph))
    flushes = flush_sizes(args.flush, model_flush)
    node_map = nodes_of_tasks(graph, "llvm")
    nodes = {n for t in tasks for n in node_map.get(t.key, [])}
    tuner = {t.name: tuner_side(t, flushes, args.rounds) for t in tasks}
    model = model_side(graph, name, x, nodes, args.profile_rounds)
    rows = []
    for t in tasks:
        t_nodes = node_map.get(t.key, [])
        in_model = {n: min(model[0][n]) for n in t_nodes}
        node_aa = {n: aa_ratios(model[0][n], model[1][n], args.profile_group) for n in t_nodes}
        row: dict[str, Any] = {"task": t.name, "epilogue": t.epilogue, "nodes": t_nodes, "in_model_s": in_model,
                               "model_aa": {n: {"ratios": r, **spread(r)} for n, r in node_aa.items()},
                               "model_times_s": {n: [model[0][n], model[1][n]] for n in t_nodes}, "tuner": {}}
        for f in flushes:
            a, b = ([min(r) for r in tuner[t.name][f][i]] for i in range(2))
            r = aa_ratios(a, b, args.group)
            row["tuner"][f] = {"flush_bytes": flushes[f], "fastest_s": min(min(a), min(b)),
                               "aa_ratios": r, **spread(r), "samples_s": tuner[t.name][f]}
        rows.append(row)
    return {"model": name, "flushes": flushes, "rounds": args.rounds, "group": args.group,
            "profile_rounds": args.profile_rounds, "profile_group": args.profile_group, "tasks": rows}


def print_table(r: dict[str, Any]) -> None:
    flushes = r["flushes"]
    print(f"\n{r['model']}: A/A of the default config, tuner groups of {r['group']} of {r['rounds']} rounds, "
          f"model groups of {r['profile_group']} of {r['profile_rounds']} profiled rounds")
    print(f"{'task':26s} {'in model us':>11s} {'model A/A rms/max':>18s} | "
          + " | ".join(f"{f + ' ' + format(s / 2**20, '.1f') + ' MiB':>16s} {'/model':>6s} {'A/A rms/max':>12s}"
                       for f, s in flushes.items()))
    for t in r["tasks"]:
        node_us = np.mean(list(t["in_model_s"].values())) * 1e6
        aa = max(t["model_aa"].values(), key=lambda s: s["rms"])  # the noisiest of the task's nodes
        cells = []
        for f in flushes:
            c = t["tuner"][f]
            cells.append(f"{1e6 * c['fastest_s']:13.2f} us {1e6 * c['fastest_s'] / node_us:6.2f} "
                         f"{c['rms']:5.1%}/{c['max']:5.1%}")
        print(f"{t['task']:26s} {node_us:11.2f} {aa['rms']:8.1%}/{aa['max']:8.1%} | " + " | ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mobilenet_v2")
    ap.add_argument("--tasks", default=DEFAULT_TASKS, help="task names as tune_fidelity.py prints them")
    ap.add_argument("--flush", default="model,full",
                    help="flushes to compare: model, full, or MiB (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=20, help="interleaved re-timing rounds (default: 20)")
    ap.add_argument("--group", type=int, default=5, help="rounds per A/A ratio (tune_fidelity's --predict-rounds; 5)")
    ap.add_argument("--profile-rounds", type=int, default=60, help="interleaved profiled runs of each build (60)")
    ap.add_argument("--profile-group", type=int, default=15,
                    help="profiled runs per A/A ratio (tune_fidelity's --rounds; 15)")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "fidelity_noise.json"))
    args = ap.parse_args()
    if not 1 <= args.group <= args.rounds or not 1 <= args.profile_group <= args.profile_rounds:
        ap.error("--group must be 1..--rounds and --profile-group 1..--profile-rounds")
    print(host_line())
    load0 = os.getloadavg()
    print(f"load {load0[0]:.1f}; one thread, thread CPU time on both sides")
    results = []
    for name in args.models.split(","):
        r = bench_model(name, args)
        print_table(r)
        results.append(r)
    load1 = os.getloadavg()
    print(f"load {load1[0]:.1f} at the end")
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "load_start": load0, "load_end": load1,
                               "clock": "thread CPU time", "results": results}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
