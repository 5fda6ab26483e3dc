"""ShuffleNet V2 units (58- and 116-channel convs around a channel shuffle) compiled for ``llvm``
against onnxruntime, for the host's ISA and AVX2.

58 and 116 channels fill no vector block (16 or 8 lanes, nor half of them), so ``cpu_layout`` zero-pads
those convs to whole blocks (64 and 128 channels on AVX-512, 64 and 120 on AVX2): zero weights and bias
make the extra channels zero, the depthwise convs keep one group per channel, and the padding is sliced
off where the channel shuffle (Concat, Reshape, Transpose, Reshape, Split) reads the real channels.
Tolerance: fp32 against onnxruntime, ``rtol = 1e-5``, ``atol = 1e-5 x max |output|``.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.codegen.llvm import current_target
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.passes import optimize_for_cpu
from vdla.compiler.graph.passes.cpu_layout import channel_block

TOL = 1e-5
SIZE = 12  # input height and width


class _Net:
    """An ONNX graph under construction: random conv weights and biases as initializers."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []

    def const(self, value: np.ndarray, name: str) -> str:
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op: str, inputs: list[str], out: str, n_out: int = 1, **attrs: object) -> list[str]:
        outs = [out] if n_out == 1 else [f"{out}_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, **attrs))
        return outs

    def conv(self, x: str, cin: int, cout: int, name: str, k: int = 1, stride: int = 1, depthwise: bool = False,
             relu: bool = True) -> str:
        fan_in = (1 if depthwise else cin) * k * k
        w = self.rng.standard_normal((cout, 1 if depthwise else cin, k, k)) / np.sqrt(fan_in)
        b = 0.1 * self.rng.standard_normal(cout)
        ins = [x, self.const(w.astype(np.float32), f"{name}_w"), self.const(b.astype(np.float32), f"{name}_b")]
        (y,) = self.node("Conv", ins, f"{name}_y", pads=[k // 2] * 4, strides=[stride] * 2,
                         group=cout if depthwise else 1)
        return self.node("Relu", [y], f"{name}_r")[0] if relu else y

    def shuffle(self, a: str, b: str, half: int, size: int, name: str) -> str:
        """Concat two halves of ``half`` channels, then interleave them (torchvision's channel_shuffle)."""
        (c,) = self.node("Concat", [a, b], f"{name}_cat", axis=1)
        split = self.const(np.array([1, 2, half, size, size], np.int64), f"{name}_s5")
        flat = self.const(np.array([1, 2 * half, size, size], np.int64), f"{name}_s4")
        (r,) = self.node("Reshape", [c, split], f"{name}_r5")
        (t,) = self.node("Transpose", [r], f"{name}_t", perm=[0, 2, 1, 3, 4])
        return self.node("Reshape", [t, flat], f"{name}_r4")[0]


def _shufflenet_units(cin: int = 24, half: int = 58, seed: int = 0) -> onnx.ModelProto:
    """A stride-2 unit (cin -> 2 x half channels), a stride-1 unit (Split into halves), a 1x1 conv."""
    net, size = _Net(seed), SIZE // 2
    b1 = net.conv(net.conv("x", cin, cin, "b1dw", k=3, stride=2, depthwise=True, relu=False), cin, half, "b1pw")
    b2 = net.conv("x", cin, half, "b2pw1")
    b2 = net.conv(net.conv(b2, half, half, "b2dw", k=3, stride=2, depthwise=True, relu=False), half, half, "b2pw2")
    y = net.shuffle(b1, b2, half, size, "u1")
    x1, x2 = net.node("Split", [y, net.const(np.array([half, half], np.int64), "halves")], "u2_split", 2, axis=1)
    b = net.conv(x2, half, half, "u2pw1")
    b = net.conv(net.conv(b, half, half, "u2dw", k=3, depthwise=True, relu=False), half, half, "u2pw2")
    y = net.conv(net.shuffle(x1, b, half, size, "u2"), 2 * half, 2 * half, "head")
    graph = helper.make_graph(net.nodes, "shufflenet_units",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, cin, SIZE, SIZE))],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, (1, 2 * half, size, size))],
                              net.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_shufflenet_units_match_onnxruntime_with_every_conv_blocked(cpu_target: str) -> None:
    model = _shufflenet_units()
    lanes = current_target().vector_lanes(32)
    assert channel_block(58, lanes) is None and channel_block(116, lanes) is None  # the case this covers
    graph = from_onnx(model)
    opt = optimize_for_cpu(graph)
    convs = [b for n in opt.nodes if n.op == "fused" for b in n.attrs["body"].nodes if b.op == "conv2d"]
    assert len(convs) == 9
    # Every conv reads and writes blocks: the 24-channel input in its own block, the rest padded to whole blocks.
    padded = {-(-c // lanes) * lanes for c in (58, 116)}
    assert all(c.attrs["data_layout"] != "NCHW" and c.attrs["out_layout"] != "NCHW" for c in convs)
    assert {c.type.shape[1] * c.type.shape[4] for c in convs[2:]} == padded
    assert [c.attrs["groups"] for c in convs] == [24, 1, 64, 1, 1, 1, 64, 1, 1]  # the padded depthwise convs too
    x = np.random.default_rng(1).standard_normal((1, 24, SIZE, SIZE)).astype(np.float32)
    compiled = build_model(graph, target="llvm", cpu_target=cpu_target)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got, want = compiled.run({"x": x})[0], sess.run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    ops = [op for node in compiled.module.graph["nodes"] for op in node["ops"]]
    # Layout changes only where the real channels are needed: the input; each branch into the shuffle's
    # Concat (2 + 1, the Split's untouched half staying NCHW); the Split's other half and the shuffle into
    # the next convs (each zero-padded once); the output.
    assert (ops.count("layout_transform"), ops.count("pad")) == (7, 2), ops
