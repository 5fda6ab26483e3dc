"""Converters from ONNX operators (opsets 13-21) to graph operators, one function per operator.

A converter reads the node's inputs and attributes through the :class:`ImportContext`,
adds graph nodes and returns the graph values of the node's outputs.  Attribute
combinations the graph level does not implement raise :class:`UnsupportedModelError`
(the caller prefixes the operator and node name); ``REJECTED`` documents them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import onnx

from vdla.compiler.frontend.onnx_context import ImportContext, attributes, onnx_dtype, reject_attrs
from vdla.compiler.graph.errors import UnsupportedModelError

Converter = Callable[[ImportContext, onnx.NodeProto], list[str]]
CONVERTERS: dict[str, Converter] = {}

#: Attribute combinations of supported operators that are rejected with a clear error.
REJECTED = {
    "Conv": "inputs of rank other than 4 (1-D / 3-D convolution); non-float inputs",
    "MaxPool": "rank other than 4; storage_order=1; the Indices output",
    "AveragePool": "rank other than 4",
    "GlobalAveragePool": "rank other than 4",
    "BatchNormalization": "training_mode=1 and the running-statistics outputs",
    "Gemm": "non-2-D operands",
    "Clip": "min/max computed at run time (they must be constants)",
    "Reshape/Squeeze/Unsqueeze/Pad": "shape, axes or pads computed at run time (they must be constants)",
    "QuantizeLinear/DequantizeLinear": "blocked quantization (block_size > 0); int4/uint4/float8 types",
    "Constant": "sparse_value, string values",
    "all": "bfloat16, float8, int4, string and complex element types",
}


def converter(*names: str) -> Callable[[Converter], Converter]:
    def deco(fn: Converter) -> Converter:
        for n in names:
            CONVERTERS[n] = fn
        return fn

    return deco


def _ints(v: Sequence[int] | None, default: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(x) for x in (v if v is not None else default))


def _window_padding(a: dict, in_hw: Sequence[int], kernel: Sequence[int],
                    strides: Sequence[int], dilations: Sequence[int]) -> tuple[int, int, int, int]:
    """ONNX auto_pad/pads as (top, left, bottom, right)."""
    auto = a.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = _ints(a.get("pads"), (0, 0, 0, 0))
        if len(pads) != 4:
            raise UnsupportedModelError(f"pads {pads} must have 4 values for a 2-D window")
        return pads  # type: ignore[return-value]
    if auto == "VALID":
        return (0, 0, 0, 0)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise UnsupportedModelError(f"auto_pad={auto!r} is not one of NOTSET, VALID, SAME_UPPER, SAME_LOWER")
    lo, hi = [], []
    for size, k, s, d in zip(in_hw, kernel, strides, dilations):
        total = max(0, (math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size)
        small, big = total // 2, total - total // 2
        lo.append(small if auto == "SAME_UPPER" else big)
        hi.append(big if auto == "SAME_UPPER" else small)
    return (lo[0], lo[1], hi[0], hi[1])


def _require_rank4(ctx: ImportContext, x: str, what: str) -> None:
    t = ctx.type_of(x)
    if t.ndim != 4:
        raise UnsupportedModelError(f"{what} supports 2-D spatial inputs (rank 4, NCHW) only; got shape {t.shape}")


# ---- convolution and dense ---------------------------------------------------------------------
@converter("Conv")
def _conv(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    x, w, b = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
    _require_rank4(ctx, x, "Conv")
    kernel = ctx.type_of(w).shape[2:]
    strides, dilations = _ints(a.get("strides"), (1, 1)), _ints(a.get("dilations"), (1, 1))
    pad = _window_padding(a, ctx.type_of(x).shape[2:], kernel, strides, dilations)
    inputs = [x, w] + ([b] if b else [])
    return [ctx.op(node, "conv2d", inputs, strides=strides, padding=pad, dilation=dilations, groups=a.get("group", 1))]


@converter("Gemm")
def _gemm(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"alpha", "beta", "transA", "transB"})
    x, w, c = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
    if ctx.type_of(x).ndim != 2 or ctx.type_of(w).ndim != 2:
        raise UnsupportedModelError("Gemm operands must be 2-D")
    if a.get("transA", 0):
        x = ctx.op(node, "transpose", [x], axes=(1, 0))
    if not a.get("transB", 0):
        wv = ctx.builder.const_value(w)
        w = ctx.const_value(node, wv.T, "weight") if wv is not None else ctx.op(node, "transpose", [w], axes=(1, 0))
    alpha, beta = float(a.get("alpha", 1.0)), float(a.get("beta", 1.0))
    dtype = ctx.type_of(x).dtype
    n = ctx.type_of(w).shape[0]
    bias_ok = c is not None and beta == 1.0 and alpha == 1.0 and ctx.type_of(c).shape in ((n,), (1, n))
    if bias_ok and ctx.type_of(c).ndim == 2:
        c = ctx.op(node, "reshape", [c], newshape=(n,))
    y = ctx.op(node, "dense", [x, w] + ([c] if bias_ok else []))
    if alpha != 1.0:
        y = ctx.op(node, "multiply", [y, ctx.const_value(node, np.asarray(alpha, dtype), "alpha")])
    if c is not None and not bias_ok and beta != 0.0:
        if beta != 1.0:
            c = ctx.op(node, "multiply", [c, ctx.const_value(node, np.asarray(beta, dtype), "beta")])
        y = ctx.op(node, "add", [y, c])
    return [y]


@converter("MatMul")
def _matmul(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x, w = ctx.input(node, 0), ctx.input(node, 1)
    wv = ctx.builder.const_value(w)
    if ctx.type_of(x).ndim == 2 and wv is not None and wv.ndim == 2:
        # A linear layer: keep it a dense so it can run on VDLA.
        return [ctx.op(node, "dense", [x, ctx.const_value(node, wv.T, "weight")])]
    return [ctx.op(node, "matmul", [x, w])]


# ---- elementwise -------------------------------------------------------------------------------
def _simple(onnx_op: str, op: str) -> None:
    def convert(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
        reject_attrs(node, attributes(node), set())
        return [ctx.op(node, op, [v for v in ctx.inputs(node) if v])]

    CONVERTERS[onnx_op] = convert


for _onnx_op, _op in {"Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Add": "add", "Sub": "subtract",
                      "Mul": "multiply", "Div": "divide"}.items():
    _simple(_onnx_op, _op)


@converter("Clip")
def _clip(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    lo, hi = ctx.const(node, 1, "min"), ctx.const(node, 2, "max")
    bounds = {}
    if lo is not None:
        bounds["a_min"] = lo.item()
    if hi is not None:
        bounds["a_max"] = hi.item()
    return [ctx.op(node, "clip", [ctx.input(node, 0)], **bounds)]


@converter("Identity")
def _identity(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    return [ctx.input(node, 0)]


@converter("Constant")
def _constant(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"value", "value_float", "value_floats", "value_int", "value_ints"})
    if "value" in a:
        value = onnx.numpy_helper.to_array(a["value"])
    elif "value_float" in a or "value_floats" in a:
        value = np.asarray(a.get("value_float", a.get("value_floats")), np.float32)
    else:
        value = np.asarray(a.get("value_int", a.get("value_ints")), np.int64)
    onnx_dtype(value.dtype, "the constant")
    return [ctx.builder.const(value, ctx.value_name(node.output[0]))]


# ---- normalization and pooling -----------------------------------------------------------------
@converter("BatchNormalization")
def _batch_norm(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"epsilon", "momentum", "training_mode"})
    if a.get("training_mode", 0):
        raise UnsupportedModelError("training_mode=1 is not supported; export the model in eval mode")
    return [ctx.op(node, "batch_norm", [v for v in ctx.inputs(node) if v], epsilon=float(a.get("epsilon", 1e-5)))]


def _pool(ctx: ImportContext, node: onnx.NodeProto, allowed: set[str]) -> tuple[str, dict]:
    a = attributes(node)
    reject_attrs(node, a, allowed)
    x = ctx.input(node, 0)
    _require_rank4(ctx, x, node.op_type)
    kernel = _ints(a.get("kernel_shape"), ())
    if len(kernel) != 2:
        raise UnsupportedModelError(f"kernel_shape {kernel} must have 2 values")
    strides, dilations = _ints(a.get("strides"), (1, 1)), _ints(a.get("dilations"), (1, 1))
    pad = _window_padding(a, ctx.type_of(x).shape[2:], kernel, strides, dilations)
    return x, dict(pool_size=kernel, strides=strides, padding=pad, dilation=dilations,
                   ceil_mode=bool(a.get("ceil_mode", 0)))


@converter("MaxPool")
def _max_pool(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    if attributes(node).get("storage_order", 0):
        raise UnsupportedModelError("storage_order=1 (column-major indices) is not supported")
    x, kw = _pool(ctx, node,
                  {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"})
    return [ctx.op(node, "max_pool2d", [x], **kw)]


@converter("AveragePool")
def _avg_pool(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    x, kw = _pool(ctx, node,
                  {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"})
    include = bool(attributes(node).get("count_include_pad", 0))
    return [ctx.op(node, "avg_pool2d", [x], count_include_pad=include, **kw)]


@converter("GlobalAveragePool")
def _global_avg_pool(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    x = ctx.input(node, 0)
    _require_rank4(ctx, x, "GlobalAveragePool")
    return [ctx.op(node, "global_avg_pool2d", [x])]


@converter("Softmax")
def _softmax(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axis"})
    return [ctx.op(node, "softmax", [ctx.input(node, 0)], axis=int(a.get("axis", -1)))]


# ---- shape manipulation ------------------------------------------------------------------------
def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise UnsupportedModelError(f"axis {axis} is out of range for rank {ndim}")
    return axis % ndim


@converter("Flatten")
def _flatten(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axis"})
    x = ctx.input(node, 0)
    shape = ctx.type_of(x).shape
    axis = int(a.get("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise UnsupportedModelError(f"axis {axis} is out of range for rank {len(shape)}")
    axis = axis % len(shape) if axis < 0 else axis
    new = (int(np.prod(shape[:axis], dtype=np.int64)), int(np.prod(shape[axis:], dtype=np.int64)))
    return [ctx.op(node, "reshape", [x], newshape=new)]


@converter("Reshape")
def _reshape(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"allowzero"})
    x = ctx.input(node, 0)
    shape = ctx.type_of(x).shape
    target = [int(v) for v in ctx.const(node, 1, "shape").reshape(-1)]
    if not a.get("allowzero", 0):
        target = [shape[i] if v == 0 else v for i, v in enumerate(target)]
    if target.count(-1) > 1:
        raise UnsupportedModelError(f"shape {target} has more than one -1")
    if -1 in target:
        known = int(np.prod([v for v in target if v != -1], dtype=np.int64))
        total = int(np.prod(shape, dtype=np.int64))
        if known == 0 or total % known:
            raise UnsupportedModelError(f"cannot infer the -1 in shape {target} for input shape {shape}")
        target[target.index(-1)] = total // known
    return [ctx.op(node, "reshape", [x], newshape=tuple(target))]


@converter("Transpose")
def _transpose(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"perm"})
    x = ctx.input(node, 0)
    perm = _ints(a.get("perm"), tuple(reversed(range(ctx.type_of(x).ndim))))
    return [ctx.op(node, "transpose", [x], axes=perm)]


@converter("Concat")
def _concat(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axis"})
    if "axis" not in a:
        raise UnsupportedModelError("Concat needs the axis attribute")
    return [ctx.op(node, "concatenate", [v for v in ctx.inputs(node) if v], axis=int(a["axis"]))]


@converter("Squeeze")
def _squeeze(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x = ctx.input(node, 0)
    shape = ctx.type_of(x).shape
    axes_v = ctx.const(node, 1, "axes")
    axes = {_axis(int(v), len(shape)) for v in axes_v.reshape(-1)} if axes_v is not None else \
        {i for i, d in enumerate(shape) if d == 1}
    if any(shape[i] != 1 for i in axes):
        raise UnsupportedModelError(f"cannot squeeze axes {sorted(axes)} of shape {shape}: they are not all 1")
    return [ctx.op(node, "reshape", [x], newshape=tuple(d for i, d in enumerate(shape) if i not in axes))]


@converter("Unsqueeze")
def _unsqueeze(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x = ctx.input(node, 0)
    shape = list(ctx.type_of(x).shape)
    rank = len(shape) + len(ctx.const(node, 1, "axes").reshape(-1))
    axes = sorted(_axis(int(v), rank) for v in ctx.const(node, 1, "axes").reshape(-1))
    if len(set(axes)) != len(axes):
        raise UnsupportedModelError(f"Unsqueeze axes {axes} repeat an axis")
    for ax in axes:
        shape.insert(ax, 1)
    return [ctx.op(node, "reshape", [x], newshape=tuple(shape))]


@converter("Pad")
def _pad(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"mode"})
    x = ctx.input(node, 0)
    ndim = ctx.type_of(x).ndim
    pads = [int(v) for v in ctx.const(node, 1, "pads").reshape(-1)]
    value = ctx.const(node, 2, "constant_value")
    axes_v = ctx.const(node, 3, "axes")
    axes = [_axis(int(v), ndim) for v in axes_v.reshape(-1)] if axes_v is not None else list(range(ndim))
    if len(pads) != 2 * len(axes):
        raise UnsupportedModelError(f"pads {pads} must have 2 values per padded axis ({len(axes)} axes)")
    widths = [[0, 0] for _ in range(ndim)]
    for k, ax in enumerate(axes):
        widths[ax] = [pads[k], pads[k + len(axes)]]
    mode = a.get("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise UnsupportedModelError(f"mode {mode!r} is not one of constant, reflect, edge, wrap")
    fill = value.item() if value is not None and value.size else 0
    return [ctx.op(node, "pad", [x], pad_width=widths, mode=mode, value=fill)]


# ---- quantization ------------------------------------------------------------------------------
def _quant_common(ctx: ImportContext, node: onnx.NodeProto, allowed: set[str]) -> tuple[list[str], int]:
    a = attributes(node)
    reject_attrs(node, a, allowed)
    if a.get("block_size", 0):
        raise UnsupportedModelError("blocked quantization (block_size > 0) is not supported")
    return [v for v in ctx.inputs(node) if v], int(a.get("axis", 1))


@converter("QuantizeLinear")
def _quantize(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    inputs, axis = _quant_common(ctx, node, {"axis", "block_size", "output_dtype", "saturate"})
    out = attributes(node).get("output_dtype", 0)
    kw = {"dtype": onnx_dtype(out, "output_dtype")} if out else {}
    return [ctx.op(node, "quantize_linear", inputs, axis=axis, **kw)]


@converter("DequantizeLinear")
def _dequantize(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    inputs, axis = _quant_common(ctx, node, {"axis", "block_size", "output_dtype"})
    if attributes(node).get("output_dtype", 0):
        raise UnsupportedModelError("output_dtype is not supported; the output has the scale's type")
    return [ctx.op(node, "dequantize_linear", inputs, axis=axis)]


@converter("ReduceMean")
def _reduce_mean(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axes", "keepdims", "noop_with_empty_axes"})
    x = ctx.input(node, 0)
    t = ctx.type_of(x)
    given = a.get("axes") if ctx.opset < 18 else ctx.const(node, 1, "axes")
    axes = sorted({_axis(int(v), t.ndim) for v in np.asarray(given if given is not None else []).reshape(-1)})
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(t.ndim))
    keep = bool(a.get("keepdims", 1))
    if keep and t.ndim == 4 and axes == [2, 3]:
        return [ctx.op(node, "global_avg_pool2d", [x])]  # layout-aware, so it can stay packed
    return [ctx.op(node, "mean", [x], axes=tuple(axes), keepdims=keep)]
