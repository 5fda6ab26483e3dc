"""Data-movement operators (injective): reshape, transpose, concatenate, pad, layout_transform."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import Attrs, TensorType
from vdla.compiler.graph.layout import parse_layout, transform
from vdla.compiler.graph.ops.common import check_same_dtype, normalize_axis
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op


def _reshape_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    shape = tuple(attrs["newshape"])
    if any(d < 0 for d in shape) or int(np.prod(shape, dtype=np.int64)) != types[0].size:
        raise TypeInferenceError(f"reshape: cannot reshape {types[0].shape} ({types[0].size} elements) into {shape}")
    return TensorType(shape, types[0].dtype)


register_op(OpDef("reshape", OpPattern.INJECTIVE, _reshape_relation,
                  lambda xs, a: xs[0].reshape(a["newshape"]), (1, 1), {"newshape": REQUIRED},
                  "row-major reshape to a fully specified static shape"))


def _transpose_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    axes = tuple(attrs["axes"])
    if sorted(axes) != list(range(types[0].ndim)):
        raise TypeInferenceError(f"transpose: axes {axes} are not a permutation of the {types[0].ndim} input axes")
    return TensorType(tuple(types[0].shape[a] for a in axes), types[0].dtype)


register_op(OpDef("transpose", OpPattern.INJECTIVE, _transpose_relation,
                  lambda xs, a: np.ascontiguousarray(xs[0].transpose(a["axes"])), (1, 1), {"axes": REQUIRED},
                  "permute the axes: output axis i is input axis axes[i]"))


def _concat_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    dtype = check_same_dtype("concatenate", types)
    ndim = types[0].ndim
    axis = normalize_axis("concatenate", attrs["axis"], ndim)
    for t in types:
        if t.ndim != ndim or any(t.shape[i] != types[0].shape[i] for i in range(ndim) if i != axis):
            raise TypeInferenceError(f"concatenate: shapes {[x.shape for x in types]} differ outside axis {axis}")
    shape = list(types[0].shape)
    shape[axis] = sum(t.shape[axis] for t in types)
    return TensorType(tuple(shape), dtype)


register_op(OpDef("concatenate", OpPattern.INJECTIVE, _concat_relation,
                  lambda xs, a: np.concatenate(xs, axis=a["axis"]), (1, 1 << 16), {"axis": REQUIRED},
                  "join tensors along an axis"))


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def _pad_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    t = types[0]
    widths = attrs["pad_width"]
    if len(widths) != t.ndim or any(len(w) != 2 for w in widths):
        raise TypeInferenceError(f"pad: pad_width needs one (before, after) pair per axis of {t.shape}, got {widths}")
    if attrs["mode"] not in _PAD_MODES:
        raise TypeInferenceError(f"pad: mode {attrs['mode']!r} is not one of {sorted(_PAD_MODES)}")
    shape = tuple(d + lo + hi for d, (lo, hi) in zip(t.shape, widths))
    if min(shape, default=0) < 0:
        raise TypeInferenceError(f"pad: negative padding {widths} crops more than the shape {t.shape}")
    if attrs["mode"] == "reflect" and any(max(lo, hi) >= d for d, (lo, hi) in zip(t.shape, widths) if lo or hi):
        raise TypeInferenceError(f"pad: reflect padding {widths} must be smaller than each padded axis of {t.shape}")
    return TensorType(shape, t.dtype)


def _pad_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    x = xs[0]
    # Negative widths crop; apply the growth first, then slice the crop away.
    grow = [(max(lo, 0), max(hi, 0)) for lo, hi in attrs["pad_width"]]
    kwargs = {"constant_values": np.asarray(attrs["value"]).astype(x.dtype)} if attrs["mode"] == "constant" else {}
    out = np.pad(x, grow, mode=_PAD_MODES[attrs["mode"]], **kwargs)
    crop = tuple(slice(max(-lo, 0), out.shape[i] - max(-hi, 0)) for i, (lo, hi) in enumerate(attrs["pad_width"]))
    return np.ascontiguousarray(out[crop])


register_op(OpDef("pad", OpPattern.INJECTIVE, _pad_relation, _pad_reference, (1, 1),
                  {"pad_width": REQUIRED, "mode": "constant", "value": 0.0},
                  "pad each axis by (before, after); negative widths crop; modes constant/reflect/edge/wrap"))


def _layout_transform_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    src, dst = parse_layout(attrs["src_layout"]), parse_layout(attrs["dst_layout"])
    if src.primal != dst.primal:
        raise TypeInferenceError(f"layout_transform: {src.name} and {dst.name} do not share primal axes")
    return TensorType(dst.shape(src.primal_shape(types[0].shape)), types[0].dtype)


register_op(OpDef("layout_transform", OpPattern.INJECTIVE, _layout_transform_relation,
                  lambda xs, a: transform(xs[0], a["src_layout"], a["dst_layout"]), (1, 1),
                  {"src_layout": REQUIRED, "dst_layout": REQUIRED},
                  "rearrange between layouts of the same primal axes, e.g. NCHW <-> NCHW1n16c"))
