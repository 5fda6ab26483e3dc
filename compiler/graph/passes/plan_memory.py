"""Static memory planning: intermediate values share one arena, reused by liveness.

Each computed value (not graph inputs or constants, which have their own storage) lives
from the step that produces it to the last step that reads it (graph outputs live to the
end).  Values are placed first-fit at aligned offsets of one arena, in production order;
a block is reused once its value is dead.  A node's output never overlaps its own inputs
(they are still read while it is written).  The plan reports the arena size (peak) against
the naive plan of one buffer per value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from vdla.compiler.graph.executor import check_inputs
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.ops import get_op


@dataclass(frozen=True)
class MemoryPlan:
    """Where each intermediate value lives: ``offsets[name]`` bytes into an arena of ``arena_bytes``."""

    graph: Graph
    offsets: Mapping[str, int]
    sizes: Mapping[str, int]
    arena_bytes: int
    naive_bytes: int
    alignment: int

    @property
    def saving(self) -> float:
        """Fraction of the naive plan's bytes the arena saves."""
        return 1.0 - self.arena_bytes / self.naive_bytes if self.naive_bytes else 0.0

    def report(self) -> str:
        return (f"{len(self.offsets)} intermediate values: arena {self.arena_bytes:,} bytes (peak) vs naive "
                f"{self.naive_bytes:,} bytes, {100 * self.saving:.1f}% saved")


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def plan_memory(graph: Graph, alignment: int = 64) -> MemoryPlan:
    """Plan the intermediate values of ``graph`` into one reused arena (see the module doc)."""
    steps = [n for n in graph.nodes if n.op not in ("input", "constant")]
    index = {n.name: k for k, n in enumerate(steps)}
    last_use = {n.name: index[n.name] for n in steps}
    for k, n in enumerate(steps):
        for i in n.inputs:
            if i in last_use:
                last_use[i] = max(last_use[i], k)
    for o in graph.outputs:
        if o in last_use:
            last_use[o] = len(steps)
    live: dict[str, tuple[int, int]] = {}  # value -> (offset, aligned size)
    offsets, sizes = {}, {}
    arena = naive = 0
    for k, n in enumerate(steps):
        # Values last read before this step are dead; those read by this step stay live while it writes.
        for v in [v for v in live if last_use[v] < k]:
            del live[v]
        size = _align(max(n.type.nbytes, 1), alignment)
        offset = 0
        for start, length in sorted(live.values()):
            if offset + size <= start:
                break
            offset = max(offset, start + length)
        live[n.name] = (offset, size)
        offsets[n.name], sizes[n.name] = offset, n.type.nbytes
        arena = max(arena, offset + size)
        naive += size
    return MemoryPlan(graph, offsets, sizes, arena, naive, alignment)


def run_planned(plan: MemoryPlan, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Run the graph with every intermediate value stored in its planned arena slot.

    A wrong plan (two live values sharing bytes) corrupts the results, so comparing this
    against :func:`run_graph` checks the plan.
    """
    graph = plan.graph
    arena = np.zeros(plan.arena_bytes, np.uint8)
    env: dict[str, np.ndarray] = dict(check_inputs(graph, inputs))
    for n in graph.nodes:
        if n.op == "constant":
            env[n.name] = n.value
        elif n.op != "input":
            value = get_op(n.op).reference([env[i] for i in n.inputs], n.attrs)
            off, size = plan.offsets[n.name], plan.sizes[n.name]
            slot = arena[off:off + size].view(n.type.dtype).reshape(n.type.shape)
            slot[...] = value
            env[n.name] = slot
    return [env[o].copy() for o in graph.outputs]
