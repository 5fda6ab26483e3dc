"""The CPU fast paths of the mobile and transformer models, compiled for ``llvm`` against onnxruntime:

* depthwise convs between blocked convs run topi's channel-blocked depthwise kernel, so the
  activations stay ``NCHW16c`` from the first 1x1 conv to the last (no round trip through NCHW);
* MatMul with a constant right operand (a transformer's linear layers) runs the packed dense
  kernel, rows padded to the register tile (a prime row count like ViT's 197 tokens);
* MatMul of two activations (attention) runs topi's batched micro-kernel on padded copies.

Every test runs for the host's ISA and for AVX2 (the ``cpu_target`` fixture).
Tolerance: fp32 against onnxruntime's fp32, ``rtol = 1e-5`` and ``atol = 1e-5 x max |output|``
(reductions of at most a few hundred terms).
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.codegen.llvm import current_target
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.passes.cpu_layout import channel_block

TOL = 1e-5


def _ort(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)[0]


def _model(nodes: list, inits: list, x_shape: tuple[int, ...], out: str) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "fast_paths", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [onnx.ValueInfoProto(name=out)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.value_info}
    model.graph.output[0].CopyFrom(inferred[out])
    return model


def _inverted_residual(channels: int, wide: int, k: int, stride: int, pads: list[int], bias: bool, seed: int = 0
                       ) -> onnx.ModelProto:
    """1x1 expand (to ``wide``) -> ReLU -> depthwise kxk -> Clip(0, 6) -> 1x1 project: MobileNetV2's block."""
    rng = np.random.default_rng(seed)

    def init(name: str, *shape: int, fan_in: int = 1) -> str:
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name))
        return name

    inits: list = [numpy_helper.from_array(np.float32(0.0), "lo"), numpy_helper.from_array(np.float32(6.0), "hi")]
    dw_inputs = ["e", init("wd", wide, 1, k, k, fan_in=k * k)] + ([init("bd", wide)] if bias else [])
    nodes = [
        helper.make_node("Conv", ["x", init("we", wide, channels, 1, 1, fan_in=channels)], ["c0"]),
        helper.make_node("Relu", ["c0"], ["e"]),
        helper.make_node("Conv", dw_inputs, ["d"], group=wide, kernel_shape=[k, k], strides=[stride] * 2, pads=pads),
        helper.make_node("Clip", ["d", "lo", "hi"], ["r"]),
        helper.make_node("Conv", ["r", init("wp", channels, wide, 1, 1, fan_in=wide)], ["y"]),
    ]
    return _model(nodes, inits, (1, channels, 11, 10), "y")


DEPTHWISE = {
    "k3_s1": (16, 32, 3, 1, [1, 1, 1, 1], False),
    "k5_s2_asymmetric_bias": (16, 32, 5, 2, [2, 1, 1, 2], True),
    "k3_s2_wide": (48, 96, 3, 2, [1, 1, 1, 1], True),
    # 24 channels: 8-channel blocks (half a vector on AVX-512), the MobileNets' 24/40/72/120/184.
    "k3_s1_half_block": (16, 24, 3, 1, [1, 1, 1, 1], True),
}


