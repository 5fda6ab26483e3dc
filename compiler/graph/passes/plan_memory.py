"""Static memory planning: intermediate values share one arena, reused by liveness.

Each computed value (not graph inputs or constants, which have their own storage) lives
from the step that produces it to the last step that reads it (graph outputs live to the
end).  Values are placed first-fit at aligned offsets of one arena, in production order;
a block is reused once its value is dead.  A node's output never overlaps its own inputs
(they are still read while it is written).  The plan reports the arena size (peak) against
the naive plan of one buffer per value.

**Concatenation by placement** (``placed=placed_concats(graph)``): a concatenation whose operands are each a
contiguous byte range of its result (every axis before the concat axis of size 1: a channel concat
of one image, packed or not) and aligned slices of it, every operand computed by a node of its own, read by nothing
after the concat and not a graph output, gets its block when its first operand is produced, and its
operands live inside it at their slices' offsets: their producers write straight into the
concatenated buffer and the concat itself copies nothing (:func:`placed_concats` names them; the
executor skips them).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

import numpy as np

from vdla.compiler.graph.executor import check_inputs
from vdla.compiler.graph.ir import Graph, Node
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
    placed: tuple[str, ...] = ()
    """Concatenations done by placement (their operands' producers write into their buffer)."""

    @property
    def saving(self) -> float:
        """Fraction of the naive plan's bytes the arena saves."""
        return 1.0 - self.arena_bytes / self.naive_bytes if self.naive_bytes else 0.0

    def report(self) -> str:
        return (f"{len(self.offsets)} intermediate values: arena {self.arena_bytes:,} bytes (peak) vs naive "
                f"{self.naive_bytes:,} bytes, {100 * self.saving:.1f}% saved")


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


def concat_operands(node: Node) -> tuple[list[str], int] | None:
    """The operands (outer values, in order) and axis of a ``concatenate`` node or of a ``fused`` kernel that is
    one ``concatenate``; None for any other node."""
    if node.op == "concatenate":
        return list(node.inputs), node.attrs["axis"] % len(node.type.shape)
    if node.op != "fused":
        return None
    body: Graph = node.attrs["body"]
    ops = [n for n in body.nodes if n.op != "input"]
    if len(ops) != 1 or ops[0].op != "concatenate":
        return None
    outer = dict(zip((p.name for p in body.input_nodes), node.inputs))
    if any(i not in outer for i in ops[0].inputs):
        return None
    return [outer[i] for i in ops[0].inputs], ops[0].attrs["axis"] % len(ops[0].type.shape)


def placed_concats(graph: Graph, alignment: int = 64,
                   producers: Set[str] | None = None) -> dict[str, tuple[tuple[str, int], ...]]:
    """The concatenations done by placement (see the module doc): concat name -> (operand, byte offset in
    the concat's buffer) per operand.  ``producers``: the only nodes whose outputs may be placed (e.g. the
    VDLA kernels, which write exactly their bytes)."""
    steps = [n for n in graph.nodes if n.op not in ("input", "constant")]
    index = {n.name: k for k, n in enumerate(steps)}
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    claimed: set[str] = set()
    for k, n in enumerate(steps):
        found = concat_operands(n)
        if found is None:
            continue
        operands, axis = found
        if any(d != 1 for d in n.type.shape[:axis]) or len(set(operands)) != len(operands):
            continue
        if any(v not in index or v in claimed or v in out or v in graph.outputs or
               (producers is not None and v not in producers) for v in operands):
            continue  # a graph input, a constant, an operand of another placed concat, or read after the model
        if any(max(index[c] for c in graph.consumers[v]) > k for v in operands):
            continue  # read after the concat: the concat's consumers may overwrite nothing, but keep it simple
        offsets, at = [], 0
        for v in operands:
            if at % alignment:
                break
            offsets.append((v, at))
            at += steps[index[v]].type.nbytes
        else:
            out[n.name] = tuple(offsets)
            claimed.update(operands)
    return out


def plan_memory(graph: Graph, alignment: int = 64,
                placed: Mapping[str, tuple[tuple[str, int], ...]] | None = None) -> MemoryPlan:
    """Plan the intermediate values of ``graph`` into one reused arena (see the module doc); ``placed``:
    the concatenations done by placement (:func:`placed_concats`)."""
    steps = [n for n in graph.nodes if n.op not in ("input", "constant")]
    placed = placed or {}
    inside = {v: (concat, off) for concat, parts in placed.items() for v, off in parts}
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
    by_name = {n.name: n for n in steps}
    for k, n in enumerate(steps):
        # Values last read before this step are dead; those read by this step stay live while it writes.
        for v in [v for v in live if last_use[v] < k]:
            del live[v]
        naive += _align(max(n.type.nbytes, 1), alignment)
        if n.name in placed:  # its operands are already in place: nothing to allocate, nothing to copy
            sizes[n.name] = n.type.nbytes
            continue
        target = n if n.name not in inside else by_name[inside[n.name][0]]
        if target.name not in offsets:  # the first operand of a placed concat allocates the concat's block
            size = _align(max(target.type.nbytes, 1), alignment)
            offset = 0
            for start, length in sorted(live.values()):
                if offset + size <= start:
                    break
                offset = max(offset, start + length)
            live[target.name] = (offset, size)
            offsets[target.name], sizes[target.name] = offset, target.type.nbytes
            arena = max(arena, offset + size)
        if n.name in inside:
            offsets[n.name], sizes[n.name] = offsets[target.name] + inside[n.name][1], n.type.nbytes
    return MemoryPlan(graph, offsets, sizes, arena, naive, alignment, tuple(placed))


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
            if n.name in plan.placed:  # no copy: the operands must already be there
                off, size = plan.offsets[n.name], plan.sizes[n.name]
                if not np.array_equal(arena[off:off + size].view(n.type.dtype).reshape(n.type.shape), value):
                    raise AssertionError(f"placed concat {n.name!r}: its operands are not in place")
            off, size = plan.offsets[n.name], plan.sizes[n.name]
            slot = arena[off:off + size].view(n.type.dtype).reshape(n.type.shape)
            slot[...] = value
            env[n.name] = slot
    return [env[o].copy() for o in graph.outputs]
