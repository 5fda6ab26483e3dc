"""Benchmark: where a model's time goes, by node class, ours against onnxruntime in one interleaved run.

Per model (random weights, ``tests/models/zoo.py``, TorchScript export at batch 1, one thread):

* ``ours``: ``GraphModule.profile`` (what ``vdla run --profile`` prints), each node timed in its place in
  whole runs, by the calling thread's CPU time (``clock="thread"``: on this shared machine the wall clock
  charged scheduler slices of other processes to a node even in its best of 20 runs, 2x on some nodes of
  one build and not another); with ``--tuning-log`` a tuned build (``vdla compile --tuning-log``) is
  profiled too;
* ``ort``: onnxruntime with ``enable_profiling`` (its own per-node kernel times), one thread, all graph
  optimizations (its NCHWc convs with the activation and the residual add fused); its profiler's times
  are wall clock (no CPU clock is offered), so its figures carry the host's load and ours do not: compare
  them on a quiet host, or as the fastest of many rounds.

The two are run in turn, one whole profiled run each per round, ``--rounds`` rounds; each node's time is
its fastest round (on a shared machine the other processes' bursts land on some rounds, not on the
kernel).  Nodes are grouped by class on both sides from their shapes, not their names (the two graphs fuse
differently: onnxruntime names a conv + add + ReLU after the conv, we after the ReLU):

* convs by kernel, stride and shape: the 7x7 stem, stride-1 3x3 (with our algorithm: Winograd F(4)/F(2)
  or direct, the default rule's or the tuned config's), strided 3x3, 1x1 (stride 1 and strided) by
  ``C -> K`` and plane; our class is the conv task's workload (``bench/tune_fidelity.nodes_of_tasks``),
  onnxruntime's the node's input, weight and output shapes in its profile;
* everything else by kind: pooling, dense (``Gemm``), element-wise / layout (``Add``, reorders).

GFLOP/s counts the direct conv's multiply-adds (2 C K kh kw Ho Wo / groups) for every algorithm, so a
Winograd conv can pass the FMA peak (``bench/cpu_ops.measure_peak``, measured in the same process).

Run: ``python bench/node_classes.py [--models resnet50] [--rounds 20] [--tuning-log resnet50=TUNE.jsonl]``;
writes ``bench/results/node_classes.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_NODE_CLASSES_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Mapping, Sequence  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from cpu_ops import measure_peak  # noqa: E402
from host import host_line, host_record  # noqa: E402
from model_profile import ort_kernel_times, ort_profiled_session  # noqa: E402
from tune_fidelity import nodes_of_tasks  # noqa: E402
from zoo import export, make_model  # noqa: E402

from vdla.compiler.autotune.database import ApplyBest, read_log  # noqa: E402
from vdla.compiler.autotune.dispatch import dispatching  # noqa: E402
from vdla.compiler.autotune.task import Task, extract_tasks  # noqa: E402
from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.compiler.graph.lower_llvm_nn import default_conv_tile  # noqa: E402


@dataclass(frozen=True)
class ConvShape:
    """A conv's shape as both sides see it: channels, kernel, stride, groups and output plane."""

    c: int
    k: int
    kh: int
    stride: int
    groups: int
    ho: int
    wo: int

    @property
    def gflop(self) -> float:
        return 2 * self.c // self.groups * self.k * self.kh * self.kh * self.ho * self.wo / 1e9

    def label(self) -> str:
        """The node class: the stem, depthwise, 3x3 / 1x1 with stride, channels and output plane."""
        plane = f"{self.ho}x{self.wo}"
        if self.c <= 4:
            return f"stem {self.kh}x{self.kh} s{self.stride}, {self.c} -> {self.k}, {plane}"
        if self.groups == self.c and self.groups > 1:
            return f"depthwise {self.kh}x{self.kh} s{self.stride}, {self.c} ch, {plane}"
        return f"{self.kh}x{self.kh} s{self.stride}, {self.c} -> {self.k}, {plane}"

    def family(self) -> str:
        """The coarse class of the summary table."""
        if self.c <= 4:
            return "stem conv"
        if self.groups == self.c and self.groups > 1:
            return "depthwise conv"
        if self.kh == 1:
            return "1x1 conv, stride 1" if self.stride == 1 else "1x1 conv, strided"
        return f"{self.kh}x{self.kh} conv, stride 1" if self.stride == 1 else f"{self.kh}x{self.kh} conv, strided"


