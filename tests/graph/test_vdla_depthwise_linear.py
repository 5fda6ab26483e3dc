"""Depthwise convs and transformer linear layers through the whole VDLA flow (ONNX -> quantize -> pack ->
partition -> VDLA programs), bit-exact against the graph's int8 reference on fsim and the cycle model.

Depthwise convs run as block-diagonal GEMMs (odd channel counts zero-padded to the block, stride 2,
3x3 and 5x5, with the per-channel requantization); a MatMul by a constant on ``(1, tokens, features)``
activations (+ its bias Add) becomes a dense on the GEMM core; the matmuls of two activations (attention's
Q.K^T and A.V, over heads, the tokens zero-padded to the block) become int8 ``batch_matmul`` kernels on the
GEMM core, the second activation its weight operand; LayerNorm, Softmax and GELU stay on the CPU and the
partition report says why, per kernel.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import pytest
import torch
from torch import nn

from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.executor import run_all, run_graph
from vdla.compiler.graph.layout import pack


class _Depthwise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 24, 1), nn.ReLU(),
            nn.Conv2d(24, 24, 3, 2, 1, groups=24), nn.BatchNorm2d(24), nn.ReLU6(),   # 24 channels, stride 2
            nn.Conv2d(24, 40, 1), nn.ReLU(),
            nn.Conv2d(40, 40, 5, 1, 2, groups=40), nn.ReLU(),                        # 40 channels, 5x5
            nn.Conv2d(40, 16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


class _Encoder(nn.Module):
    """A transformer-style block on 17 tokens of 40 features (neither a multiple of the block)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(40, 3 * 24)
        self.norm = nn.LayerNorm(24)
        self.mlp = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.Linear(48, 24))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).split(24, dim=-1)
        attn = torch.softmax(q @ k.transpose(-1, -2) / 5.0, dim=-1)
        return self.mlp(self.norm(attn @ v))


