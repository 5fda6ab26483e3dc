"""Layout transforms between NCHW / OIHW and the blocked layouts of the fast operators.

They are ordinary tensor expressions, scheduled like any element-wise operator; a graph
compiler runs them once per model boundary (data) or once at compile time (weights), so
benchmarks time the blocked operators without them (and report them separately).
"""
from __future__ import annotations

from typing import Sequence

from .. import te
from ..tir import op as tir_op
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from .utils import TopiError, const_shape, schedule_elementwise, vector_lanes


def _check_block(size: int, block: int, what: str) -> None:
    if block < 1 or size % block:
        raise TopiError(f"block {block} must divide {what} ({size}); pick a divisor or pad")


def nchw_to_nchwc(data: Tensor, block: int, name: str = "nchw_to_nchwc") -> Tensor:
    """``[N, C, H, W] -> [N, C/block, H, W, block]``."""
    n, c, h, w = const_shape(data)
    _check_block(c, block, "the channel count")
    return te.compute((n, c // block, h, w, block),
                      lambda b, co, y, x, ci: data[b, co * block + ci, y, x], name=name)


def nchwc_to_nchw(data: Tensor, name: str = "nchwc_to_nchw") -> Tensor:
    """``[N, C/b, H, W, b] -> [N, C, H, W]``."""
    n, co, h, w, cb = const_shape(data)
    return te.compute((n, co * cb, h, w),
                      lambda b, c, y, x: data[b, c // cb, y, x, c % cb], name=name)


def oihw_to_blocked(kernel: Tensor, in_block: int, out_block: int,
                    name: str = "oihw_to_blocked") -> Tensor:
    """``[OC, IC, KH, KW] -> [OC/ob, IC/ib, KH, KW, ib, ob]`` (conv2d_nchwc's weights)."""
    oc, ic, kh, kw = const_shape(kernel)
    _check_block(oc, out_block, "the output channel count")
    _check_block(ic, in_block, "the input channel count")
    return te.compute((oc // out_block, ic // in_block, kh, kw, in_block, out_block),
                      lambda o, i, y, x, ii, oo: kernel[o * out_block + oo, i * in_block + ii,
                                                        y, x], name=name)


def pack_dense_weight(weight: Tensor, block: int, name: str = "pack_dense_weight") -> Tensor:
    """``[N, K] -> [ceil(N/block), K, block]``, zero-filling past ``N`` (dense_pack)."""
    n, k = const_shape(weight)
    nb = -(-n // block)

    def f(o, kk, i):  # noqa: ANN001, ANN202
        row = o * block + i
        if n % block == 0:
            return weight[row, kk]
        return te.if_then_else(row < n, weight[tir_op.min(row, n - 1), kk],
                               te.const(0.0, weight.dtype))

    return te.compute((nb, k, block), f, name=name)


def transpose(data: Tensor, axes: Sequence[int], name: str = "transpose") -> Tensor:
    """Permute the axes: output axis ``i`` is input axis ``axes[i]``."""
    shape = const_shape(data)
    if sorted(axes) != list(range(len(shape))):
        raise TopiError(f"axes {list(axes)} are not a permutation of 0..{len(shape) - 1}")
    inverse = [list(axes).index(i) for i in range(len(shape))]
    return te.compute(tuple(shape[a] for a in axes),
                      lambda *idx: data[tuple(idx[inverse[i]] for i in range(len(shape)))],
                      name=name)


def schedule_layout(out: Tensor, target: object = None) -> Schedule:
    """Fused, vectorized and parallel copy loops."""
    s = create_schedule(out)
    schedule_elementwise(s, out, vector_lanes(None))
    return s