def conv_of_task(task: Task) -> ConvShape | None:
    """The conv shape of a ``conv2d_nchwc`` / depthwise task's workload (None for other kinds)."""
    w = task.wl
    if task.kind == "conv2d_nchwc":
        c, k = w["ic_outer"] * w["ic_block"], w["oc_outer"] * w["oc_block"]
        groups = 1
    elif task.kind == "depthwise_conv2d_nchwc":
        c = k = groups = w["c_outer"] * w["c_block"]
    elif task.kind == "depthwise_conv2d_nchw":
        c = k = groups = w["c"]
    else:
        return None
    ho = (w["h"] + 2 * w["pad_h"] - w["kh"]) // w["stride_h"] + 1
    wo = (w["w"] + 2 * w["pad_w"] - w["kw"]) // w["stride_w"] + 1
    return ConvShape(c, k, w["kh"], w["stride_h"], groups, ho, wo)


def conv_of_ort_node(args: Mapping[str, Any]) -> ConvShape | None:
    """The conv shape of an onnxruntime profile node (``Conv``/``FusedConv``, NCHWc or not), from the
    ``input_type_shape`` (data, weight) and ``output_type_shape`` it records."""
    if args.get("op_name") not in ("Conv", "FusedConv"):
        return None
    ins = [next(iter(s.values())) for s in args["input_type_shape"]]
    out = next(iter(args["output_type_shape"][0].values()))
    (_, c, h, _), (k, cg, kh, _) = ins[0], ins[1]
    groups = c // cg
    stride = round(h / out[2]) if out[2] else 1
    return ConvShape(c, k, kh, max(stride, 1), groups, out[2], out[3])


def other_label(ops: str) -> str:
    """The class of a node that is not a conv (ours: the fused op string; onnxruntime: the op type)."""
    low = ops.lower()
    if "max" in low and "pool" in low:
        return "max pool"
    if "avg" in low or "average" in low:
        return "global average pool"
    if "dense" in low or "gemm" in low or "matmul" in low:
        return "dense (fc)"
    return "element-wise / layout"


@dataclass(frozen=True)
class ClassTime:
    """One class: its nodes' summed fastest times (ms) per contender, its node count and GFLOP."""

    label: str
    family: str
    gflop: float
    ms: dict[str, float]
    nodes: dict[str, int]
    algorithm: str


def algorithm_of(task: Task, applied: Mapping[str, str]) -> str:
    """Our conv algorithm for ``task``: the tuned config's (when the log answered it) or the default rule's."""
    key = applied.get(task.name, "")
    alg = dict(kv.split("=", 1) for kv in key.split(",") if "=" in kv).get("algorithm")
    if alg is None and task.name in applied and task.kind == "conv2d_nchwc":
        alg = "direct"  # a log without the algorithm knob replays as the direct conv
    if alg is None and task.kind == "conv2d_nchwc":
        tile = default_conv_tile(task.wl)
        alg = "direct" if tile is None else f"winograd_{tile}"
    return alg or "-"


def profile_ours_rounds(modules: Mapping[str, Any], sess: Any, feed: Mapping[str, np.ndarray], rounds: int,
                        quiet: bool, peak: list[float]) -> tuple[dict[str, dict[str, float]], dict[str, str], float]:
    """Per contender, per node: the fastest of ``rounds`` profiled runs (ours: ``GraphModule.profile``; the
    onnxruntime session with profiling on, read back at the end); also our nodes' op strings, and the
    onnxruntime profile's first timed run start (the first two runs warm up).  Each round also measures
    the FMA peak into ``peak``, so its best is a best-of over the same moments as the nodes'."""
    best: dict[str, dict[str, float]] = {k: {} for k in modules}
    ops: dict[str, str] = {}
    for m in modules.values():
        m.module.set_num_threads(1)
        m.run(dict(feed))
    for _ in range(2):
        sess.run(None, dict(feed))
    t_start = time.time()
    for _ in tqdm(range(rounds), desc="profiling", unit="round", disable=quiet or not sys.stderr.isatty()):
        peak.append(measure_peak(repeat=4))
        for name, m in modules.items():
            _, prof = m.module.profile(dict(feed), warmup=0, repeat=1, clock="thread")
            for row in prof.nodes:
                if row.device == "cpu":
                    best[name][row.name] = min(best[name].get(row.name, math.inf), row.seconds)
                    ops[row.name] = row.ops
        sess.run(None, dict(feed))
    return best, ops, t_start


