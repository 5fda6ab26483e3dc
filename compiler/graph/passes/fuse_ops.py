"""Operator fusion by the four pattern categories (TVM paper, section 3).

Rules, applied greedily in topological order:

1. injective ops fuse into the output of a complex-out-fusable op (conv2d + bias + relu);
2. chains (and trees) of injective ops fuse into one injective group;
3. a reduction fuses with the injective ops at its input (relu + max_pool);

opaque ops stay alone, and nothing fuses across a value that another group (or the graph
output) also reads, so every group has exactly one output and its intermediate values
never reach memory.  A conv's (any anchor's) value read twice inside one group is private too:
SiLU and HardSwish (``x * sigmoid(x)``, ``x * hardsigmoid(x)``) fuse with the conv producing
``x``; a purely injective value read twice stays a boundary (inlining it into both readers would
duplicate its whole expression).  A group has at most one anchor (complex-out-fusable or reduction op).

Every computing node of the result is a ``fused`` node whose ``body`` is the group's
sub-graph (constants stay outside as inputs, so parameters remain bindable); a
``fused`` node is one kernel for the code generators.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.ops import OpPattern, get_op
from vdla.compiler.graph.passes.rewrite import Rewriter


@dataclass
class _Group:
    pattern: OpPattern
    members: list[str] = field(default_factory=list)


def _pattern(node: Node) -> OpPattern:
    if node.op == "fused":
        return OpPattern[node.attrs["pattern"]] if node.attrs.get("target") is None else OpPattern.OPAQUE
    return get_op(node.op).pattern


def _can_absorb(consumer: OpPattern, producer_group: OpPattern) -> bool:
    if consumer == OpPattern.INJECTIVE:
        return producer_group in (OpPattern.INJECTIVE, OpPattern.COMPLEX_OUT_FUSABLE)  # rules 1 and 2
    if consumer == OpPattern.REDUCTION:
        return producer_group == OpPattern.INJECTIVE  # rule 3
    return False


def fusion_groups(graph: Graph) -> list[list[str]]:
    """The fusion groups (lists of node names in topological order), by the rules above."""
    group_of: dict[str, _Group] = {}
    outputs = set(graph.outputs)
    for n in graph.nodes:
        if n.op in ("input", "constant"):
            continue
        pat = _pattern(n)
        merged: list[_Group] = []
        inside = {n.name}
        has_anchor = False
        pending = list(dict.fromkeys(n.inputs))
        progress = True
        while progress:  # absorbing one producer can make another's value private (a diamond)
            progress = False
            for i in list(pending):
                g = group_of.get(i)
                # The producer's value must be private: read only by n or, when it comes from an anchor
                # (whose result is in a buffer, so a second read recomputes at most its epilogue), by n
                # and the groups merged into it.
                readers = set(graph.consumers[i])
                private = readers == {n.name} or (g is not None and g.pattern != OpPattern.INJECTIVE
                                                  and readers <= inside)
                if g is None or any(g is m for m in merged) or i in outputs or not private or not _can_absorb(
                        pat, g.pattern):
                    continue
                if g.pattern == OpPattern.COMPLEX_OUT_FUSABLE:
                    if has_anchor:
                        continue  # one anchor per group: a second conv output stays a group input
                    has_anchor = True
                merged.append(g)
                inside.update(g.members)
                pending.remove(i)
                progress = True
        anchor = next((g.pattern for g in merged if g.pattern != OpPattern.INJECTIVE), None)
        group = _Group(pat if pat != OpPattern.INJECTIVE else (anchor or pat))
        for g in merged:
            group.members.extend(g.members)
            for m in g.members:
                group_of[m] = group
        group.members.append(n.name)
        group_of[n.name] = group
    order = {n.name: k for k, n in enumerate(graph.nodes)}
    unique = {id(g): g for g in group_of.values()}.values()
    return sorted((sorted(g.members, key=order.__getitem__) for g in unique), key=lambda ms: order[ms[-1]])


def group_body(graph: Graph, members: list[str]) -> tuple[Graph, list[str]]:
    """The group's sub-graph and the outer values it reads (in order of first use)."""
    inside = set(members)
    params: list[str] = []
    for m in members:
        params.extend(i for i in graph.node(m).inputs if i not in inside and i not in params)
    b = GraphBuilder()
    for p in params:
        t = graph.node(p).type
        b.input(p, t.shape, t.dtype)
    for m in members:
        node = graph.node(m)
        b.add(Node(node.name, node.op, node.inputs, node.attrs, node.type))
    return b.build([members[-1]]), params


def fuse_ops(graph: Graph) -> Graph:
    """Group operators by the fusion rules; every computing node becomes a ``fused`` node."""
    groups = fusion_groups(graph)
    last = {ms[-1]: ms for ms in groups}
    rw = Rewriter(graph)
    for n in graph.nodes:
        if n.op in ("input", "constant"):
            rw.copy(n)
        elif n.name in last:
            members = last[n.name]
            if len(members) == 1 and n.op == "fused":
                rw.copy(n)  # already a kernel (e.g. placed by partition)
                continue
            body, params = group_body(graph, members)
            anchor = max((_pattern(graph.node(m)) for m in members), default=OpPattern.INJECTIVE)
            rw.emit("fused", [rw[p] for p in params], n.name, body=body, pattern=anchor.name)
    return rw.finish()
