"""Neural-network operators: conv2d, dense, batch_matmul, matmul (complex-out-fusable), batch_norm, softmax, layer_norm.

conv2d and dense take int8 operands with ``out_dtype="int32"``: the reference then
accumulates exactly and wraps to 32 bits, which is what the VDLA GEMM core computes.
Both accept packed layouts (``NCHW1n16c`` data, ``OIHW16o16i`` weights); the reference
unpacks, computes and packs the result into ``out_layout``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.layout import pack, parse_layout, unpack
from vdla.compiler.graph.ops.common import (
    FLOATS, NUMERIC, check_dtype, check_same_dtype, normalize_axis, pair, pool_out_size, quad, windows,
)
from vdla.compiler.graph.ops.registry import OpDef, OpPattern, register_op

_INT_OPERANDS = ("int8", "uint8", "int16")


def _out_dtype(op: str, in_dtype: str, attrs: Attrs) -> str:
    out = attrs.get("out_dtype") or in_dtype
    if in_dtype in FLOATS and out != in_dtype:
        raise TypeInferenceError(f"{op}: float operands produce {in_dtype}, not out_dtype={out}")
    if in_dtype in _INT_OPERANDS and out != "int32":
        raise TypeInferenceError(f"{op}: {in_dtype} operands accumulate into out_dtype='int32', got {out!r}")
    if in_dtype not in FLOATS + _INT_OPERANDS:
        raise TypeInferenceError(f"{op}: operand dtype {in_dtype} is not supported; use float or int8")
    return out


def _check_bias(op: str, types: Sequence[TensorType], channels: int, out_dtype: str) -> None:
    if len(types) == 3:
        b = types[2]
        if b.shape != (channels,) or b.dtype != out_dtype:
            raise TypeInferenceError(f"{op}: bias must be {out_dtype}[{channels}], got {b}")


def _exact_product(x: np.ndarray, out_dtype: str) -> tuple[np.ndarray, bool]:
    """Integer operands go through float64, which holds every int8 x int8 sum of < 2**37 terms exactly."""
    is_int = np.issubdtype(np.dtype(out_dtype), np.integer)
    return (x.astype(np.float64) if is_int else x), is_int


def _finish(acc: np.ndarray, out_dtype: str, is_int: bool) -> np.ndarray:
    if is_int:
        return np.rint(acc).astype(np.int64).astype(out_dtype)  # int64 -> int32 keeps the low bits: the accumulator wrap
    return acc.astype(out_dtype, copy=False)


# ---- conv2d ------------------------------------------------------------------------------------
def _conv2d_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    data, weight = types[0], types[1]
    dtype = check_same_dtype("conv2d", types[:2])
    out_dtype = _out_dtype("conv2d", dtype, attrs)
    dl, kl = parse_layout(attrs["data_layout"]), parse_layout(attrs["kernel_layout"])
    ol = parse_layout(attrs.get("out_layout") or attrs["data_layout"])
    if (dl.primal, kl.primal, ol.primal) != ("NCHW", "OIHW", "NCHW"):
        raise TypeInferenceError("conv2d: layouts must be NCHW-based data/output and OIHW-based kernel")
    n, c, h, w = dl.primal_shape(data.shape)
    o, ci, kh, kw = kl.primal_shape(weight.shape)
    groups = attrs["groups"]
    if c % groups or o % groups or ci * groups != c:
        raise TypeInferenceError(f"conv2d: {c} input channels, {o} filters of {ci} channels and groups={groups} disagree")
    (sh, sw), (dh, dw) = pair("conv2d", "strides", attrs["strides"]), pair("conv2d", "dilation", attrs["dilation"])
    pt, pl, pb, pr = quad("conv2d", attrs["padding"])
    oh = pool_out_size(h, kh, sh, pt, pb, dh, False)
    ow = pool_out_size(w, kw, sw, pl, pr, dw, False)
    _check_bias("conv2d", types, o, out_dtype)
    return TensorType(ol.shape((n, o, oh, ow)), out_dtype)


def conv2d_nchw(x: np.ndarray, w: np.ndarray, attrs: Attrs) -> np.ndarray:
    """Direct NCHW x OIHW convolution through an im2col view and one BLAS product per group."""
    pt, pl, pb, pr = attrs["padding"]
    groups, strides, dilation = attrs["groups"], tuple(attrs["strides"]), tuple(attrs["dilation"])
    o, ci, kh, kw = w.shape
    h, wd = x.shape[2], x.shape[3]
    out_hw = (pool_out_size(h, kh, strides[0], pt, pb, dilation[0], False),
              pool_out_size(wd, kw, strides[1], pl, pr, dilation[1], False))
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    win = windows(xp, (kh, kw), strides, dilation, out_hw)  # N, C, OH, OW, KH, KW
    og = o // groups
    outs = [np.tensordot(win[:, g * ci:(g + 1) * ci], w[g * og:(g + 1) * og], axes=([1, 4, 5], [1, 2, 3]))
            for g in range(groups)]
    return np.concatenate(outs, axis=-1).transpose(0, 3, 1, 2)


def _conv2d_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    out_dtype = attrs.get("out_dtype") or xs[0].dtype.name
    x, is_int = _exact_product(unpack(xs[0], attrs["data_layout"]), out_dtype)
    w, _ = _exact_product(unpack(xs[1], attrs["kernel_layout"]), out_dtype)
    acc = conv2d_nchw(x, w, attrs)
    if len(xs) == 3:
        acc = acc + xs[2].astype(acc.dtype)[None, :, None, None]
    return pack(_finish(acc, out_dtype, is_int), attrs.get("out_layout") or attrs["data_layout"])


register_op(OpDef(
    "conv2d", OpPattern.COMPLEX_OUT_FUSABLE, _conv2d_relation, _conv2d_reference, (2, 3),
    {"strides": (1, 1), "padding": (0, 0, 0, 0), "dilation": (1, 1), "groups": 1, "data_layout": "NCHW",
     "kernel_layout": "OIHW", "out_layout": None, "out_dtype": None},
    "2-D convolution (cross-correlation) with optional bias; padding is (top, left, bottom, right)",
))


# ---- dense -------------------------------------------------------------------------------------
def _dense_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = check_same_dtype("dense", types[:2])
    out_dtype = _out_dtype("dense", dtype, attrs)
    dl, kl = parse_layout(attrs["data_layout"]), parse_layout(attrs["kernel_layout"])
    ol = parse_layout(attrs.get("out_layout") or attrs["data_layout"])
    if (dl.primal, kl.primal, ol.primal) != ("NC", "OI", "NC"):
        raise TypeInferenceError("dense: layouts must be NC-based data/output and OI-based weight")
    m, k = dl.primal_shape(types[0].shape)
    n, k2 = kl.primal_shape(types[1].shape)
    if k != k2:
        raise TypeInferenceError(f"dense: data has {k} features but the weight expects {k2}")
    _check_bias("dense", types, n, out_dtype)
    return TensorType(ol.shape((m, n)), out_dtype)


def _dense_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    out_dtype = attrs.get("out_dtype") or xs[0].dtype.name
    x, is_int = _exact_product(unpack(xs[0], attrs["data_layout"]), out_dtype)
    w, _ = _exact_product(unpack(xs[1], attrs["kernel_layout"]), out_dtype)
    acc = x @ w.T
    if len(xs) == 3:
        acc = acc + xs[2].astype(acc.dtype)[None, :]
    return pack(_finish(acc, out_dtype, is_int), attrs.get("out_layout") or attrs["data_layout"])


register_op(OpDef(
    "dense", OpPattern.COMPLEX_OUT_FUSABLE, _dense_relation, _dense_reference, (2, 3),
    {"data_layout": "NC", "kernel_layout": "OI", "out_layout": None, "out_dtype": None},
    "y = x @ w.T (+ bias); w is (out_features, in_features)",
))


# ---- batch_matmul ------------------------------------------------------------------------------
def _batch_matmul_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = check_same_dtype("batch_matmul", types[:2])
    out_dtype = _out_dtype("batch_matmul", dtype, attrs)
    dl, kl = parse_layout(attrs["data_layout"]), parse_layout(attrs["kernel_layout"])
    ol = parse_layout(attrs.get("out_layout") or attrs["data_layout"])
    if (dl.primal, kl.primal, ol.primal) != ("NCHW", "NOI", "NCHW"):
        raise TypeInferenceError("batch_matmul: layouts must be NCHW-based data/output and NOI-based weights")
    b, k, m, w = dl.primal_shape(types[0].shape)
    b2, n, k2 = kl.primal_shape(types[1].shape)
    if w != 1 or b != b2 or k != k2:
        raise TypeInferenceError(f"batch_matmul: data (B={b}, K={k}, M={m}, W={w}) and weights (B={b2}, N={n}, "
                                 f"K={k2}) disagree (W must be 1)")
    _check_bias("batch_matmul", types, n, out_dtype)
    return TensorType(ol.shape((b, n, m, 1)), out_dtype)


def _batch_matmul_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    out_dtype = attrs.get("out_dtype") or xs[0].dtype.name
    x, is_int = _exact_product(unpack(xs[0], attrs["data_layout"]), out_dtype)  # (B, K, M, 1)
    w, _ = _exact_product(unpack(xs[1], attrs["kernel_layout"]), out_dtype)  # (B, N, K)
    acc = np.matmul(w, x[..., 0])[..., None]  # (B, N, M, 1)
    if len(xs) == 3:
        acc = acc + xs[2].astype(acc.dtype)[None, :, None, None]
    return pack(_finish(acc, out_dtype, is_int), attrs.get("out_layout") or attrs["data_layout"])


register_op(OpDef(
    "batch_matmul", OpPattern.COMPLEX_OUT_FUSABLE, _batch_matmul_relation, _batch_matmul_reference, (2, 3),
    {"data_layout": "NCHW", "kernel_layout": "NOI", "out_layout": None, "out_dtype": None},
    "a product of two activations per batch (attention's Q.K^T or A.V over heads), written as a conv: data "
    "(B, K, M, 1) NCHW, weights (B, N, K) NOI (+ bias (N,)), output (B, N, M, 1) NCHW: out[b, n, m] = "
    "sum_k w[b, n, k] * x[b, k, m]",
))


# ---- matmul ------------------------------------------------------------------------------------
def _matmul_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = check_same_dtype("matmul", types)
    check_dtype("matmul", types[0], NUMERIC)
    a, b = types[0].shape, types[1].shape
    if not a or not b:
        raise TypeInferenceError("matmul: operands must have rank >= 1")
    # NumPy's rules on shapes alone (evaluating np.matmul on dummy arrays multiplies them: ~1 s for
    # one ViT layer's operands): a 1-D operand gains a unit axis (dropped again), leading axes broadcast.
    a2, b2 = ((1,) + a if len(a) == 1 else a), (b + (1,) if len(b) == 1 else b)
    try:
        if a2[-1] != b2[-2]:
            raise ValueError
        lead = np.broadcast_shapes(a2[:-2], b2[:-2])
    except ValueError:
        raise TypeInferenceError(f"matmul: shapes {a} and {b} are not compatible (NumPy matmul rules)") from None
    out = tuple(lead) + (a2[-2],) * (len(a) > 1) + (b2[-1],) * (len(b) > 1)
    return TensorType(out, dtype)


def _matmul_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    with np.errstate(over="ignore"):
        return np.matmul(xs[0], xs[1]).astype(xs[0].dtype, copy=False)


register_op(OpDef("matmul", OpPattern.COMPLEX_OUT_FUSABLE, _matmul_relation, _matmul_reference, (2, 2), {},
                  "NumPy matmul: batched, broadcasting over the leading axes"))


# ---- batch_norm --------------------------------------------------------------------------------
def _batch_norm_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = types[0]
    check_dtype("batch_norm", x, FLOATS)
    if x.ndim < 2:
        raise TypeInferenceError(f"batch_norm: input must have rank >= 2 (N, C, ...), got {x.shape}")
    for t, what in zip(types[1:], ("scale", "bias", "mean", "var")):
        if t.shape != (x.shape[1],) or t.dtype != x.dtype:
            raise TypeInferenceError(f"batch_norm: {what} must be {x.dtype}[{x.shape[1]}], got {t}")
    return x


def batch_norm_coefficients(scale: np.ndarray, bias: np.ndarray, mean: np.ndarray, var: np.ndarray,
                            epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Inference batch norm as ``x * a + b`` per channel."""
    a = scale / np.sqrt(var + np.asarray(epsilon, var.dtype))
    return a, bias - mean * a