def bench_model(name: str, args: argparse.Namespace, peak: float) -> dict[str, Any]:
    import torch

    net = make_model(name, image_size=args.resolution)
    x = np.random.default_rng(0).standard_normal((1, 3, args.resolution, args.resolution)).astype(np.float32)
    model = export(net, torch.from_numpy(x), "torchscript")
    graph = from_onnx(model)
    feed = {model.graph.input[0].name: x}
    modules: dict[str, Any] = {"ours": build_model(graph, target="llvm", name=name, cpu_target=args.cpu_target)}
    applied: dict[str, str] = {}
    log = dict(kv.split("=", 1) for kv in args.tuning_log).get(name)
    if log is not None:
        apply = ApplyBest(read_log(log), "llvm", args.cpu_target, "default")
        with dispatching(apply):
            modules["tuned"] = build_model(graph, target="llvm", name=name, cpu_target=args.cpu_target)
        applied = dict(apply.applied)
    tasks = {t.key: t for t in extract_tasks(graph, "llvm", cpu_target=args.cpu_target)}
    node_task = {n: tasks[key] for key, nodes in nodes_of_tasks(graph, args.cpu_target).items()
                 if key in tasks for n in nodes}

    with tempfile.TemporaryDirectory(prefix="vdla_node_classes_") as tmp:
        sess = ort_profiled_session(model.SerializeToString(), tmp)
        peaks: list[float] = [peak]
        ours, ops, _ = profile_ours_rounds(modules, sess, feed, args.rounds, args.quiet, peaks)
        peak = max(peaks)
        theirs = ort_kernel_times(sess.end_profiling(), warmup_runs=2)  # the two warm-up runs

    classes: dict[str, dict[str, Any]] = {}

    def add(label: str, family: str, gflop: float, who: str, seconds: float, algorithm: str = "-") -> None:
        c = classes.setdefault(label, {"family": family, "gflop": 0.0, "ms": {}, "nodes": {}, "algorithm": set()})
        c["ms"][who] = c["ms"].get(who, 0.0) + 1e3 * seconds
        c["nodes"][who] = c["nodes"].get(who, 0) + 1
        if who == "ort":
            c["gflop"] += gflop
        if algorithm != "-":
            c["algorithm"].add(algorithm)

    for who, times in ours.items():
        for node, seconds in times.items():
            task = node_task.get(node)
            shape = conv_of_task(task) if task is not None else None
            if shape is None:
                label = other_label(ops[node])
                add(label, label, 0.0, who, seconds)
            else:
                alg = algorithm_of(task, applied if who == "tuned" else {})
                add(shape.label(), shape.family(), shape.gflop, who, seconds, f"{who}: {alg}")
    for node, (a, seconds) in theirs.items():
        shape = conv_of_ort_node(a)
        if shape is None:
            label = other_label(a.get("op_name", ""))
            add(label, label, 0.0, "ort", seconds)
        else:
            add(shape.label(), shape.family(), shape.gflop, "ort", seconds)
    rows = [ClassTime(label, c["family"], c["gflop"], c["ms"], c["nodes"], ", ".join(sorted(c["algorithm"])))
            for label, c in classes.items()]
    rows.sort(key=lambda r: -max(r.ms.values()))
    return {"model": name, "resolution": args.resolution, "rounds": args.rounds, "peak_gflops": peak,
            "contenders": list(modules) + ["ort"], "classes": [asdict(r) for r in rows],
            "tuned_tasks": len(applied)}


