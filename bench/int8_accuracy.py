"""Benchmark: int8 accuracy of the VDLA quantization against the float model, per calibration method
and per scheme (per-tensor powers of two vs per-channel scales with integer multipliers).

Models:

* ``digits_cnn`` (compiler/examples/digits_cnn.onnx) and ``digits_mobilenet`` (a MobileNetV2-style
  net, compiler/examples/train_digits_mobilenet.py): trained on scikit-learn's digits; top-1 on the
  held-out split (450 images), float and int8; calibration on 64 training images;
* ``resnet18`` and ``mobilenet_v2`` from the torchvision zoo (tests/models/zoo.py: random weights),
  at ``--resolution`` (default 64: the NumPy reference and fsim at 224 take minutes per input),
  ``--inputs`` (default 8) standard-normal calibration inputs and as many other evaluation inputs.
  Before export, every BatchNorm's running mean and variance are re-estimated on the calibration
  inputs (``zoo.fit_batch_norm``: one train-mode pass over them as one batch, so each statistic
  is the exact per-channel mean / unbiased variance over inputs and pixels; affine weights stay
  as drawn).  Why: the zoo's randomized statistics do not match the activations they normalize, so
  nearly every ReLU6 of mobilenet_v2 saturates and its logits differ between inputs by ~1e-7 of
  their size -- the cosine below is then a comparison of rounding noise.  Fitted statistics make
  the random network normalize its activations as a trained one does on its data.  Both zoo models
  get the same treatment so their rows compare;
* ``resnet18_zoostats`` and ``mobilenet_v2_zoostats``: the same networks with the zoo's randomized
  statistics (what this bench measured before), for comparison.

Metrics: ``cos`` is the cosine of the input-dependent part of the logits: int8 and float logits
each minus the float logits' mean over the evaluation inputs, flattened over all inputs;
``dep`` (float) is how large that part is relative to the logits -- when it is tiny, int8 rounding
that is constant across inputs dominates the cosine; ``gain`` (float, dB) is how much the float
network amplifies a small perturbation: the relative change of the logits' input-dependent part
over the relative size of a Gaussian perturbation of the input (-60 dB), median over the
evaluation inputs.  Every int8 rounding is such a perturbation (~-40 dB each), so a large gain
bounds the cosine any int8 scheme can reach.  The worst 5 layers' SQNR (dB, float vs dequantized
int8 output of each quantized layer, on the calibration inputs) come with each row.

The int8 numbers are the integer graph's (the NumPy executor); the VDLA computes exactly those
integers, which this script checks on fsim for the per-channel ``max`` variant of every model
(``fsim`` column: outputs bit-identical on the inputs checked).  The peer in the same run is the
float model and the per-tensor scheme.

Run: ``python bench/int8_accuracy.py [--models digits_cnn,resnet18] [--resolution 64] [--quick]``;
needs torch/torchvision (the bench extra) for the zoo models; writes ``bench/results/int8_accuracy.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench"), str(ROOT / "tests" / "models")]

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.compiler.graph.executor import run_graph  # noqa: E402
from vdla.compiler.graph.ir import Graph  # noqa: E402
from vdla.compiler.graph.passes import quantize_for_vdla  # noqa: E402
from vdla.compiler.graph.passes.sqnr import layer_sqnr  # noqa: E402
from host import host_line, host_record  # noqa: E402

MODELS = ("digits_cnn", "digits_mobilenet", "resnet18", "mobilenet_v2", "resnet18_zoostats", "mobilenet_v2_zoostats")
ZOO_STATS = "_zoostats"  # suffix: keep the zoo's randomized BatchNorm statistics
PERTURBATION = 1e-3  # relative size of the input perturbation of the gain metric (-60 dB)
CALIBRATIONS = ("max", "percentile:99.99", "kl")
FSIM_CHECKS = 4  # inputs per model run on fsim to confirm the VDLA computes the reference's integers


@dataclass
class Task:
    """A model with its calibration samples, evaluation inputs and (for the digits) labels."""

    name: str
    graph: Graph
    calib: list[dict[str, np.ndarray]]
    inputs: list[dict[str, np.ndarray]]
    labels: np.ndarray | None


def _digits_task(name: str, quick: bool) -> Task:
    from vdla.compiler.examples import MODEL_PATH as CNN_PATH
    from vdla.compiler.examples.train_digits_mobilenet import MODEL_PATH, SPLIT_PATH, upscale

    with np.load(SPLIT_PATH) as d:
        x_te, y_te, x_cal = d["x_test"], d["y_test"], d["x_calib"]
    if name == "digits_cnn":
        prep: Callable[[np.ndarray], np.ndarray] = lambda x8: (x8.astype(np.float32) / 16.0)[:, None]
        graph = from_onnx(str(CNN_PATH))
    else:
        prep, graph = upscale, from_onnx(str(MODEL_PATH))
    n = 90 if quick else len(x_te)
    x, cal = prep(x_te[:n]), prep(x_cal)
    key = graph.input_nodes[0].name
    return Task(name, graph, [{key: c[None]} for c in cal], [{key: v[None]} for v in x], y_te[:n])


def _zoo_task(name: str, resolution: int, count: int) -> Task:
    import torch
    from zoo import export, fit_batch_norm, make_model

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    draw = lambda: rng.standard_normal((1, 3, resolution, resolution)).astype(np.float32)  # noqa: E731
    calib, inputs = [draw() for _ in range(count)], [draw() for _ in range(count)]
    model = make_model(name.removesuffix(ZOO_STATS))
    if not name.endswith(ZOO_STATS):
        fit_batch_norm(model, torch.from_numpy(np.concatenate(calib)))
    graph = from_onnx(export(model, torch.zeros(1, 3, resolution, resolution), "torchscript"))
    key = graph.input_nodes[0].name
    return Task(name, graph, [{key: c} for c in calib], [{key: x} for x in inputs], None)


def _logits(graph: Graph, inputs: Sequence[dict[str, np.ndarray]]) -> np.ndarray:
    return np.stack([run_graph(graph, x)[0].reshape(-1) for x in inputs])


def input_dependent_cosine(f: np.ndarray, q: np.ndarray) -> float:
    """Cosine of ``q - mean(f)`` with ``f - mean(f)`` (rows: inputs), over all inputs at once."""
    mu = f.mean(axis=0)
    a, b = (f - mu).ravel(), (q - mu).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def perturbation_gain(graph: Graph, inputs: Sequence[dict[str, np.ndarray]], f: np.ndarray) -> float:
    """dB by which the float ``graph`` amplifies a small Gaussian perturbation of its input, relative to
    the input-dependent part of its logits ``f`` (rows: the evaluation inputs, of which ``inputs`` are
    the first few); median over ``inputs``."""
    rng = np.random.default_rng(1)
    dev = f - f.mean(axis=0)
    gains = []
    for x, fx, d in zip(inputs, f, dev):
        (key, v), = x.items()
        noise = rng.standard_normal(v.shape).astype(v.dtype) * (PERTURBATION * np.linalg.norm(v) / np.sqrt(v.size))
        moved = run_graph(graph, {key: (v + noise).astype(v.dtype)})[0].reshape(-1)
        rel_in = np.linalg.norm(noise) / np.linalg.norm(v)
        gains.append(20 * np.log10(np.linalg.norm(moved - fx) / np.linalg.norm(d) / rel_in))
    return float(np.median(gains))


def evaluate(task: Task, quiet: bool) -> list[dict[str, Any]]:
    """One row per (scheme, calibration), plus the fsim check of the per-channel max variant."""
    f = _logits(task.graph, task.inputs)
    mu = f.mean(axis=0)
    dep = float(np.linalg.norm(f - mu) / np.linalg.norm(f))
    gain = perturbation_gain(task.graph, task.inputs[:4], f) if task.labels is None else None
    rows = []
    variants = [(pc, cal) for pc in (False, True) for cal in CALIBRATIONS]
    for pc, cal in tqdm(variants, desc=task.name, unit="variant", disable=quiet or not sys.stderr.isatty()):
        t0 = time.perf_counter()
        model = quantize_for_vdla(task.graph, task.calib, per_channel=pc, calibration=cal)
        q = _logits(model.graph, task.inputs)
        sqnr = layer_sqnr(model, task.calib[:4])
        row: dict[str, Any] = {
            "model": task.name, "scheme": "per-channel" if pc else "per-tensor", "calibration": cal,
            "cosine": input_dependent_cosine(f, q), "input_dependent": dep, "gain_db": gain,
            "worst_sqnr": [r.to_json() for r in sqnr[:5]], "layers": len(sqnr),
            "seconds": round(time.perf_counter() - t0, 1)}
        if task.labels is not None:
            row["float_top1"] = float(np.mean(f.argmax(1) == task.labels))
            row["int8_top1"] = float(np.mean(q.argmax(1) == task.labels))
        if pc and cal == "max":
            row["fsim_bit_exact"] = _fsim_matches(task, q)
        rows.append(row)
    return rows


def _fsim_matches(task: Task, reference: np.ndarray) -> bool:
    compiled = build_model(task.graph, target="vdla", calibrate=task.calib)
    picks = np.linspace(0, len(task.inputs) - 1, FSIM_CHECKS).astype(int)
    return all(np.array_equal(compiled.run(task.inputs[i], backend="fsim")[0].reshape(-1), reference[i])
               for i in picks)


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = (f"{'model':<21} {'scheme':<11} {'calibration':<16} {'float':>6} {'int8':>6} {'cos':>7} {'dep':>8} "
            f"{'gain':>5} {'fsim':>5}  worst SQNR dB (5 layers)")
    lines = [head, "-" * len(head)]
    for r in rows:
        top = lambda k: f"{100 * r[k]:6.2f}" if k in r else f"{'-':>6}"  # noqa: E731
        fsim = {True: "exact", False: "DIFF"}.get(r.get("fsim_bit_exact"), "")  # type: ignore[arg-type]
        worst = " ".join(f"{w['sqnr_db']:.1f}" for w in r["worst_sqnr"])
        gain = f"{r['gain_db']:5.1f}" if r.get("gain_db") is not None else f"{'-':>5}"
        lines.append(f"{r['model']:<21} {r['scheme']:<11} {r['calibration']:<16} {top('float_top1')} "
                     f"{top('int8_top1')} {r['cosine']:7.4f} {r['input_dependent']:8.1e} {gain} {fsim:>5}  {worst}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, from {', '.join(MODELS)}")
    p.add_argument("--resolution", type=int, default=64, help="input size of the zoo models (default: 64)")
    p.add_argument("--inputs", type=int, default=8,
                   help="zoo: calibration inputs (also the BatchNorm fit) and evaluation inputs, each (default: 8)")
    p.add_argument("--quick", action="store_true", help="digits: the first 90 held-out images only")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--json", default=str(ROOT / "bench" / "results" / "int8_accuracy.json"))
    args = p.parse_args(argv)
    names = [m for m in args.models.split(",") if m]
    unknown = sorted(set(names) - set(MODELS))
    if unknown:
        p.error(f"unknown models {unknown}; choose from {', '.join(MODELS)}")
    print(f"{host_line()}; int8 on VDLA (fsim-checked) vs float, "
          f"zoo at {args.resolution}x{args.resolution}")
    rows: list[dict[str, Any]] = []
    for name in names:
        task = (_digits_task(name, args.quick) if name.startswith("digits") else
                _zoo_task(name, args.resolution, args.inputs))
        rows += evaluate(task, args.quiet)
        out = Path(args.json)  # written after every model, so a long run leaves its finished part
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"host": host_record(), "resolution": args.resolution,
                                   "inputs": args.inputs, "quick": args.quick, "rows": rows}, indent=1))
    print(table(rows))
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
