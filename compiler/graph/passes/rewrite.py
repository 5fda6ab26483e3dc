"""The common shape of a pass: walk the old graph in order and build a new one.

:class:`Rewriter` keeps the old-name -> new-name map, so a pass only says what to emit
for the nodes it changes; every other node is copied with its inputs renamed (and its
type re-inferred, which re-checks the pass's output).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vdla.compiler.graph.builder import GraphBuilder, make_node
from vdla.compiler.graph.ir import Graph, Node


class Rewriter:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.builder = GraphBuilder(reserved=(n.name for n in graph.nodes))
        self.names: dict[str, str] = {}

    def __getitem__(self, old: str) -> str:
        """The new value standing for the old value ``old``."""
        return self.names[old]

    def bind(self, old: str, new: str) -> None:
        self.names[old] = new

    def copy(self, node: Node, inputs: Sequence[str] | None = None, **attr_changes: Any) -> str:
        """Re-emit ``node`` (same name, op, attributes) reading ``inputs`` (default: its renamed inputs)."""
        new_inputs = list(inputs) if inputs is not None else [self.names[i] for i in node.inputs]
        attrs = dict(node.attrs)
        attrs.update(attr_changes)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        types = [self.builder.type_of(i) for i in new_inputs]
        name = self._own_name(node.name)
        new = self.builder.add(make_node(name, node.op, new_inputs, types, attrs))
        self.names[node.name] = new
        return new

    def emit(self, op: str, inputs: Sequence[str], replaces: str, **attrs: Any) -> str:
        """Emit a new ``op`` node that takes the place of the old value ``replaces`` (and its name)."""
        types = [self.builder.type_of(i) for i in inputs]
        new = self.builder.add(make_node(self._own_name(replaces), op, inputs, types, attrs))
        self.names[replaces] = new
        return new

    def _own_name(self, old: str) -> str:
        # Keep the old name when it is still free, so printed graphs stay comparable across passes.
        if old not in self.builder:
            return old
        return self.builder.fresh(old)

    def finish(self) -> Graph:
        return self.builder.build([self.names[o] for o in self.graph.outputs])
