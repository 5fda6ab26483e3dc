"""Benchmark: torchvision classification models compiled for ``llvm`` against onnxruntime and PyTorch
eager, single thread, in one interleaved run; and the compile time of each.

Per model (random weights, randomized BatchNorm statistics: ``tests/models/zoo.py``), exported
with the TorchScript exporter at batch 1:

* ``compile s``: ``build_model(from_onnx(model), target="llvm")``, what ``vdla compile --target
  llvm`` runs (optimization, lowering, LLVM O3, JIT), from the in-memory ONNX model;
* ``ours``: ``GraphModule.run`` of that module with one thread (input copy, every kernel, output copy);
* ``ort``: onnxruntime on the same ONNX model, ``intra_op_num_threads = inter_op_num_threads = 1``,
  all graph optimizations;
* ``torch``: the same ``nn.Module`` in eager mode, ``torch.inference_mode()``, ``torch.set_num_threads(1)``.

Outputs are checked first (ours and torch against onnxruntime, max abs error <= 1e-4 x max |output|);
a model that does not match is reported and not timed.  Then the three contenders are called in
turn, one call each per round, so a burst of load from other processes on this shared machine hits
all of them alike; the table gives the median over the rounds (the best is in the JSON).

Hygiene (TOOLCHAIN.md): the script re-executes itself with glibc's malloc thresholds raised
(``MALLOC_MMAP_THRESHOLD_=268435456 MALLOC_TRIM_THRESHOLD_=1073741824``, the peers' best figures)
and ``OPENBLAS_CORETYPE`` unset (unless ``--keep-openblas-coretype``); ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` are 1, and every library's own thread count is 1.

``--cpu-target "llvm -mcpu=haswell"`` compiles ours for another ISA than the host's (here: AVX2 on an
AVX-512 host).  The peers still run their host kernels, so that is not an AVX2-host figure: it shows
what our AVX2 code gives up against the host's best peer.

``--profile [RATIO]`` then prints, for every model slower than RATIO (default 1.5) x onnxruntime, where
the time goes on both sides (``bench/model_profile.py``) and keeps it in the JSON.

Run: ``python bench/models.py [--models resnet18,mobilenet_v2] [--quick] [--rounds N] [--resolution 224]
[--cpu-target TARGET] [--profile [RATIO]]``;
needs the bench extra (torch, torchvision, onnxruntime); writes ``bench/results/models.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_MODELS_BENCH_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from model_profile import format_profiles, profile_ort, profile_ours  # noqa: E402
from peer_env import MALLOC_ENV, THREAD_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from zoo import MODELS, export, make_model  # noqa: E402

from compiler.codegen.llvm.target import host_target, parse_target  # noqa: E402
from compiler.frontend.onnx import from_onnx  # noqa: E402
from compiler.graph.build import build_model  # noqa: E402

#: Every model of the zoo (issue 16's fifteen), in its order.
DEFAULT_MODELS = MODELS
#: ``--quick``: resolution and rounds (vit_b_16 needs a multiple of its 16-pixel patch).
QUICK_RESOLUTION, QUICK_ROUNDS = 64, 5
NAME_WIDTH = max(len(m) for m in MODELS)
#: Issue 16's target: every model within this factor of onnxruntime's single-thread latency.
TARGET_RATIO = 1.5


def _interleaved(contenders: dict[str, Callable[[], Any]], rounds: int, desc: str, quiet: bool) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for fn in contenders.values():  # warm up: first calls allocate, fault pages in, spin up pools
        fn()
        fn()
    for _ in tqdm(range(rounds), desc=desc, unit="round", disable=quiet or not sys.stderr.isatty()):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return times


def bench_model(name: str, resolution: int, rounds: int, quiet: bool, cpu_target: str = "llvm",
                profile_above: float | None = None) -> dict[str, Any]:
    """Compile ``name``, check it against onnxruntime, and time the three contenders interleaved; with
    ``profile_above``, a model slower than that many times onnxruntime is profiled op by op, both sides."""
    import onnxruntime as ort
    import torch

    torch.set_num_threads(1)
    net = make_model(name, image_size=resolution)
    x = np.random.default_rng(0).standard_normal((1, 3, resolution, resolution)).astype(np.float32)
    xt = torch.from_numpy(x)
    model = export(net, xt, "torchscript")
    in_name = model.graph.input[0].name

    compiled = build_model(from_onnx(model), target="llvm", name=name, cpu_target=cpu_target)
    compiled.module.set_num_threads(1)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    feed = {in_name: x}

    want = sess.run(None, feed)[0]
    got = compiled.run(feed)[0]
    with torch.inference_mode():
        ref_torch = net(xt).numpy()
    scale = float(np.abs(want).max())
    err_ours = float(np.abs(got - want).max()) / scale
    err_torch = float(np.abs(ref_torch - want).max()) / scale
    out: dict[str, Any] = {"model": name, "resolution": resolution, "compile_seconds": compiled.compile_seconds,
                           "rel_err_ours_vs_ort": err_ours, "rel_err_torch_vs_ort": err_torch,
                           "matches": err_ours <= 1e-4 and err_torch <= 1e-4}
    if not out["matches"]:
        return out

    def torch_eager() -> None:
        with torch.inference_mode():
            net(xt)

    times = _interleaved({"ours": lambda: compiled.run(feed), "ort": lambda: sess.run(None, feed),
                          "torch": torch_eager}, rounds, name, quiet)
    out["ms"] = {k: {"median": 1e3 * statistics.median(v), "best": 1e3 * min(v)} for k, v in times.items()}
    out["rounds"] = rounds
    ratio = out["ms"]["ours"]["median"] / out["ms"]["ort"]["median"]
    if profile_above is not None and ratio > profile_above:
        ours, peer = profile_ours(compiled.module, feed), profile_ort(model.SerializeToString(), feed)
        out["profile"] = {"ours": [asdict(o) for o in ours], "ort": [asdict(o) for o in peer]}
        print(format_profiles(name, ours, peer), flush=True)
    return out


def _row(r: dict[str, Any]) -> str:
    head = f"{r['model']:<{NAME_WIDTH}} {r['resolution']:>4} {r['compile_seconds']:>9.2f}"
    if not r["matches"]:
        return (f"{head}   does not match onnxruntime (ours {r['rel_err_ours_vs_ort']:.1e}, "
                f"torch {r['rel_err_torch_vs_ort']:.1e} of max |output|): not timed")
    ms = {k: v["median"] for k, v in r["ms"].items()}
    return (f"{head} {ms['ours']:>9.2f} {ms['ort']:>9.2f} {ms['torch']:>9.2f} {ms['ours'] / ms['ort']:>8.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help=f"comma-separated torchvision model names (default: {','.join(DEFAULT_MODELS)})")
    ap.add_argument("--quick", action="store_true",
                    help=f"{QUICK_RESOLUTION}x{QUICK_RESOLUTION} input and {QUICK_ROUNDS} rounds unless given")
    ap.add_argument("--resolution", type=int, help="input height = width (default 224; --quick: 64)")
    ap.add_argument("--rounds", type=int, help="interleaved rounds per model (default 20; --quick: 5)")
    ap.add_argument("--keep-openblas-coretype", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    ap.add_argument("--cpu-target", default="llvm",
                    help="LLVM target of our kernels, e.g. 'llvm -mcpu=haswell' (default: the host)")
    ap.add_argument("--profile", nargs="?", type=float, const=TARGET_RATIO, metavar="RATIO",
                    help=f"profile every model slower than RATIO x onnxruntime (default {TARGET_RATIO}), "
                         f"op by op on both sides (bench/model_profile.py)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "models.json"))
    args = ap.parse_args()
    resolution = args.resolution or (QUICK_RESOLUTION if args.quick else 224)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else 20)
    names = [m for m in args.models.split(",") if m]

    import onnxruntime as ort
    import torch

    target = host_target()
    isa = [f for f in ("avx512f", "avx512vnni", "avx2", "fma") if f in target.features]
    ours = parse_target(args.cpu_target)
    ours_isa = [f for f in ("avx512f", "avx2", "fma") if f in ours.features]
    print(f"ours compiled for: {ours.cpu} ({', '.join(ours_isa) or 'no AVX'})"
          + ("" if ours == target else "; the peers use the host's ISA"))
    print(f"host CPU: {target.cpu} ({', '.join(isa) or 'no AVX'}); one thread each; torch {torch.__version__}, "
          f"onnxruntime {ort.__version__}; OPENBLAS_CORETYPE {os.environ.get('OPENBLAS_CORETYPE', 'unset')}; "
          f"{' '.join(f'{k}={v}' for k, v in MALLOC_ENV.items())}")
    out: dict[str, Any] = {"cpu": target.cpu, "isa": isa, "ours_target": {"cpu": ours.cpu, "isa": ours_isa},
                           "resolution": resolution, "rounds": rounds,
                           "torch": torch.__version__, "onnxruntime": ort.__version__, "malloc_env": MALLOC_ENV,
                           "thread_env": THREAD_ENV, "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                           "load_average_before": os.getloadavg(), "models": []}
    for name in names:
        r = bench_model(name, resolution, rounds, args.quiet, args.cpu_target, args.profile)
        out["models"].append(r)
        if not args.quiet:
            print(f"  {name}: compiled in {r['compile_seconds']:.1f} s", flush=True)
    out["load_average_after"] = os.getloadavg()

    print(f"\nfp32, batch 1, one thread, median of {rounds} interleaved rounds")
    print(f"{'model':<{NAME_WIDTH}} {'px':>4} {'compile s':>9} {'ours ms':>9} {'ort ms':>9} {'torch ms':>9} {'ours/ort':>9}")
    for r in out["models"]:
        print(_row(r))
    timed = [r for r in out["models"] if r["matches"]]
    within = [r["model"] for r in timed if r["ms"]["ours"]["median"] <= TARGET_RATIO * r["ms"]["ort"]["median"]]
    print(f"{len(within)} of {len(timed)} timed models within {TARGET_RATIO}x onnxruntime"
          + (f"; above: {', '.join(sorted({r['model'] for r in timed} - set(within)))}" if len(within) < len(timed) else ""))
    print("load average (1, 5, 15 min) before / after: "
          + " / ".join(", ".join(f"{v:.2f}" for v in out[k]) for k in ("load_average_before", "load_average_after")))
    path = Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
