"""ONNX import: real exported models against onnxruntime, and the errors users see."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from vdla.compiler.frontend.onnx import SUPPORTED_OPERATORS, from_onnx
from vdla_hw.errors import BadFileError
from vdla.compiler.graph import UnsupportedModelError, run_graph
from make_models import DATA, DIGITS_MODEL, fill_weights


def _ort(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"]).run(None, feed)


def _model(nodes, inputs, outputs, inits=(), opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def _vi(name: str, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def test_resnet18_exported_by_pytorch_matches_onnxruntime() -> None:
    model = fill_weights(onnx.load(str(DATA / "resnet18.onnx")))
    graph = from_onnx(model)
    assert graph.op_counts()["conv2d"] == 20 and graph.op_counts()["dense"] == 1
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    ours, = run_graph(graph, {"x": x})
    theirs, = _ort(model, {"x": x})
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4 * float(np.abs(theirs).max()))


def test_digits_cnn_matches_onnxruntime() -> None:
    model = onnx.load(str(DIGITS_MODEL))
    x = np.random.default_rng(0).random((1, 1, 8, 8), dtype=np.float32)
    np.testing.assert_allclose(run_graph(from_onnx(model), {"x": x})[0], _ort(model, {"x": x})[0], rtol=1e-5, atol=1e-5)


def test_unsupported_operator_names_operator_node_and_supported_list() -> None:
    model = _model([helper.make_node("Celu", ["x"], ["y"], name="act7")], [_vi("x", [2])], [_vi("y", [2])], opset=20)
    with pytest.raises(UnsupportedModelError) as err:
        from_onnx(model)
    msg = str(err.value)
    assert "'Celu'" in msg and "'act7'" in msg and all(op in msg for op in SUPPORTED_OPERATORS)


def test_opset_outside_13_to_21_is_rejected() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])], opset=11)
    with pytest.raises(UnsupportedModelError, match="opset 11; supported opsets are 13-21"):
        from_onnx(model)


def test_symbolic_dimension_needs_a_shape() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["N", 4])], [_vi("y", ["N", 4])])
    with pytest.raises(UnsupportedModelError, match="symbolic dimension 'N'.*shapes="):
        from_onnx(model)
    graph = from_onnx(model, shapes={"x": (3, 4)})
    assert graph.output_types[0].shape == (3, 4)


def test_runtime_shape_input_must_be_constant_or_bound() -> None:
    model = _model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
                   [_vi("x", [2, 3]), _vi("s", [2], TensorProto.INT64)], [_vi("y", [3, 2])])
    with pytest.raises(UnsupportedModelError, match="Reshape node 'r'.*must be a constant.*bind="):
        from_onnx(model)
    graph = from_onnx(model, bind={"s": np.array([3, -1], np.int64)})
    assert graph.output_types[0].shape == (3, 2)


def test_rejected_attribute_names_the_node() -> None:
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn", training_mode=1)
    inits = [helper.make_tensor(n, TensorProto.FLOAT, [2], [1.0, 1.0]) for n in "sbmv"]
    model = _model([node], [_vi("x", [1, 2, 2, 2])], [_vi("y", [1, 2, 2, 2])], inits, opset=15)
    with pytest.raises(UnsupportedModelError, match="BatchNormalization node 'bn': training_mode=1"):
        from_onnx(model)


def test_unsupported_element_type_is_named() -> None:
    model = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2], TensorProto.BFLOAT16)],
                   [_vi("y", [2], TensorProto.BFLOAT16)])
    with pytest.raises(UnsupportedModelError, match="BFLOAT16"):
        from_onnx(model)


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(BadFileError, match="nope.onnx does not exist"):
        from_onnx(tmp_path / "nope.onnx")


def test_gemm_with_transposes_alpha_beta_matches_onnxruntime() -> None:
    rng = np.random.default_rng(3)
    a, b, c = rng.random((4, 3), np.float32), rng.random((5, 4), np.float32), rng.random((1, 5), np.float32)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0, transA=1, transB=1)
    inits = [onnx.numpy_helper.from_array(b, "b"), onnx.numpy_helper.from_array(c, "c")]
    model = _model([node], [_vi("a", [4, 3])], [_vi("y", [3, 5])], inits)
    np.testing.assert_allclose(run_graph(from_onnx(model), {"a": a})[0], _ort(model, {"a": a})[0], rtol=1e-5)
