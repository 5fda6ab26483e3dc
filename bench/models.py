"""Benchmark: torchvision classification models compiled for ``llvm`` against onnxruntime and PyTorch
eager, in one interleaved run per thread count; and the compile time of each.

Per model (random weights, randomized BatchNorm statistics: ``tests/models/zoo.py``), exported
with the TorchScript exporter at batch 1:

* ``compile s``: ``build_model(from_onnx(model), target="llvm")``, what ``vdla compile --target
  llvm`` runs (optimization, lowering, LLVM O3, JIT), from the in-memory ONNX model;
* ``ours``: ``GraphModule.run`` of that module (input copy, every kernel, output copy), default schedules;
* ``tuned``: the same with ``--tuning-log MODEL=TUNE.jsonl`` applied (``vdla compile --tuning-log``):
  the best logged config per task, the default for a task not in the log;
* ``ort``: onnxruntime on the same ONNX model, ``intra_op_num_threads`` = the thread count,
  ``inter_op_num_threads = 1``, all graph optimizations;
* ``torch``: the same ``nn.Module`` in eager mode, ``torch.inference_mode()``, ``torch.set_num_threads``;
* ``peer``: with ``--peer REV``, the same ONNX model compiled by commit ``REV``'s tree (``vdla compile
  --target llvm`` in a subprocess on an archived copy, ``bench/peer_tree.py``) and loaded here, so a
  change's before and after are timed in one interleaved run (the runtime is this tree's; with
  ``--peer-small-pages`` it places the peer's weights and arena in 4 KiB pages, as the runtime did before
  ``vdla.runtime.huge_pages``; ``--peer-tuning-log MODEL=TUNE.jsonl`` compiles MODEL's peer with that log,
  for a tuned before / after).

With more than one thread the contenders' rounds run in blocks instead (``--thread-order``): the
runtimes' thread pools share the process, and interleaved with onnxruntime's (spinning) pool our
MobileNetV2 on two threads took 7.3-12 ms against 5.8 ms in blocks or alone (``docs/cpu_speed.md``).

Outputs are checked first (ours, tuned and torch against onnxruntime, max abs error <= 1e-4 x max
|output|); a model that does not match is reported and not timed.  Then the contenders are called
in turn, one call each per round, so a burst of load from other processes on this shared machine
hits all of them alike; the tables give the median over the rounds (the best is in the JSON), of
wall-clock time and, with one thread, of the calling thread's CPU time: every contender then runs
in the calling thread, and CPU time leaves out the time other processes hold the core.

``--threads 1,all`` times one thread and every core (``all`` = ``os.cpu_count()``).

Hygiene (TOOLCHAIN.md): the script re-executes itself with glibc's malloc thresholds raised
(``MALLOC_MMAP_THRESHOLD_=268435456 MALLOC_TRIM_THRESHOLD_=1073741824``, the peers' best figures)
and ``OPENBLAS_CORETYPE`` unset (unless ``--keep-openblas-coretype``); ``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS`` and ``MKL_NUM_THREADS`` are 1, and every library's own thread count is
set explicitly.

``--cpu-target "llvm -mcpu=haswell"`` compiles ours for another ISA than the host's (here: AVX2 on an
AVX-512 host).  The peers still run their host kernels, so that is not an AVX2-host figure: it shows
what our AVX2 code gives up against the host's best peer.

``--profile [RATIO]`` then prints, for every model slower than RATIO (default 1.5) x onnxruntime, where
the time goes on both sides (``bench/model_profile.py``) and keeps it in the JSON.

Run: ``python bench/models.py [--models resnet18,mobilenet_v2] [--quick] [--rounds N] [--resolution 224]
[--cpu-target TARGET] [--tuning-log resnet18=r18.jsonl ...] [--threads 1,all] [--profile [RATIO]] [--peer REV [--peer-small-pages] [--peer-tuning-log resnet18=r18.jsonl ...]]``;
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
import contextlib  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Sequence  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from tqdm import tqdm  # noqa: E402

from host import finish_run, host_line, host_record  # noqa: E402
from model_profile import format_profiles, profile_ort, profile_ours  # noqa: E402
from peer_env import MALLOC_ENV, THREAD_ENV  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from vdla.runtime.openmp import DEFAULT_WAIT_POLICY, load_openmp_runtime  # noqa: E402

# torch ships its own libgomp.so.1 and, imported first (zoo imports it), gives the process its OpenMP pool
# with libgomp's default (spinning) wait policy, which our kernels then share: load ours first, so both
# share the runtime's (vdla.runtime.openmp; with more than one thread torch is measured under it too).
load_openmp_runtime()

from zoo import MODELS, export, make_model  # noqa: E402

from vdla.compiler.codegen.llvm.target import host_target, parse_target  # noqa: E402
from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402

#: Every model of the zoo (issue 16's fifteen), in its order.
DEFAULT_MODELS = MODELS
#: ``--quick``: resolution and rounds (vit_b_16 needs a multiple of its 16-pixel patch).
QUICK_RESOLUTION, QUICK_ROUNDS = 64, 5
NAME_WIDTH = max(len(m) for m in MODELS)
#: Issue 16's target: every model within this factor of onnxruntime's single-thread latency.
TARGET_RATIO = 1.5


#: How the contenders take turns: ``interleaved`` (one call each per round) or ``blocks`` (each
#: contender's rounds back to back).
ORDERS = ("interleaved", "blocks")


def _timed(contenders: dict[str, Callable[[], Any]], rounds: int, desc: str, quiet: bool,
           order: str = "interleaved") -> dict[str, dict[str, list[float]]]:
    """Per contender and round: wall time and the calling thread's CPU time of one call.

    With one thread every contender runs its kernels in the calling thread, so its CPU time
    leaves out the time other processes on this shared machine hold the core (wall time does not).
    ``order="blocks"`` runs each contender's rounds back to back: with more than one thread the
    runtimes' pools live in one process, and interleaved with onnxruntime (whose workers spin by
    default) our runs on two threads took 1.3-2x their time alone; in blocks, or with onnxruntime's
    spinning off, they take their time alone (``docs/cpu_speed.md``, "Two threads on a quiet host")."""
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}: use one of {ORDERS}")
    times: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in contenders}
    for fn in contenders.values():  # warm up: first calls allocate, fault pages in, spin up pools
        fn()
        fn()
    names = list(contenders)
    turns = ([[k] for k in names for _ in range(rounds)] if order == "blocks" else [names] * rounds)
    for turn in tqdm(turns, desc=desc, unit="turn", disable=quiet or not sys.stderr.isatty()):
        for name in turn:
            fn = contenders[name]
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            times[name]["wall"].append(time.perf_counter() - t0)
            times[name]["cpu"].append(time.thread_time() - c0)
    return times


def _compile(model: Any, name: str, cpu_target: str, tuning_log: str | None) -> tuple[Any, dict[str, int] | None]:
    """``build_model`` of the ONNX model, with the best configs of ``tuning_log`` applied when given
    (what ``vdla compile --tuning-log`` does); the second item counts tuned and default tasks."""
    if tuning_log is None:
        return build_model(from_onnx(model), target="llvm", name=name, cpu_target=cpu_target), None
    from vdla.compiler.autotune.database import ApplyBest, read_log
    from vdla.compiler.autotune.dispatch import dispatching

    apply = ApplyBest(read_log(tuning_log), "llvm", cpu_target, "default")
    with dispatching(apply):
        compiled = build_model(from_onnx(model), target="llvm", name=name, cpu_target=cpu_target)
    return compiled, {"tuned_tasks": len(apply.applied), "default_tasks": len(apply.fallbacks)}


class _PeerBuild:
    """A model file compiled by another commit's tree, loaded by this runtime; ``run`` as a ``CompiledModule``'s."""

    def __init__(self, module: Any, compile_seconds: float) -> None:
        self.module, self.compile_seconds = module, compile_seconds

    def run(self, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
        return self.module.run(feed)


def compile_peer(model: Any, name: str, cpu_target: str, tree: Path, huge_pages: bool = True,
                 tuning_log: str | None = None) -> _PeerBuild:
    """``vdla compile --target llvm`` of ``model`` by the tree at ``tree`` (a subprocess whose ``PYTHONPATH``
    is that tree; with ``tuning_log``, ``--tuning-log`` it), loaded with this tree's runtime;
    ``huge_pages=False``: its weights and arena in 4 KiB pages, as runtimes before
    ``vdla.runtime.huge_pages`` allocated them."""
    import subprocess
    import tempfile

    from vdla.runtime.graph_executor import load

    with tempfile.TemporaryDirectory(prefix="vdla_models_peer_") as tmp:
        src, out = Path(tmp) / f"{name}.onnx", Path(tmp) / f"{name}.vdla"
        onnx.save(model, src)
        env = dict(os.environ, PYTHONPATH=str(tree))
        t0 = time.perf_counter()
        log = ["--tuning-log", str(Path(tuning_log).resolve())] if tuning_log is not None else []
        proc = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "--quiet", "compile", str(src),
                               "--target", "llvm", "--cpu-target", cpu_target, "-o", str(out), *log],
                              cwd=tree, env=env, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"the peer tree could not compile {name}:\n{proc.stderr[-2000:]}")
        return _PeerBuild(load(out, huge_pages=huge_pages), time.perf_counter() - t0)


def bench_model(name: str, resolution: int, rounds: int, quiet: bool, cpu_target: str = "llvm",
                tuning_log: str | None = None, threads: Sequence[int] = (1,),
                profile_above: float | None = None, export_dir: Path | None = None,
                peer_tree: Path | None = None, peer_huge_pages: bool = True,
                peer_tuning_log: str | None = None, thread_order: str = "blocks") -> dict[str, Any]:
    """Compile ``name`` (and with ``tuning_log``, a tuned build too), check it against onnxruntime,
    and time the contenders, once per thread count of ``threads`` (interleaved on one thread; in the
    order ``thread_order`` on more, see :func:`_timed`); with ``profile_above``,
    a model whose one-thread time is above that many times onnxruntime's is profiled op by op, both sides."""
    import onnxruntime as ort
    import torch

    net = make_model(name, image_size=resolution)
    x = np.random.default_rng(0).standard_normal((1, 3, resolution, resolution)).astype(np.float32)
    xt = torch.from_numpy(x)
    model = export(net, xt, "torchscript")
    if export_dir is not None:  # the very model and input this bench runs, for `vdla tune` / `vdla run`
        export_dir.mkdir(parents=True, exist_ok=True)
        onnx.save(model, export_dir / f"{name}.onnx")
        np.save(export_dir / f"{name}_x.npy", x)
    in_name = model.graph.input[0].name

    ours = {"ours": _compile(model, name, cpu_target, None)}
    if tuning_log is not None:
        ours["tuned"] = _compile(model, name, cpu_target, tuning_log)
    if peer_tree is not None:
        ours["peer"] = (compile_peer(model, name, cpu_target, peer_tree, peer_huge_pages, peer_tuning_log), None)

    def session(n: int) -> Any:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = n, 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])

    feed = {in_name: x}
    want = session(1).run(None, feed)[0]
    with torch.inference_mode():
        ref_torch = net(xt).numpy()
    scale = float(np.abs(want).max())
    out: dict[str, Any] = {"model": name, "resolution": resolution,
                           "compile_seconds": ours["ours"][0].compile_seconds,
                           "rel_err_torch_vs_ort": float(np.abs(ref_torch - want).max()) / scale}
    for key, (compiled, tasks) in ours.items():
        compiled.module.set_num_threads(1)
        out[f"rel_err_{key}_vs_ort"] = float(np.abs(compiled.run(feed)[0] - want).max()) / scale
        if tasks is not None:
            out[f"{key}_compile_seconds"], out[f"{key}_tasks"] = compiled.compile_seconds, tasks
    if "peer" in ours:
        out["peer_compile_seconds"] = ours["peer"][0].compile_seconds
        out["peer_tuning_log"] = peer_tuning_log
    out["matches"] = all(v <= 1e-4 for k, v in out.items() if k.startswith("rel_err_"))
    if not out["matches"]:
        return out

    def torch_eager() -> None:
        with torch.inference_mode():
            net(xt)

    out["ms"], out["rounds"] = {}, rounds
    for n in threads:
        torch.set_num_threads(n)
        for compiled, _ in ours.values():
            compiled.module.set_num_threads(n)
        sess = session(n)
        contenders = {key: (lambda c=compiled: c.run(feed)) for key, (compiled, _) in ours.items()}
        contenders.update({"ort": lambda: sess.run(None, feed), "torch": torch_eager})
        times = _timed(contenders, rounds, f"{name} {n} thr", quiet, thread_order if n != 1 else "interleaved")
        out["ms"][str(n)] = {k: {f"{clock}_{stat}": 1e3 * f(v[clock]) for clock in ("wall", "cpu")
                                 for stat, f in (("median", statistics.median), ("best", min))}
                             for k, v in times.items()}
    torch.set_num_threads(1)
    one = out["ms"].get("1")
    if profile_above is not None and one and one["ours"]["wall_median"] > profile_above * one["ort"]["wall_median"]:
        mine, peer = profile_ours(ours["ours"][0].module, feed), profile_ort(model.SerializeToString(), feed)
        out["profile"] = {"ours": [asdict(o) for o in mine], "ort": [asdict(o) for o in peer]}
        print(format_profiles(name, mine, peer), flush=True)
    return out


