"""Benchmark: how a compiled model's run time depends on where the C stack is when its kernels run.

Linux starts each process's stack at a random offset (``arch_align_stack``: up to 8 KiB lower, in 16-byte
steps), so every process calls the model's kernels with its stack at one of 256 positions within a 4 KiB
page, while the arena and the parameters sit at fixed offsets (2 MiB-aligned, ``vdla.runtime.huge_pages``).
A kernel whose register tile spills reads its spill slots back from the stack; at some positions those
slots share their low 12 address bits with the data the kernel is storing or loading at that moment, and
the core then takes a false store-to-load dependency (4 KiB aliasing).  A process that lands there runs
the model slower for its whole life (docs/cpu_speed.md, "The AVX2 MobileNetV2 outlier process").

This bench replays those draws in one process: at each of ``4096 / --step`` stack positions every CPU node
of the model is called through a trampoline that lowers the stack by that many bytes (a four-instruction
function JIT-compiled with llvmlite: a dynamic ``alloca`` before the call), and each node and the whole run
are timed by the calling thread's CPU time.  Each round visits every build (the default, ``--tuning-log``'s,
``--peer``'s) at every position, so the host's load falls on all alike; per position the whole run's median
over ``--rounds`` and each node's fastest, whose sum is the figure the shares are taken from (a loaded
host inflates medians, far less the bests).  onnxruntime runs the same input between the rounds, in the same
process (its stack is not moved), as the reference.

Printed per build: the median run over all positions and the slowest, the same for the sums of node bests, the
share of positions (so of processes) whose sum is at least 3% and 10% over its median, and the nodes whose
time moves the most.  A build
whose kernels do not spill stays within the noise at every position.

Run: ``python bench/stack_offsets.py [--models mobilenet_v2] [--tuning-log MODEL=LOG] [--peer main] [--step 16]
[--rounds 5]``
(under ``bench/avx2_host/run.py`` for AVX2 code); writes ``bench/results/stack_offsets.json``.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import time
from contextlib import ExitStack
from functools import cache
from pathlib import Path
from typing import Any, Callable

from host import host_line, host_record
from peer_tree import peer_tree

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from vdla.runtime.openmp import load_openmp_runtime  # noqa: E402

# As in bench/models.py: our OpenMP runtime before torch's (zoo imports torch).
load_openmp_runtime()

import numpy as np  # noqa: E402
from zoo import export, make_model  # noqa: E402

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.runtime.graph_executor import GraphModule  # noqa: E402

#: Bytes of the page whose offsets the stack can take (the low 12 bits the 4 KiB aliasing compares).
PAGE = 4096
#: Untimed runs of a build before each of its passes over the positions.
WARM_RUNS = 3
#: Shares of positions reported: a run at least this much slower than the median over all positions.
SLOW_FRACTIONS = (0.03, 0.10)

#: ``vdla_call_padded(fn, argv, pad)``: ``fn(argv)`` with the stack ``pad`` bytes lower (16-byte steps).
#: The volatile store and load keep the alloca alive across the call, so it is not a tail call.
TRAMPOLINE_IR = r"""
define i32 @vdla_call_padded(ptr %fn, ptr %argv, i64 %pad) {
entry:
  %p = alloca i8, i64 %pad, align 16
  store volatile i8 0, ptr %p
  %r = call i32 %fn(ptr %argv)
  %v = load volatile i8, ptr %p
  ret i32 %r
}
"""

_PaddedCall = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


@cache
def _trampoline() -> tuple[Any, Any]:
    """The JIT-compiled trampoline as a ctypes function, and the engine that owns its code."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(TRAMPOLINE_IR)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine(opt=2))
    engine.finalize_object()
    return _PaddedCall(engine.get_function_address("vdla_call_padded")), engine


def padded_call() -> Any:
    """``vdla_call_padded(fn, argv, pad)`` as a ctypes function (compiled once per process)."""
    return _trampoline()[0]


def short_name(node: str) -> str:
    """A torchvision ONNX node name shortened for the table (``/features/features.2/conv/conv.0/...`` ->
    ``f2.c0``)."""
    parts = [p for p in node.split("/") if p]
    keep = [p.replace("features.", "f").replace("conv.", "c") for p in parts[1:-1] if "." in p][:2]
    return ".".join(keep) or node.strip("/").replace("_output_0", "")


def compile_model(name: str, resolution: int, tuning_log: str | None) -> tuple[GraphModule, Any, np.ndarray]:
    """The zoo model ``name`` built for this host (``tuning_log``: its best configs applied), exported and
    loaded back as a ``--peer`` build is (so every build reaches the kernels by the same path), its ONNX
    model and a fixed input."""
    import tempfile

    import torch

    from vdla.runtime.graph_executor import load

    net = make_model(name, image_size=resolution)
    x = np.random.default_rng(0).standard_normal((1, 3, resolution, resolution)).astype(np.float32)
    model = export(net, torch.from_numpy(x), "torchscript")
    with ExitStack() as stack:
        if tuning_log is not None:
            from vdla.compiler.autotune.database import ApplyBest, read_log
            from vdla.compiler.autotune.dispatch import dispatching

            stack.enter_context(dispatching(ApplyBest(read_log(tuning_log), "llvm", "llvm", "default")))
        compiled = build_model(from_onnx(model), target="llvm", name=name)
    with tempfile.TemporaryDirectory(prefix="vdla_stack_offsets_") as tmp:
        return load(compiled.export(Path(tmp) / f"{name}.vdla")), model, x


