"""Benchmark: ResNet-18 end to end (batch 1, fp32) compiled for ``llvm`` against PyTorch eager and
onnxruntime in the same run; compile time; and ResNet-18 compiled for ``vdla`` (int8) on the
cycle model: simulated cycles per layer and in total at the config clock, and the CPU part's share.

What is timed:
* ``ours``: ``GraphModule.run`` of the module ``build_model(graph, "llvm")`` made from the committed
  ONNX export (``tests/graph/data/resnet18.onnx``, seeded weights), one CPU thread: input copy,
  every kernel, output copy;
* ``torch``: the same architecture (``tests/graph/models.py``) in eager mode under
  ``torch.inference_mode()``, ``torch.set_num_threads(1)``;
* ``onnxruntime``: the same ONNX file, ``intra_op_num_threads=1``, all graph optimizations.

Calls are interleaved (one call of each contender per round) so a burst of load from the other
processes on this shared machine hits all of them alike; the table gives the best and the median,
and the load average before and after is printed and recorded.
Compile time is ``build_model`` from the imported graph (optimization, lowering, LLVM O3, JIT).

Hygiene (TOOLCHAIN.md): the script re-executes itself with glibc's malloc thresholds raised and
``OPENBLAS_CORETYPE`` unset (unless ``--keep-openblas-coretype``); every library's thread count is 1.

Run: ``python bench/resnet18.py [--rounds N] [--resolution 224] [--vdla-resolution 224] [--skip-vdla]``;
needs the bench extra (torch); writes ``bench/results/resnet18.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_RESNET18_BENCH_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from host import host_line, host_record  # noqa: E402
from peer_env import MALLOC_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "graph")]

from make_models import resnet18_at  # noqa: E402

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402


def _interleaved(contenders: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():  # warm up: first calls allocate, JIT, spin up pools
        for _ in range(3):
            fn()
    for _ in tqdm(range(rounds), desc="llvm vs torch vs onnxruntime", unit="round"):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def bench_llvm(resolution: int, rounds: int) -> dict[str, Any]:
    import onnxruntime as ort
    import torch
    from models import resnet18

    model = resnet18_at(resolution)
    graph = from_onnx(model)
    compiled = build_model(graph, target="llvm")
    compiled.module.set_num_threads(1)
    x = np.random.default_rng(0).standard_normal((1, 3, resolution, resolution)).astype(np.float32)

    torch.set_num_threads(1)
    net = resnet18()
    xt = torch.from_numpy(x)

    def torch_eager() -> None:
        with torch.inference_mode():
            net(xt)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"x": x})[0]
    got = compiled.run({"x": x})[0]
    max_err = float(np.abs(got - want).max() / np.abs(want).max())
    times = _interleaved({"ours (llvm)": lambda: compiled.run({"x": x}), "torch eager": torch_eager,
                          "onnxruntime": lambda: sess.run(None, {"x": x})}, rounds)
    _, profile = compiled.module.profile({"x": x}, repeat=5)
    return {"resolution": resolution, "compile_seconds": compiled.compile_seconds, "max_rel_err_vs_ort": max_err,
            "kernels": len(compiled.module.graph["nodes"]), "functions": len(compiled.llvm_module.functions),
            "ms": {k: {"best": 1e3 * min(v), "median": 1e3 * statistics.median(v)} for k, v in times.items()},
            "per_node_ms": {n.name: 1e3 * n.seconds for n in profile.nodes},
            "torch": torch.__version__, "onnxruntime": ort.__version__}


def bench_vdla(resolution: int, config: str) -> dict[str, Any]:
    graph = from_onnx(resnet18_at(resolution))
    rng = np.random.default_rng(0)
    samples = [{"x": rng.standard_normal((1, 3, resolution, resolution)).astype(np.float32)} for _ in range(2)]
    t0 = time.perf_counter()
    compiled = build_model(graph, target="vdla", config=config, calibrate=samples)
    compile_s = time.perf_counter() - t0
    compiled.module.set_num_threads(1)
    print(f"vdla: compiled in {compile_s:.1f} s; simulating {compiled.placement().get('vdla', 0)} VDLA nodes "
          "on the cycle model ...", flush=True)
    _, profile = compiled.module.profile(samples[0], backend="cycle", repeat=5,
                                         trace=ROOT / "bench" / "results" / "resnet18_vdla_trace.json")
    vdla_s, cpu_s = profile.vdla_seconds or 0.0, profile.cpu_seconds
    return {"resolution": resolution, "config": config, "clock_mhz": profile.clock_mhz, "compile_seconds": compile_s,
            "layers": [{"name": n.name, "device": n.device, "ops": n.ops, "cycles": n.cycles, "macs": n.macs,
                        "gemm_utilization": n.gemm_utilization, "cpu_ms": 1e3 * n.seconds if n.device == "cpu" else None}
                       for n in profile.nodes],
            "vdla_cycles": profile.vdla_cycles, "vdla_ms": 1e3 * vdla_s, "cpu_ms": 1e3 * cpu_s,
            "cpu_share": cpu_s / (cpu_s + vdla_s) if cpu_s + vdla_s else None,
            "fallbacks": compiled.fallbacks, "trace": profile.trace}


def _print_llvm(r: dict[str, Any]) -> None:
    print(f"\nResNet-18 fp32, batch 1, {r['resolution']}x{r['resolution']}, one thread "
          f"(compile {r['compile_seconds']:.2f} s, {r['kernels']} kernels, {r['functions']} distinct functions; "
          f"max |ours - ort| / max|ort| = {r['max_rel_err_vs_ort']:.1e})")
    torch_best = r["ms"]["torch eager"]["best"]
    print(f"{'contender':<14} {'best ms':>9} {'median ms':>10} {'vs torch':>9}")
    for name, t in r["ms"].items():
        print(f"{name:<14} {t['best']:>9.2f} {t['median']:>10.2f} {torch_best / t['best']:>8.2f}x")


def _print_vdla(r: dict[str, Any]) -> None:
    print(f"\nResNet-18 int8 on VDLA ({r['config']}, {r['clock_mhz']:g} MHz, cycle model), {r['resolution']}x"
          f"{r['resolution']}, CPU part one thread; compile {r['compile_seconds']:.1f} s")
    print(f"{'layer':<16} {'dev':<5} {'cycles':>11} {'ms':>8} {'GEMM util':>9}  ops")
    for layer in r["layers"]:
        if layer["device"] == "vdla":
            ms = layer["cycles"] / (r["clock_mhz"] * 1e3)
            print(f"{layer['name'][:16]:<16} vdla  {layer['cycles']:>11,} {ms:>8.3f} {layer['gemm_utilization']:>9.1%}"
                  f"  {layer['ops']}")
        else:
            print(f"{layer['name'][:16]:<16} cpu   {'':>11} {layer['cpu_ms']:>8.3f} {'':>9}  {layer['ops']}")
    print(f"total: VDLA {r['vdla_cycles']:,} cycles = {r['vdla_ms']:.2f} ms; CPU {r['cpu_ms']:.2f} ms "
          f"(share of the end-to-end time: {r['cpu_share']:.1%})")
    for name, why in r["fallbacks"].items():
        print(f"  on the CPU instead of the VDLA: {name}: {why}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--vdla-resolution", type=int, default=224)
    ap.add_argument("--config", default="default")
    ap.add_argument("--skip-vdla", action="store_true")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    args = ap.parse_args()
    print(host_line())
    out: dict[str, Any] = {"host": host_record(),
                           "openblas_coretype": os.environ.get(_CHILD_FLAG), "malloc_env": MALLOC_ENV,
                           "load_average_before": os.getloadavg()}
    out["llvm"] = bench_llvm(args.resolution, args.rounds)
    out["load_average_after_llvm"] = os.getloadavg()
    _print_llvm(out["llvm"])
    print("load average (1, 5, 15 min) before / after: "
          + " / ".join(", ".join(f"{v:.2f}" for v in out[k]) for k in ("load_average_before", "load_average_after_llvm")))
    if not args.skip_vdla:
        out["vdla"] = bench_vdla(args.vdla_resolution, args.config)
        _print_vdla(out["vdla"])
    path = ROOT / "bench" / "results" / "resnet18.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
