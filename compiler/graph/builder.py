"""Building graphs: :class:`GraphBuilder` creates typed nodes through the operator registry.

Every node is created through :func:`make_node`, so its type is always the one the
operator's relation infers; passes rebuild graphs with the same builder.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from vdla.compiler.graph.errors import GraphError, TypeInferenceError
from vdla.compiler.graph.ir import ConstValue, Graph, Node, TensorType
from vdla.compiler.graph.ops import get_op


def make_node(name: str, op: str, inputs: Sequence[str], input_types: Sequence[TensorType],
              attrs: Mapping[str, Any]) -> Node:
    """A node whose attributes are validated and whose type is inferred by ``op``'s relation."""
    opdef = get_op(op)
    frozen = opdef.make_attrs(attrs)
    try:
        out = opdef.infer(input_types, frozen)
    except TypeInferenceError as exc:
        raise TypeInferenceError(f"node {name!r}: {exc}") from None
    return Node(name, op, tuple(inputs), frozen, out)


class GraphBuilder:
    """Accumulates nodes in topological order and hands out unique value names."""

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._nodes: dict[str, Node] = {}
        self._reserved = set(reserved)
        self._counters: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        """A name not used yet, derived from ``base``."""
        if base not in self._nodes and base not in self._reserved:
            return base
        k = self._counters.get(base, 0)
        while f"{base}_{k}" in self._nodes or f"{base}_{k}" in self._reserved:
            k += 1
        self._counters[base] = k + 1
        return f"{base}_{k}"

    def __contains__(self, name: str) -> bool:
        return name in self._nodes

    def type_of(self, name: str) -> TensorType:
        return self.node(name).type

    def node(self, name: str) -> Node:
        try:
            return self._nodes[name]
        except KeyError:
            raise GraphError(f"no value named {name!r} has been built yet") from None

    def const_value(self, name: str) -> np.ndarray | None:
        """The array of a constant value, or None when ``name`` is computed at run time."""
        n = self.node(name)
        return n.value if n.op == "constant" else None

    def add(self, node: Node) -> str:
        """Add an already built node (its inputs must exist)."""
        if node.name in self._nodes:
            raise GraphError(f"duplicate node name {node.name!r}")
        missing = [i for i in node.inputs if i not in self._nodes]
        if missing:
            raise GraphError(f"node {node.name!r} reads {missing}, which are not built yet")
        self._nodes[node.name] = node
        return node.name

    def input(self, name: str, shape: Sequence[int], dtype: str) -> str:
        return self.add(make_node(self.fresh(name), "input", (), (), {"shape": tuple(shape), "dtype": dtype}))

    def const(self, value: np.ndarray | Any, name: str = "const") -> str:
        return self.add(make_node(self.fresh(name), "constant", (), (), {"value": ConstValue(value)}))

    def op(self, op: str, inputs: Sequence[str], name: str | None = None, **attrs: Any) -> str:
        """Add ``op`` applied to ``inputs``; returns the new value's name."""
        types = [self.type_of(i) for i in inputs]
        return self.add(make_node(self.fresh(name or op), op, inputs, types, attrs))

    def build(self, outputs: Sequence[str]) -> Graph:
        return prune(Graph(tuple(self._nodes.values()), tuple(outputs)))


def prune(graph: Graph) -> Graph:
    """Drop nodes no output depends on; graph inputs always stay (they are the interface)."""
    live: set[str] = set(graph.outputs)
    for n in reversed(graph.nodes):
        if n.name in live:
            live.update(n.inputs)
    kept = tuple(n for n in graph.nodes if n.name in live or n.op == "input")
    return graph if len(kept) == len(graph.nodes) else Graph(kept, graph.outputs)
