"""Layout transformation to packed layouts, with transforms only where needed.

:class:`LayoutRewriter` is the machinery, parameterized by a :data:`LayoutPolicy` that picks
the layouts of each conv2d/dense (or leaves it alone).  Packed values then flow through the
operators that do not care about layout (elementwise ops, quantize/dequantize with scalar
scales, pooling over H and W, binary ops whose other operand is packed too or is a
constant, a ``qadd`` of two values channel-padded alike with zeros, channel concatenations of
values packed alike); a ``layout_transform`` is inserted only where a producer's layout differs from
what its consumer needs, and graph outputs return to their primal layout.  Constant
operands are packed at compile time instead of through a transform node.

:func:`alter_layout` is the VDLA policy: every conv2d/dense the VDLA can run (see
:mod:`vdla.compiler.graph.vdla_rules`) switches to the packed layouts of the config: data
``NCHW{b}n{bi}c``, weights ``OIHW{bo}o{bi}i``, output ``NCHW{b}n{bo}c``; one whose channel counts are not multiples of
BLOCK_IN / BLOCK_OUT (24, 40, 56 in the MobileNets) runs with its channels zero-padded to them
(:func:`~vdla.compiler.graph.vdla_rules.channel_padding`): a ``pad`` before, zero weights and bias for
the extra channels, and the padding sliced away where the value leaves the packed layout.  The CPU policy
is :func:`vdla.compiler.graph.passes.cpu_layout.cpu_layout`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from vdla_hw.config import HwConfig

from vdla.compiler.graph.errors import GraphError
from vdla.compiler.graph.ir import Graph, Node, TensorType
from vdla.compiler.graph.layout import parse_layout, transform
from vdla.compiler.graph.ops.qnn import qadd_reference
from vdla.compiler.graph.passes.rewrite import Rewriter
from vdla.compiler.graph.vdla_rules import (batch_matmul_layouts, batch_matmul_unsupported_reason, channel_padding,
                                            gemm_unsupported_reason, packed_layouts)

_UNARY = frozenset({"relu", "sigmoid", "tanh", "clip", "right_shift", "cast", "quantize_linear", "dequantize_linear"})
_POOLS = frozenset({"max_pool2d", "avg_pool2d", "global_avg_pool2d", "qavg_pool2d"})
_BINARY = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "qadd"})


def _keeps_zero(n: Node) -> bool:
    """Whether a unary op or pooling maps an all-zero channel to an all-zero channel."""
    if n.op == "clip":
        lo, hi = n.attrs.get("a_min"), n.attrs.get("a_max")
        return (lo is None or lo <= 0) and (hi is None or hi >= 0)
    return n.op in ("relu", "right_shift", "cast", "max_pool2d", "avg_pool2d", "global_avg_pool2d")


def _qadd_keeps_zero(n: Node) -> bool:
    """Whether a ``qadd`` maps two zero operands to zero (its rounding term is below ``2**shift``): then
    a residual add of two channel-padded values stays padded, its extra channels still zero."""
    zero = np.zeros(1, np.int8)
    return not qadd_reference([zero, zero], n.attrs).any()


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
        self.channels: dict[str, int] = {}  # new value -> its true channel count (axis 1), when padded
        self.zeros: set[str] = set()  # padded values whose extra channels are known to be zero

    def convert(self, value: str, dst: str | None) -> str:
        """``value`` in layout ``dst`` (None or a primal layout = primal), through a cached transform when they differ."""
        if dst is not None and parse_layout(dst).is_primal:
            dst = None
        src = self.layout.get(value)
        if src == dst:
            return value
        if value in self.channels:  # a padded value leaves its layout only through its primal, unpadded form
            value = self.unpadded(value)
            src = None
            if dst is None:
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

    def unpadded(self, value: str) -> str:
        """The primal form of a channel-padded value, its padding sliced away (cached)."""
        key = (value, "unpadded")
        if key not in self.converted:
            primal = self.convert_layout(value, None)
            shape = self.b.type_of(primal).shape
            end = list(shape)
            end[1] = self.channels[value]
            self.converted[key] = self.b.op("strided_slice", [primal], f"{value}_unpadded", begin=[0] * len(shape),
                                            end=end, strides=[1] * len(shape))
        return self.converted[key]

    def convert_layout(self, value: str, dst: str | None) -> str:
        """``value`` in layout ``dst`` as its padded self (the channel padding kept)."""
        channels = self.channels.pop(value, None)
        try:
            return self.convert(value, dst)
        finally:
            if channels is not None:
                self.channels[value] = channels

    def padded_gemm(self, n: Node, lays: dict[str, str], ic: int, oc: int) -> None:
        """Emit ``n`` with its input channels zero-padded to ``ic`` and output channels to ``oc``: the
        data through a ``pad``, constant weights and bias padded at compile time.  The result stays
        padded through the ops that follow it in its layout; :meth:`convert` slices the padding away."""
        v = self.rw[n.inputs[0]]
        lay = self.layout.get(v)
        if ((v in self.zeros or v not in self.channels) and lay == lays["data_layout"]
                and parse_layout(lay).primal_shape(self.b.type_of(v).shape)[1] == ic):
            inputs = [v]  # already in this layout with ic channels, any padding zero: no round trip through NCHW
        else:
            inputs = [self.convert(self.zero_padded(self.convert(v, None), ic), lays["data_layout"])]
        # A depthwise conv stays depthwise: one (zero) filter per extra channel, as many groups as channels.
        depthwise = n.attrs.get("groups", 1) == self.graph.node(n.inputs[0]).type.shape[1] > 1
        if depthwise:
            lays = dict(lays, groups=ic)
        for k, i in enumerate(n.inputs[1:], start=1):
            const = self.b.const_value(self.rw[i])
            if const is None:
                raise GraphError(f"{n.op} {n.name!r}: channel padding needs constant weights and bias "
                                 "(the policy pads only such layers)")
            grow = [(0, 0)] * const.ndim
            grow[0] = (0, oc - const.shape[0])
            if k == 1 and not depthwise:
                grow[1] = (0, ic - const.shape[1])
            padded = self.b.const(np.pad(const, grow), f"{self.rw[i]}_padded")
            inputs.append(self.convert(padded, lays["kernel_layout"]) if k == 1 else padded)
        out = self.rw.copy(n, inputs, **lays)
        self.layout[out] = lays["out_layout"]
        if oc != n.type.shape[1]:
            self.channels[out] = n.type.shape[1]
            self.zeros.add(out)  # zero weights and bias: the extra output channels are 0

    def batch_gemm(self, n: Node, lays: dict[str, str], k: int, cols: int) -> None:
        """Emit a ``batch_matmul`` of two activations in packed layouts, its inner size zero-padded to ``k`` and
        its columns to ``cols`` (the token count of attention's A.V / Q.K^T rounded up to the GEMM block):
        the data's channels through a ``pad``, the weights (an activation too) through a ``pad`` of both axes,
        the bias at compile time.  Zero rows and columns add nothing; the extra output channels are zero
        and :meth:`convert` slices them away."""
        x = self.convert(self.zero_padded(self.convert(self.rw[n.inputs[0]], None), k), lays["data_layout"])
        w = self.convert(self.rw[n.inputs[1]], None)
        _, n_cols, k_in = self.b.type_of(w).shape
        if (n_cols, k_in) != (cols, k):
            w = self.b.op("pad", [w], f"{w}_padded", pad_width=[[0, 0], [0, cols - n_cols], [0, k - k_in]],
                          mode="constant", value=0.0)
        inputs = [x, self.convert(w, lays["kernel_layout"])]
        for i in n.inputs[2:]:
            const = self.b.const_value(self.rw[i])
            if const is None:
                raise GraphError(f"batch_matmul {n.name!r}: its bias must be a constant")
            inputs.append(self.b.const(np.pad(const, (0, cols - const.shape[0])), f"{self.rw[i]}_padded"))
        out = self.rw.copy(n, inputs, **lays)
        self.layout[out] = lays["out_layout"]
        if cols != n_cols:
            self.channels[out] = n_cols
            self.zeros.add(out)

    def zero_padded(self, x: str, channels: int) -> str:
        """Primal value ``x`` with zero channels appended up to ``channels`` (cached: the convs reading
        one value share its padding)."""
        shape = self.b.type_of(x).shape
        if shape[1] == channels:
            return x
        key = (x, f"padded{channels}")
        if key not in self.converted:
            widths = [[0, 0]] * len(shape)
            widths[1] = [0, channels - shape[1]]
            self.converted[key] = self.b.op("pad", [x], f"{x}_padded", pad_width=widths, mode="constant", value=0.0)
        return self.converted[key]

    def follow(self, new: str, n: Node, lay: str) -> None:
        """``new`` computed per channel from ``n``'s first input: same layout and padding (still zero
        when ``n`` maps zero to zero)."""
        self.layout[new] = lay
        src = self.rw[n.inputs[0]]
        if src in self.channels:
            self.channels[new] = self.channels[src]
            if src in self.zeros and _keeps_zero(n):
                self.zeros.add(new)

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
        packed = next(self.rw[i] for i in n.inputs if self.layout.get(self.rw[i]) == lay)
        primal_shape = parse_layout(lay).primal_shape(self.b.type_of(packed).shape)
        padded = self.channels.get(packed)
        if padded is not None and n.op == "qadd" and self.padded_alike(n, lay, padded):
            out = self.rw.copy(n, [self.rw[i] for i in n.inputs])
            self.layout[out], self.channels[out] = lay, padded
            if _qadd_keeps_zero(n):
                self.zeros.add(out)
            return True
        if padded is not None and not all(self.rw[i] == packed or self.b.const_value(self.rw[i]) is not None
                                          for i in n.inputs):
            return False  # a second variable operand would need the same padding
        if n.type.shape != primal_shape and (padded is None or n.type.shape[1] != padded or
                                             n.type.shape[:1] + n.type.shape[2:] != primal_shape[:1] + primal_shape[2:]):
            return False
        inputs = []
        keeps_zero = n.op in ("add", "subtract", "multiply", "maximum", "minimum")
        for i in n.inputs:
            v = self.rw[i]
            const = self.b.const_value(v) if v not in self.layout else None
            if self.layout.get(v) == lay:
                inputs.append(v)
            elif const is not None and const.size == 1:
                inputs.append(v)  # a scalar broadcasts against any layout
                keeps_zero = keeps_zero and (n.op == "multiply" or not const.any())
            elif const is not None:
                rank = len(primal_shape)
                c4 = const.reshape((1,) * (rank - const.ndim) + const.shape) if const.ndim <= rank else None
                if c4 is None or rank not in (2, 4):
                    return False
                full = np.broadcast_to(c4, n.type.shape[:2] + c4.shape[2:])
                if padded is not None:  # zeros for the padding channels (f(0, 0) = 0 keeps them zero)
                    grow = [(0, 0)] * rank
                    grow[1] = (0, primal_shape[1] - padded)
                    full = np.pad(full, grow)
                inputs.append(self.b.const(transform(np.ascontiguousarray(full), parse_layout(lay).primal, lay),
                                           f"{v}_{lay}"))
            elif self.b.type_of(v).shape == primal_shape:
                inputs.append(self.convert(v, lay))
            else:
                return False
        out = self.rw.copy(n, inputs)
        self.layout[out] = lay
        if padded is not None:
            self.channels[out] = padded
            if packed in self.zeros and keeps_zero:
                self.zeros.add(out)
        return True

    def padded_alike(self, n: Node, lay: str, channels: int) -> bool:
        """Whether every operand of ``n`` is in layout ``lay``, padded from ``channels`` with zeros."""
        vs = [self.rw[i] for i in n.inputs]
        return all(self.layout.get(v) == lay and self.channels.get(v) == channels and v in self.zeros for v in vs)

    def concat(self, n: Node, lay: str) -> bool:
        """Emit a channel concatenation of values that are all in packed layout ``lay`` in that layout
        (their channel blocks follow one another along the outer C axis); False when one is not, or is
        channel-padded (its padding would land inside the result)."""
        layout = parse_layout(lay)
        inputs = [self.rw[i] for i in n.inputs]
        if layout.primal != "NCHW" or n.attrs["axis"] % len(n.type.shape) != 1:
            return False
        if any(self.layout.get(v) != lay or v in self.channels for v in inputs):
            return False
        self.layout[self.rw.copy(n, inputs, axis=layout.axes.index("C"))] = lay
        return True

    def run(self) -> Graph:
        for n in self.graph.nodes:
            lay = self.packed_input(n) if n.inputs else None
            types = [self.graph.node(i).type for i in n.inputs]
            lays = self.policy(n, types, self.graph) if n.op in ("conv2d", "dense", "batch_matmul") else None
            if lays is not None and n.op == "batch_matmul":
                k, cols = (int(c) for c in lays.pop("pad_channels").split(","))
                self.batch_gemm(n, lays, k, cols)
            elif lays is not None and "pad_channels" in lays:
                ic, oc = (int(c) for c in lays.pop("pad_channels").split(","))
                self.padded_gemm(n, lays, ic, oc)
            elif lays is not None:
                self.gemm(n, lays)
            elif lay and n.op in _UNARY and self.layout.get(self.rw[n.inputs[0]]) and self.scalar_params(n):
                self.follow(self.rw.copy(n), n, lay)
            elif lay and n.op in _POOLS and parse_layout(lay).primal == "NCHW":
                self.follow(self.rw.copy(n, layout=lay), n, lay)
            elif lay and n.op in _BINARY and self.binary(n, lay):
                pass
            elif lay and n.op == "concatenate" and self.concat(n, lay):
                pass
            else:
                self.rw.copy(n, [self.convert(self.rw[i], None) for i in n.inputs])
        for o in self.graph.outputs:
            self.rw.bind(o, self.convert(self.rw[o], None))
        return self.rw.finish()


def alter_layout(graph: Graph, cfg: HwConfig) -> Graph:
    """Pack the VDLA-capable conv2d/dense of ``graph`` into ``cfg``'s layouts (see the module doc)."""

    def vdla(n: Node, types: Sequence[TensorType], graph: Graph) -> dict[str, str] | None:
        if n.op == "batch_matmul":  # both operands activations: padded at run time, by a pad op
            if batch_matmul_unsupported_reason(n, types, cfg, pad_channels=True) is not None:
                return None
            k, cols = types[0].shape[1], types[1].shape[1]
            return dict(batch_matmul_layouts(cfg), pad_channels=f"{-(-k // cfg.block_in) * cfg.block_in},"
                                                                f"{-(-cols // cfg.block_out) * cfg.block_out}")
        lays = packed_layouts(n.op, cfg, n.attrs.get("groups", 1) > 1)  # grouped: depthwise (the rules refuse others)
        if gemm_unsupported_reason(n, types, cfg) is None:
            return lays
        padding = channel_padding(n, types, cfg)
        if padding is None or any(graph.node(i).op != "constant" for i in n.inputs[1:]):
            return None  # padded weights and bias are made at compile time
        return dict(lays, pad_channels=f"{padding[0]},{padding[1]}")

    return LayoutRewriter(graph, vdla).run()
