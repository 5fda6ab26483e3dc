"""Converters for the operators exported vision models and transformers add beyond the CNN core:
activations (HardSwish, HardSigmoid, Gelu, Erf, Sqrt, Exp, Pow), LayerNormalization, ReduceSum,
the shape/indexing family (Shape, Gather, Slice, Split, Expand, Tile, Cast, Equal, Where, Range,
ConstantOfShape) and ConvTranspose.

Shape arithmetic becomes constants: every graph operator on constant inputs is evaluated at import
(:meth:`ImportContext.op`).  What must be known at compile time but is not (a Range bound or an
Expand shape computed from the input values) raises :class:`UnsupportedModelError`.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from vdla.compiler.frontend.onnx_context import ImportContext, attributes, onnx_dtype, reject_attrs
from vdla.compiler.frontend.onnx_ops import _axis, _ints, converter
from vdla.compiler.graph.errors import UnsupportedModelError


def _scalar(ctx: ImportContext, node: onnx.NodeProto, value: float, dtype: str, suffix: str) -> str:
    return ctx.const_value(node, np.asarray(value, dtype), suffix)


# ---- activations -------------------------------------------------------------------------------
def _hard_sigmoid(ctx: ImportContext, node: onnx.NodeProto, x: str, alpha: float, beta: float) -> str:
    dtype = ctx.type_of(x).dtype
    y = ctx.op(node, "multiply", [x, _scalar(ctx, node, alpha, dtype, "alpha")])
    y = ctx.op(node, "add", [y, _scalar(ctx, node, beta, dtype, "beta")])
    return ctx.op(node, "clip", [y], a_min=0.0, a_max=1.0)


@converter("HardSigmoid")
def _hardsigmoid(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"alpha", "beta"})
    return [_hard_sigmoid(ctx, node, ctx.input(node, 0), float(a.get("alpha", 0.2)), float(a.get("beta", 0.5)))]


@converter("HardSwish")
def _hardswish(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x = ctx.input(node, 0)
    return [ctx.op(node, "multiply", [x, _hard_sigmoid(ctx, node, x, 1.0 / 6.0, 0.5)])]


def _unary(onnx_op: str, op: str) -> None:
    def convert(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
        reject_attrs(node, attributes(node), set())
        return [ctx.op(node, op, [ctx.input(node, 0)])]

    converter(onnx_op)(convert)


for _onnx_op, _op in {"Erf": "erf", "Sqrt": "sqrt", "Exp": "exp"}.items():
    _unary(_onnx_op, _op)


@converter("Pow")
def _pow(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x, y = ctx.input(node, 0), ctx.input(node, 1)
    dtype = ctx.type_of(x).dtype
    if ctx.type_of(y).dtype != dtype:
        y = ctx.op(node, "cast", [y], dtype=dtype)
    return [ctx.op(node, "power", [x, y])]


@converter("Gelu")
def _gelu(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"approximate"})
    x = ctx.input(node, 0)
    dtype = ctx.type_of(x).dtype
    approx = a.get("approximate", "none")
    if approx == "tanh":
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        x3 = ctx.op(node, "multiply", [ctx.op(node, "multiply", [x, x]), x])
        inner = ctx.op(node, "add", [x, ctx.op(node, "multiply", [x3, _scalar(ctx, node, 0.044715, dtype, "c")])])
        t = ctx.op(node, "tanh", [ctx.op(node, "multiply", [inner, _scalar(ctx, node, math.sqrt(2 / math.pi), dtype, "k")])])
    elif approx == "none":
        t = ctx.op(node, "erf", [ctx.op(node, "multiply", [x, _scalar(ctx, node, 1 / math.sqrt(2), dtype, "k")])])
    else:
        raise UnsupportedModelError(f"approximate={approx!r} is not one of 'none', 'tanh'")
    half = ctx.op(node, "multiply", [x, _scalar(ctx, node, 0.5, dtype, "half")])
    return [ctx.op(node, "multiply", [half, ctx.op(node, "add", [t, _scalar(ctx, node, 1.0, dtype, "one")])])]


# ---- normalization and reductions --------------------------------------------------------------
@converter("LayerNormalization")
def _layer_norm(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axis", "epsilon", "stash_type"})
    x, scale, bias = ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)
    t = ctx.type_of(x)
    axis = _axis(int(a.get("axis", -1)), t.ndim)
    axes = tuple(range(axis, t.ndim))
    eps_value = float(a.get("epsilon", 1e-5))
    affine = [v for v in (scale, bias) if v]
    if len(node.output) == 1 and all(ctx.type_of(v).shape == t.shape[axis:] for v in affine):
        # One fused op (a vectorized row kernel on the CPU) when only the normalized output is used
        # and scale / bias need no broadcasting; otherwise the decomposition below.
        return [ctx.op(node, "layer_norm", [x, *affine], axis=axis, epsilon=eps_value)]
    mean = ctx.op(node, "mean", [x], axes=axes, keepdims=True)
    centered = ctx.op(node, "subtract", [x, mean])
    var = ctx.op(node, "mean", [ctx.op(node, "multiply", [centered, centered])], axes=axes, keepdims=True)
    eps = _scalar(ctx, node, eps_value, t.dtype, "eps")
    std = ctx.op(node, "sqrt", [ctx.op(node, "add", [var, eps])])
    y = ctx.op(node, "multiply", [ctx.op(node, "divide", [centered, std]), scale])
    y = ctx.op(node, "add", [y, bias]) if bias else y
    if len(node.output) == 1:
        return [y]
    # The optional Mean and InvStdDev outputs (kept-dims statistics).
    return [y, mean, ctx.op(node, "divide", [_scalar(ctx, node, 1.0, t.dtype, "one"), std])]


def _reduce_axes(ctx: ImportContext, node: onnx.NodeProto, a: dict, ndim: int, axes_input_from: int) -> list[int] | None:
    """The reduced axes; None for 'no axes given'."""
    given = a.get("axes") if ctx.opset < axes_input_from else ctx.const(node, 1, "axes")
    if given is None:
        return None
    return sorted({_axis(int(v), ndim) for v in np.asarray(given).reshape(-1)}) or None


@converter("ReduceSum")
def _reduce_sum(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"keepdims", "noop_with_empty_axes"})
    x = ctx.input(node, 0)
    ndim = ctx.type_of(x).ndim
    axes = _reduce_axes(ctx, node, a, ndim, 13)
    if axes is None:
        if a.get("noop_with_empty_axes", 0):
            return [x]
        axes = list(range(ndim))
    return [ctx.op(node, "sum", [x], axes=tuple(axes), keepdims=bool(a.get("keepdims", 1)))]


# ---- shapes and indexing -----------------------------------------------------------------------
@converter("Shape")
def _shape(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"start", "end"})
    shape = ctx.type_of(ctx.input(node, 0)).shape
    start, end = int(a.get("start", 0)), a.get("end")
    value = np.asarray(shape[start:None if end is None else int(end)], np.int64)
    return [ctx.builder.const(value, ctx.value_name(node.output[0]))]


@converter("Cast")
def _cast(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"to", "saturate", "round_mode"})
    x = ctx.input(node, 0)
    value = ctx.builder.const_value(x)
    to = int(a["to"])
    if to == onnx.TensorProto.BOOL and value is not None:
        return [ctx.builder.const(value.astype(bool), ctx.value_name(node.output[0]))]
    dtype = onnx_dtype(to, "the Cast target")
    return [ctx.op(node, "cast", [x], dtype=dtype) if ctx.type_of(x).dtype != dtype else x]


@converter("Gather")
def _gather(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axis"})
    data, indices = ctx.input(node, 0), ctx.input(node, 1)
    return [ctx.op(node, "take", [data, indices], axis=_axis(int(a.get("axis", 0)), ctx.type_of(data).ndim))]


def _slice_bounds(dim: int, start: int, end: int, step: int) -> tuple[int, int]:
    """ONNX Slice clamping of (start, end) for one axis; -1 as end means 'before index 0'."""
    if step == 0:
        raise UnsupportedModelError("a Slice step is 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return min(max(start, 0), dim), min(max(end, 0), dim)
    return min(max(start, -1), dim - 1), min(max(end, -1), dim - 1)


@converter("Slice")
def _slice(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x = ctx.input(node, 0)
    shape = ctx.type_of(x).shape
    starts = ctx.const(node, 1, "starts").reshape(-1).tolist()
    ends = ctx.const(node, 2, "ends").reshape(-1).tolist()
    axes_v, steps_v = ctx.const(node, 3, "axes"), ctx.const(node, 4, "steps")
    axes = [_axis(int(v), len(shape)) for v in axes_v.reshape(-1)] if axes_v is not None else list(range(len(starts)))
    steps = steps_v.reshape(-1).tolist() if steps_v is not None else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise UnsupportedModelError(f"starts {starts}, ends {ends}, axes {axes} and steps {steps} differ in length")
    begin, end, stride = [0] * len(shape), list(shape), [1] * len(shape)
    for ax, s, e, st in zip(axes, starts, ends, steps):
        # ONNX uses INT64_MAX/INT64_MIN for "to the end"; clamp before any arithmetic on them.
        s, e = int(max(min(s, 1 << 40), -(1 << 40))), int(max(min(e, 1 << 40), -(1 << 40)))
        begin[ax], end[ax] = _slice_bounds(shape[ax], s, e, int(st))
        stride[ax] = int(st)
    if begin == [0] * len(shape) and end == list(shape) and stride == [1] * len(shape):
        return [x]
    return [ctx.op(node, "strided_slice", [x], begin=tuple(begin), end=tuple(end), strides=tuple(stride))]


@converter("Split")
def _split(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"axis", "num_outputs", "split"})
    x = ctx.input(node, 0)
    shape = ctx.type_of(x).shape
    axis = _axis(int(a.get("axis", 0)), len(shape))
    sizes_v = ctx.const(node, 1, "split")
    n_out = len(node.output)
    if sizes_v is not None:
        sizes = [int(v) for v in sizes_v.reshape(-1)]
    else:
        n = int(a.get("num_outputs", n_out))
        chunk = -(-shape[axis] // n)
        sizes = [min(chunk, shape[axis] - k * chunk) for k in range(n)]
    if sum(sizes) != shape[axis] or len(sizes) != n_out or min(sizes) < 0:
        raise UnsupportedModelError(f"split sizes {sizes} do not split axis {axis} of {shape} into {n_out} outputs")
    outs, start = [], 0
    for k, size in enumerate(sizes):
        begin, end = [0] * len(shape), list(shape)
        begin[axis], end[axis] = start, start + size
        outs.append(ctx.op(node, "strided_slice", [x], output=k, begin=tuple(begin), end=tuple(end),
                           strides=(1,) * len(shape)))
        start += size
    return outs


@converter("Expand")
def _expand(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    x = ctx.input(node, 0)
    target = tuple(int(v) for v in ctx.const(node, 1, "shape").reshape(-1))
    try:
        shape = np.broadcast_shapes(ctx.type_of(x).shape, target)
    except ValueError:
        raise UnsupportedModelError(f"shape {ctx.type_of(x).shape} cannot be expanded to {target}") from None
    if shape == ctx.type_of(x).shape:
        return [x]
    return [ctx.op(node, "broadcast_to", [x], shape=tuple(shape))]


@converter("Tile")
def _tile(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    reps = tuple(int(v) for v in ctx.const(node, 1, "repeats").reshape(-1))
    return [ctx.op(node, "tile", [ctx.input(node, 0)], reps=reps)]


@converter("Equal")
def _equal(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    return [ctx.op(node, "equal", [ctx.input(node, 0), ctx.input(node, 1)])]


@converter("Where")
def _where(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    return [ctx.op(node, "where", [ctx.input(node, 0), ctx.input(node, 1), ctx.input(node, 2)])]


@converter("Range")
def _range(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    reject_attrs(node, attributes(node), set())
    start, limit, delta = (ctx.const(node, i, w) for i, w in enumerate(("start", "limit", "delta")))
    if delta.item() == 0:
        raise UnsupportedModelError("delta is 0")
    value = np.arange(start.item(), limit.item(), delta.item()).astype(start.dtype)
    return [ctx.builder.const(value, ctx.value_name(node.output[0]))]


@converter("ConstantOfShape")
def _constant_of_shape(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    a = attributes(node)
    reject_attrs(node, a, {"value"})
    shape = tuple(int(v) for v in ctx.const(node, 0, "shape").reshape(-1))
    fill = onnx.numpy_helper.to_array(a["value"]).reshape(-1) if "value" in a else np.zeros(1, np.float32)
    onnx_dtype(fill.dtype, "the ConstantOfShape value")
    return [ctx.builder.const(np.full(shape, fill[0], fill.dtype), ctx.value_name(node.output[0]))]


# ---- transposed convolution --------------------------------------------------------------------
@converter("ConvTranspose")
def _conv_transpose(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    """A strided conv-transpose is a stride-1 conv of the zero-upsampled input with the flipped kernel."""
    a = attributes(node)
    reject_attrs(node, a, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "pads", "strides"})
    x, b = ctx.input(node, 0), ctx.input(node, 2)
    w = ctx.const(node, 1, "weight")
    t = ctx.type_of(x)
    if t.ndim != 4:
        raise UnsupportedModelError(f"ConvTranspose supports 2-D spatial inputs (rank 4, NCHW) only; got shape {t.shape}")
    if a.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        raise UnsupportedModelError("auto_pad SAME_UPPER/SAME_LOWER is not supported; give explicit pads")
    if "output_shape" in a:
        raise UnsupportedModelError("output_shape is not supported; give pads and output_padding")
    g = int(a.get("group", 1))
    strides, dil = _ints(a.get("strides"), (1, 1)), _ints(a.get("dilations"), (1, 1))
    pads = _ints(a.get("pads"), (0, 0, 0, 0)) if a.get("auto_pad", "NOTSET") == "NOTSET" else (0, 0, 0, 0)
    out_pad = _ints(a.get("output_padding"), (0, 0))
    cin, cout_g, kh, kw = w.shape
    n, c, h, wd = t.shape
    if c != cin or cin % g:
        raise UnsupportedModelError(f"weight {w.shape} does not match {c} input channels in {g} groups")
    # Zero-insert stride-1 gaps between input pixels: (N,C,H,1,W,1) padded to (N,C,H,sh,W,sw), cropped.
    sh, sw = strides
    up = x
    if (sh, sw) != (1, 1):
        up = ctx.op(node, "reshape", [x], newshape=(n, c, h, 1, wd, 1))
        up = ctx.op(node, "pad", [up], pad_width=[[0, 0], [0, 0], [0, 0], [0, sh - 1], [0, 0], [0, sw - 1]])
        up = ctx.op(node, "reshape", [up], newshape=(n, c, h * sh, wd * sw))
        up = ctx.op(node, "pad", [up], pad_width=[[0, 0], [0, 0], [0, 1 - sh], [0, 1 - sw]])
    # Weight (Cin, Cout/g, kh, kw) -> (Cout, Cin/g, kh, kw), spatially flipped.
    wt = w.reshape(g, cin // g, cout_g, kh, kw).transpose(0, 2, 1, 3, 4).reshape(g * cout_g, cin // g, kh, kw)
    wt = np.ascontiguousarray(wt[:, :, ::-1, ::-1])
    ek = [(k - 1) * d for k, d in zip((kh, kw), dil)]
    pad = (ek[0] - pads[0], ek[1] - pads[1], ek[0] - pads[2] + out_pad[0], ek[1] - pads[3] + out_pad[1])
    if min(pad) < 0:
        # Pads larger than the kernel reach crop the output instead.
        crop = [[0, 0], [0, 0], [min(pad[0], 0), min(pad[2], 0)], [min(pad[1], 0), min(pad[3], 0)]]
        pad = tuple(max(p, 0) for p in pad)
    else:
        crop = None
    inputs = [up, ctx.const_value(node, wt, "weight")] + ([b] if b else [])
    y = ctx.op(node, "conv2d", inputs, strides=(1, 1), padding=pad, dilation=dil, groups=g)
    if crop is not None:
        y = ctx.op(node, "pad", [y], pad_width=crop)
    return [y]



@converter("Mod")
def _mod(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    """Only in shape arithmetic (the TorchScript exporter's attention head split): folded at import."""
    a = attributes(node)
    reject_attrs(node, a, {"fmod"})
    x, y = ctx.builder.const_value(ctx.input(node, 0)), ctx.builder.const_value(ctx.input(node, 1))
    if x is None or y is None:
        raise UnsupportedModelError("Mod is supported on compile-time constants only (shape arithmetic, folded at "
                                    "import); here an input is computed from the model's inputs")
    if x.dtype.kind in "iu" and np.any(y == 0):
        raise UnsupportedModelError("integer Mod by zero")
    value = np.fmod(x, y) if a.get("fmod", 0) else np.mod(x, y)
    return [ctx.builder.const(np.asarray(value).astype(x.dtype), ctx.value_name(node.output[0]))]


# ---- Resize ------------------------------------------------------------------------------------
_COORDINATE_MODES = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
                     "tf_half_pixel_for_nn")
