"""Whole torchvision models on the VDLA (slow): MobileNetV2 with every conv but the float stem on the GEMM
core (its 17 depthwise convs as block-diagonal GEMMs), and a small VisionTransformer with every linear
layer and both attention matmuls on it; both bit-exact against the graph's int8 reference on fsim and the cycle model.

MobileNetV2 runs at 64x64 (the layers and channel counts of the 224 model, a twelfth of its pixels) so
the two simulators finish in minutes; the ViT is image 32, patch 8, 2 layers, 2 heads, dim 64, MLP 128.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from zoo import export, make_model  # noqa: E402

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402
from vdla.compiler.graph.build import build_model  # noqa: E402
from vdla.compiler.graph.executor import run_all  # noqa: E402
from vdla.compiler.graph.passes import fold_batch_norm  # noqa: E402


def _compile(net: torch.nn.Module, res: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, res, res)).astype(np.float32)
    model = export(net, torch.from_numpy(x), "torchscript")
    name = model.graph.input[0].name
    samples = [{name: rng.standard_normal((1, 3, res, res)).astype(np.float32)} for _ in range(2)]
    graph = from_onnx(model)
    return graph, build_model(graph, target="vdla", calibrate=samples), {name: x}


def _bit_exact(compiled, feed) -> None:  # type: ignore[no-untyped-def]
    want = run_all(compiled.graph, feed)
    for backend in ("fsim", "cycle"):
        got = compiled.module.run_all(feed, backend=backend)
        integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
        assert len(integer) >= 10
        for name in integer:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{backend}: {name}")


def _conv_macs(graph) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """MACs of every conv2d / dense of a float graph, by name."""
    out = {}
    for n in graph.nodes:
        if n.op == "conv2d":
            o, ci, kh, kw = graph.node(n.inputs[1]).type.shape
            out[n.name] = int(np.prod(n.type.shape)) * ci * kh * kw
        elif n.op == "dense":
            out[n.name] = int(np.prod(n.type.shape)) * graph.node(n.inputs[1]).type.shape[1]
    return out


@pytest.mark.slow
def test_mobilenet_v2_depthwise_convs_on_the_vdla_bit_exact() -> None:
    graph, compiled, feed = _compile(make_model("mobilenet_v2", image_size=64), 64)
    entries = compiled.partition()
    gemms = [e for e in entries if e.anchor is not None]
    on_cpu = [e for e in gemms if e.device != "vdla"]
    assert len(gemms) == 53 and len(on_cpu) == 1 and "float32" in on_cpu[0].reason  # only the float stem
    assert not compiled.fallbacks
    depthwise = [m for n in compiled.graph.nodes if n.op == "fused" and n.attrs["target"] == "vdla"
                 for m in n.attrs["body"].nodes if m.op == "conv2d" and m.attrs["groups"] > 1]
    assert len(depthwise) == 17
    macs = _conv_macs(fold_batch_norm(graph))  # the true (unpadded) MACs, by conv / dense name
    assert {e.anchor for e in gemms} == set(macs)
    on_vdla = sum(macs[e.anchor] for e in gemms if e.device == "vdla")
    assert on_vdla >= 0.99 * (sum(macs.values()) - macs[on_cpu[0].anchor])  # all of them, in fact
    _bit_exact(compiled, feed)


@pytest.mark.slow
def test_small_vit_linear_layers_on_the_vdla_bit_exact() -> None:
    torch.manual_seed(0)
    net = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                        hidden_dim=64, mlp_dim=128, num_classes=10).eval()
    with torch.no_grad():
        net.heads.head.weight.normal_(0.0, 0.02)  # ViT zero-initializes its classifier
    _, compiled, feed = _compile(net, 32)
    entries = compiled.partition()
    dense = [e for e in entries if e.anchor is not None and e.ops[0] == "dense"]
    assert len(dense) == 9 and all(e.device == "vdla" for e in dense)  # per layer: qkv, out, 2 MLP; the head
    attention = [e for e in entries if e.anchor is not None and e.ops[0] == "batch_matmul"]
    assert len(attention) == 4 and all(e.device == "vdla" for e in attention)  # per layer: Q.K^T and A.V
    host = {op for e in entries if e.device == "cpu" and e.reason for op in e.ops}
    assert {"layer_norm", "softmax", "erf"} <= host and "matmul" not in host
    _bit_exact(compiled, feed)
    with torch.no_grad():
        want = net(torch.from_numpy(feed[next(iter(feed))])).numpy()
    assert np.corrcoef(want.ravel(), compiled.run(feed)[0].ravel())[0, 1] > 0.98