def kernel_calls(module: GraphModule, x: np.ndarray) -> list[tuple[str, int, Any]]:
    """(node name, kernel address, packed arguments) of every CPU node, in run order, after ``x`` is bound
    and one run has filled the arena (a CPU-only model's placed nodes compute nothing)."""
    module.run(x)
    return [(name, fn.address, argv) for name, fn, argv in module.kernel_calls()]


def scan(builds: dict[str, list[tuple[str, int, Any]]], pads: list[int], rounds: int,
         between: Callable[[], None] | None = None) -> dict[str, tuple[list[list[float]], list[list[float]]]]:
    """Per build: per round and position the whole run's thread CPU time (ms), and per position and node
    the fastest (ms).  Each round visits every build at every position (builds interleaved, so the host's
    load falls on all of them alike); ``between`` runs after each round's builds (the reference)."""
    call = padded_call()
    for calls in builds.values():  # warm up: the trampoline's first calls, every node's data in its usual state
        for _ in range(2):
            for _, addr, argv in calls:
                call(addr, argv, 0)
    out = {b: ([[0.0] * len(pads) for _ in range(rounds)], [[float("inf")] * len(calls) for _ in pads])
           for b, calls in builds.items()}
    for r in range(rounds):
        for build, calls in builds.items():
            whole, node_best = out[build]
            for _ in range(WARM_RUNS):  # untimed: the previous build's pass left its own data in the caches
                for _, addr, argv in calls:
                    call(addr, argv, 0)
            # Each round starts at another position, so no position is always among a pass's first (which
            # still run a little slower after the switch) and its best of the rounds is a warm one.
            start = r * len(pads) // rounds
            for i in [*range(start, len(pads)), *range(start)]:
                pad = pads[i]
                best = node_best[i]
                t_start = time.thread_time_ns()
                for k, (_, addr, argv) in enumerate(calls):
                    t0 = time.thread_time_ns()
                    rc = call(addr, argv, pad)
                    t1 = time.thread_time_ns()
                    if rc != 0:
                        raise RuntimeError(f"node {calls[k][0]!r} returned error code {rc}")
                    best[k] = min(best[k], (t1 - t0) / 1e6)
                whole[r][i] = (time.thread_time_ns() - t_start) / 1e6
        if between is not None:
            between()
    return out


def _shares(values: list[float], center: float) -> dict[str, float]:
    return {f"{f:.2f}": sum(v >= (1 + f) * center for v in values) / len(values) for f in SLOW_FRACTIONS}


def summarize(pads: list[int], whole: list[list[float]], node_best: list[list[float]],
              names: list[str]) -> dict[str, Any]:
    """Per position the median run and the sum of the nodes' fastest times (robust to the host's load: each
    node's best of the rounds); their medians over positions, the shares of positions at least 3% / 10%
    slower than that median (``slow_share``: by the sums of node bests; ``slow_share_runs``: by the median
    runs), and the nodes that move the most (slowest position's best over the median position's)."""
    per_pad = [statistics.median(whole[r][i] for r in range(len(whole))) for i in range(len(pads))]
    best_sum = [sum(row) for row in node_best]
    center, best_center = statistics.median(per_pad), statistics.median(best_sum)
    order = sorted(range(len(pads)), key=lambda i: -best_sum[i])
    nodes = []
    for k, name in enumerate(names):
        col = [node_best[i][k] for i in range(len(pads))]
        med = statistics.median(col)
        worst = max(range(len(pads)), key=lambda i: col[i])
        nodes.append({"name": name, "median_ms": med, "max_ms": col[worst], "max_over_median": col[worst] / med,
                      "worst_pad": pads[worst], "pads_over_1.15x": [pads[i] for i in range(len(pads)) if col[i] > 1.15 * med]})
    nodes.sort(key=lambda n: -(n["max_ms"] - n["median_ms"]))
    return {"median_ms": center, "min_ms": min(per_pad), "max_ms": max(per_pad),
            "best_sum_median_ms": best_center, "best_sum_max_ms": max(best_sum),
            "slow_share": _shares(best_sum, best_center), "slow_share_runs": _shares(per_pad, center),
            "slowest_pads": [{"pad": pads[i], "best_sum_ms": best_sum[i], "run_ms": per_pad[i]} for i in order[:8]],
            "per_pad_ms": per_pad, "per_pad_best_sum_ms": best_sum, "nodes": nodes}


