"""Softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``.

Four stages (row max, shifted exponentials, row sum, normalization); the schedule
computes the first three inside the output's row loop, so one row stays in cache, and
runs rows in parallel.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from .utils import PARALLEL_MIN_ELEMENTS, TopiError, const_shape, vector_lanes


def softmax(x: Tensor, axis: int = -1, name: str = "softmax") -> Tensor:
    """Softmax of ``x`` along its last axis."""
    shape = const_shape(x)
    if axis % len(shape) != len(shape) - 1:
        raise TopiError(f"softmax is implemented over the last axis (got axis={axis}); "
                        f"transpose the reduced axis last first")
    n = shape[-1]
    rows = shape[:-1]
    k1, k2 = te.reduce_axis(n, "k1"), te.reduce_axis(n, "k2")
    mx = te.compute(rows, lambda *r: te.max(x[r + (k1,)], axis=k1), name=f"{name}_max")
    ex = te.compute(shape, lambda *i: te.exp(x[i] - mx[i[:-1]]), name=f"{name}_exp")
    sm = te.compute(rows, lambda *r: te.sum(ex[r + (k2,)], axis=k2), name=f"{name}_sum")
    return te.compute(shape, lambda *i: ex[i] / sm[i[:-1]], name=name)


@dataclass(frozen=True)
class SoftmaxKnobs:
    """``vector``: lanes of the element-wise stages; ``parallel`` over rows."""

    vector: int
    parallel: bool = True


def schedule_softmax(out: Tensor, knobs: SoftmaxKnobs | None = None, s: Schedule | None = None,
                     target: Target | None = None) -> Schedule:
    s = s or create_schedule(out)
    knobs = knobs or SoftmaxKnobs(vector=vector_lanes(target))
    ex, sm = out.op.input_tensors()
    mx = ex.op.input_tensors()[1]
    shape = const_shape(out)
    loops = s.get_loops(out)
    vec = shape[-1] >= knobs.vector
    if len(loops) == 1:  # a single row: the stages stay at the root
        for stage in (out, ex):
            if vec:
                _, inner = s.split(s.get_loops(stage)[-1], factor=knobs.vector)
                s.vectorize(inner)
        return s
    row = s.fuse(*loops[:-1]) if len(loops) > 2 else loops[0]
    if vec:
        _, ci = s.split(loops[-1], factor=knobs.vector)
        s.vectorize(ci)
    for stage in (sm, ex, mx):  # consumers first: each lands inside the row loop
        s.compute_at(stage, row)
    if vec:
        _, ei = s.split(s.get_loops(ex)[-1], factor=knobs.vector)
        s.vectorize(ei)
    if knobs.parallel and math.prod(shape) >= PARALLEL_MIN_ELEMENTS:
        s.parallel(row)
    return s
