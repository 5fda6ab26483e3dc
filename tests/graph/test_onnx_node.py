"""The ONNX backend node tests shipped inside the ``onnx`` package, on the reference executor.

onnx >= 1.20 wheels no longer ship the generated ``backend/test/data/node`` folders; the
same cases come from the generators the package does ship (``onnx.backend.test.case.node``):
a model plus input/output arrays each.  Every case whose operators are all supported runs:
it must match the expected outputs within the case's tolerance, or be one of ``REJECTED``
below and raise UnsupportedModelError (never a wrong answer).

Cases generated at an opset above 21 (the node generators use the newest opset) run at
opset 21 when the ONNX checker accepts the model there, i.e. when the operator's newer
versions only added types the case does not use.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import pytest

from compiler.frontend.onnx import SUPPORTED_OPERATORS, SUPPORTED_OPSETS, from_onnx
from compiler.graph import UnsupportedModelError, run_graph

#: Operator inputs the frontend needs as constants; the tests bind them to the case's data.
STATIC_INPUTS = {"Reshape": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "Pad": {1, 2, 3}, "Clip": {1, 2},
                 "ReduceMean": {1}}

#: Supported operators' cases that are rejected on purpose, and why.
REJECTED = {
    **{f"test_averagepool_{s}": "1-D/3-D pooling" for s in (
        "1d_default", "3d_default", "3d_dilations_small",
        "3d_dilations_large_count_include_pad_is_0_ceil_mode_is_True",
        "3d_dilations_large_count_include_pad_is_0_ceil_mode_is_False",
        "3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True",
        "3d_dilations_large_count_include_pad_is_1_ceil_mode_is_False")},
    **{f"test_maxpool_{s}": "1-D/3-D pooling" for s in (
        "1d_default", "3d_default", "3d_dilations", "3d_dilations_use_ref_impl", "3d_dilations_use_ref_impl_large")},
    "test_maxpool_with_argmax_2d_precomputed_pads": "the Indices output",
    "test_maxpool_with_argmax_2d_precomputed_strides": "storage_order=1",
    "test_batchnorm_example_training_mode": "training_mode=1",
    "test_batchnorm_epsilon_training_mode": "training_mode=1",
    "test_identity_sequence": "sequence types",
    "test_identity_opt": "optional types",
    **{f"test_dequantizelinear_{s}": "float8/int4/int2/float4 types" for s in (
        "e4m3fn", "e4m3fn_float16", "e4m3fn_zero_point", "e5m2", "uint4", "int4", "uint2", "int2", "float4e2m1")},
    **{f"test_quantizelinear_{s}": "float8/int4/int2/float4 types" for s in (
        "e4m3fn", "e5m2", "uint4", "int4", "uint2", "int2", "float4e2m1")},
    "test_dequantizelinear_blocked": "blocked quantization",
    # Generated at opset 22, whose ceil-mode output size (a last window starting in the padding is
    # dropped, as PyTorch and onnxruntime do) the opset-21 shape inference disagrees with; the
    # reference executor implements the dropping rule (see docs/graph.md).
    "test_averagepool_2d_ceil_last_window_starts_on_pad": "needs opset 22",
    "test_maxpool_2d_ceil_output_size_reduce_by_one": "needs opset 22",
    "test_quantizelinear_blocked_asymmetric": "blocked quantization",
    "test_quantizelinear_blocked_symmetric": "blocked quantization",
}


def _cases() -> list:
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    supported = set(SUPPORTED_OPERATORS)
    return [c for c in cases if {n.op_type for n in c.model.graph.node} <= supported]


CASES = _cases()


def _at_supported_opset(model: onnx.ModelProto) -> onnx.ModelProto:
    version = {o.domain: o.version for o in model.opset_import}.get("", 0)
    if version in SUPPORTED_OPSETS:
        return model
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for o in out.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = SUPPORTED_OPSETS.stop - 1
    try:
        onnx.checker.check_model(out, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise UnsupportedModelError(f"the case needs an opset above 21: {exc}") from None
    return out


def _run(case) -> None:
    model = _at_supported_opset(case.model)
    inputs, expected = case.data_sets[0]
    names = [i.name for i in model.graph.input]
    static = {i for n in model.graph.node for k, i in enumerate(n.input) if k in STATIC_INPUTS.get(n.op_type, ())}
    bind = {nm: v for nm, v in zip(names, inputs) if nm in static}
    graph = from_onnx(model, bind=bind)
    feed = {g.name: v for g, v in zip(graph.input_nodes, [v for nm, v in zip(names, inputs) if nm not in static])}
    outputs = run_graph(graph, feed)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)


def test_the_supported_set_is_covered() -> None:
    ops = {n.op_type for c in CASES for n in c.model.graph.node}
    assert set(SUPPORTED_OPERATORS) - ops == set(), "every supported operator has node tests"
    assert set(REJECTED) <= {c.name for c in CASES}, "every rejected case still exists"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node(case) -> None:
    if case.name in REJECTED:
        with pytest.raises(UnsupportedModelError):
            _run(case)
    else:
        _run(case)
