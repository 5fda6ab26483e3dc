"""LayerNormalization and Softmax compiled for ``llvm`` against onnxruntime, for the host's ISA and AVX2.

Both are fp32 row kernels whose reductions run in vector lanes (lane-partial sums / maxima, then
one horizontal step), so each test also checks that the row statistics were vectorized at the
target's fp32 width.  Tolerance: ``rtol = 1e-5`` and ``atol = 1e-5 x max |output|`` against
onnxruntime's fp32 (fp32 sums of at most a few thousand terms, reassociated into lanes; the
two-pass variance is exact to a few ulps even for rows whose mean is large against their spread).
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

TOL = 1e-5


def _run_both(model: onnx.ModelProto, x: np.ndarray, cpu_target: str) -> tuple[np.ndarray, np.ndarray, str]:
    compiled = build_model(from_onnx(model), target="llvm", cpu_target=cpu_target)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return compiled.run({"x": x})[0], sess.run(None, {"x": x})[0], compiled.llvm_module.ir_text


def _model(node: onnx.NodeProto, shape: tuple[int, ...], inits: list[onnx.TensorProto]) -> onnx.ModelProto:
    graph = helper.make_graph([node], "norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _assert_vector_stage(ir: str, stage: str) -> None:
    lanes = current_target().vector_lanes(32)
    assert stage in ir, f"no stage {stage!r}: the fast kernel was not used"
    assert f"<{lanes} x float>" in ir, f"no {lanes}-lane fp32 vectors in the module"


# (shape, axis, bias, offset): ViT's rows; a width that is not a whole vector (tail lanes padded); a row
# far from zero mean (a one-pass E[x^2] - E[x]^2 would lose it); a 4-D NHWC tensor (ConvNeXt's block).
LAYER_NORM = {
    "vit_rows": ((1, 13, 96), -1, True, 0.0),
    "ragged_width": ((2, 5, 37), -1, True, 0.0),
    "large_mean": ((3, 64), -1, False, 1000.0),
    "nhwc": ((1, 3, 4, 24), 3, True, 0.0),
}


@pytest.mark.parametrize("case", sorted(LAYER_NORM))
def test_layer_norm_matches_onnxruntime(case: str, cpu_target: str) -> None:
    shape, axis, bias, offset = LAYER_NORM[case]
    rng = np.random.default_rng(7)
    n = shape[-1]
    inits = [numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "g")]
    if bias:
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "b"))
    node = helper.make_node("LayerNormalization", ["x", "g"] + (["b"] if bias else []), ["y"], axis=axis,
                            epsilon=1e-5)
    x = (rng.standard_normal(shape) * 3 + offset).astype(np.float32)
    got, want, ir = _run_both(_model(node, shape, inits), x, cpu_target)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    _assert_vector_stage(ir, "y_sq_lanes")


def test_layer_norm_over_several_axes_matches_onnxruntime(cpu_target: str) -> None:
    """Normalizing the last two axes takes the general (float64 reduction) path; still exact."""
    shape = (2, 3, 4, 5)
    rng = np.random.default_rng(8)
    inits = [numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "g"),
             numpy_helper.from_array(rng.standard_normal((4, 5)).astype(np.float32), "b")]
    node = helper.make_node("LayerNormalization", ["x", "g", "b"], ["y"], axis=-2, epsilon=1e-3)
    x = rng.standard_normal(shape).astype(np.float32)
    got, want, _ = _run_both(_model(node, shape, inits), x, cpu_target)
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))


# (shape, axis, scale): attention scores with a ragged row (ViT's 197 tokens at a smaller size);
# whole vectors; logits of magnitude ~1e3 (exp would overflow without subtracting the row max).
SOFTMAX = {
    "attention_ragged": ((1, 3, 11, 197), -1, 4.0),
    "whole_vectors": ((4, 64), -1, 1.0),
    "huge_logits": ((5, 40), -1, 1000.0),
}


@pytest.mark.parametrize("case", sorted(SOFTMAX))
def test_softmax_matches_onnxruntime(case: str, cpu_target: str) -> None:
    shape, axis, scale = SOFTMAX[case]
    x = (np.random.default_rng(9).standard_normal(shape) * scale).astype(np.float32)
    got, want, ir = _run_both(_model(helper.make_node("Softmax", ["x"], ["y"], axis=axis), shape, []), x, cpu_target)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL * float(np.abs(want).max()))
    _assert_vector_stage(ir, "y_sum_lanes")