def _columns(results: list[dict[str, Any]]) -> list[str]:
    """Our builds in the tables: ``ours``, then ``tuned`` and ``peer`` when some model has them."""
    return (["ours"] + (["tuned"] if any("tuned_tasks" in r for r in results) else [])
            + (["peer"] if any("peer_compile_seconds" in r for r in results) else []))


def _row(r: dict[str, Any], threads: int, clock: str, builds: list[str]) -> str:
    head = f"{r['model']:<{NAME_WIDTH}} {r['resolution']:>4} {r['compile_seconds']:>9.2f}"
    if not r["matches"]:
        errs = ", ".join(f"{k[8:-7]} {v:.1e}" for k, v in r.items() if k.startswith("rel_err_"))
        return f"{head}   does not match onnxruntime ({errs} of max |output|): not timed"
    ms = {k: v[f"{clock}_median"] for k, v in r["ms"][str(threads)].items()}
    text = head + "".join(f" {ms[k]:>9.2f}" if k in ms else f" {'-':>9}" for k in builds + ["ort", "torch"])
    return text + "".join(f" {ms[k] / ms['ort']:>8.2f}x" if k in ms else f" {'-':>9}" for k in builds)


def _table(results: list[dict[str, Any]], threads: int, clock: str, rounds: int, order: str = "interleaved") -> None:
    builds = _columns(results)
    what = {"wall": "wall-clock", "cpu": "CPU time of the calling thread"}[clock]
    how = "interleaved rounds" if threads == 1 or order == "interleaved" else "rounds, each contender's in a block"
    print(f"\nfp32, batch 1, {threads} thread{'s' if threads > 1 else ''}, {what}, median of {rounds} {how}")
    names = builds + ["ort", "torch"]
    print(f"{'model':<{NAME_WIDTH}} {'px':>4} {'compile s':>9}" + "".join(f" {n + ' ms':>9}" for n in names)
          + "".join(f" {n + '/ort':>9}" for n in builds))
    for r in results:
        print(_row(r, threads, clock, builds))


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
    ap.add_argument("--tuning-log", action="append", default=[], metavar="MODEL=TUNE.jsonl",
                    help="also time MODEL compiled with this tuning log (`vdla tune`) as 'tuned' (repeatable)")
    ap.add_argument("--threads", default="1",
                    help="comma-separated thread counts to time, 'all' = every core (default: 1)")
    ap.add_argument("--thread-order", choices=ORDERS, default="blocks",
                    help="with more than one thread: each contender's rounds back to back ('blocks', default: "
                         "onnxruntime's spinning workers then do not hold the core our next run needs) or "
                         "one call each per round ('interleaved', the one-thread order)")
    ap.add_argument("--profile", nargs="?", type=float, const=TARGET_RATIO, metavar="RATIO",
                    help=f"profile every model slower than RATIO x onnxruntime (default {TARGET_RATIO}), "
                         f"op by op on both sides (bench/model_profile.py)")
    ap.add_argument("--export-onnx", type=Path, metavar="DIR",
                    help="also write each model as exported and its input here (DIR/<model>.onnx, DIR/<model>_x.npy), "
                         "e.g. for `vdla tune` and `vdla run`")
    ap.add_argument("--peer", metavar="REV",
                    help="also time every model compiled by commit REV's tree as 'peer' (before / after in one run)")
    ap.add_argument("--peer-small-pages", action="store_true",
                    help="load the peer's module with its weights and arena in 4 KiB pages, as runtimes before "
                         "transparent huge pages did (the peer of a commit older than vdla.runtime.huge_pages)")
    ap.add_argument("--peer-tuning-log", action="append", default=[], metavar="MODEL=TUNE.jsonl",
                    help="compile MODEL's peer with this tuning log (the peer's `vdla compile --tuning-log`)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "models.json"))
    args = ap.parse_args()
    logs = dict(item.split("=", 1) for item in args.tuning_log if "=" in item)
    if len(logs) != len(args.tuning_log) or any(not Path(p).is_file() for p in logs.values()):
        ap.error(f"--tuning-log takes MODEL=TUNE.jsonl with an existing log, got {args.tuning_log}")
    peer_logs = dict(item.split("=", 1) for item in args.peer_tuning_log if "=" in item)
    if len(peer_logs) != len(args.peer_tuning_log) or any(not Path(p).is_file() for p in peer_logs.values()):
        ap.error(f"--peer-tuning-log takes MODEL=TUNE.jsonl with an existing log, got {args.peer_tuning_log}")
    if peer_logs and args.peer is None:
        ap.error("--peer-tuning-log needs --peer REV (the commit whose tree compiles with it)")
    if args.export_onnx is not None and args.export_onnx.exists() and not args.export_onnx.is_dir():
        ap.error(f"--export-onnx takes a folder; {args.export_onnx} is a file")
    threads = sorted({(os.cpu_count() or 1) if t == "all" else int(t) for t in args.threads.split(",") if t})
    resolution = args.resolution or (QUICK_RESOLUTION if args.quick else 224)
    rounds = args.rounds or (QUICK_ROUNDS if args.quick else 20)
    names = [m for m in args.models.split(",") if m]

    openmp = load_openmp_runtime()  # loaded at import time, above: this returns its name
    import onnxruntime as ort
    import torch

    target = host_target()
    isa = [f for f in ("avx512f", "avx512vnni", "avx2", "fma") if f in target.features]
    ours = parse_target(args.cpu_target)
    ours_isa = [f for f in ("avx512f", "avx2", "fma") if f in ours.features]
    print(host_line())
    print(f"ours compiled for: {ours.cpu} ({', '.join(ours_isa) or 'no AVX'})"
          + ("" if ours == target else "; the peers use the host's ISA"))
    print(f"host CPU: {target.cpu} ({', '.join(isa) or 'no AVX'}); torch {torch.__version__}, "
          f"onnxruntime {ort.__version__}; OPENBLAS_CORETYPE {os.environ.get('OPENBLAS_CORETYPE', 'unset')}; "
          f"{' '.join(f'{k}={v}' for k, v in MALLOC_ENV.items())}; {os.cpu_count()} cores")
    out: dict[str, Any] = {"host": host_record(), "cpu": target.cpu, "isa": isa, "ours_target": {"cpu": ours.cpu, "isa": ours_isa},
                           "resolution": resolution, "rounds": rounds,
                           "torch": torch.__version__, "onnxruntime": ort.__version__, "malloc_env": MALLOC_ENV,
                           "thread_env": THREAD_ENV, "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE"),
                           "load_average_before": os.getloadavg(), "models": [],
                           "openmp": {"library": openmp, "policy_env": {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")},
                                      "default_wait_policy": DEFAULT_WAIT_POLICY}}
    out["threads"], out["thread_order"] = threads, args.thread_order
    with contextlib.ExitStack() as stack:
        peer = None
        if args.peer is not None:
            from peer_tree import peer_tree

            commit, peer = stack.enter_context(peer_tree(args.peer, prefix="models_peer_"))
            out["peer"] = {"rev": args.peer, "commit": commit, "huge_pages": not args.peer_small_pages}
            print(f"peer: {args.peer} ({commit}), compiled by its own tree, loaded in "
                  + ("4 KiB pages" if args.peer_small_pages else "huge pages") + " by this runtime")
        for name in names:
            r = bench_model(name, resolution, rounds, args.quiet, args.cpu_target, logs.get(name), threads,
                            args.profile, args.export_onnx, peer, not args.peer_small_pages, peer_logs.get(name),
                            args.thread_order)
            out["models"].append(r)
            if not args.quiet:
                print(f"  {name}: compiled in {r['compile_seconds']:.1f} s"
                      + (f"; tuned build: {r['tuned_tasks']}" if "tuned_tasks" in r else ""), flush=True)
    out["load_average_after"] = os.getloadavg()

    for n in threads:
        _table(out["models"], n, "wall", rounds, args.thread_order)
        if n == 1:
            _table(out["models"], n, "cpu", rounds)
    timed = [r for r in out["models"] if r["matches"] and "1" in r["ms"]]
    within = [r["model"] for r in timed if r["ms"]["1"]["ours"]["wall_median"] <= TARGET_RATIO * r["ms"]["1"]["ort"]["wall_median"]]
    print(f"{len(within)} of {len(timed)} models timed on one thread within {TARGET_RATIO}x onnxruntime (wall-clock)"
          + (f"; above: {', '.join(sorted({r['model'] for r in timed} - set(within)))}" if len(within) < len(timed) else ""))
    finish_run(out, args.output)


if __name__ == "__main__":
    main()
