"""Whole models on the VDLA: how much of each runs on the accelerator, and the end-to-end latency.

For ResNet-18, MobileNetV2 (torchvision, random weights, exported to ONNX as users do:
``tests/models/zoo.py``) and a small ViT (torchvision's ``VisionTransformer``), compiled with
``build_model(target="vdla")`` on the default config (what ``vdla compile --target vdla`` runs):

* ``MACs on VDLA``: the multiply-accumulates of the model's conv2d / dense / batch_matmul / matmul (useful
  MACs, no channel or token padding) whose kernel runs on the VDLA, as a share of all of them;
* ``ops on VDLA``: the graph operators inside the VDLA kernels as a share of all operators of the
  compiled graph (layout transforms and float/int8 borders count as host operators);
* ``VDLA ms``: the accelerator's time on the cycle model at the config clock (``vdla run --backend cycle
  --profile``), ``host ms``: the host kernels of the same run on this CPU, one thread;
* ``VDLA util``: VDLA-kernel MACs / (VDLA cycles x MACs per cycle): the GEMM core's busy share;
* the peer in the same run: the CPU-only build of the same model (``target="llvm"``, float), its
  latency on this CPU, one thread, best of ``--rounds``;
* ``placement``: ``cost`` (the default: the cost rule moves an add / pool / clamp to the host when the host
  is faster) or ``all`` (every kernel the VDLA can run), ``--placements cost,all`` runs both;
* ``top-1 = float``: on ``--eval`` inputs, how often the int8 build's top class is the float model's
  (random weights: there are no labels), and the cosine of the int8 and float logits.

The int8 outputs are checked first: every integer value of a fsim run node by node against the
graph's NumPy int8 reference, and the cycle run's output against the fsim run's, exactly.

Run: ``python bench/vdla_models.py [--models resnet18,mobilenet_v2,vit] [--resolution 224] [--quick]``;
needs the bench extra (torch, torchvision); writes ``bench/results/vdla_models.json``.
"""
from __future__ import annotations

import os
import sys

_CHILD_FLAG = "VDLA_VDLA_MODELS_BENCH_CHILD"
if __name__ == "__main__":
    from peer_env import reexec_with_peer_env

    reexec_with_peer_env(_CHILD_FLAG)

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "models")]

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph import run_all  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.compiler.graph.cost import host_model  # noqa: E402
from vdla.compiler.graph.ir import Graph, Node  # noqa: E402
from vdla_hw.config import load_config  # noqa: E402
from host import host_line, host_record  # noqa: E402

MODELS = ("resnet18", "mobilenet_v2", "vit")
HOST_OPS = frozenset({"layout_transform", "quantize_linear", "dequantize_linear", "reshape", "strided_slice", "pad",
                      "transpose"})


def make_onnx(name: str, resolution: int):  # type: ignore[no-untyped-def]
    import torch
    import torchvision as tv
    from zoo import export, make_model

    if name == "vit":
        torch.manual_seed(0)
        model = tv.models.VisionTransformer(image_size=resolution, patch_size=16, num_layers=4, num_heads=4,
                                            hidden_dim=128, mlp_dim=512, num_classes=1000).eval()
        with torch.no_grad():  # torchvision zero-initializes the classifier: every logit would be 0
            model.heads.head.weight.normal_(0.0, 0.02)
    else:
        model = make_model(name, seed=0)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 3, resolution, resolution)).astype(np.float32))
    return export(model, x, "torchscript")


def node_macs(n: Node, g: Graph) -> int:
    """Useful multiply-accumulates of a conv2d / dense / matmul in primal (NCHW) layout; 0 for other ops."""
    out = int(np.prod(n.type.shape))
    if n.op == "conv2d":
        w = g.node(n.inputs[1]).type.shape
        return out * int(np.prod(w[1:]))
    if n.op in ("dense", "matmul"):
        return out * g.node(n.inputs[0]).type.shape[-1]
    if n.op == "batch_matmul":  # data (B, K, M, 1), output (B, N, M, 1)
        return out * g.node(n.inputs[0]).type.shape[1]
    return 0


