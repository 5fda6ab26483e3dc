"""Where a model's time goes, ours against onnxruntime: per-operator-type kernel times of both.

Ours: :meth:`GraphModule.profile` (what ``vdla run --profile`` prints), each node the best of
``repeat`` whole runs, timed in its place, grouped by its fused op string (``conv2d+relu``).  Onnxruntime: its own profiler
(``SessionOptions.enable_profiling``), each node the best of the timed runs, grouped by op type
(after its graph optimizations, so ``FusedConv`` is a conv with its activation).  Best-of per node
filters out the other processes' bursts on a shared machine, which is what makes the two sides
comparable when measured one after the other.  ``bench/models.py --profile`` prints this for every
model above the target ratio.
"""
from __future__ import annotations

import collections
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class OpTime:
    """The summed best-of time of the nodes of one op (string or type) and their count."""

    op: str
    ms: float
    nodes: int


def _grouped(times: dict[str, tuple[str, float]]) -> list[OpTime]:
    ms: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()
    for op, seconds in times.values():
        ms[op] += 1e3 * seconds
        count[op] += 1
    return sorted((OpTime(op, t, count[op]) for op, t in ms.items()), key=lambda o: -o.ms)


def profile_ours(module: Any, feed: dict[str, np.ndarray], repeat: int = 10) -> list[OpTime]:
    """Per fused-op-string time of our compiled module: the calling thread's CPU time when the caller set
    one thread (other processes' time slices left out), else the wall clock."""
    one = module.library is not None and module.library.num_threads == 1
    _, prof = module.profile(feed, warmup=2, repeat=repeat, clock="thread" if one else "wall")
    return _grouped({n.name: (n.ops, n.seconds) for n in prof.nodes if n.device == "cpu"})


def ort_profiled_session(model_bytes: bytes, profile_dir: str | Path) -> Any:
    """A one-thread onnxruntime session, all graph optimizations on, writing its profile into ``profile_dir``."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.enable_profiling = True
    opts.profile_file_prefix = str(Path(profile_dir) / "ort")
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


def ort_kernel_times(profile_path: str | Path, warmup_runs: int) -> dict[str, tuple[dict[str, Any], float]]:
    """Per onnxruntime node of a profile: its args and its fastest kernel time (s) among the runs after
    the first ``warmup_runs`` (those warm caches and allocators)."""
    events = json.loads(Path(profile_path).read_text())
    starts = sorted(e["ts"] for e in events if e.get("name") == "model_run")
    first = starts[warmup_runs] if len(starts) > warmup_runs else 0
    best: dict[str, tuple[dict[str, Any], float]] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= first:
            seconds = e["dur"] / 1e6
            if e["name"] not in best or seconds < best[e["name"]][1]:
                best[e["name"]] = (e["args"], seconds)
    return best


def profile_ort(model_bytes: bytes, feed: dict[str, np.ndarray], runs: int = 20) -> list[OpTime]:
    """Per-op-type time of onnxruntime, single thread, all graph optimizations, warm runs only."""
    with tempfile.TemporaryDirectory(prefix="vdla_ort_prof_") as tmp:
        sess = ort_profiled_session(model_bytes, tmp)
        for _ in range(2 * runs):
            sess.run(None, feed)
        times = ort_kernel_times(sess.end_profiling(), warmup_runs=runs)
    return _grouped({node: (args["op_name"], seconds) for node, (args, seconds) in times.items()})


def format_profiles(name: str, ours: list[OpTime], peer: list[OpTime], top: int = 12) -> str:
    """Two side-by-side columns, each the ``top`` most expensive ops of one side."""
    totals = f"ours {sum(o.ms for o in ours):.2f} ms, onnxruntime {sum(o.ms for o in peer):.2f} ms"
    lines = [f"{name}: per-op kernel time, best of runs ({totals})",
             f"  {'ours: fused ops':<52} {'ms':>8} {'n':>4}   {'onnxruntime: op type':<22} {'ms':>8} {'n':>4}"]
    for i in range(min(top, max(len(ours), len(peer)))):
        left = f"{ours[i].op[:52]:<52} {ours[i].ms:>8.3f} {ours[i].nodes:>4}" if i < len(ours) else " " * 66
        right = f"{peer[i].op[:22]:<22} {peer[i].ms:>8.3f} {peer[i].nodes:>4}" if i < len(peer) else ""
        lines.append(f"  {left}   {right}")
    return "\n".join(lines)