class _Heads(nn.Module):
    """Multi-head self-attention on 17 tokens of 24 features, 2 heads of 12 (rank-4 matmuls over the heads),
    scaled as torchvision's ViT does (1/sqrt(sqrt(d)) on Q and on K)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(24, 3 * 24)
        self.out = nn.Linear(24, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = (t.reshape(1, 17, 2, 12).transpose(1, 2) for t in self.qkv(x).split(24, dim=-1))
        scale = 12 ** -0.25
        attn = torch.softmax((q * scale) @ (k.transpose(-1, -2) * scale), dim=-1)
        return self.out((attn @ v).transpose(1, 2).reshape(1, 17, 24))


def _onnx(model: nn.Module, shape: tuple[int, ...]) -> onnx.ModelProto:
    torch.manual_seed(0)
    model = model.eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, torch.zeros(shape), buf, input_names=["x"], dynamo=False)
    return onnx.load_from_string(buf.getvalue())


def _compile(model: nn.Module, shape: tuple[int, ...]):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(1)
    samples = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(2)]
    compiled = build_model(from_onnx(_onnx(model, shape)), target="vdla", calibrate=samples, skip_first_conv=False)
    return compiled, {"x": rng.standard_normal(shape).astype(np.float32)}


def _assert_bit_exact(compiled, feed) -> None:  # type: ignore[no-untyped-def]
    want = run_all(compiled.graph, feed)
    for backend in ("fsim", "cycle"):
        got = compiled.module.run_all(feed, backend=backend)
        integer = [n for n, v in want.items() if v.dtype.kind in "iu" and n in got]
        assert len(integer) >= 4
        for name in integer:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{backend}: {name}")


@pytest.fixture(scope="module")
def depthwise():  # type: ignore[no-untyped-def]
    return _compile(_Depthwise(), (1, 3, 14, 14))


@pytest.fixture(scope="module")
def encoder():  # type: ignore[no-untyped-def]
    return _compile(_Encoder(), (1, 17, 40))


def test_depthwise_convs_run_on_the_vdla(depthwise) -> None:  # type: ignore[no-untyped-def]
    compiled, _ = depthwise
    gemms = [e for e in compiled.partition() if e.anchor is not None]
    assert len(gemms) == 5 and all(e.device == "vdla" for e in gemms), gemms
    assert not compiled.fallbacks
    convs = [n for n in compiled.graph.nodes if n.op == "fused" and n.attrs["target"] == "vdla"
             for m in n.attrs["body"].nodes if m.op == "conv2d" and m.attrs["groups"] > 1]
    assert len(convs) == 2


def test_depthwise_convs_bit_exact_on_fsim_and_cycle(depthwise) -> None:  # type: ignore[no-untyped-def]
    _assert_bit_exact(*depthwise)


@pytest.fixture(scope="module")
def heads():  # type: ignore[no-untyped-def]
    torch.manual_seed(3)
    net = _Heads().eval()
    return (*_compile(net, (1, 17, 24)), net)


def test_linear_layers_and_attention_on_the_vdla_and_host_ops_say_why(encoder) -> None:  # type: ignore[no-untyped-def]
    compiled, _ = encoder
    entries = compiled.partition()
    gemms = [e for e in entries if e.anchor is not None]
    assert all(e.device == "vdla" for e in gemms), gemms
    assert sorted(e.ops[0] for e in gemms) == ["batch_matmul"] * 2 + ["dense"] * 3
    reasons = {op: e.reason for e in entries if e.device == "cpu" for op in e.ops
               if op in ("layer_norm", "softmax", "erf", "matmul")}
    assert set(reasons) == {"layer_norm", "softmax", "erf"}  # no matmul left: both are batch_matmuls
    assert "layer_norm needs a mean" in reasons["layer_norm"] and "softmax needs exp" in reasons["softmax"]
    assert "erf" in reasons["erf"]


def test_multi_head_attention_on_the_vdla_bit_exact(heads) -> None:  # type: ignore[no-untyped-def]
    compiled, feed, net = heads
    bmm = [n.attrs["body"] for n in compiled.graph.nodes if n.op == "fused" and n.attrs["target"] == "vdla"
           for m in n.attrs["body"].nodes if m.op == "batch_matmul"]
    assert len(bmm) == 2 and not compiled.fallbacks
    # Q.K^T: 2 heads, 12 features padded to 16, 17 token columns padded to 32; A.V: 17 tokens padded to 32
    shapes = sorted(next(m for m in body.nodes if m.op == "batch_matmul").type.shape for body in bmm)
    assert shapes == [(2, 1, 17, 1, 1, 16), (2, 2, 17, 1, 1, 16)]
    _assert_bit_exact(compiled, feed)
    # the int8 attention against the float module: the same function, to int8 precision
    with torch.no_grad():
        want = net(torch.from_numpy(feed["x"])).numpy()
    got = compiled.run(feed)[0]
    assert np.corrcoef(want.ravel(), got.ravel())[0, 1] > 0.99


@pytest.mark.parametrize("packed", [False, True])
def test_batch_matmul_llvm_lowering_matches_the_reference(packed: bool) -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 32, 5, 1)).astype(np.int8)   # (B, K, M, 1)
    w = rng.integers(-128, 128, (3, 16, 32)).astype(np.int8)     # (B, N, K)
    x.reshape(-1)[:2], w.reshape(-1)[:2] = (-128, -128), (-128, -128)
    bias = rng.integers(-1000, 1000, 16).astype(np.int32)
    lays = {"data_layout": "NCHW1n16c", "kernel_layout": "NOI16o16i", "out_layout": "NCHW1n16c"} if packed else {}
    feed = {"x": pack(x, lays["data_layout"]) if packed else x, "w": pack(w, lays["kernel_layout"]) if packed else w}
    b = GraphBuilder()
    xi, wi = b.input("x", feed["x"].shape, "int8"), b.input("w", feed["w"].shape, "int8")
    g = b.build([b.op("batch_matmul", [xi, wi, b.const(bias)], out_dtype="int32", **lays)])
    want = run_graph(g, feed)[0]
    exact = np.einsum("bnk,bkm->bnm", w.astype(np.int64), x[..., 0].astype(np.int64)) + bias[None, :, None]
    np.testing.assert_array_equal(pack(exact[..., None].astype(np.int32), "NCHW1n16c") if packed else exact[..., None],
                                  want)
    np.testing.assert_array_equal(build_model(g, target="llvm").run(feed)[0], want)


def test_linear_layers_bit_exact_on_fsim_and_cycle(encoder) -> None:  # type: ignore[no-untyped-def]
    _assert_bit_exact(*encoder)
