"""Benchmark: two builds of one model with the same schedules, profiled node by node in turns, in both orders.

``bench/tune_fidelity.py`` and ``bench/node_classes.py`` compare a node's time in two builds of a model (default
and tuned), the builds taking turns in each round.  When both builds run the *same* kernel of a node, its ratio
should be 1; ``node_classes.py`` once put MobileNetV2's stem ~6% faster in the second build.  This run tells the
build from the turn: builds ``A`` and ``B`` (identical schedules, separately compiled and loaded, each with its
own arena) are profiled ``--rounds`` times in the order A, B and as many in the order B, A, interleaved; per node
and order, the fastest run of each build (thread CPU time, one thread, ``GraphModule.profile``).  A node that is
faster in whichever build runs second has an order effect (what ran just before it: the other build's whole
run); one faster in the same build in both orders has a build effect (its code or its buffers' placement).

``--b-config TASK=JSON`` builds ``B`` with one task's config changed (knobs over its default): every other
node runs the same kernel in both builds, on the same producers' outputs, but the kernels compiled after that
task's sit at other addresses in ``B``'s library.  A node that then differs between the builds in both orders,
though its kernel and neighbours are the same, is sensitive to where its code is.

Run: ``python bench/build_aa.py [--models mobilenet_v2] [--rounds 15] [--nodes 6] [--b-config TASK=JSON]
[--resolution 224] [--family]``;
writes ``bench/results/build_aa.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_BUILD_AA_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from host import finish_run, host_line, host_record  # noqa: E402
from zoo import FAMILIES, MODELS, export, make_model  # noqa: E402

from vdla.compiler.autotune import dispatch  # noqa: E402
from vdla.compiler.autotune.database import ApplyBest, Record  # noqa: E402
from vdla.compiler.autotune.task import extract_tasks  # noqa: E402
from vdla.compiler.autotune.template import template_for  # noqa: E402
from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla_hw.errors import BadConfigError  # noqa: E402


def profile_orders(modules: dict[str, Any], x: np.ndarray, rounds: int) -> dict[str, dict[str, dict[str, float]]]:
    """Per order (``AB``, ``BA``), per build, per node: the fastest of ``rounds`` profiled runs; the two
    orders alternate round by round."""
    best: dict[str, dict[str, dict[str, float]]] = {o: {k: {} for k in modules} for o in ("AB", "BA")}
    for m in modules.values():
        m.module.set_num_threads(1)
        m.run(x)
    for _ in range(rounds):
        for order in ("AB", "BA"):
            for name in order:
                _, prof = modules[name].module.profile(x, warmup=0, repeat=1, clock="thread")
                for row in prof.nodes:
                    cell = best[order][name]
                    cell[row.name] = min(cell.get(row.name, math.inf), row.seconds)
    return best


def build_b(graph: Any, name: str, b_config: str) -> tuple[Any, dict[str, Any]]:
    """Build ``B``: the default schedules, or with ``b_config`` (``TASK=JSON`` knobs over the task's default)."""
    if not b_config:
        return build_model(graph, target="llvm", name=name), {}
    task_name, eq, knobs = b_config.partition("=")
    if not eq or not task_name:
        raise SystemExit(f"--b-config {b_config!r}: expected TASK=JSON, e.g. TASK='{{\"ow_block\": 7}}'")
    tasks = {t.name: t for t in extract_tasks(graph, "llvm")}
    if task_name not in tasks:
        raise SystemExit(f"--b-config: no task {task_name!r}; the tasks are {sorted(tasks)}")
    task = tasks[task_name]
    template = template_for(task)
    try:
        changed = json.loads(knobs)
    except json.JSONDecodeError as e:
        raise SystemExit(f"--b-config {b_config}: the knobs are not JSON ({e}); give an object such as "
                         f"'{{\"ow_block\": 7}}'") from None
    if not isinstance(changed, dict):
        raise SystemExit(f"--b-config {b_config}: the knobs must be a JSON object of knob: value")
    # from_dict ignores names the space has no axis for (old logs); here a misspelt knob would build B
    # identical to A unnoticed.
    unknown = sorted(set(changed) - set(template.space.names))
    if unknown:
        raise SystemExit(f"--b-config {b_config}: {task_name} has no knobs {unknown}; its knobs are "
                         f"{sorted(template.space.names)}")
    try:
        config = template.space.from_dict({**template.default().to_dict(), **changed})
    except BadConfigError as e:
        raise SystemExit(f"--b-config {b_config}: {e}") from None
    why = template.space.why_illegal(config)
    if why:
        raise SystemExit(f"--b-config {b_config}: not a legal config: {why}")
    apply = ApplyBest([Record.make(task, config, "ok", [1.0], "s")], "llvm")
    with dispatch.dispatching(apply):
        module = build_model(graph, target="llvm", name=name)
    if task_name not in apply.applied:
        raise SystemExit(f"--b-config {b_config}: the lowering did not take the config ({apply.fallbacks})")
    return module, {"task": task_name, "config": config.to_dict()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mobilenet_v2")
    ap.add_argument("--rounds", type=int, default=15, help="rounds per order (default: 15)")
    ap.add_argument("--nodes", type=int, default=6, help="print the first N nodes and the largest ratios (default: 6)")
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--family", action="store_true",
                    help="each model's family's small member (tests/models/zoo.py), for a quick run")
    ap.add_argument("--b-config", default="", metavar="TASK=JSON",
                    help="build B with this one task's knobs changed (e.g. conv_3x224x224_32_k3s2='{\"ow_block\": 7}')")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "build_aa.json"))
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    known = FAMILIES if args.family else MODELS
    bad = [n for n in args.models.split(",") if n not in known]
    if bad:
        ap.error(f"--models: unknown {bad}; {'with --family ' if args.family else ''}use some of {', '.join(known)}")
    print(host_line())
    load_before = os.getloadavg()
    print(f"load {load_before[0]:.1f}; one thread; thread CPU time; two builds of the same schedules")
    results = []
    t0 = time.perf_counter()
    import torch

    for name in args.models.split(","):
        net = make_model(name, image_size=args.resolution, family=args.family)
        x = np.random.default_rng(0).standard_normal((1, 3, args.resolution, args.resolution)).astype(np.float32)
        graph = from_onnx(export(net, torch.from_numpy(x), "torchscript"))
        modules = {"A": build_model(graph, target="llvm", name=name)}
        modules["B"], changed = build_b(graph, name, args.b_config)
        best = profile_orders(modules, x, args.rounds)
        nodes = list(best["AB"]["A"])
        rows = []
        for n in nodes:
            ab = best["AB"]["A"][n] / best["AB"]["B"][n]
            ba = best["BA"]["A"][n] / best["BA"]["B"][n]
            rows.append({"node": n, "A_first_ms": best["AB"]["A"][n] * 1e3, "B_second_ms": best["AB"]["B"][n] * 1e3,
                         "B_first_ms": best["BA"]["B"][n] * 1e3, "A_second_ms": best["BA"]["A"][n] * 1e3,
                         "A_over_B_order_AB": ab, "A_over_B_order_BA": ba})
        print(f"\n{name}: per node, A/B in each order (>1: B faster); 'first' is the build profiled first in the round")
        print(f"{'node':<44} {'A first':>9} {'B second':>9} {'A/B':>7} | {'B first':>9} {'A second':>9} {'A/B':>7}")
        big = sorted(rows[args.nodes:], key=lambda r: -max(abs(r["A_over_B_order_AB"] - 1), abs(r["A_over_B_order_BA"] - 1)))
        for r in rows[:args.nodes] + big[:args.nodes]:
            print(f"{r['node'][:44]:<44} {r['A_first_ms']:9.4f} {r['B_second_ms']:9.4f} {r['A_over_B_order_AB']:7.3f} | "
                  f"{r['B_first_ms']:9.4f} {r['A_second_ms']:9.4f} {r['A_over_B_order_BA']:7.3f}")
        both = [r for r in rows if min(r["A_over_B_order_AB"], r["A_over_B_order_BA"]) > 1.03
                or max(r["A_over_B_order_AB"], r["A_over_B_order_BA"]) < 0.97]
        print(f"nodes 3% or more apart between the builds in both orders (a build effect): {len(both)} of {len(rows)}")
        for r in both:
            print(f"  {r['node'][:60]:<60} A/B {r['A_over_B_order_AB']:.3f} {r['A_over_B_order_BA']:.3f}  "
                  f"(A {r['A_first_ms']:.4f} ms)")
        tot = {o: {k: sum(best[o][k].values()) * 1e3 for k in "AB"} for o in best}
        print(f"whole (sum of nodes, ms): order AB: A {tot['AB']['A']:.3f} B {tot['AB']['B']:.3f}; "
              f"order BA: A {tot['BA']['A']:.3f} B {tot['BA']['B']:.3f}")
        results.append({"model": name, "family": args.family, "resolution": args.resolution,
                        "rounds_per_order": args.rounds, "b_changed": changed, "nodes": rows, "totals_ms": tot})
    finish_run({"host": host_record(), "load_average_before": load_before, "load_average_after": os.getloadavg(), "clock": "thread CPU time",
                "seconds": time.perf_counter() - t0, "results": results}, args.output)


if __name__ == "__main__":
    main()
