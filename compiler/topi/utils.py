"""Helpers shared by the operator schedules."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


from vdla_hw.errors import UnsupportedError
from ..codegen.llvm import Target, current_target
from ..schedule import Schedule
from ..te import Tensor
from ..tir.ir import IntImm, PrimExpr, Var

#: Below this many output elements a parallel loop costs more than it saves.
PARALLEL_MIN_ELEMENTS = 1 << 15


class TopiError(UnsupportedError):
    """Operator arguments are inconsistent (shapes, layouts, knob values)."""


def const_shape(t: Tensor | Sequence[PrimExpr]) -> tuple[int, ...]:
    """The constant shape of a tensor; operators here need constant shapes."""
    shape = t.shape if isinstance(t, Tensor) else t
    if not all(isinstance(s, IntImm) for s in shape):
        name = t.name if isinstance(t, Tensor) else "shape"
        raise TopiError(f"{name} has a symbolic shape {[str(s) for s in shape]}; the CPU "
                        f"operators need constant shapes")
    return tuple(int(s.value) for s in shape)


def input_named(t: Tensor, name: str) -> Tensor:
    """The tensor called ``name`` among those ``t``'s operation reads (a schedule finding its stages)."""
    found = [i for i in t.op.input_tensors() if i.name == name]
    if not found:
        raise TopiError(f"{t.name} reads no tensor named {name!r}: not the operator this schedule expects")
    return found[0]


def largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of ``n`` not above ``at_most`` (at least 1)."""
    for d in range(min(n, max(1, at_most)), 0, -1):
        if n % d == 0:
            return d
    return 1


def vector_lanes(target: Target | None, dtype_bits: int = 32) -> int:
    """Lanes of one vector register of the target (by default the one being compiled for,
    :func:`~vdla.compiler.codegen.llvm.current_target`)."""
    return (target or current_target()).vector_lanes(dtype_bits)


def vector_registers(target: Target | None) -> int:
    """Architectural vector registers of the target (by default the one being compiled for)."""
    return (target or current_target()).vector_registers


@dataclass(frozen=True)
class ElementwiseKnobs:
    """The knobs of :func:`schedule_elementwise`: ``vector`` lanes of the innermost axis (a multiple
    or a fraction of the register's lanes) and whether big stages run their outer loop in parallel."""

    vector: int
    parallel: bool = True


def schedule_elementwise(s: Schedule, t: Tensor | str, lanes: int,
                         parallel: bool = True) -> None:
    """Vectorize the innermost axis by ``lanes`` (a shorter axis whole; a tail stays a
    scalar loop), fuse the outer axes and run them in parallel when the stage is big.

    Only the innermost axis is split, so index expressions stay affine in the vector
    lane (fusing it with outer axes would put ``//`` and ``%`` on every lane)."""
    loops = s.get_loops(t)
    extents = _extents(s, t)
    *outer, last = loops
    if lanes > 1 and extents[-1] > lanes:
        last_o, last_i = s.split(last, factor=lanes)
        s.vectorize(last_i)
    elif lanes > 1 and extents[-1] > 1:
        s.vectorize(last)
    if not outer:
        return
    fused: Var = s.fuse(*outer) if len(outer) > 1 else outer[0]
    if parallel and math.prod(extents) >= PARALLEL_MIN_ELEMENTS:
        s.parallel(fused)


def _extents(s: Schedule, t: Tensor | str) -> list[int]:
    from ..schedule.compute_location import get_block
    from ..schedule.tree import loops_of
    _, path = get_block(s.func, s.block_name(t))
    out = []
    for loop in loops_of(path):
        if not isinstance(loop.extent, IntImm):
            raise TopiError(f"loop {loop.loop_var.name} has a symbolic extent")
        out.append(int(loop.extent.value))
    return out
