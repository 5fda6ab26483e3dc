"""Grouped (non-depthwise) convolutions compile for ``llvm`` onto the blocked conv micro-kernel and match
onnxruntime: channel blocks inside one group, blocked activations between convs where the channels
per group allow it, plain NCHW ones packed inside the kernel otherwise."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.codegen.llvm import host_target
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model


def _conv_model(channels: int, convs: list[dict], seed: int = 0, size: int = 9) -> onnx.ModelProto:
    """A chain of convs (each a dict of out channels, groups, kernel, stride, pads, bias), ReLU between them."""
    rng = np.random.default_rng(seed)
    nodes, inits, src, c = [], [], "x", channels
    for i, conv in enumerate(convs):
        k, groups, out = conv["k"], conv["groups"], conv["out"]
        w = (rng.standard_normal((out, c // groups, k, k)) / np.sqrt(c // groups * k * k)).astype(np.float32)
        ins = [src, f"w{i}"]
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        if conv.get("bias"):
            inits.append(numpy_helper.from_array(rng.standard_normal(out).astype(np.float32), f"b{i}"))
            ins.append(f"b{i}")
        nodes.append(helper.make_node("Conv", ins, [f"c{i}"], group=groups, strides=[conv["stride"]] * 2,
                                      pads=conv["pads"], kernel_shape=[k, k]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"]))
        src, c = f"r{i}", out
    graph = helper.make_graph(nodes, "grouped", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                               [1, channels, size, size])],
                              [helper.make_tensor_value_info(src, TensorProto.FLOAT, [1, c, None, None])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


def _conv(out: int, groups: int, k: int = 3, stride: int = 1, pads: tuple[int, ...] = (1, 1, 1, 1),
          bias: bool = True) -> dict:
    return {"out": out, "groups": groups, "k": k, "stride": stride, "pads": list(pads), "bias": bias}


CASES = {
    # RegNetX's pattern: 1x1 conv, then 16 channels per group on blocked activations, stride 2 with bias.
    "regnet_block": (16, [_conv(32, 1, k=1, pads=(0, 0, 0, 0)), _conv(32, 2, stride=2), _conv(64, 2, k=1,
                                                                                            pads=(0, 0, 0, 0))]),
    # 8 channels per group: plain NCHW, packed in the kernel with an 8-channel block.
    "eight_per_group": (32, [_conv(32, 4, stride=2, bias=False)]),
    # Unequal in/out channels per group (4 in, 8 out), asymmetric padding, 5x5 kernel.
    "asymmetric": (12, [_conv(24, 3, k=5, pads=(2, 1, 1, 2))]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_grouped_conv_matches_onnxruntime(case: str) -> None:
    channels, convs = CASES[case]
    model = _conv_model(channels, convs)
    x = np.random.default_rng(1).standard_normal((1, channels, 9, 9)).astype(np.float32)
    compiled = build_model(from_onnx(model), target="llvm")
    got = compiled.run({"x": x})[0]
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * float(np.abs(want).max()))
    # Each grouped conv runs on the blocked micro-kernel (its stage, not the generic reduction's
    # ``_nchw`` one, is in the module), with its output channels per group as the vector.
    ir = compiled.llvm_module.ir_text
    for i, conv in enumerate(convs):
        if conv["groups"] > 1:
            assert f"c{i}_nchwc" in ir, f"grouped conv c{i} did not take the blocked micro-kernel"
            assert f"<{min(host_target().vector_lanes(), conv['out'] // conv['groups'])} x float>" in ir