def _batch_norm_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x, scale, bias, mean, var = xs
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = np.sqrt(var + np.asarray(attrs["epsilon"], var.dtype))
    return ((x - mean.reshape(shape)) / inv.reshape(shape) * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


register_op(OpDef("batch_norm", OpPattern.INJECTIVE, _batch_norm_relation, _batch_norm_reference, (5, 5),
                  {"epsilon": 1e-5}, "inference batch normalization over axis 1 with running statistics"))


# ---- softmax -----------------------------------------------------------------------------------
def _softmax_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    check_dtype("softmax", types[0], FLOATS)
    normalize_axis("softmax", attrs["axis"], types[0].ndim)
    return types[0]


def _softmax_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    e = np.exp(x - x.max(axis=attrs["axis"], keepdims=True))
    return (e / e.sum(axis=attrs["axis"], keepdims=True)).astype(x.dtype)


register_op(OpDef("softmax", OpPattern.OPAQUE, _softmax_relation, _softmax_reference, (1, 1), {"axis": -1},
                  "softmax along one axis"))



# ---- layer_norm --------------------------------------------------------------------------------
def _layer_norm_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    x = types[0]
    check_dtype("layer_norm", x, FLOATS)
    axis = normalize_axis("layer_norm", attrs["axis"], x.ndim)
    for t, what in zip(types[1:], ("scale", "bias")):
        if t.shape != x.shape[axis:] or t.dtype != x.dtype:
            raise TypeInferenceError(f"layer_norm: {what} must be {x.dtype}{list(x.shape[axis:])} (the normalized "
                                     f"axes of the input), got {t}")
    return x


def _layer_norm_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0].astype(np.float64)
    axes = tuple(range(normalize_axis("layer_norm", attrs["axis"], x.ndim), x.ndim))
    centered = x - x.mean(axis=axes, keepdims=True)
    y = centered / np.sqrt((centered * centered).mean(axis=axes, keepdims=True) + attrs["epsilon"]) * xs[1]
    return (y + xs[2] if len(xs) > 2 else y).astype(xs[0].dtype)


register_op(OpDef("layer_norm", OpPattern.OPAQUE, _layer_norm_relation, _layer_norm_reference, (2, 3),
                  {"axis": -1, "epsilon": 1e-5},
                  "layer normalization over the axes from ``axis`` on, times scale, plus the optional bias"))