def vdla_shares(compiled: Any) -> dict[str, Any]:
    """MACs and operators on the VDLA, from the quantized graph and the partition report."""
    q: Graph = compiled.quantized.graph
    entries = compiled.partition()
    on_vdla = {e.anchor for e in entries if e.device == "vdla" and e.anchor}
    macs = {n.name: node_macs(n, q) for n in q.nodes if n.op in ("conv2d", "dense", "batch_matmul", "matmul")}
    total = sum(macs.values())
    vdla_macs = sum(m for name, m in macs.items() if name in on_vdla)
    ops = [(op, e.device) for e in entries for op in e.ops]
    compute = [(op, d) for op, d in ops if op not in HOST_OPS]
    left = sorted({f"{e.name}: {e.reason}" for e in entries if e.device == "cpu" and any(o not in HOST_OPS for o in e.ops)})
    return {"macs": total, "vdla_macs": vdla_macs, "mac_share": vdla_macs / total if total else 0.0,
            "ops": len(ops), "vdla_ops": sum(d == "vdla" for _, d in ops), "compute_ops": len(compute),
            "vdla_compute_ops": sum(d == "vdla" for _, d in compute), "host_kernels_why": left}


def check_bit_exact(compiled: Any, feed: dict[str, np.ndarray]) -> int:
    """Every integer value of a fsim run against the NumPy int8 reference; returns how many were compared."""
    got = compiled.module.run_all(feed, backend="fsim")
    want = run_all(compiled.graph, feed)
    names = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
    for name in names:
        if not np.array_equal(got[name], want[name]):
            raise AssertionError(f"{name}: the VDLA build is not bit-exact against the int8 reference")
    return len(names)


def cpu_only(graph: Graph, name: str, feed: dict[str, np.ndarray], rounds: int) -> tuple[Any, float]:
    """The peer: the float CPU-only build, and its best latency over ``rounds`` (seconds)."""
    cpu = build_model(graph, target="llvm", name=name)
    cpu.module.set_num_threads(1)
    cpu.run(feed)
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        cpu.run(feed)
        best = min(best, time.perf_counter() - t)
    return cpu, best


def agreement(compiled: Any, cpu: Any, feeds: list[dict[str, np.ndarray]]) -> dict[str, float]:
    """Top-1 agreement and logit cosine of the int8 build (fsim) with the float build over ``feeds``."""
    same, cos = [], []
    for feed in feeds:
        q, f = compiled.run(feed, backend="fsim")[0].ravel(), cpu.run(feed)[0].ravel()
        same.append(int(q.argmax() == f.argmax()))
        cos.append(float(q @ f / (np.linalg.norm(q) * np.linalg.norm(f))))
    return {"top1_agreement": float(np.mean(same)), "logit_cosine": float(np.mean(cos)), "eval_inputs": len(feeds)}


