"""The reference executor: runs a graph node by node with the operators' NumPy references.

It is the semantics every pass is tested against: a pass is correct when the graph it
returns computes the same outputs (bit-exactly for integer graphs) as the graph it got.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from vdla.compiler.graph.errors import GraphError
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.ops import get_op


def check_inputs(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validate the bound inputs against the graph's input types; returns them as arrays."""
    expected = {n.name: n.type for n in graph.input_nodes}
    unknown = sorted(set(inputs) - set(expected))
    missing = sorted(set(expected) - set(inputs))
    if unknown or missing:
        raise GraphError(f"graph inputs are {sorted(expected)}; missing {missing}, unknown {unknown}")
    bound = {}
    for name, t in expected.items():
        arr = np.asarray(inputs[name])
        if arr.shape != t.shape or arr.dtype.name != t.dtype:
            raise GraphError(f"input {name!r} must be {t}, got {arr.dtype.name}[{', '.join(map(str, arr.shape))}]")
        bound[name] = arr
    return bound


def run_all(graph: Graph, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every node's value, by name (used by calibration and by pass tests)."""
    values: dict[str, np.ndarray] = dict(check_inputs(graph, inputs))
    for n in graph.nodes:
        if n.op != "input":
            values[n.name] = _evaluate(n, values)
    return values


def _evaluate(n: Node, values: Mapping[str, np.ndarray]) -> np.ndarray:
    """The value of one non-input node from its inputs' values, checked against its type."""
    if n.op == "constant":
        return n.value
    out = get_op(n.op).reference([values[i] for i in n.inputs], n.attrs)
    if out.shape != n.type.shape or out.dtype.name != n.type.dtype:
        raise GraphError(
            f"node {n.name!r} ({n.op}) produced {out.dtype.name}{list(out.shape)} but its type is {n.type}; "
            "the operator's reference and relation disagree"
        )
    return out


def run_graph(graph: Graph, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """The graph's outputs for the given inputs (one array per output, in order)."""
    values: dict[str, np.ndarray] = dict(check_inputs(graph, inputs))
    remaining = {name: len(users) for name, users in graph.consumers.items()}
    keep = set(graph.outputs)
    for n in graph.nodes:
        if n.op == "input":
            continue
        values[n.name] = _evaluate(n, values)
        # Free values whose last reader ran, so large graphs run in bounded memory.
        for i in dict.fromkeys(n.inputs):
            remaining[i] -= 1
            if remaining[i] == 0 and i not in keep:
                del values[i]
    return [values[o] for o in graph.outputs]