def _families(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    fam: dict[str, dict[str, Any]] = {}
    for r in rows:
        f = fam.setdefault(r["family"], {"family": r["family"], "gflop": 0.0, "ms": {}, "nodes": {}})
        f["gflop"] += r["gflop"]
        for who, ms in r["ms"].items():
            f["ms"][who] = f["ms"].get(who, 0.0) + ms
            f["nodes"][who] = f["nodes"].get(who, 0) + r["nodes"].get(who, 0)
    return sorted(fam.values(), key=lambda f: -f["ms"].get("ours", 0.0))


def print_tables(r: Mapping[str, Any]) -> None:
    who = r["contenders"]
    peak = r["peak_gflops"]

    def line(label: str, gflop: float, ms: Mapping[str, float], nodes: Mapping[str, int], extra: str = "") -> str:
        cols = "".join(f" {ms.get(w, 0.0):>8.3f}" for w in who)
        ratio = ms.get("ours", 0.0) / ms["ort"] if ms.get("ort") else math.nan
        rates = "".join(f" {1e3 * gflop / ms[w] if ms.get(w) and gflop else math.nan:>7.1f}" for w in ("ours", "ort"))
        pct = "".join(f" {1e5 * gflop / ms[w] / peak if ms.get(w) and gflop else math.nan:>5.0f}%" for w in ("ours", "ort"))
        n = "/".join(str(nodes.get(w, 0)) for w in ("ours", "ort"))
        return f"{label[:40]:<40} {n:>7}{cols} {ratio:>6.2f}x{rates}{pct}  {extra}"

    head = (f"{'class':<40} {'n o/r':>7}" + "".join(f" {w + ' ms':>8}" for w in who) + f" {'o/ort':>7}"
            + f" {'GF/s o':>7} {'GF/s r':>7} {'%pk o':>6} {'%pk r':>6}")
    print(f"\n{r['model']} @ {r['resolution']} px, one thread, fastest of {r['rounds']} interleaved profiled runs "
          f"per node; FMA peak {peak:.1f} GFLOP/s (GFLOP/s = direct-conv FLOPs / time)")
    print(head)
    for f in _families(r["classes"]):
        print(line(f["family"], f["gflop"], f["ms"], f["nodes"]))
    tot = {w: sum(c["ms"].get(w, 0.0) for c in r["classes"]) for w in who}
    print(line("all nodes", sum(c["gflop"] for c in r["classes"]), tot,
               {w: sum(c["nodes"].get(w, 0) for c in r["classes"]) for w in ("ours", "ort")}))
    print("\nby class:")
    print(head)
    for c in r["classes"]:
        print(line(c["label"], c["gflop"], c["ms"], c["nodes"], c["algorithm"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet50", help="comma-separated zoo model names (default: resnet50)")
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--rounds", type=int, default=20, help="interleaved profiled runs (default: 20)")
    ap.add_argument("--tuning-log", action="append", default=[], metavar="MODEL=TUNE.jsonl",
                    help="also profile MODEL built with this tuning log (repeatable)")
    ap.add_argument("--cpu-target", default="llvm")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "node_classes.json"))
    args = ap.parse_args()
    if args.rounds < 1:
        ap.error("--rounds must be positive")
    bad = [kv for kv in args.tuning_log if "=" not in kv or not Path(kv.split("=", 1)[1]).is_file()]
    if bad:
        ap.error(f"--tuning-log takes MODEL=FILE with an existing file; got {bad}")
    load0 = os.getloadavg()[0]
    peak = max(measure_peak() for _ in range(3))  # best of three, then once per round (profile_ours_rounds)
    print(host_line())
    print(f"load {load0:.1f}; one thread; measured FMA peak {peak:.1f} GFLOP/s")
    results = []
    for name in args.models.split(","):
        r = bench_model(name, args, peak)
        print_tables(r)
        results.append(r)
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "clock": {"ours": "thread CPU time", "ort": "wall"},
                               "load_before": load0, "load_after": os.getloadavg()[0], "results": results},
                              indent=1, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