def bench_model(name: str, resolution: int, rounds: int, placements: list[str], evals: int,
                cost_host: str = "board") -> list[dict[str, Any]]:
    model = make_onnx(name, resolution)
    graph = from_onnx(model)
    rng = np.random.default_rng(1)
    shape = graph.input_nodes[0].type.shape
    inp = graph.input_nodes[0].name
    samples = [{inp: rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
    feed = {inp: rng.standard_normal(shape).astype(np.float32)}
    feeds = [feed] + [{inp: rng.standard_normal(shape).astype(np.float32)} for _ in range(evals - 1)]
    cpu, best = cpu_only(graph, name, feed, rounds)
    rows, agree = [], None
    for placement in placements:
        row, compiled = bench_placement(graph, name, samples, feed, rounds, placement, cost_host)
        if agree is None:  # the placement does not change the integer graph: its agreement with float is one figure
            agree = agreement(compiled, cpu, feeds)
        rows.append(dict(row, cpu_only_ms=1e3 * best, **agree))
    return rows


def bench_placement(graph: Graph, name: str, samples: Any, feed: dict[str, np.ndarray], rounds: int,
                    placement: str, cost_host: str = "board") -> tuple[dict[str, Any], Any]:
    cfg = load_config("default")
    t0 = time.perf_counter()
    compiled = build_model(graph, target="vdla", config=cfg, calibrate=samples, name=name, placement=placement,
                           cost_host=cost_host)
    compile_s = time.perf_counter() - t0
    compiled.module.set_num_threads(1)
    compared = check_bit_exact(compiled, feed)
    fsim_out = compiled.run(feed, backend="fsim")[0]
    out, prof = compiled.module.profile(feed, backend="cycle", warmup=1, repeat=rounds)
    if not np.array_equal(out[0], fsim_out):
        raise AssertionError(f"{name}: the cycle run's output differs from the fsim run's")
    vdla_node_macs = sum(n.macs for n in prof.nodes if n.device == "vdla")
    cycles = prof.vdla_cycles or 0
    shares = vdla_shares(compiled)
    moved = {k: {"vdla_ms": 1e3 * d.vdla_s, "host_ms": 1e3 * d.host_s, "transfer_ms": 1e3 * d.transfer_s,
                 "on_vdla": d.on_vdla} for k, d in compiled.costs.items()}
    return {"model": name, "placement": placement, "resolution": feed[next(iter(feed))].shape[-1],
            "compile_s": compile_s, **shares, "cost_rule": moved,
            "vdla_ms": 1e3 * (prof.vdla_seconds or 0.0), "host_ms": 1e3 * prof.cpu_seconds,
            "total_ms": 1e3 * ((prof.vdla_seconds or 0.0) + prof.cpu_seconds), "vdla_cycles": cycles,
            "vdla_utilization": vdla_node_macs / (cycles * cfg.macs_per_cycle) if cycles else 0.0,
            "vdla_kernels": sum(n.device == "vdla" for n in prof.nodes),
            "host_kernels": sum(n.device == "cpu" for n in prof.nodes),
            "int8_values_checked": compared,
            "per_node": [{"name": n.name, "device": n.device, "ops": n.ops, "host_ms": 1e3 * n.seconds,
                          "vdla_cycles": n.cycles} for n in prof.nodes]}, compiled


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(MODELS))
    p.add_argument("--resolution", type=int, default=224)
    p.add_argument("--rounds", type=int, default=5, help="runs of the host kernels / the CPU-only build (best of)")
    p.add_argument("--quick", action="store_true", help="64x64 images, 2 rounds")
    p.add_argument("--placements", default="cost", help="cost, all, or cost,all (both, in one run)")
    p.add_argument("--cost-host", default="board", choices=("board", "native"),
                   help="the host the cost rule judges against (build_model's cost_host; default board)")
    p.add_argument("--eval", type=int, default=3, help="inputs of the int8-vs-float top-1 agreement")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "vdla_models.json"))
    args = p.parse_args(argv)
    if args.quick:
        args.resolution, args.rounds = 64, 2
    cfg = load_config("default")
    print(f"{host_line()}; one thread; VDLA config {cfg.name!r} at "
          f"{cfg.clock_mhz:g} MHz, {cfg.macs_per_cycle} MACs/cycle; OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE', 'unset')}")
    placements = args.placements.split(",")
    rows = [r for m in tqdm(args.models.split(","), desc="models", unit="model")
            for r in bench_model(m, args.resolution, args.rounds, placements, args.eval, args.cost_host)]
    head = (f"{'model':<13} {'placement':<9} {'MACs on VDLA':>13} {'ops on VDLA':>12} {'VDLA ms':>8} {'host ms':>8} "
            f"{'total ms':>9} {'VDLA util':>9} {'CPU-only ms':>11} {'top-1 = float':>13} {'cosine':>7}")
    print(f"\n{args.resolution}x{args.resolution}, batch 1; int8 values bit-exact vs the NumPy reference (fsim), "
          f"cycle run == fsim run\n{head}")
    for r in rows:
        print(f"{r['model']:<13} {r['placement']:<9} {r['mac_share']:>12.1%} "
              f"{r['vdla_compute_ops']:>5}/{r['compute_ops']:<6} {r['vdla_ms']:>8.2f} {r['host_ms']:>8.2f} "
              f"{r['total_ms']:>9.2f} {r['vdla_utilization']:>9.1%} {r['cpu_only_ms']:>11.2f} "
              f"{r['top1_agreement']:>13.0%} {r['logit_cosine']:>7.3f}")
    for r in rows:
        if r["host_kernels_why"]:
            print(f"\n{r['model']} ({r['placement']}): compute left on the host")
            for line in r["host_kernels_why"][:12]:
                print(f"  {line}")
            if len(r["host_kernels_why"]) > 12:
                print(f"  ... and {len(r['host_kernels_why']) - 12} more (see the JSON)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    host = host_model(where=args.cost_host)
    out.write_text(json.dumps({"host": host_record(), "config": cfg.name, "clock_mhz": cfg.clock_mhz,
                               "host_model": {"lanes": host.lanes, "clock_hz": host.clock_hz, "source": host.source,
                                              "cost_host": args.cost_host},
                               "resolution": args.resolution, "models": rows}, indent=1))
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
