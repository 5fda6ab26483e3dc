"""Row reductions at full vector width: lane-partial results, then one horizontal step.

A row of ``n`` values is read as ``ceil(n / lanes)`` vectors; lane ``l`` combines the elements
``l, l + lanes, l + 2 lanes, ...`` (one register of partials, fp32 in every lane), and a short
second stage combines the ``lanes`` partials.  LayerNorm's statistics and softmax's max and sum
use it; the plain scalar reduction would serialize every add on one register.
"""
from __future__ import annotations

from collections.abc import Callable

from .. import te
from ..schedule import Schedule
from ..te import Tensor
from ..tir import op as tir
from ..tir.ir import PrimExpr

#: Lane-partial stages are named ``<name>_lanes``.
LANES_SUFFIX = "_lanes"


def lane_reduce(rows: tuple[int, ...], n: int, lanes: int, value: Callable[[tuple, PrimExpr], PrimExpr],
                combine: str, name: str) -> Tensor:
    """``combine`` (``"sum"`` or ``"max"``) of the finite ``value(row, j)`` over ``j < n`` per row, in two
    stages: lane partials ``[*rows, lanes]`` (lane ``l`` takes ``j = k * lanes + l``), then their reduction
    ``[*rows]``.  :func:`schedule_lane_reduce` vectorizes the first stage over lanes."""
    chunks = -(-n // lanes)
    k = te.reduce_axis(chunks, "k")
    reducer = te.sum if combine == "sum" else te.max

    def partial(*ri: PrimExpr) -> PrimExpr:
        r, lane = ri[:-1], ri[-1]
        j = k * lanes + lane
        if n % lanes == 0:
            return reducer(value(r, j), axis=k)
        # Lanes past the row's end read its last element again (in bounds): a max is unchanged, a sum
        # takes it times 0.  A select whose branches load would be split into one branch per lane.
        v = value(r, tir.min(j, n - 1))
        if combine == "max":
            return reducer(v, axis=k)
        inside = tir.if_then_else(j < n, te.const(1.0, "float32"), te.const(0.0, "float32"))
        return reducer(v * inside, axis=k)

    part = te.compute(rows + (lanes,), partial, name=f"{name}{LANES_SUFFIX}")
    lane = te.reduce_axis(lanes, "l")
    return te.compute(rows, lambda *r: reducer(part[r + (lane,)], axis=lane), name=name)


def schedule_lane_reduce(s: Schedule, total: Tensor, row: object) -> None:
    """Place a :func:`lane_reduce` pair at ``row`` (a loop of the consumer), its partials vectorized."""
    part = total.op.input_tensors()[0]
    s.compute_at(total, row)
    s.compute_at(part, row)
    lane, k = s.get_loops(part)[-2:]
    s.reorder(k, lane)
    s.vectorize(lane)
