"""The operators the model zoo needs, each compiled for ``llvm`` and matched against onnxruntime.

Every case is a one- or two-node ONNX graph with run-time inputs (so the operator itself is
compiled, not folded away), plus cases where the operator only computes shapes and must fold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.errors import UnsupportedModelError

F32 = TensorProto.FLOAT


@dataclass(frozen=True)
class Case:
    name: str
    nodes: list[onnx.NodeProto]
    inputs: dict[str, np.ndarray]
    consts: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 17
    tol: float = 1e-5


def _rand(*shape: int, seed: int = 0, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def _i64(*v: int) -> np.ndarray:
    return np.asarray(v, np.int64)


def _node(op: str, ins: list[str], outs: list[str] | None = None, **attrs) -> onnx.NodeProto:  # type: ignore[no-untyped-def]
    return helper.make_node(op, ins, outs or ["y"], **attrs)


X = _rand(2, 3, 5, 6)
CASES = [
    Case("hardswish", [_node("HardSwish", ["x"])], {"x": _rand(2, 8, 4, 4, lo=-5, hi=5)}, opset=14),
    Case("hardsigmoid", [_node("HardSigmoid", ["x"], alpha=0.3, beta=0.4)], {"x": _rand(64, lo=-5, hi=5)}),
    Case("erf", [_node("Erf", ["x"])], {"x": _rand(3, 40, lo=-3, hi=3)}),
    Case("gelu", [_node("Gelu", ["x"])], {"x": _rand(4, 33, lo=-4, hi=4)}, opset=20),
    Case("gelu_tanh", [_node("Gelu", ["x"], approximate="tanh")], {"x": _rand(4, 33, lo=-4, hi=4)}, opset=20),
    Case("sqrt", [_node("Sqrt", ["x"])], {"x": _rand(7, 9, lo=0, hi=10)}),
    Case("exp", [_node("Exp", ["x"])], {"x": _rand(7, 9)}),
    Case("pow_square", [_node("Pow", ["x", "e"])], {"x": _rand(5, 12)}, {"e": np.float32(2.0)}),
    Case("pow_tensor", [_node("Pow", ["x", "e"])], {"x": _rand(5, 12, lo=0.1, hi=3), "e": _rand(12, seed=1)}),
    Case("layernorm_last", [_node("LayerNormalization", ["x", "g", "b"], epsilon=1e-6)], {"x": _rand(2, 7, 48)},
         {"g": _rand(48, seed=2), "b": _rand(48, seed=3)}),
    Case("layernorm_axis1_nobias", [_node("LayerNormalization", ["x", "g"], axis=1)], {"x": X},
         {"g": _rand(3, 5, 6, seed=2)}),
    Case("reducemean_13", [_node("ReduceMean", ["x"], axes=[1, 3], keepdims=0)], {"x": X}, opset=13),
    Case("reducemean_18", [_node("ReduceMean", ["x", "a"], keepdims=1)], {"x": X}, {"a": _i64(-1)}, opset=18),
    Case("reducesum", [_node("ReduceSum", ["x", "a"], keepdims=0)], {"x": X}, {"a": _i64(0, 2)}),
    Case("reducesum_all", [_node("ReduceSum", ["x"])], {"x": X}),
    Case("split_sizes", [_node("Split", ["x", "s"], ["y", "z"], axis=2)], {"x": X}, {"s": _i64(2, 3)}),
    Case("split_equal_18", [_node("Split", ["x"], ["y", "z", "w"], axis=-1, num_outputs=3)], {"x": X}, opset=18),
    Case("slice", [_node("Slice", ["x", "s", "e", "a", "t"])], {"x": X},
         {"s": _i64(1, -1), "e": _i64(5, -7), "a": _i64(2, 3), "t": _i64(2, -2)}),
    Case("slice_to_end", [_node("Slice", ["x", "s", "e"])], {"x": X}, {"s": _i64(0, 1), "e": _i64(2**62, 2**62)}),
    Case("gather_scalar", [_node("Gather", ["x", "i"], axis=1)], {"x": X}, {"i": np.asarray(-1, np.int64)}),
    Case("gather_runtime_indices", [_node("Gather", ["x", "i"], axis=3)],
         {"x": X, "i": np.asarray([[0, 5], [-1, 2]], np.int64)}),
    Case("shape_gather_reshape", [_node("Shape", ["x"], ["s"]), _node("Gather", ["s", "i"], ["n"]),
                                  _node("Unsqueeze", ["n", "a"], ["n1"]), _node("Concat", ["n1", "m"], ["t"], axis=0),
                                  _node("Reshape", ["x", "t"])],
         {"x": X}, {"i": np.asarray(0, np.int64), "a": _i64(0), "m": _i64(-1)}),
    Case("shape_mod_reshape", [_node("Shape", ["x"], ["s"]), _node("Mod", ["s", "k"], ["r"]),
                               _node("Concat", ["r", "m"], ["t"], axis=0), _node("Reshape", ["x", "t"])],
         {"x": _rand(6, 8)}, {"k": _i64(4, 9), "m": _i64(-1)}),
    Case("shape_slice_15", [_node("Shape", ["x"], ["s"], start=1, end=-1), _node("Cast", ["s"], ["f"], to=F32),
                            _node("ReduceSum", ["f"], ["k"], keepdims=1), _node("Add", ["x", "k"])], {"x": X}, opset=15),
    Case("cast_int", [_node("Cast", ["x"], to=TensorProto.INT32)], {"x": _rand(4, 10, lo=-50, hi=50)}),
    Case("expand", [_node("Expand", ["x", "s"])], {"x": _rand(3, 1, 6)}, {"s": _i64(2, 1, 4, 1)}),
    Case("tile", [_node("Tile", ["x", "r"])], {"x": _rand(2, 3, 4)}, {"r": _i64(2, 1, 3)}),
    Case("equal_where", [_node("Equal", ["a", "b"], ["c"]), _node("Where", ["c", "x", "z"])],
         {"a": np.asarray([[1, 2, 3], [3, 2, 1]], np.int64), "b": np.asarray([1, 2, 1], np.int64),
          "x": _rand(2, 3), "z": _rand(1, 3, seed=4)}),
    Case("range_constantofshape", [_node("Range", ["s", "l", "d"], ["r"]), _node("Cast", ["r"], ["rf"], to=F32),
                                   _node("ConstantOfShape", ["sh"], ["c"], value=numpy_helper.from_array(np.float32([2.5]))),
                                   _node("Mul", ["rf", "c"], ["m"]), _node("Add", ["x", "m"])],
         {"x": _rand(4, 5)}, {"s": np.int64(0), "l": np.int64(10), "d": np.int64(2), "sh": _i64(4, 1)}),
    Case("batched_matmul", [_node("MatMul", ["a", "b"])], {"a": _rand(2, 3, 7, 16), "b": _rand(2, 3, 16, 5, seed=1)}),
    Case("batched_matmul_broadcast", [_node("MatMul", ["a", "b"])], {"a": _rand(4, 7, 16)}, {"b": _rand(16, 9, seed=1)}),
    Case("convtranspose_s2", [_node("ConvTranspose", ["x", "w", "b"], strides=[2, 2], pads=[1, 1, 1, 1],
                                    output_padding=[1, 1])],
         {"x": _rand(1, 4, 5, 6)}, {"w": _rand(4, 3, 3, 3, seed=1), "b": _rand(3, seed=2)}),
    Case("convtranspose_group_dilation", [_node("ConvTranspose", ["x", "w"], group=2, dilations=[2, 1], strides=[1, 3])],
         {"x": _rand(2, 4, 5, 4)}, {"w": _rand(4, 2, 2, 3, seed=1)}),
    Case("resize_nearest_scales", [_node("Resize", ["x", "", "s"], mode="nearest")], {"x": X},
         {"s": np.float32([1, 1, 2, 1.5])}),
    Case("resize_nearest_asymmetric_floor", [_node("Resize", ["x", "", "", "z"], mode="nearest",
                                                   coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
         {"x": X}, {"z": _i64(2, 3, 9, 4)}),
    Case("resize_linear_half_pixel", [_node("Resize", ["x", "", "s"], mode="linear")], {"x": X},
         {"s": np.float32([1, 1, 2, 0.5])}),
    Case("resize_linear_align_corners", [_node("Resize", ["x", "", "", "z"], mode="linear",
                                               coordinate_transformation_mode="align_corners")],
         {"x": X}, {"z": _i64(2, 3, 11, 13)}),
    Case("resize_linear_pytorch", [_node("Resize", ["x", "", "s"], mode="linear",
                                         coordinate_transformation_mode="pytorch_half_pixel")],
         {"x": X}, {"s": np.float32([1, 1, 3, 2])}, opset=19),
    Case("pad_reflect", [_node("Pad", ["x", "p"], mode="reflect")], {"x": X}, {"p": _i64(0, 0, 2, 1, 0, 0, 1, 3)}),
    Case("pad_edge", [_node("Pad", ["x", "p"], mode="edge")], {"x": X}, {"p": _i64(0, 1, 2, 1, 0, 0, 1, 3)}),
    Case("pad_wrap", [_node("Pad", ["x", "p"], mode="wrap")], {"x": X}, {"p": _i64(0, 0, 2, 1, 0, 0, 1, 3)}, opset=19),
]


def _model(case: Case) -> onnx.ModelProto:
    produced = {o for n in case.nodes for o in n.output}
    consumed = {i for n in case.nodes for i in n.input}
    outputs = [o for n in case.nodes for o in n.output if o not in consumed]
    inputs = [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for k, v in case.inputs.items()]
    inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in case.consts.items()]
    graph = helper.make_graph(case.nodes, case.name, inputs, [onnx.ValueInfoProto(name=o) for o in outputs], inits)
    assert produced
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 8
    # Declare the outputs' types as ONNX's own shape inference derives them.
    inferred = {v.name: v for v in onnx.shape_inference.infer_shapes(model, strict_mode=True).graph.value_info}
    for out in model.graph.output:
        out.CopyFrom(inferred[out.name])
    return model


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_operator_matches_onnxruntime(case: Case) -> None:
    model = _model(case)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, case.inputs)
    got = build_model(from_onnx(model), target="llvm").run(case.inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=case.tol, atol=case.tol * max(1.0, float(np.abs(w).max())))


def test_shape_arithmetic_folds_to_constants() -> None:
    case = next(c for c in CASES if c.name == "shape_gather_reshape")
    graph = from_onnx(_model(case))
    assert {n.op for n in graph.nodes} == {"input", "reshape"}


def test_dynamic_shape_input_names_the_node() -> None:
    nodes = [_node("Reshape", ["x", "s"], name="reshape_by_values")]
    graph = helper.make_graph(nodes, "dyn", [helper.make_tensor_value_info("x", F32, [2, 6]),
                                            helper.make_tensor_value_info("s", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", F32, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedModelError, match=r"Reshape node 'reshape_by_values'.*must be a constant"):
        from_onnx(model)
