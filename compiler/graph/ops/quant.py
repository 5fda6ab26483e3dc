"""Affine quantization operators (injective): quantize_linear and dequantize_linear (ONNX semantics).

The quantize pass uses them at the float/int8 borders with power-of-two scales and a zero
point of 0, so ``x / scale`` is an exact multiplication by a power of two.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.ops.common import FLOATS, check_dtype, normalize_axis
from vdla.compiler.graph.ops.registry import OpDef, OpPattern, register_op

QUANT_DTYPES = ("int8", "uint8", "int16", "uint16")


def _check_scale(op: str, types: Sequence[TensorType], axis: int) -> None:
    x, scale = types[0], types[1]
    check_dtype(op, scale, FLOATS, "scale")
    if scale.ndim > 1:
        raise TypeInferenceError(f"{op}: scale must be a scalar or 1-D (per-axis), got shape {scale.shape}")
    if scale.ndim == 1 and scale.shape[0] != 1:
        ax = normalize_axis(op, axis, x.ndim)
        if scale.shape[0] != x.shape[ax]:
            raise TypeInferenceError(f"{op}: per-axis scale of {scale.shape[0]} values does not match axis {ax} of {x.shape}")
    if len(types) == 3 and types[2].shape != scale.shape:
        raise TypeInferenceError(f"{op}: zero_point shape {types[2].shape} must equal the scale shape {scale.shape}")


def _along(v: np.ndarray, axis: int, ndim: int) -> np.ndarray:
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    shape = [1] * ndim
    shape[axis % ndim] = -1
    return v.reshape(shape)


def _quantize_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_dtype("quantize_linear", types[0], FLOATS + ("int32",))
    _check_scale("quantize_linear", types, attrs["axis"])
    dtype = types[2].dtype if len(types) == 3 else attrs.get("dtype", "uint8")
    if attrs.get("dtype") not in (None, dtype):
        raise TypeInferenceError(f"quantize_linear: dtype={attrs['dtype']} disagrees with the zero point's {dtype}")
    if dtype not in QUANT_DTYPES:
        raise TypeInferenceError(f"quantize_linear: output dtype {dtype} is not supported; use one of {list(QUANT_DTYPES)}")
    return TensorType(types[0].shape, dtype)


def _quantize_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, scale = xs[0], xs[1]
    dtype = np.dtype(xs[2].dtype if len(xs) == 3 else attrs.get("dtype", "uint8"))
    zp = _along(xs[2], attrs["axis"], x.ndim).astype(np.float64) if len(xs) == 3 else 0.0
    q = np.rint(np.divide(x, _along(scale, attrs["axis"], x.ndim).astype(x.dtype))).astype(np.float64) + zp
    info = np.iinfo(dtype)
    return np.clip(q, info.min, info.max).astype(dtype)


register_op(OpDef("quantize_linear", OpPattern.INJECTIVE, _quantize_relation, _quantize_reference, (2, 3),
                  {"axis": 1, "dtype": None},
                  "y = saturate(round_half_even(x / scale) + zero_point); per-tensor or per-axis"))


def _dequantize_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_dtype("dequantize_linear", types[0], QUANT_DTYPES + ("int32",))
    _check_scale("dequantize_linear", types, attrs["axis"])
    if len(types) == 3 and types[2].dtype != types[0].dtype:
        raise TypeInferenceError(f"dequantize_linear: zero point {types[2].dtype} must match the input {types[0].dtype}")
    return TensorType(types[0].shape, types[1].dtype)


def _dequantize_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, scale = xs[0], xs[1]
    zp = _along(xs[2], attrs["axis"], x.ndim).astype(np.int64) if len(xs) == 3 else 0
    return ((x.astype(np.int64) - zp).astype(scale.dtype) * _along(scale, attrs["axis"], x.ndim)).astype(scale.dtype)


register_op(OpDef("dequantize_linear", OpPattern.INJECTIVE, _dequantize_relation, _dequantize_reference, (2, 3),
                  {"axis": 1}, "y = (x - zero_point) * scale; per-tensor or per-axis"))