class OrtReference:
    """onnxruntime on one thread, the same input, in this process: a few runs between the scan's rounds."""

    def __init__(self, model: Any, x: np.ndarray, runs_per_round: int = 3) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = 1, 1
        self._sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
        self._feed = {model.graph.input[0].name: x}
        self._runs = runs_per_round
        self._sess.run(None, self._feed)
        self.times: list[float] = []

    def __call__(self) -> None:
        for _ in range(self._runs):
            t0 = time.thread_time_ns()
            self._sess.run(None, self._feed)
            self.times.append((time.thread_time_ns() - t0) / 1e6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="mobilenet_v2", help="comma-separated zoo models (default mobilenet_v2)")
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--tuning-log", action="append", default=[], metavar="MODEL=LOG",
                    help="also time the build with this log's best configs (repeatable, one per model)")
    ap.add_argument("--peer", metavar="REV", help="also time the default build compiled by this commit's tree "
                                                  "(e.g. main), in the same run")
    ap.add_argument("--step", type=int, default=16, help="bytes between stack positions (a multiple of 16; default 16)")
    ap.add_argument("--rounds", type=int, default=5, help="runs per position (default 5)")
    ap.add_argument("--output", type=Path, default=ROOT / "bench" / "results" / "stack_offsets.json")
    args = ap.parse_args()
    if args.step <= 0 or args.step % 16 or PAGE % args.step:
        ap.error(f"--step must be a positive multiple of 16 dividing {PAGE} (the stack moves in 16-byte steps), "
                 f"got {args.step}")
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    logs = {}
    for item in args.tuning_log:
        model, sep, log = item.partition("=")
        if not sep or not Path(log).is_file():
            ap.error(f"--tuning-log takes MODEL=LOG with an existing LOG file, got {item!r}")
        logs[model] = log
    pads = list(range(0, PAGE, args.step))
    print(host_line(), flush=True)
    load_before = os.getloadavg()
    with ExitStack() as stack:
        peer = stack.enter_context(peer_tree(args.peer)) if args.peer else None
        results = []
        for name in args.models.split(","):
            builds: dict[str, tuple[GraphModule, Any, np.ndarray]] = {}
            builds["default"] = compile_model(name, args.resolution, None)
            if name in logs:
                builds["tuned"] = compile_model(name, args.resolution, logs[name])
            if peer is not None:
                from models import compile_peer

                module, onnx_model, x = builds["default"]
                builds[f"peer {peer[0]}"] = (compile_peer(onnx_model, name, "llvm", peer[1]).module, onnx_model, x)
            calls = {}
            for build, (module, _, x) in builds.items():
                module.set_num_threads(1)
                calls[build] = kernel_calls(module, x)
            _, onnx_model, x = builds["default"]
            ort_ref = OrtReference(onnx_model, x)
            scanned = scan(calls, pads, args.rounds, ort_ref)
            ort_ms = statistics.median(ort_ref.times)
            for build, (whole, node_best) in scanned.items():
                results.append({"model": name, "build": build,
                                "tuning_log": logs.get(name) if build == "tuned" else None,
                                "nodes_timed": len(calls[build]),
                                **summarize(pads, whole, node_best, [c[0] for c in calls[build]]), "ort_ms": ort_ms})
    print(f"\nfp32, batch 1, one thread, CPU time of the calling thread; {len(pads)} stack positions "
          f"{args.step} bytes apart, {args.rounds} rounds, builds interleaved; 'run': median of a position's runs, "
          f"'best sum': the sum of its nodes' fastest times; shares of positions by the best sums")
    print(f"{'model':<14} {'build':<13} {'run med':>8} {'run max':>8} {'best sum':>8} {'bs max':>8} {'>=3%':>6} "
          f"{'>=10%':>6} {'ort':>7} {'run/ort':>8} {'max/ort':>8}  worst nodes (max/median at their worst position)")
    for r in results:
        worst = ", ".join(f"{short_name(n['name'])} {n['max_over_median']:.2f}x@{n['worst_pad']}"
                          for n in r["nodes"][:3])
        print(f"{r['model']:<14} {r['build']:<13} {r['median_ms']:>8.3f} {r['max_ms']:>8.3f} "
              f"{r['best_sum_median_ms']:>8.3f} {r['best_sum_max_ms']:>8.3f} {r['slow_share']['0.03']:>6.1%} "
              f"{r['slow_share']['0.10']:>6.1%} {r['ort_ms']:>7.3f} {r['median_ms'] / r['ort_ms']:>7.2f}x "
              f"{r['max_ms'] / r['ort_ms']:>7.2f}x  {worst}")
    load_after = os.getloadavg()
    print("load average (1, 5, 15 min) before / after: " + ", ".join(f"{v:.2f}" for v in load_before) + " / "
          + ", ".join(f"{v:.2f}" for v in load_after))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps({"host": host_record(), "step": args.step, "rounds": args.rounds,
                                       "load_average_before": load_before, "load_average_after": load_after,
                                       "pads": pads, "results": results}, indent=1))
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
