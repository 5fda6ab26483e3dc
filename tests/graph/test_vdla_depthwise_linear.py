"""Depthwise convs and transformer linear layers through the whole VDLA flow (ONNX -> quantize -> pack ->
partition -> VDLA programs), bit-exact against the graph's int8 reference on fsim and the cycle model.

Depthwise convs run as block-diagonal GEMMs (odd channel counts zero-padded to the block, stride 2,
3x3 and 5x5, with the per-channel requantization); a MatMul by a constant on ``(1, tokens, features)``
activations (+ its bias Add) becomes a dense on the GEMM core; LayerNorm, Softmax, GELU and the matmul
of two activations stay on the CPU and the partition report says why, per kernel.
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
from vdla.compiler.graph.executor import run_all


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


def test_linear_layers_on_the_vdla_and_host_ops_say_why(encoder) -> None:  # type: ignore[no-untyped-def]
    compiled, _ = encoder
    entries = compiled.partition()
    dense = [e for e in entries if e.anchor is not None]
    assert len(dense) == 3 and all(e.device == "vdla" and e.ops[0] == "dense" for e in dense), dense
    reasons = {op: e.reason for e in entries if e.device == "cpu" for op in e.ops
               if op in ("layer_norm", "softmax", "erf", "matmul")}
    assert set(reasons) == {"layer_norm", "softmax", "erf", "matmul"}
    assert "layer_norm needs a mean" in reasons["layer_norm"] and "softmax needs exp" in reasons["softmax"]
    assert "erf" in reasons["erf"] and "two activations" in reasons["matmul"]


def test_linear_layers_bit_exact_on_fsim_and_cycle(encoder) -> None:  # type: ignore[no-untyped-def]
    _assert_bit_exact(*encoder)
