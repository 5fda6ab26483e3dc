"""Channel concatenation of channel-blocked activations (SqueezeNet's fire module, GoogLeNet's inception
outputs, DenseNet's feature stacks) compiled for ``llvm`` against onnxruntime, for the host's ISA and AVX2.

When every input of a Concat over channels is in the same blocked layout (``NCHW{b}c``), the blocks of
one input follow those of the previous one along the outer C axis, so the concatenation runs in that
layout: no trip through NCHW (two layout transforms per input) between the convs.  Inputs blocked
differently (a 24-channel value in 8-channel blocks beside a 32-channel one in 16-channel blocks on
AVX-512) still concatenate through NCHW.  Tolerance: fp32 against onnxruntime, ``rtol = 1e-5``,
``atol = 1e-5 x max |output|``.
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


def _fire(squeeze: int, left: int, right: int, seed: int = 0) -> onnx.ModelProto:
    """x -> 1x1 squeeze -> ReLU -> (1x1 expand to ``left``, 3x3 expand to ``right``) -> ReLU each ->
    Concat -> 1x1 conv to 16 channels: a fire module and the next layer's conv."""
    rng = np.random.default_rng(seed)
    inits: list[onnx.TensorProto] = []

    def weight(name: str, o: int, i: int, k: int) -> str:
        w = rng.standard_normal((o, i, k, k)) / np.sqrt(i * k * k)
        inits.append(numpy_helper.from_array(w.astype(np.float32), name))
        return name

    nodes = [
        helper.make_node("Conv", ["x", weight("ws", squeeze, 16, 1)], ["s0"]), helper.make_node("Relu", ["s0"], ["s"]),
        helper.make_node("Conv", ["s", weight("wl", left, squeeze, 1)], ["l0"]), helper.make_node("Relu", ["l0"], ["l"]),
        helper.make_node("Conv", ["s", weight("wr", right, squeeze, 3)], ["r0"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["r0"], ["r"]),
        helper.make_node("Concat", ["l", "r"], ["c"], axis=1),
        helper.make_node("Conv", ["c", weight("wn", 16, left + right, 1)], ["y"]),
    ]
    graph = helper.make_graph(nodes, "fire", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 16, 9, 7))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 16, 9, 7))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("left, right", [(32, 48), (16, 64), (24, 32)])
def test_fire_concat_matches_onnxruntime(left: int, right: int, cpu_target: str) -> None:
    model = _fire(16, left, right)
    x = np.random.default_rng(1).standard_normal((1, 16, 9, 7)).astype(np.float32)
    compiled = build_model(from_onnx(model), target="llvm", cpu_target=cpu_target)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got, want = compiled.run({"x": x})[0], sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    lanes = current_target().vector_lanes(32)
    blocks = {channel_block(c, lanes) for c in (left, right)}
    # Only the input's and the output's layout changes are left when both halves share one block.
    ops = [op for node in compiled.module.graph["nodes"] for op in node["ops"]]
    expected = 2 if len(blocks) == 1 else 2 + 3  # else: both halves to NCHW, the concat back to blocked
    assert ops.count("layout_transform") == expected, (blocks, ops)


@pytest.mark.parametrize("channels", [(3, 5, 2, 7, 1), (16, 32, 32, 32, 32, 32, 32)])
def test_many_input_concat_matches_numpy(channels: tuple[int, ...], cpu_target: str) -> None:
    """A Concat of many graph inputs (a DenseNet stack; odd sizes stay NCHW), each element found by a
    binary search over the inputs' start channels."""
    names = [f"x{k}" for k in range(len(channels))]
    graph = helper.make_graph(
        [helper.make_node("Concat", names, ["c"], axis=1), helper.make_node("Relu", ["c"], ["y"])], "stack",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, (1, c, 5, 6)) for n, c in zip(names, channels)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, sum(channels), 5, 6))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    rng = np.random.default_rng(2)
    feed = {n: rng.standard_normal((1, c, 5, 6)).astype(np.float32) for n, c in zip(names, channels)}
    compiled = build_model(from_onnx(model), target="llvm", cpu_target=cpu_target)
    np.testing.assert_array_equal(compiled.run(feed)[0], np.maximum(np.concatenate(list(feed.values()), axis=1), 0))
