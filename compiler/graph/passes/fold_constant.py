"""Constant folding: evaluate every node whose inputs are all constants, once, at compile time."""

from __future__ import annotations

from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.ops import get_op
from vdla.compiler.graph.passes.rewrite import Rewriter


def fold_constant(graph: Graph) -> Graph:
    """Replace each node computable from constants alone by a constant; unused constants are dropped."""
    rw = Rewriter(graph)
    b = rw.builder
    for n in graph.nodes:
        if n.op == "input" or n.op == "constant":
            rw.copy(n)
            continue
        values = [b.const_value(rw[i]) for i in n.inputs]
        if n.inputs and all(v is not None for v in values):
            folded = get_op(n.op).reference(values, n.attrs)
            rw.bind(n.name, b.const(folded, n.name))
        else:
            rw.copy(n)
    return rw.finish()
