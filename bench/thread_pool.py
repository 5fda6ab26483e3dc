"""Benchmark: a model on several threads under each thread-pool setting, ours against onnxruntime.

Our parallel loops run on our own pool (``compiler/codegen/llvm/pool.py``: an idle worker spins
``VDLA_SPIN_US`` then sleeps); a model compiled before it (``--peer REV`` of an older commit) runs on
libgomp, whose wait policy libgomp reads once, when a process loads it.  So every setting runs in a
process of its own (``--child``); the settings take turns, ``--repeats`` times, so load drifting over the
run hits all of them.  In each child (``OMP_WAIT_POLICY`` / ``GOMP_SPINCOUNT`` / ``VDLA_SPIN_US`` set as the
row says, nothing set for ``runtime``: the pool's default spin and the policy ``vdla.runtime.openmp``
gives libgomp), ``--rounds`` per ``--order``:

* ``ours``: the model compiled by this tree (``vdla compile --target llvm``), ``set_num_threads(--threads)``;
* ``peer``: with ``--peer REV``, the model compiled by commit ``REV``'s tree (``bench/peer_tree.py``), loaded
  by this tree's runtime: the pool (or libgomp) and the parallel loops as that commit generates them;
* ``ort``: onnxruntime, ``intra_op_num_threads = --threads`` (its own pool: not affected by the setting).

Per setting: median wall clock and process CPU time (every thread of the process) over all its rounds.
Random weights (``tests/models/zoo.py``), TorchScript export, batch 1; the children run with
``bench/peer_env.py``'s malloc thresholds.  On a loaded host (a laptop, a shared machine) spinning
threads take the cores the working ones need (``docs/cpu_speed.md``, "Two threads on a loaded host",
"Two threads: the worker kept awake through a run").

Run: ``python bench/thread_pool.py [--model resnet50] [--threads 2] [--rounds 5] [--repeats 2] [--peer REV]
[--settings runtime,spin=0,passive,1000,10000,300000]``;
writes ``bench/results/thread_pool.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "models")]

from vdla.runtime.thread_spin import DEFAULT_SPIN_US, SPIN_ENV  # noqa: E402
from vdla.runtime.openmp import DEFAULT_WAIT_POLICY  # noqa: E402

DEFAULT_SETTINGS = "runtime,passive,1000,10000,300000"
"""``--settings``: the runtime's own choice, libgomp passive and three spin counts (300000 is libgomp's
default): the libgomp settings matter for a ``--peer`` compiled before the pool."""


def setting(word: str) -> tuple[str, dict[str, str]]:
    """(label, environment) of one ``--settings`` word: ``runtime`` (nothing set: the pool's default spin,
    the policy ``vdla.runtime.openmp`` gives libgomp), ``spin=US`` (``VDLA_SPIN_US``: our pool's spin),
    ``passive`` / ``active`` (``OMP_WAIT_POLICY``) or a number (``GOMP_SPINCOUNT``)."""
    if word == "runtime":
        return f"runtime (spin {DEFAULT_SPIN_US} us, libgomp {DEFAULT_WAIT_POLICY})", {}
    if word.startswith("spin=") and word[5:].isdigit():
        return f"VDLA_SPIN_US={word[5:]}", {SPIN_ENV: word[5:]}
    if word in ("passive", "active"):
        return f"OMP_WAIT_POLICY={word}", {"OMP_WAIT_POLICY": word}
    if word.isdigit():
        return f"GOMP_SPINCOUNT={word}", {"GOMP_SPINCOUNT": word}
    raise ValueError(f"unknown setting {word!r}: use runtime, spin=US, passive, active or a spin count such as 10000")


def child(files: dict[str, str], onnx_path: str, threads: int, rounds: int, order: str = "interleaved") -> dict[str, Any]:
    """Time every contender in this process (its libgomp setting came with the environment): one call
    each per round (``interleaved``), or each contender's rounds back to back (``blocks``)."""
    import numpy as np
    import onnxruntime as ort

    from vdla.runtime.graph_executor import load

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    runs = {}
    for name, path in files.items():
        m = load(path)
        m.set_num_threads(threads)
        feed = {m.graph["inputs"][0]["name"]: x}
        runs[name] = (lambda m=m, feed=feed: m.run(feed))
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: x}
    runs["ort"] = lambda: sess.run(None, feed)
    for fn in runs.values():
        fn()
    times: dict[str, dict[str, list[float]]] = {k: {"wall": [], "cpu": []} for k in runs}
    schedule = ([name for _ in range(rounds) for name in runs] if order == "interleaved"
                else [name for name in runs for _ in range(rounds)])
    for name in schedule:
        c0, t0 = time.process_time(), time.perf_counter()
        runs[name]()
        times[name]["wall"].append(time.perf_counter() - t0)
        times[name]["cpu"].append(time.process_time() - c0)
    return {"times": times, "load": os.getloadavg()[0]}


