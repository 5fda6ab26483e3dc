"""Shared helpers of the operator definitions: checks, broadcasting, window arithmetic."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import TypeInferenceError
from vdla.compiler.graph.ir import TensorType

FLOATS = ("float16", "float32", "float64")
INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
NUMERIC = FLOATS + INTEGERS


def check_dtype(op: str, t: TensorType, allowed: Sequence[str], what: str = "input") -> None:
    if t.dtype not in allowed:
        raise TypeInferenceError(f"{op}: {what} of dtype {t.dtype} is not supported; use one of {list(allowed)}")


def check_same_dtype(op: str, types: Sequence[TensorType]) -> str:
    dtypes = {t.dtype for t in types}
    if len(dtypes) != 1:
        raise TypeInferenceError(f"{op}: inputs must share one dtype, got {[t.dtype for t in types]}; insert a cast")
    return dtypes.pop()


def check_rank(op: str, t: TensorType, rank: int, what: str = "input") -> None:
    if t.ndim != rank:
        raise TypeInferenceError(f"{op}: {what} must have rank {rank}, got shape {t.shape}")


def broadcast_shapes(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise TypeInferenceError(f"{op}: shapes {list(shapes)} do not broadcast (NumPy rules)") from None


def normalize_axis(op: str, axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise TypeInferenceError(f"{op}: axis {axis} is out of range for rank {ndim}")
    return axis % ndim


def pool_out_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int, ceil_mode: bool) -> int:
    """Output length of a sliding window; in ceil mode a last window starting in the padding is dropped."""
    span = (kernel - 1) * dilation + 1
    total = size + pad_lo + pad_hi - span
    if total < 0:
        raise TypeInferenceError(f"window of extent {span} does not fit input length {size} with padding {pad_lo}+{pad_hi}")
    out = (math.ceil(total / stride) if ceil_mode else total // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def windows(x: np.ndarray, kernel: tuple[int, int], strides: tuple[int, int], dilation: tuple[int, int],
            out_hw: tuple[int, int]) -> np.ndarray:
    """A read-only view ``(..., OH, OW, KH, KW)`` of the sliding windows over the last two axes of a padded ``x``."""
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, strides, dilation, out_hw
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    view = np.lib.stride_tricks.sliding_window_view(x, (span_h, span_w), axis=(-2, -1))
    return view[..., : (oh - 1) * sh + 1 : sh, : (ow - 1) * sw + 1 : sw, ::dh, ::dw]


def pair(op: str, name: str, value: Sequence[int]) -> tuple[int, int]:
    if len(value) != 2:
        raise TypeInferenceError(f"{op}: attribute {name} must have 2 values (H, W), got {value}")
    return int(value[0]), int(value[1])


def quad(op: str, value: Sequence[int]) -> tuple[int, int, int, int]:
    """Padding as (top, left, bottom, right)."""
    if len(value) != 4 or min(value) < 0:
        raise TypeInferenceError(f"{op}: padding must be 4 non-negative values (top, left, bottom, right), got {value}")
    return tuple(int(v) for v in value)  # type: ignore[return-value]
