"""Ordered pass pipelines per target and ``lower``.

Every pass is a pure ``PrimFunc -> PrimFunc`` function; the lists below are the whole
lowering for a target, in order, so it can be read, tested and changed in one place.
"""
from __future__ import annotations

from typing import Callable, Protocol, Union

from .ir import PrimFunc
from .transform import (align_storage, flatten_storage, inject_double_buffer, lower_blocks,
                        lower_virtual_thread, partition_loop, remove_no_op, simplify,
                        unroll_loop, vectorize_loop)

Pass = Callable[[PrimFunc], PrimFunc]

#: Output contract for "llvm": no blocks, 1-D buffers, only serial/parallel loops, vector
#: code as Ramp/Broadcast/vector-typed nodes.
PIPELINES: dict[str, list[Pass]] = {
    "llvm": [
        lower_blocks,          # blocks -> loops, hoisted reduction init, guards
        align_storage,         # before flattening: sets padded strides
        inject_double_buffer,  # before flattening: adds a leading parity dimension
        simplify,
        partition_loop,        # split off tails / borders so hot loops are guard-free
        simplify,
        flatten_storage,
        simplify,
        vectorize_loop,
        unroll_loop,
        lower_virtual_thread,
        simplify,
        remove_no_op,
    ],
}


class _HasFunc(Protocol):
    @property
    def func(self) -> PrimFunc: ...


def lower(func: Union[PrimFunc, _HasFunc], target: str = "llvm") -> PrimFunc:
    """Run the target's pipeline on a PrimFunc (or on a Schedule's current program)."""
    f = func if isinstance(func, PrimFunc) else func.func
    if target not in PIPELINES:
        raise ValueError(f"no pass pipeline for target {target!r}; known: {sorted(PIPELINES)}")
    for p in PIPELINES[target]:
        f = p(f)
    return f