_NEAREST_MODES = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _source_coords(mode: str, n_in: int, n_out: int, scale: float) -> np.ndarray:
    """Where each output index samples the input along one axis (ONNX Resize's coordinate transform)."""
    x = np.arange(n_out, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        adjustment = n_out / (scale * n_in)
        return n_in / 2 * (1 - adjustment) + (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == "align_corners":
        # ONNX divides by the unrounded output length (scale * n_in) when scales are given.
        return x * (n_in - 1) / (scale * n_in - 1) if n_out > 1 else np.zeros(n_out)
    if mode == "asymmetric":
        return x / scale
    return (x + 0.5) / scale  # tf_half_pixel_for_nn


@converter("Resize")
def _resize(ctx: ImportContext, node: onnx.NodeProto) -> list[str]:
    """Nearest and (bi)linear resizing of the spatial axes of NCHW tensors, as gathers with compile-time tables."""
    a = attributes(node)
    reject_attrs(node, a, {"antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                           "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"})
    x = ctx.input(node, 0)
    t = ctx.type_of(x)
    mode = a.get("mode", "nearest")
    coord = a.get("coordinate_transformation_mode", "half_pixel")
    nearest = a.get("nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear"):
        raise UnsupportedModelError(f"mode {mode!r} is not supported; supported: 'nearest', 'linear'")
    if coord not in _COORDINATE_MODES:
        raise UnsupportedModelError(f"coordinate_transformation_mode {coord!r} is not supported; supported: "
                                    f"{', '.join(_COORDINATE_MODES)}")
    if nearest not in _NEAREST_MODES:
        raise UnsupportedModelError(f"nearest_mode {nearest!r} is not one of {', '.join(_NEAREST_MODES)}")
    if a.get("antialias", 0) or a.get("exclude_outside", 0) or a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise UnsupportedModelError("antialias, exclude_outside and keep_aspect_ratio_policy other than 'stretch' "
                                    "are not supported")
    axes = [_axis(int(v), t.ndim) for v in a.get("axes", range(t.ndim))]
    scales, sizes = ctx.const(node, 2, "scales"), ctx.const(node, 3, "sizes")
    factors, out = [1.0] * t.ndim, list(t.shape)
    if sizes is not None and sizes.size:
        for ax, v in zip(axes, sizes.reshape(-1), strict=True):
            out[ax], factors[ax] = int(v), int(v) / t.shape[ax]
    elif scales is not None and scales.size:
        for ax, v in zip(axes, scales.reshape(-1), strict=True):
            factors[ax], out[ax] = float(v), int(math.floor(t.shape[ax] * float(v)))
    else:
        raise UnsupportedModelError("give constant scales or sizes")
    out_shape = tuple(out)
    if len(out_shape) != t.ndim or any(o != i for o, i in zip(out_shape[:-2], t.shape[:-2])):
        raise UnsupportedModelError(f"only the last two axes can be resized; {t.shape} -> {out_shape}")
    y = x
    for axis in (t.ndim - 2, t.ndim - 1):
        n_in, n_out = t.shape[axis], out_shape[axis]
        if n_in == n_out and factors[axis] == 1.0:
            continue
        src = _source_coords(coord, n_in, n_out, factors[axis])
        if mode == "nearest":
            pick = {"round_prefer_floor": np.ceil(src - 0.5), "round_prefer_ceil": np.floor(src + 0.5),
                    "floor": np.floor(src), "ceil": np.ceil(src)}[nearest]
            index = np.clip(pick, 0, n_in - 1).astype(np.int64)
            y = ctx.op(node, "take", [y, ctx.const_value(node, index, f"index{axis}")], axis=axis)
            continue
        src = np.clip(src, 0, n_in - 1)
        lo = np.floor(src).astype(np.int64)
        hi = np.minimum(lo + 1, n_in - 1)
        w_hi = (src - lo).astype(t.dtype).reshape((n_out,) + (1,) * (t.ndim - 1 - axis))
        below = ctx.op(node, "take", [y, ctx.const_value(node, lo, f"lo{axis}")], axis=axis)
        above = ctx.op(node, "take", [y, ctx.const_value(node, hi, f"hi{axis}")], axis=axis)
        # lo + w * (hi - lo): one multiply per element, as onnxruntime computes it.
        step = ctx.op(node, "multiply", [ctx.op(node, "subtract", [above, below]),
                                         ctx.const_value(node, w_hi, f"weight{axis}")])
        y = ctx.op(node, "add", [below, step])
    return [y]
