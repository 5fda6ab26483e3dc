"""Batch-norm folding: ``batch_norm(conv2d(x, w, b))`` becomes ``conv2d(x, w * a, b * a + c)``.

Inference batch norm is a per-channel affine map ``y = x * a + c``; when it directly follows
a convolution whose output nobody else reads and whose weight is constant, it folds into
the convolution's weight and bias.  A batch norm that cannot fold (its input is not such a
convolution) is rewritten into ``x * a + c`` with constant per-channel coefficients, so no
``batch_norm`` node survives this pass.
"""

from __future__ import annotations

import numpy as np

from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.ops.nn import batch_norm_coefficients
from vdla.compiler.graph.passes.rewrite import Rewriter


def _constant(graph: Graph, name: str) -> np.ndarray | None:
    n = graph.node(name)
    return n.value if n.op == "constant" else None


def _foldable(graph: Graph, bn: Node) -> bool:
    """True when ``bn`` has constant statistics and directly follows a conv2d only it reads."""
    if any(_constant(graph, i) is None for i in bn.inputs[1:]):
        return False
    conv = graph.node(bn.inputs[0])
    return (conv.op == "conv2d" and graph.consumers[conv.name] == (bn.name,) and conv.name not in graph.outputs
            and conv.attrs["kernel_layout"] == "OIHW" and conv.type.dtype.startswith("float")
            and all(_constant(graph, i) is not None for i in conv.inputs[1:]))


def fold_batch_norm(graph: Graph) -> Graph:
    """Fold every inference batch norm into its producing conv2d, or into a multiply-add."""
    folds = {n.inputs[0]: n for n in graph.nodes if n.op == "batch_norm" and _foldable(graph, n)}
    rw = Rewriter(graph)
    b = rw.builder
    for n in graph.nodes:
        if n.name in folds:
            continue  # emitted, with folded parameters, in place of its batch norm
        if n.op != "batch_norm" or any(_constant(graph, i) is None for i in n.inputs[1:]):
            rw.copy(n)
            continue
        a, c = batch_norm_coefficients(*(_constant(graph, i) for i in n.inputs[1:]), epsilon=n.attrs["epsilon"])
        conv = graph.node(n.inputs[0])
        if folds.get(conv.name) is n:
            w = _constant(graph, conv.inputs[1])
            bias = _constant(graph, conv.inputs[2]) if len(conv.inputs) == 3 else np.zeros(w.shape[0], w.dtype)
            new_w = b.const((w * a.reshape(-1, 1, 1, 1)).astype(w.dtype), f"{conv.name}_weight")
            new_b = b.const((bias * a + c).astype(w.dtype), f"{conv.name}_bias")
            rw.bind(n.name, rw.copy(conv, [rw[conv.inputs[0]], new_w, new_b]))
            continue
        x = rw[n.inputs[0]]
        shape = (-1,) + (1,) * (n.type.ndim - 2)
        scaled = b.op("multiply", [x, b.const(a.reshape(shape).astype(n.type.dtype), f"{n.name}_scale")], f"{n.name}_mul")
        rw.emit("add", [scaled, b.const(c.reshape(shape).astype(n.type.dtype), f"{n.name}_shift")], n.name)
    return rw.finish()
