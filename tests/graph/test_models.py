"""End-to-end model checks: int8 accuracy on digits and the VDLA pipeline on ResNet-18."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from vdla_hw.config import load_config

from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph import Graph, run_graph
from vdla.compiler.graph.passes import optimize_for_cpu, optimize_for_vdla, placement, plan_memory, quantize, run_planned
from make_models import DATA, DIGITS_MODEL, digits_split, fill_weights

CFG = load_config("default")


def _top1(graph: Graph, x: np.ndarray, y: np.ndarray) -> float:
    preds = [int(run_graph(graph, {"x": x[i:i + 1]})[0].argmax()) for i in range(len(x))]
    return float(np.mean(np.array(preds) == y))


@pytest.fixture(scope="module")
def digits():
    x_tr, _, x_te, y_te = digits_split()
    graph = from_onnx(onnx.load(str(DIGITS_MODEL)))
    samples = [{"x": x_tr[i:i + 1]} for i in range(0, len(x_tr), 8)]
    return graph, samples, x_te, y_te


@pytest.mark.parametrize("skip_first_conv", [True, False])
def test_int8_digits_accuracy_within_one_point_of_float(digits, skip_first_conv: bool) -> None:
    graph, samples, x_te, y_te = digits
    float_acc = _top1(graph, x_te, y_te)
    int8_acc = _top1(quantize(graph, samples, skip_first_conv=skip_first_conv), x_te, y_te)
    assert float_acc > 0.95
    assert int8_acc >= float_acc - 0.01, (float_acc, int8_acc)


def test_vdla_pipeline_on_digits_is_bit_exact_with_the_int8_reference(digits) -> None:
    graph, samples, x_te, _ = digits
    reference = quantize(graph, samples)
    compiled = optimize_for_vdla(graph, CFG, samples)
    assert "vdla" in placement(compiled).values()
    for i in range(0, 40, 4):
        feed = {"x": x_te[i:i + 1]}
        np.testing.assert_array_equal(run_graph(compiled, feed)[0], run_graph(reference, feed)[0])


@pytest.fixture(scope="module")
def resnet18() -> Graph:
    # 64x64 inputs keep the NumPy reference fast; the exported graph is resolution independent.
    return from_onnx(fill_weights(onnx.load(str(DATA / "resnet18.onnx"))), shapes={"x": (1, 3, 64, 64)})


def test_resnet18_vdla_pipeline_places_19_convs_and_the_dense_on_vdla_and_is_bit_exact(resnet18: Graph) -> None:
    rng = np.random.default_rng(0)
    samples = [{"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}]
    feed = {"x": rng.standard_normal((1, 3, 64, 64)).astype(np.float32)}
    compiled = optimize_for_vdla(resnet18, CFG, samples)
    ops = [m.op for n in compiled.nodes if n.op == "fused" and n.attrs["target"] == "vdla"
           for m in n.attrs["body"].nodes]
    # All convolutions but the first (kept in float) run on the VDLA, and the 512->1000 dense with its
    # outputs zero-padded to 1008; so do the 8 residual adds (some fused into their convs) and the global pool.
    assert ops.count("conv2d") + ops.count("dense") == 20 and ops.count("qadd") == 8 and ops.count("qavg_pool2d") == 1
    want = run_graph(quantize(resnet18, samples), feed)[0]
    np.testing.assert_array_equal(run_graph(compiled, feed)[0], want)
    plan = plan_memory(compiled)
    assert plan.arena_bytes < plan.naive_bytes
    np.testing.assert_array_equal(run_planned(plan, feed)[0], want)


def test_resnet18_cpu_pipeline_matches_the_imported_graph(resnet18: Graph) -> None:
    feed = {"x": np.random.default_rng(1).standard_normal((1, 3, 64, 64)).astype(np.float32)}
    want = run_graph(resnet18, feed)[0]
    np.testing.assert_allclose(run_graph(optimize_for_cpu(resnet18), feed)[0], want, rtol=1e-4,
                               atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.slow
def test_fresh_export_and_training_with_torch(tmp_path: Path) -> None:
    """Re-run the export script's steps with torch (the bench extra): the committed files stay reproducible."""
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from make_models import train_digits
    from models import export_onnx, resnet18

    model, float_acc = train_digits()
    path = export_onnx(model, torch.zeros(1, 1, 8, 8), tmp_path / "digits.onnx")
    x_tr, _, x_te, y_te = digits_split()
    graph = from_onnx(str(path))
    assert abs(_top1(graph, x_te, y_te) - float_acc) < 1e-9
    int8 = quantize(graph, [{"x": x_tr[i:i + 1]} for i in range(0, len(x_tr), 8)])
    assert _top1(int8, x_te, y_te) >= float_acc - 0.01
    net = resnet18()
    path = export_onnx(net, torch.zeros(1, 3, 224, 224), tmp_path / "resnet18.onnx")
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        want = net(x).numpy()
    got = run_graph(from_onnx(str(path)), {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * float(np.abs(want).max()))
