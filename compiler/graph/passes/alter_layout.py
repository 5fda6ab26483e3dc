"""Layout transformation to packed layouts, with transforms only where needed.

:class:`LayoutRewriter` is the machinery, parameterized by a :data:`LayoutPolicy` that picks
the layouts of each conv2d/dense (or leaves it alone).  Packed values then flow through the
operators that do not care about layout (elementwise ops, quantize/dequantize with scalar
scales, pooling over H and W, binary ops whose other operand is packed too or is a
constant); a ``layout_transform`` is inserted only where a producer's layout differs from
what its consumer needs, and graph outputs return to their primal layout.  Constant
operands are packed at compile time instead of through a transform node.

:func:`alter_layout` is the VDLA policy: every conv2d/dense the VDLA can run (see
:mod:`compiler.graph.vdla_rules`) switches to the packed layouts of the config: data
``NCHW{b}n{bi}c``, weights ``OIHW{bo}o{bi}i``, output ``NCHW{b}n{bo}c``.  The CPU policy
is :func:`compiler.graph.passes.cpu_layout.cpu_layout`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from vdla_hw.config import HwConfig

from compiler.graph.ir import Graph, Node, TensorType
from compiler.graph.layout import parse_layout, transform
from compiler.graph.passes.rewrite import Rewriter
from compiler.graph.vdla_rules import gemm_unsupported_reason, packed_layouts

_UNARY = frozenset({"relu", "sigmoid", "tanh", "clip", "right_shift", "cast", "quantize_linear", "dequantize_linear"})
_POOLS = frozenset({"max_pool2d", "avg_pool2d", "global_avg_pool2d"})
_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum"})


#: ``policy(node, input_types, graph)``: the conv2d/dense attributes ``data_layout``, ``kernel_layout``
#: and ``out_layout`` to give ``node`` (a primal layout means "as is"), or None to leave it unchanged.
LayoutPolicy = Callable[[Node, Sequence[TensorType], Graph], "dict[str, str] | None"]


class LayoutRewriter:
    """Rewrites a graph so the conv2d/dense a policy picks run in its layouts (see the module doc)."""

    def __init__(self, graph: Graph, policy: LayoutPolicy) -> None:
        self.graph, self.policy = graph, policy
        self.rw = Rewriter(graph)
        self.b = self.rw.builder
        self.layout: dict[str, str] = {}  # new value -> its packed layout (absent: primal)
        self.converted: dict[tuple[str, str | None], str] = {}

    def convert(self, value: str, dst: str | None) -> str:
        """``value`` in layout ``dst`` (None or a primal layout = primal), through a cached transform when they differ."""
        if dst is not None and parse_layout(dst).is_primal:
            dst = None
        src = self.layout.get(value)
        if src == dst:
            return value
        key = (value, dst)
        if key not in self.converted:
            primal = parse_layout(dst or src).primal
            src_name, dst_name = src or primal, dst or primal
            const = self.b.const_value(value)
            if const is not None:
                new = self.b.const(transform(const, src_name, dst_name), f"{value}_{dst_name}")
            else:
                new = self.b.op("layout_transform", [value], f"{value}_{dst_name}", src_layout=src_name,
                                dst_layout=dst_name)
            if dst:
                self.layout[new] = dst
            self.converted[key] = new
        return self.converted[key]

    def packed_input(self, n: Node) -> str | None:
        return next((self.layout[self.rw[i]] for i in n.inputs if self.rw[i] in self.layout), None)

    def gemm(self, n: Node, lays: dict[str, str]) -> None:
        x = self.convert(self.rw[n.inputs[0]], lays["data_layout"])
        w = self.convert(self.rw[n.inputs[1]], lays["kernel_layout"])
        out = self.rw.copy(n, [x, w] + [self.rw[i] for i in n.inputs[2:]], **lays)
        if not parse_layout(lays["out_layout"]).is_primal:
            self.layout[out] = lays["out_layout"]

    def scalar_params(self, n: Node) -> bool:
        return all(self.graph.node(i).type.size == 1 for i in n.inputs[1:])

    def binary(self, n: Node, lay: str) -> bool:
        """Emit ``n`` in packed layout ``lay``; False when an operand cannot follow."""
        primal_shape = parse_layout(lay).primal_shape(next(
            self.b.type_of(self.rw[i]).shape for i in n.inputs if self.layout.get(self.rw[i]) == lay))
        if n.type.shape != primal_shape:
            return False
        inputs = []
        for i in n.inputs:
            v = self.rw[i]
            const = self.b.const_value(v) if v not in self.layout else None
            if self.layout.get(v) == lay:
                inputs.append(v)
            elif const is not None and const.size == 1:
                inputs.append(v)  # a scalar broadcasts against any layout
            elif const is not None:
                c4 = const.reshape((1,) * (4 - const.ndim) + const.shape) if const.ndim <= 4 else None
                if c4 is None or len(primal_shape) != 4:
                    return False
                full = np.broadcast_to(c4, primal_shape[:2] + c4.shape[2:])
                inputs.append(self.b.const(transform(np.ascontiguousarray(full), parse_layout(lay).primal, lay),
                                           f"{v}_{lay}"))
            elif self.b.type_of(v).shape == primal_shape:
                inputs.append(self.convert(v, lay))
            else:
                return False
        self.layout[self.rw.copy(n, inputs)] = lay
        return True

    def run(self) -> Graph:
        for n in self.graph.nodes:
            lay = self.packed_input(n) if n.inputs else None
            types = [self.graph.node(i).type for i in n.inputs]
            lays = self.policy(n, types, self.graph) if n.op in ("conv2d", "dense") else None
            if lays is not None:
                self.gemm(n, lays)
            elif lay and n.op in _UNARY and self.layout.get(self.rw[n.inputs[0]]) and self.scalar_params(n):
                self.layout[self.rw.copy(n)] = lay
            elif lay and n.op in _POOLS and parse_layout(lay).primal == "NCHW":
                self.layout[self.rw.copy(n, layout=lay)] = lay
            elif lay and n.op in _BINARY and self.binary(n, lay):
                pass
            else:
                self.rw.copy(n, [self.convert(self.rw[i], None) for i in n.inputs])
        for o in self.graph.outputs:
            self.rw.bind(o, self.convert(self.rw[o], None))
        return self.rw.finish()


def alter_layout(graph: Graph, cfg: HwConfig) -> Graph:
    """Pack the VDLA-capable conv2d/dense of ``graph`` into ``cfg``'s layouts (see the module doc)."""

    def vdla(n: Node, types: Sequence[TensorType], _: Graph) -> dict[str, str] | None:
        return packed_layouts(n.op, cfg) if gemm_unsupported_reason(n, types, cfg) is None else None

    return LayoutRewriter(graph, vdla).run()
