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
from onnx import numpy_helper
import pytest

from vdla.compiler.frontend.onnx import SUPPORTED_OPERATORS, SUPPORTED_OPSETS, from_onnx
from vdla.compiler.graph import UnsupportedModelError, run_graph

#: Operator inputs the frontend needs as constants; the tests bind them to the case's data.
STATIC_INPUTS = {"Reshape": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "Pad": {1, 2, 3}, "Clip": {1, 2},
                 "ReduceMean": {1}, "ReduceSum": {1}, "Slice": {1, 2, 3, 4}, "Split": {1}, "Expand": {1},
                 "Tile": {1}, "Range": {0, 1, 2}, "ConstantOfShape": {0}, "ConvTranspose": {1},
                 "Resize": {1, 2, 3}}

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
    # Cases of the operators added for the model zoo (Cast, Pow, ConvTranspose, Equal, ...) rejected on purpose.
    **dict.fromkeys([
        'test_cast_FLOAT_to_BFLOAT16', 'test_cast_BFLOAT16_to_FLOAT', 'test_cast_FLOAT_to_FLOAT8E4M3FN',
        'test_cast_FLOAT16_to_FLOAT8E4M3FN', 'test_cast_FLOAT_to_FLOAT8E4M3FNUZ',
        'test_cast_FLOAT16_to_FLOAT8E4M3FNUZ', 'test_cast_FLOAT8E4M3FN_to_FLOAT',
        'test_cast_FLOAT8E4M3FN_to_FLOAT16', 'test_cast_FLOAT8E4M3FNUZ_to_FLOAT',
        'test_cast_FLOAT8E4M3FNUZ_to_FLOAT16', 'test_cast_FLOAT_to_FLOAT8E5M2', 'test_cast_FLOAT16_to_FLOAT8E5M2',
        'test_cast_FLOAT_to_FLOAT8E5M2FNUZ', 'test_cast_FLOAT16_to_FLOAT8E5M2FNUZ', 'test_cast_FLOAT8E5M2_to_FLOAT',
        'test_cast_FLOAT8E5M2_to_FLOAT16', 'test_cast_FLOAT8E5M2FNUZ_to_FLOAT',
        'test_cast_FLOAT8E5M2FNUZ_to_FLOAT16', 'test_cast_FLOAT_to_UINT4', 'test_cast_FLOAT16_to_UINT4',
        'test_cast_FLOAT_to_INT4', 'test_cast_FLOAT16_to_INT4', 'test_cast_UINT4_to_FLOAT',
        'test_cast_UINT4_to_FLOAT16', 'test_cast_UINT4_to_UINT8', 'test_cast_INT4_to_FLOAT',
        'test_cast_INT4_to_FLOAT16', 'test_cast_INT4_to_INT8', 'test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN',
        'test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ', 'test_cast_no_saturate_FLOAT_to_FLOAT8E5M2',
        'test_cast_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ', 'test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FN',
        'test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ', 'test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2',
        'test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ', 'test_castlike_FLOAT_to_BFLOAT16_expanded',
        'test_castlike_BFLOAT16_to_FLOAT_expanded', 'test_castlike_FLOAT_to_FLOAT8E4M3FN_expanded',
        'test_castlike_FLOAT16_to_FLOAT8E4M3FN_expanded', 'test_castlike_FLOAT_to_FLOAT8E4M3FNUZ_expanded',
        'test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ_expanded', 'test_castlike_FLOAT8E4M3FN_to_FLOAT_expanded',
        'test_castlike_FLOAT8E4M3FN_to_FLOAT16_expanded', 'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT_expanded',
        'test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16_expanded', 'test_castlike_FLOAT_to_FLOAT8E5M2_expanded',
        'test_castlike_FLOAT16_to_FLOAT8E5M2_expanded', 'test_castlike_FLOAT_to_FLOAT8E5M2FNUZ_expanded',
        'test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ_expanded', 'test_castlike_FLOAT8E5M2_to_FLOAT_expanded',
        'test_castlike_FLOAT8E5M2_to_FLOAT16_expanded', 'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT_expanded',
        'test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16_expanded', 'test_castlike_FLOAT_to_UINT4_expanded',
        'test_castlike_FLOAT16_to_UINT4_expanded', 'test_castlike_FLOAT_to_INT4_expanded',
        'test_castlike_FLOAT16_to_INT4_expanded', 'test_castlike_UINT4_to_FLOAT_expanded',
        'test_castlike_UINT4_to_FLOAT16_expanded', 'test_castlike_UINT4_to_UINT8_expanded',
        'test_castlike_INT4_to_FLOAT_expanded', 'test_castlike_INT4_to_FLOAT16_expanded',
        'test_castlike_INT4_to_INT8_expanded', 'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN_expanded',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2_expanded',
        'test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2_expanded',
        'test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ_expanded'
    ], 'float8/bfloat16/int4/int2/float4 types'),
    **dict.fromkeys([
        'test_cast_FLOAT4E2M1_to_FLOAT', 'test_cast_FLOAT4E2M1_to_FLOAT16', 'test_cast_FLOAT_to_FLOAT4E2M1',
        'test_cast_FLOAT16_to_FLOAT4E2M1', 'test_cast_FLOAT_to_UINT2', 'test_cast_FLOAT16_to_UINT2',
        'test_cast_FLOAT_to_INT2', 'test_cast_FLOAT16_to_INT2', 'test_cast_UINT2_to_FLOAT',
        'test_cast_UINT2_to_FLOAT16', 'test_cast_UINT2_to_UINT8', 'test_cast_INT2_to_FLOAT',
        'test_cast_INT2_to_FLOAT16', 'test_cast_INT2_to_INT8', 'test_cast_e8m0_FLOAT_to_FLOAT8E8M0',
        'test_cast_e8m0_FLOAT16_to_FLOAT8E8M0', 'test_cast_e8m0_FLOAT8E8M0_to_FLOAT',
        'test_cast_e8m0_FLOAT8E8M0_to_FLOAT16', 'test_castlike_FLOAT4E2M1_to_FLOAT_expanded',
        'test_castlike_FLOAT4E2M1_to_FLOAT16_expanded', 'test_castlike_FLOAT_to_FLOAT4E2M1_expanded',
        'test_castlike_FLOAT16_to_FLOAT4E2M1_expanded', 'test_castlike_FLOAT_to_UINT2_expanded',
        'test_castlike_FLOAT16_to_UINT2_expanded', 'test_castlike_FLOAT_to_INT2_expanded',
        'test_castlike_FLOAT16_to_INT2_expanded', 'test_castlike_UINT2_to_FLOAT_expanded',
        'test_castlike_UINT2_to_FLOAT16_expanded', 'test_castlike_UINT2_to_UINT8_expanded',
        'test_castlike_INT2_to_FLOAT_expanded', 'test_castlike_INT2_to_FLOAT16_expanded',
        'test_castlike_INT2_to_INT8_expanded', 'test_range_float16_type_positive_delta',
        'test_range_bfloat16_type_positive_delta'
    ], 'needs an opset above 21'),
    **dict.fromkeys([
        'test_causal_conv_with_state_with_past_state_expanded', 'test_causal_conv_with_state_decode_step_expanded',
        'test_causal_conv_with_state_with_bias_and_past_state_expanded', 'test_convtranspose_1d',
        'test_convtranspose_3d'
    ], '1-D/3-D convolution'),
    **dict.fromkeys([
        'test_convtranspose_output_shape', 'test_convtranspose_kernel_shape'
    ], 'ConvTranspose output_shape'),
    **dict.fromkeys([
        'test_convtranspose_autopad_same'
    ], 'ConvTranspose auto_pad SAME_*'),
    **dict.fromkeys([
        'test_equal_string', 'test_equal_string_broadcast'
    ], 'string types'),
    **dict.fromkeys([
        'test_pow_types_int64_float32', 'test_pow_types_int32_float32', 'test_pow_types_int64_int64',
        'test_pow_types_int32_int32'
    ], 'integer Pow'),
    **dict.fromkeys([
        'test_mod_mixed_sign_float64', 'test_mod_mixed_sign_float32', 'test_mod_mixed_sign_float16',
        'test_mod_float64_mixed_sign_fmod_0', 'test_mod_float32_mixed_sign_fmod_0',
        'test_mod_float16_mixed_sign_fmod_0', 'test_mod_float_edge_cases_fmod_0_float16',
        'test_mod_float_edge_cases_fmod_0_float32', 'test_mod_float_edge_cases_fmod_0_float64',
        'test_mod_mixed_sign_int64', 'test_mod_mixed_sign_int32', 'test_mod_mixed_sign_int16',
        'test_mod_mixed_sign_int8', 'test_mod_uint8', 'test_mod_uint16', 'test_mod_uint32', 'test_mod_uint64',
        'test_mod_int64_fmod', 'test_mod_broadcast'
    ], 'Mod on run-time values (only shape arithmetic, folded at import)'),
    **dict.fromkeys([
        'test_resize_upsample_scales_cubic', 'test_resize_upsample_scales_cubic_align_corners',
        'test_resize_downsample_scales_cubic', 'test_resize_downsample_scales_cubic_align_corners',
        'test_resize_upsample_sizes_cubic', 'test_resize_downsample_sizes_cubic',
        'test_resize_upsample_scales_cubic_A_n0p5_exclude_outside',
        'test_resize_downsample_scales_cubic_A_n0p5_exclude_outside',
        'test_resize_upsample_scales_cubic_asymmetric', 'test_resize_tf_crop_and_resize',
        'test_resize_tf_crop_and_resize_extrapolation_value', 'test_resize_downsample_scales_linear_antialias',
        'test_resize_downsample_sizes_linear_antialias', 'test_resize_downsample_scales_cubic_antialias',
        'test_resize_downsample_sizes_cubic_antialias', 'test_resize_tf_crop_and_resize_axes_2_3',
        'test_resize_tf_crop_and_resize_axes_3_2', 'test_resize_upsample_sizes_nearest_not_larger',
        'test_resize_upsample_sizes_nearest_not_smaller', 'test_resize_downsample_sizes_nearest_not_larger',
        'test_resize_downsample_sizes_nearest_not_smaller'
    ], 'Resize: cubic, tf_crop_and_resize, antialias, keep_aspect_ratio_policy'),
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


def _arrays(values: list) -> list[np.ndarray]:  # type: ignore[type-arg]
    """Some generators store their data as TensorProtos (e.g. the Cast cases with NaN/inf bit patterns)."""
    return [numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v for v in values]


def _run(case) -> None:
    model = _at_supported_opset(case.model)
    inputs, expected = (_arrays(v) for v in case.data_sets[0])
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