def compile_model(onnx_path: Path, out: Path, tree: Path) -> None:
    """``vdla compile --target llvm`` by the tree at ``tree`` (a subprocess)."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, "-m", "vdla.compiler.cli.main", "--quiet", "compile", str(onnx_path),
                           "--target", "llvm", "-o", str(out)], cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"the tree at {tree} could not compile {onnx_path.name}:\n{proc.stderr[-2000:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="resnet50", help="a zoo model (default resnet50)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5, help="rounds per child process (default 5)")
    ap.add_argument("--repeats", type=int, default=2, help="child processes per setting, in turn (default 2)")
    ap.add_argument("--peer", metavar="REV", help="also time the model as commit REV compiles it")
    ap.add_argument("--order", choices=("blocks", "interleaved"), default="blocks",
                    help="in each child, each contender's rounds back to back (blocks, default: the pools of "
                         "onnxruntime and ours do not take turns) or one call each per round")
    ap.add_argument("--settings", default=DEFAULT_SETTINGS,
                    help="comma-separated: runtime, spin=US (VDLA_SPIN_US), passive, active or a GOMP_SPINCOUNT "
                         "(default %(default)s)")
    ap.add_argument("--output", default=str(ROOT / "bench" / "results" / "thread_pool.json"))
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        spec = json.loads(args.child)
        print(json.dumps(child(spec["files"], spec["onnx"], spec["threads"], spec["rounds"], spec["order"])))
        return
    if min(args.threads, args.rounds, args.repeats) < 1:
        ap.error("--threads, --rounds and --repeats must be positive")
    try:
        settings = [setting(w.strip()) for w in args.settings.split(",") if w.strip()]
    except ValueError as err:
        ap.error(str(err))

    import onnx
    import torch
    from tqdm import tqdm
    from zoo import export, make_model

    from host import host_line, host_record
    from peer_env import MALLOC_ENV

    print(host_line())
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="vdla_thread_pool_") as tmp:
        onnx_path = Path(tmp) / f"{args.model}.onnx"
        x = torch.zeros(1, 3, 224, 224)
        onnx.save(export(make_model(args.model), x, "torchscript"), onnx_path)
        files = {"ours": str(Path(tmp) / "ours.vdla")}
        compile_model(onnx_path, Path(files["ours"]), ROOT)
        peer_commit = None
        if args.peer:
            from peer_tree import peer_tree

            with peer_tree(args.peer, prefix="thread_pool_peer_") as (peer_commit, tree):
                files["peer"] = str(Path(tmp) / "peer.vdla")
                compile_model(onnx_path, Path(files["peer"]), tree)
        base = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", SPIN_ENV)}
        base.update(MALLOC_ENV, PYTHONPATH=str(ROOT))
        spec = json.dumps({"files": files, "onnx": str(onnx_path), "threads": args.threads, "rounds": args.rounds,
                           "order": args.order})
        merged: dict[str, dict[str, dict[str, list[float]]]] = {}
        loads: dict[str, list[float]] = {}
        jobs = [(label, env) for _ in range(args.repeats) for label, env in settings]
        for label, env in tqdm(jobs, desc="settings", unit="process", disable=not sys.stderr.isatty()):
            proc = subprocess.run([sys.executable, __file__, "--child", spec], env={**base, **env},
                                  capture_output=True, text=True, timeout=1800)
            if proc.returncode:
                raise SystemExit(f"the {label} child failed:\n{proc.stderr[-2000:]}")
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            loads.setdefault(label, []).append(r["load"])
            for name, t in r["times"].items():
                slot = merged.setdefault(label, {}).setdefault(name, {"wall": [], "cpu": []})
                slot["wall"] += t["wall"]
                slot["cpu"] += t["cpu"]

    names = list(files) + ["ort"]
    print(f"\n{args.model}, fp32, batch 1, {args.threads} threads; median over {args.repeats} processes x "
          f"{args.rounds} rounds per setting ({args.order}); wall ms / process CPU ms")
    print(f"{'setting':32s} {'load':>9s} " + " ".join(f"{n:>15s}" for n in names) + "  ours/ort")
    rows = []
    for label, _ in settings:
        med = {n: {k: 1e3 * statistics.median(merged[label][n][k]) for k in ("wall", "cpu")} for n in names}
        lo, hi = min(loads[label]), max(loads[label])
        ratio = med["ours"]["wall"] / med["ort"]["wall"]
        print(f"{label:32s} {lo:4.1f}-{hi:4.1f} " + " ".join(f"{med[n]['wall']:7.1f}/{med[n]['cpu']:7.1f}" for n in names)
              + f"  {ratio:7.2f}x")
        rows.append({"setting": label, "load": loads[label], "median_ms": med, "ours_over_ort_wall": ratio,
                     "samples": merged[label]})
    load1 = os.getloadavg()
    print("load average (1, 5, 15 min) before / after: "
          + " / ".join(", ".join(f"{v:.2f}" for v in la) for la in (load0, load1)))
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"host": host_record(), "model": args.model, "threads": args.threads,
                               "rounds": args.rounds, "order": args.order, "repeats": args.repeats, "default_wait_policy": DEFAULT_WAIT_POLICY, "default_spin_us": DEFAULT_SPIN_US,
                               "peer": {"rev": args.peer, "commit": peer_commit} if args.peer else None,
                               "load_average_before": load0, "load_average_after": load1, "settings": rows},
                              indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
