"""Layer normalization over the last axis, fp32: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

The row statistics are lane-partial vector reductions (:mod:`.reduction`) with fp32 accumulators.
Both passes work on the row minus its first element (``x - x[0]`` is exact for values of one
magnitude), so a mean that is large against the spread costs no precision: the first pass gives
the shifted mean ``m``, the second the mean of ``(x - x[0] - m)^2`` (never ``E[x^2] - E[x]^2``).
Everything is computed inside the output's row loop, so a row is read from cache after its first
pass; rows run in parallel when the tensor is big.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from ..tir.ir import PrimExpr
from .reduction import lane_reduce, schedule_lane_reduce
from .utils import PARALLEL_MIN_ELEMENTS, TopiError, const_shape, vector_lanes


def layer_norm(x: Tensor, gamma: Tensor, beta: Tensor | None, eps: float, name: str = "layer_norm",
               lanes: int | None = None) -> Tensor:
    """Layer normalization of fp32 ``x`` over its last axis; ``gamma`` / ``beta`` are ``[n]``."""
    shape = const_shape(x)
    n = shape[-1]
    for t, what in ((gamma, "gamma"), (beta, "beta")):
        if t is not None and const_shape(t) != (n,):
            raise TopiError(f"layer_norm: {what} must have shape ({n},) (the last axis), got {const_shape(t)}")
    if x.dtype != "float32":
        raise TopiError(f"layer_norm is implemented for float32, got {x.dtype}")
    lanes = lanes or vector_lanes(None)
    rows = shape[:-1]
    inv_n = te.const(1.0 / n, "float32")
    shift = te.compute(rows, lambda *r: x[r + (0,)], name=f"{name}_shift")
    total = lane_reduce(rows, n, lanes, lambda r, j: x[r + (j,)] - shift[r], "sum", f"{name}_sum")
    mean = te.compute(rows, lambda *r: total[r] * inv_n, name=f"{name}_mean")

    def centered(r: tuple, j: PrimExpr) -> PrimExpr:
        return (x[r + (j,)] - shift[r]) - mean[r]

    def dev2(r: tuple, j: PrimExpr) -> PrimExpr:
        d = centered(r, j)
        return d * d

    sq = lane_reduce(rows, n, lanes, dev2, "sum", f"{name}_sq")
    one = te.const(1.0, "float32")
    rstd = te.compute(rows, lambda *r: one / te.sqrt(sq[r] * inv_n + te.const(eps, "float32")), name=f"{name}_rstd")

    def norm(*i: PrimExpr) -> PrimExpr:
        y = centered(i[:-1], i[-1]) * rstd[i[:-1]] * gamma[i[-1]]
        return y + beta[i[-1]] if beta is not None else y

    return te.compute(shape, norm, name=name)


def _input(t: Tensor, name: str) -> Tensor:
    return next(i for i in t.op.input_tensors() if i.name == name)


@dataclass(frozen=True)
class LayerNormKnobs:
    """``vector``: lanes of the normalization stage; ``parallel`` over rows."""

    vector: int
    parallel: bool = True


def schedule_layer_norm(out: Tensor, knobs: LayerNormKnobs | None = None, s: Schedule | None = None,
                        target: Target | None = None) -> Schedule:
    """Row loop outermost with both statistics computed inside it; the normalization vectorized."""
    s = s or create_schedule(out)
    knobs = knobs or LayerNormKnobs(vector=vector_lanes(target))
    shift, mean, rstd = (_input(out, f"{out.name}_{what}") for what in ("shift", "mean", "rstd"))
    sq, total = _input(rstd, f"{out.name}_sq"), _input(mean, f"{out.name}_sum")
    shape = const_shape(out)
    loops = s.get_loops(out)
    if len(loops) == 1:
        raise TopiError("layer_norm needs at least one row axis before the normalized one")
    row = s.fuse(*loops[:-1]) if len(loops) > 2 else loops[0]
    if shape[-1] >= knobs.vector:
        _, ci = s.split(loops[-1], factor=knobs.vector)
        s.vectorize(ci)
    # Consumers first, so each producer lands inside the row loop ahead of its reader.
    s.compute_at(rstd, row)
    schedule_lane_reduce(s, sq, row)
    s.compute_at(mean, row)
    schedule_lane_reduce(s, total, row)
    s.compute_at(shift, row)
    if knobs.parallel and math.prod(shape) >= PARALLEL_MIN_ELEMENTS:
        s.parallel(row)
    s.compact_buffers()  # a row's statistics in a few registers' worth of stack, not full-size buffers
    return s