@pytest.mark.parametrize("case", sorted(DEPTHWISE))
def test_depthwise_between_blocked_convs_matches_onnxruntime(case: str, cpu_target: str) -> None:
    channels, wide, k, stride, pads, bias = DEPTHWISE[case]
    model = _inverted_residual(channels, wide, k, stride, pads, bias)
    x = np.random.default_rng(1).standard_normal((1, channels, 11, 10)).astype(np.float32)
    compiled = build_model(from_onnx(model), target="llvm", cpu_target=cpu_target)
    got, want = compiled.run({"x": x})[0], _ort(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    # The depthwise conv ran the blocked kernel, vectorized over a channel block ...
    ir = compiled.llvm_module.ir_text
    block = channel_block(wide, current_target().vector_lanes(32))
    assert "d_dwc" in ir and f"<{block} x float>" in ir
    # ... and every value between the input's and the output's layout change is channel-blocked.
    kernels = [n for n in compiled.graph.nodes if n.op == "fused"]
    assert [len(n.type.shape) for n in kernels] == [5, 5, 5, 4], [(n.name, n.type.shape) for n in kernels]


def _linear_block(rows: int, dim: int, hidden: int, seed: int = 0) -> onnx.ModelProto:
    """x[1, rows, dim] @ W1 + b1 -> Gelu (erf form) -> @ W2 + b2 -> + x: a transformer's MLP."""
    rng = np.random.default_rng(seed)
    arr = {"w1": rng.standard_normal((dim, hidden)) / np.sqrt(dim), "b1": rng.standard_normal(hidden),
           "w2": rng.standard_normal((hidden, dim)) / np.sqrt(hidden), "b2": rng.standard_normal(dim),
           "s2": np.float32(np.sqrt(2.0)), "half": np.float32(0.5), "one": np.float32(1.0)}
    inits = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in arr.items()]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["m1"]), helper.make_node("Add", ["m1", "b1"], ["h"]),
             helper.make_node("Div", ["h", "s2"], ["hs"]), helper.make_node("Erf", ["hs"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["h", "e1"], ["g0"]),
             helper.make_node("Mul", ["g0", "half"], ["g"]),
             helper.make_node("MatMul", ["g", "w2"], ["m2"]), helper.make_node("Add", ["m2", "b2"], ["o"]),
             helper.make_node("Add", ["o", "x"], ["y"])]
    return _model(nodes, inits, (1, rows, dim), "y")


@pytest.mark.parametrize("rows, dim, hidden", [(1, 48, 96), (13, 48, 96), (13, 40, 100)])
def test_transformer_mlp_matmuls_match_onnxruntime(rows: int, dim: int, hidden: int, cpu_target: str) -> None:
    """40 and 100 outputs are not whole vectors: the packed weights get zero columns up to the tile."""
    model = _linear_block(rows, dim, hidden)
    x = np.random.default_rng(2).standard_normal((1, rows, dim)).astype(np.float32)
    compiled = build_model(from_onnx(model), target="llvm", cpu_target=cpu_target)
    got, want = compiled.run({"x": x})[0], _ort(model, {"x": x})
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    # Both MatMuls ran the packed dense kernel (its stage names), not the generic reduction; 13 rows
    # are padded to a multiple of the register tile.
    ir = compiled.llvm_module.ir_text
    assert "m1_dense" in ir and "m2_dense" in ir
    assert ("m1_rows" in ir) == (rows == 13)


ATTENTION = {
    # ViT's attention at a small size: Q and K^T scaled, 5 heads, a prime token count (padded rows/columns).
    "heads": ((1, 5, 13, 16), (1, 5, 16, 13), (0, 1, 3, 2)),
    # A rank-3 batch against a broadcast (batch-1) right operand, 24 columns: more than one vector.
    "broadcast_right": ((3, 7, 20), (1, 20, 24), None),
    # A 2-D left operand against a batch of right operands.
    "broadcast_left": ((9, 8), (2, 8, 40), None),
}


@pytest.mark.parametrize("case", sorted(ATTENTION))
def test_batched_matmul_of_activations_matches_onnxruntime(case: str, cpu_target: str) -> None:
    """MatMul of two graph inputs, the left one scaled and the right one (for "heads") transposed first."""
    a_shape, b_shape, perm = ATTENTION[case]
    k_shape = b_shape if perm is None else tuple(b_shape[p] for p in perm)
    nodes = [helper.make_node("Mul", ["x", "s"], ["q"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=list(perm)) if perm else
             helper.make_node("Identity", ["k"], ["kt"]),
             helper.make_node("MatMul", ["q", "kt"], ["y"])]
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n, shape in (("x", a_shape),
                                                                                          ("k", k_shape))]
    graph = helper.make_graph(nodes, "attention", inputs, [onnx.ValueInfoProto(name="y")],
                              [numpy_helper.from_array(np.float32(0.25), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.value_info}
    model.graph.output[0].CopyFrom(inferred["y"])
    rng = np.random.default_rng(3)
    feed = {"x": rng.standard_normal(a_shape).astype(np.float32), "k": rng.standard_normal(k_shape).astype(np.float32)}
    compiled = build_model(from_onnx(model), target="llvm", cpu_target=cpu_target)
    got, want = compiled.run(feed)[0], _ort(model, feed)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    assert "y_bmm" in compiled.llvm_module.ir_text  # topi's batched micro-kernel, not the generic reduction
