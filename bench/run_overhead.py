"""Benchmark: a whole model run against the sum of its nodes, and the model's memory in huge pages or not,
against onnxruntime in the same interleaved run.

Per model (random weights, ``tests/models/zoo.py``, TorchScript export at batch 1, one thread), compiled
once by this tree (``--tuning-log``: with that log applied) and loaded twice from the same file:

* ``huge``: ``load(path)``, the runtime's default: parameters and arena in memory advised to use
  transparent huge pages (``vdla.runtime.huge_pages``);
* ``4k``: ``load(path, huge_pages=False)``: the same kernels and bytes in NumPy's memory (4 KiB pages), as
  the runtime allocated them before;
* ``ort``: onnxruntime on the same ONNX model, one thread, all graph optimizations.

Each round runs, in turn: every contender's whole run (``GraphModule.run``: input copy, every kernel, output
copy; ``InferenceSession.run``), timed by the calling thread's CPU time with its ``getrusage(RUSAGE_THREAD)``
system time, minor page faults and involuntary context switches; then each of our modules node by node
(``GraphModule.profile``: each kernel call timed on its own, in the model's order).  So the table
separates what a whole run costs beyond its kernels (``whole - node sum`` of the same rounds: Python
dispatch, input and output copies) from accounting: the sum of each node's fastest round, what
``bench/node_classes.py`` reports, is below the median whole run by the rounds' spread alone.

Run: ``python bench/run_overhead.py [--models resnet50,resnet18] [--rounds 30]
[--tuning-log resnet50=TUNE.jsonl]``; writes ``bench/results/run_overhead.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_RUN_OVERHEAD_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from host import finish_run, host_line, host_record  # noqa: E402
from peer_env import MALLOC_ENV  # noqa: E402

from vdla.runtime.openmp import load_openmp_runtime  # noqa: E402

load_openmp_runtime()  # before torch (zoo imports it) brings its own libgomp: see bench/models.py

from zoo import export, make_model  # noqa: E402

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.runtime.graph_executor import GraphModule, load  # noqa: E402

#: Our two loads of the same module file: the runtime's default and NumPy's 4 KiB pages.
OURS = ("huge", "4k")


def _usage() -> tuple[float, float, int, int]:
    r = resource.getrusage(resource.RUSAGE_THREAD)
    return r.ru_utime, r.ru_stime, r.ru_minflt, r.ru_nivcsw


def _compile(model: Any, name: str, tuning_log: str | None, path: Path) -> None:
    """``vdla compile`` of ``model`` (``--tuning-log``: the log's best configs) written to ``path``."""
    if tuning_log is None:
        build_model(from_onnx(model), target="llvm", name=name).export(path)
        return
    from vdla.compiler.autotune.database import ApplyBest, read_log
    from vdla.compiler.autotune.dispatch import dispatching

    with dispatching(ApplyBest(read_log(tuning_log), "llvm", "llvm", "default")):
        build_model(from_onnx(model), target="llvm", name=name).export(path)


def _node_by_node(module: GraphModule, feed: dict[str, np.ndarray]) -> list[float]:
    """Each node's thread CPU time in one run of the model (``GraphModule.profile``, no warm-up, one run)."""
    _, prof = module.profile(feed, clock="thread", warmup=0, repeat=1)
    return [n.seconds for n in prof.nodes]


def bench_model(name: str, rounds: int, tuning_log: str | None) -> dict[str, Any]:
    """The table's figures of one model (see the module doc)."""
    import onnxruntime as ort
    import torch

    net = make_model(name, image_size=224)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    model = export(net, torch.from_numpy(x), "torchscript")
    with tempfile.TemporaryDirectory(prefix="vdla_run_overhead_") as tmp:
        path = Path(tmp) / f"{name}.vdla"
        _compile(model, name, tuning_log, path)
        mods = {"huge": load(path), "4k": load(path, huge_pages=False)}
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = {model.graph.input[0].name: x}
    want = sess.run(None, feed)[0]
    for m in mods.values():
        m.set_num_threads(1)
    outs = {k: m.run(feed)[0] for k, m in mods.items()}
    if not np.array_equal(outs["huge"], outs["4k"]):
        raise SystemExit(f"{name}: the same module computes different bits in huge and 4 KiB pages")
    rel_err = float(np.abs(outs["huge"] - want).max() / np.abs(want).max())
    runs: dict[str, Callable[[], Any]] = {k: (lambda m=m: m.run(feed)) for k, m in mods.items()}
    runs["ort"] = lambda: sess.run(None, feed)
    for fn in runs.values():  # warm up: pools, first-touch faults of the arena and of onnxruntime's
        fn()
        fn()
    rec: dict[str, dict[str, list[float]]] = {k: {"whole": [], "sys": [], "faults": [], "preempted": []} for k in runs}
    nodes: dict[str, list[list[float]]] = {k: [] for k in OURS}
    for _ in range(rounds):
        for k, fn in runs.items():
            u0, c0 = _usage(), time.thread_time()
            fn()
            c1, u1 = time.thread_time(), _usage()
            rec[k]["whole"].append(c1 - c0)
            rec[k]["sys"].append(u1[1] - u0[1])
            rec[k]["faults"].append(u1[2] - u0[2])
            rec[k]["preempted"].append(u1[3] - u0[3])
        for k in OURS:
            nodes[k].append(_node_by_node(mods[k], feed))
    out: dict[str, Any] = {"model": name, "rounds": rounds, "tuning_log": tuning_log, "rel_err_vs_ort": rel_err,
                           "nodes": len(mods["huge"].graph["nodes"]), "ms": {}}
    for k in runs:
        r = {"whole_median": 1e3 * statistics.median(rec[k]["whole"]), "whole_best": 1e3 * min(rec[k]["whole"]),
             "sys_median": 1e3 * statistics.median(rec[k]["sys"]), "faults_median": statistics.median(rec[k]["faults"]),
             "preempted_median": statistics.median(rec[k]["preempted"])}
        if k in nodes:
            per_round = [sum(n) for n in nodes[k]]
            per_node = list(zip(*nodes[k]))
            r.update(node_sum_median=1e3 * statistics.median(per_round),
                     sum_of_node_best=1e3 * sum(min(v) for v in per_node),
                     sum_of_node_medians=1e3 * sum(statistics.median(v) for v in per_node))
        out["ms"][k] = r
    return out


def _table(results: list[dict[str, Any]]) -> None:
    print("\nfp32, batch 1, 1 thread, thread CPU time (ms); medians over the rounds unless 'best'")
    head = (f"{'model':<10} {'run':<5} {'whole':>8} {'best':>8} {'node sum':>9} {'whole-sum':>9} {'sum bests':>9} "
            f"{'sum meds':>9} {'sys':>6} {'faults':>6} {'/ ort':>6}")
    print(head)
    for r in results:
        ort_ms = r["ms"]["ort"]["whole_median"]
        for k, v in r["ms"].items():
            mine = k in OURS
            print(f"{r['model']:<10} {k:<5} {v['whole_median']:8.2f} {v['whole_best']:8.2f} "
                  + (f"{v['node_sum_median']:9.2f} {v['whole_median'] - v['node_sum_median']:+9.2f} "
                     f"{v['sum_of_node_best']:9.2f} {v['sum_of_node_medians']:9.2f} " if mine else " " * 40)
                  + f"{v['sys_median']:6.2f} {v['faults_median']:6.0f} {v['whole_median'] / ort_ms:5.3f}x")
        h, s = r["ms"]["huge"]["whole_median"], r["ms"]["4k"]["whole_median"]
        print(f"{'':<10} huge pages: {s / h:.3f}x the 4 KiB pages' speed ({s - h:+.2f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50,resnet18")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--tuning-log", action="append", default=[], metavar="MODEL=TUNE.jsonl")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "run_overhead.json"))
    args = ap.parse_args()
    logs = dict(item.split("=", 1) for item in args.tuning_log if "=" in item)
    if len(logs) != len(args.tuning_log) or any(not Path(p).is_file() for p in logs.values()):
        ap.error(f"--tuning-log takes MODEL=TUNE.jsonl with an existing log, got {args.tuning_log}")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    print(host_line())
    out: dict[str, Any] = {"host": host_record(), "malloc_env": MALLOC_ENV, "load_average_before": os.getloadavg(),
                           "models": []}
    for name in (m for m in args.models.split(",") if m):
        out["models"].append(bench_model(name, args.rounds, logs.get(name)))
    out["load_average_after"] = os.getloadavg()
    _table(out["models"])
    finish_run(out, args.output)


if __name__ == "__main__":
    main()
