"""Softmax over the last axis: ``exp(x - max) / sum(exp(x - max))``, fp32.

Subtracting the row maximum first keeps every exponent <= 0 (no overflow, the largest term is
exactly 1), so the result is numerically stable for any input range.  The row max and the row
sum are lane-partial vector reductions (:mod:`.reduction`); the exponentials use the vector
``exp`` of the code generator; the normalization multiplies by one reciprocal per row.  Every
stage runs inside the output's row loop, so a row stays in cache, and rows run in parallel.
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


def softmax(x: Tensor, axis: int = -1, name: str = "softmax", lanes: int | None = None) -> Tensor:
    """Softmax of ``x`` along its last axis."""
    shape = const_shape(x)
    if axis % len(shape) != len(shape) - 1:
        raise TopiError(f"softmax is implemented over the last axis (got axis={axis}); "
                        f"transpose the reduced axis last first")
    lanes = lanes or vector_lanes(None)
    n = shape[-1]
    # A 1-D input is one row: its statistics live in a 1-element buffer.
    rows = shape[:-1] or (1,)

    def row_of(i: tuple) -> tuple:
        return i[:-1] if len(shape) > 1 else (0,)

    def at(r: tuple, j: PrimExpr) -> tuple:
        return (r if len(shape) > 1 else ()) + (j,)

    mx = lane_reduce(rows, n, lanes, lambda r, j: x[at(r, j)], "max", f"{name}_max")
    ex = te.compute(shape, lambda *i: te.exp(x[i] - mx[row_of(i)]), name=f"{name}_exp")
    sm = lane_reduce(rows, n, lanes, lambda r, j: ex[at(r, j)], "sum", f"{name}_sum")
    one = te.const(1.0, "float32")
    inv = te.compute(rows, lambda *r: one / sm[r], name=f"{name}_inv")
    return te.compute(shape, lambda *i: ex[i] * inv[row_of(i)], name=name)


@dataclass(frozen=True)
class SoftmaxKnobs:
    """``vector``: lanes of the element-wise stages; ``parallel`` over rows."""

    vector: int
    parallel: bool = True


def _input(t: Tensor, name: str) -> Tensor:
    return next(i for i in t.op.input_tensors() if i.name == name)


def schedule_softmax(out: Tensor, knobs: SoftmaxKnobs | None = None, s: Schedule | None = None,
                     target: Target | None = None) -> Schedule:
    s = s or create_schedule(out)
    knobs = knobs or SoftmaxKnobs(vector=vector_lanes(target))
    ex, inv = _input(out, f"{out.name}_exp"), _input(out, f"{out.name}_inv")
    sm, mx = _input(inv, f"{out.name}_sum"), _input(ex, f"{out.name}_max")
    shape = const_shape(out)
    vec = shape[-1] >= knobs.vector
    loops = s.get_loops(out)
    if len(loops) == 1:  # a single row: the stages stay at the root
        for total in (sm, mx):
            part = _input(total, f"{total.name}_lanes")
            lane, k = s.get_loops(part)[-2:]
            s.reorder(k, lane)
            s.vectorize(lane)
        for stage in (out, ex):
            if vec:
                _, inner = s.split(s.get_loops(stage)[-1], factor=knobs.vector)
                s.vectorize(inner)
        return s
    row = s.fuse(*loops[:-1]) if len(loops) > 2 else loops[0]
    if vec:
        _, ci = s.split(loops[-1], factor=knobs.vector)
        s.vectorize(ci)
    # Consumers first: each producer lands inside the row loop ahead of its reader.
    s.compute_at(inv, row)
    schedule_lane_reduce(s, sm, row)
    s.compute_at(ex, row)
    if vec:
        _, ei = s.split(s.get_loops(ex)[-1], factor=knobs.vector)
        s.vectorize(ei)
    schedule_lane_reduce(s, mx, row)
    if knobs.parallel and math.prod(shape) >= PARALLEL_MIN_ELEMENTS:
        s.parallel(row)
    s.compact_buffers()  # a row's exponentials and statistics stay small, not full-size buffers
    return s
