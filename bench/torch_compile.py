"""Benchmark: ``torch.compile(backend="vdla")`` vs ``torch.compile`` (inductor, CPU) vs eager PyTorch vs
onnxruntime on torchvision models (batch 1, fp32, one thread, same run), with each one's compile time.

What is timed: one forward call of each contender under ``torch.inference_mode()`` (onnxruntime: one
``session.run`` of the TorchScript ONNX export, ``intra_op_num_threads=1``), interleaved one call of
each per round so load from the shared machine hits all alike; best and median per contender.
Compile time: the first call of a ``torch.compile``'d model (dynamo capture + backend compile), and
for onnxruntime the export plus session creation. Weights are seeded random (tests/models/zoo.py).

Run: ``python bench/torch_compile.py [--models resnet18,mobilenet_v2,vit_b_16] [--rounds 10]
[--resolution 224]``; writes ``bench/results/torch_compile.json``. Hygiene as bench/peer_env.py.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_TORCH_COMPILE_BENCH_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

import torch  # noqa: E402
from host import host_line, host_record  # noqa: E402
from zoo import make_model  # noqa: E402

import vdla  # noqa: E402


def host() -> dict[str, Any]:
    """:func:`host_record` with what this bench's figures also depend on: load, torch, OpenBLAS's kernels."""
    return {**host_record(), "load_avg": os.getloadavg(), "torch": torch.__version__,
            "openblas_coretype": os.environ.get(_CHILD_FLAG, "-")}


def timed_first_call(fn: Callable[[], Any]) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def onnxruntime_session(model: torch.nn.Module, x: torch.Tensor) -> Callable[[], Any]:
    import onnxruntime as ort

    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastpath = torch.backends.mha.get_fastpath_enabled()
        torch.backends.mha.set_fastpath_enabled(False)
        try:
            torch.onnx.export(model, (x,), buf, dynamo=False, opset_version=17)
        finally:
            torch.backends.mha.set_fastpath_enabled(fastpath)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    feed = {name: x.numpy()}
    return lambda: sess.run(None, feed)[0]


def bench_model(name: str, size: int, rounds: int) -> dict[str, Any]:
    model = make_model(name, image_size=size if name.startswith("vit") else None)
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        ref = model(x)
    contenders: dict[str, Callable[[], Any]] = {}
    compile_s: dict[str, float] = {}
    errors: dict[str, float] = {}
    notes: dict[str, str] = {}
    torch._dynamo.reset()
    for label, backend in (("vdla", "vdla"), ("inductor", "inductor")):
        compiled = torch.compile(model, backend=backend)
        with torch.inference_mode(), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out, compile_s[label] = timed_first_call(lambda: compiled(x))
        notes[label] = "; ".join(str(w.message) for w in caught if "vdla:" in str(w.message))
        errors[label] = float((out - ref).abs().max() / ref.abs().max())
        contenders[label] = lambda c=compiled: c(x)
    contenders["eager"] = lambda: model(x)
    t0 = time.perf_counter()
    ort_run = onnxruntime_session(model, x)
    compile_s["onnxruntime"] = time.perf_counter() - t0
    errors["onnxruntime"] = float(np.abs(ort_run() - ref.numpy()).max() / ref.abs().max())
    contenders["onnxruntime"] = ort_run
    compile_s["eager"] = 0.0
    errors["eager"] = 0.0
    times: dict[str, list[float]] = {k: [] for k in contenders}
    with torch.inference_mode():
        for fn in contenders.values():
            fn()  # warm
        for _ in tqdm(range(rounds), desc=name, leave=False):
            for k, fn in contenders.items():
                t0 = time.perf_counter()
                fn()
                times[k].append(time.perf_counter() - t0)
    return {"model": name, "resolution": size, "rounds": rounds,
            "contenders": {k: {"best_ms": 1e3 * min(v), "median_ms": 1e3 * statistics.median(v),
                               "compile_s": compile_s[k], "max_rel_err": errors[k], "note": notes.get(k, "")}
                           for k, v in times.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="resnet18,mobilenet_v2,vit_b_16")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--resolution", type=int, default=224)
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    info = host()
    print(f"{host_line()}; torch {info['torch']}, one thread, "
          f"load average {info['load_avg'][0]:.2f}")
    results = []
    for name in args.models.split(","):
        r = bench_model(name, args.resolution, args.rounds)
        results.append(r)
        eager = r["contenders"]["eager"]["best_ms"]
        print(f"\n{name} {args.resolution}x{args.resolution}, {args.rounds} rounds, load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        print("| contender | best ms | median ms | vs eager (best) | compile s | max rel err |")
        print("|---|---|---|---|---|---|")
        for k, c in r["contenders"].items():
            print(f"| {k} | {c['best_ms']:.2f} | {c['median_ms']:.2f} | {eager / c['best_ms']:.2f}x | "
                  f"{c['compile_s']:.1f} | {c['max_rel_err']:.1e} |")
        if r["contenders"]["vdla"]["note"]:
            print(f"vdla note: {r['contenders']['vdla']['note']}")
        info["load_avg_after"] = os.getloadavg()
        out = ROOT / "bench" / "results" / "torch_compile.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"host": info, "results": results}, indent=1))  # after each model: partial runs count
        print(f"wrote {out}", flush=True)


if __name__ == "__main__":
    main()
