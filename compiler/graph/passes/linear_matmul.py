"""Linear layers written as ``matmul`` become ``dense``: the form the VDLA GEMM core (and quantization) takes.

Exporters write a transformer's linear layer on ``(..., tokens, features)`` activations as a MatMul
by a constant ``(K, N)`` weight, then an Add of the bias (``(N,)``).  :func:`rewrite_linear_matmul`
turns each into ``reshape`` to ``(rows, K)``, ``dense`` with the transposed weight (and the bias,
when the matmul's only consumer adds a constant ``(N,)`` vector), and ``reshape`` back -- the same
arithmetic.  A matmul of two activations (attention's Q.K^T and A.V) is left alone.
"""

from __future__ import annotations

from math import prod

import numpy as np

from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.passes.rewrite import Rewriter


def linear_weight(graph: Graph, node: Node) -> np.ndarray | None:
    """The ``(K, N)`` constant right operand of a linear ``matmul`` (activations of rank >= 2), else None."""
    if node.op != "matmul" or len(node.inputs) != 2:
        return None
    w = graph.node(node.inputs[1])
    x = graph.node(node.inputs[0])
    if w.op != "constant" or w.value.ndim != 2 or x.op == "constant" or len(x.type.shape) < 2:
        return None
    return w.value


def _bias_add(graph: Graph, node: Node, n_out: int) -> tuple[Node, np.ndarray] | None:
    """The ``add`` of a constant ``(N,)`` bias that alone reads ``node``, and the bias."""
    users = graph.consumers[node.name]
    if len(users) != 1 or node.name in graph.outputs:
        return None
    add = graph.node(users[0])
    if add.op != "add" or len(add.inputs) != 2 or add.type.shape != node.type.shape:
        return None
    other = graph.node(add.inputs[1] if add.inputs[0] == node.name else add.inputs[0])
    if other.op != "constant" or other.value.reshape(-1).shape != (n_out,) or other.value.shape[-1:] != (n_out,):
        return None
    return add, other.value.reshape(n_out)


def rewrite_linear_matmul(graph: Graph) -> Graph:
    """Every linear ``matmul`` (constant 2-D weight) as reshape / dense (+ bias) / reshape (see the module doc)."""
    rw = Rewriter(graph)
    b = rw.builder
    folded: set[str] = set()
    for n in graph.nodes:
        if n.name in folded:
            continue
        w = linear_weight(graph, n)
        if w is None or not n.type.dtype.startswith("float"):
            rw.copy(n)
            continue
        k, n_out = w.shape
        out_shape = n.type.shape
        rows = prod(out_shape[:-1])
        x = b.op("reshape", [rw[n.inputs[0]]], f"{n.name}_rows", newshape=(rows, k))
        inputs = [x, b.const(np.ascontiguousarray(w.T), f"{n.name}_weight")]
        bias = _bias_add(graph, n, n_out)
        if bias is not None:
            inputs.append(b.const(bias[1].astype(w.dtype), f"{n.name}_bias"))
        y = b.op("dense", inputs, f"{n.name}_dense")
        last = bias[0] if bias is not None else n
        rw.emit("reshape", [y], last.name, newshape=tuple(out_shape))
        if bias is not None:
            folded.add(last.name)
            rw.bind(n.name, rw[last.name])
    return rw.finish()


__all__ = ["linear_weight", "rewrite_linear_matmul"]
