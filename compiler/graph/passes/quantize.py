"""int8 quantization with power-of-two scales, realized exactly as the VDLA computes.

Every quantized value ``q`` (int8) stands for ``q * 2**-e``; its exponent ``e`` is chosen
from calibration (the largest magnitude seen on the sample inputs) so the range fits in
int8.  A conv2d/dense with a constant weight becomes::

    acc = conv2d(x_q:int8, w_q:int8, bias_q:int32, out_dtype=int32)   # int32 accumulate (wraps)
    acc = relu(acc)                              # when a relu follows (fused, before the shift)
    y_q = cast(clip(right_shift(acc, s), -128, 127), int8)

with ``s = e_x + e_w - e_y``: the GEMM core, one ALU SHR, two ALU clips and the STORE
narrowing.  Round-to-nearest comes for free: ``2**(s-1)`` is folded into the int32 bias.
A residual ``add`` of quantized values aligns both operands to the finer exponent with
left shifts, adds in int32 and requantizes the same way.  relu, max_pool2d, reshape and
transpose pass int8 values through unchanged; every other operator runs in float on
dequantized inputs, and graph outputs are dequantized.  With ``skip_first_conv`` the
first convolution stays in float (its few input channels suit the CPU better).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from compiler.graph.errors import GraphError
from compiler.graph.executor import run_all
from compiler.graph.ir import Graph, Node
from compiler.graph.passes.rewrite import Rewriter

QMIN, QMAX = -128, 127
_PASSTHROUGH = {"relu", "max_pool2d", "reshape", "transpose"}


def calibrate(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]]) -> dict[str, float]:
    """The largest magnitude every float value takes over the sample inputs."""
    if not samples:
        raise GraphError("calibration needs at least one sample input")
    ranges: dict[str, float] = {}
    for sample in samples:
        for name, v in run_all(graph, sample).items():
            if np.issubdtype(v.dtype, np.floating):
                ranges[name] = max(ranges.get(name, 0.0), float(np.max(np.abs(v))) if v.size else 0.0)
    return ranges


def exponent_for(max_abs: float) -> int:
    """The exponent ``e`` of the finest power-of-two scale ``2**-e`` with ``max_abs <= 127 * 2**-e``."""
    if max_abs <= 0 or not math.isfinite(max_abs):
        return 0
    return math.floor(math.log2(QMAX / max_abs))


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, int]:
    """Symmetric per-tensor int8 weights with a power-of-two scale: ``(w_q, e_w)``."""
    e = exponent_for(float(np.max(np.abs(w))))
    return np.clip(np.rint(w.astype(np.float64) * 2.0 ** e), -QMAX, QMAX).astype(np.int8), e


class _Quantizer:
    def __init__(self, graph: Graph, ranges: Mapping[str, float], skip_first_conv: bool) -> None:
        self.graph, self.ranges = graph, ranges
        self.rw = Rewriter(graph)
        self.b = self.rw.builder
        self.exp: dict[str, int] = {}  # new int8 value -> its exponent
        self.float_of: dict[str, str] = {}  # new int8 value -> its dequantized float value
        self.int_of: dict[str, str] = {}  # new float value -> its quantized int8 value
        self.absorbed: set[str] = set()  # old relu nodes folded into the op before them
        convs = [n for n in graph.nodes if n.op == "conv2d"]
        self.float_convs = {convs[0].name} if skip_first_conv and convs else set()

    # ---- borders between float and int8 --------------------------------------------------------
    def as_int8(self, old: str) -> tuple[str, int]:
        new = self.rw[old]
        if new in self.exp:
            return new, self.exp[new]
        if new not in self.int_of:
            e = exponent_for(self.ranges[old])
            scale = self.b.const(np.float32(2.0 ** -e), f"{old}_scale")
            zero = self.b.const(np.int8(0), f"{old}_zero")
            q = self.b.op("quantize_linear", [new, scale, zero], f"{old}_q")
            self.exp[q] = e
            self.int_of[new] = q
        q = self.int_of[new]
        return q, self.exp[q]

    def as_float(self, new: str) -> str:
        if new not in self.exp:
            return new
        if new not in self.float_of:
            scale = self.b.const(np.float32(2.0 ** -self.exp[new]), f"{new}_scale")
            zero = self.b.const(np.int8(0), f"{new}_zero")
            self.float_of[new] = self.b.op("dequantize_linear", [new, scale, zero], f"{new}_dq")
        return self.float_of[new]

    def requantize(self, acc: str, shift: int, e_out: int, replaces: str) -> None:
        """int32 accumulator -> int8 with exponent ``e_out``: shift, clip, narrow."""
        if shift:
            acc = self.b.op("right_shift", [acc], f"{replaces}_shift", shift=shift)
        acc = self.b.op("clip", [acc], f"{replaces}_clip", a_min=QMIN, a_max=QMAX)
        out = self.rw.emit("cast", [acc], replaces, dtype="int8")
        self.exp[out] = e_out

    def fused_relu(self, node: Node) -> Node | None:
        """The relu that alone reads ``node``'s output, if any (it folds into the requantization)."""
        users = self.graph.consumers[node.name]
        if len(users) == 1 and node.name not in self.graph.outputs:
            user = self.graph.node(users[0])
            if user.op == "relu":
                return user
        return None

    # ---- rewrites ------------------------------------------------------------------------------
    def quantizable(self, n: Node) -> bool:
        if n.op not in ("conv2d", "dense") or n.name in self.float_convs or not n.type.dtype.startswith("float"):
            return False
        return all(self.graph.node(i).op == "constant" for i in n.inputs[1:]) and n.attrs.get("groups", 1) == 1

    def linear(self, n: Node) -> None:
        x, e_x = self.as_int8(n.inputs[0])
        w_q, e_w = quantize_weight(self.graph.node(n.inputs[1]).value)
        relu = self.fused_relu(n)
        out_node = relu or n
        e_out = exponent_for(self.ranges[out_node.name])
        shift = e_x + e_w - e_out
        bias = self.graph.node(n.inputs[2]).value.astype(np.float64) if len(n.inputs) == 3 else np.zeros(w_q.shape[0])
        bias_q = np.rint(bias * 2.0 ** (e_x + e_w)) + (1 << (shift - 1) if shift > 0 else 0)
        inputs = [x, self.b.const(w_q, f"{n.name}_wq"), self.b.const(bias_q.astype(np.int32), f"{n.name}_bq")]
        acc = self.rw.copy(n, inputs, out_dtype="int32")
        if relu is not None:
            acc = self.b.op("relu", [acc], f"{relu.name}_acc")
            self.absorbed.add(relu.name)
        self.requantize(acc, shift, e_out, out_node.name)
        if relu is not None:
            self.rw.bind(n.name, self.rw[relu.name])

    def residual_add(self, n: Node) -> None:
        (a, e_a), (c, e_c) = self.as_int8(n.inputs[0]), self.as_int8(n.inputs[1])
        relu = self.fused_relu(n)
        out_node = relu or n
        e_out = exponent_for(self.ranges[out_node.name])
        e = max(e_a, e_c)
        terms = []
        for v, ev in ((a, e_a), (c, e_c)):
            wide = self.b.op("cast", [v], f"{v}_i32", dtype="int32")
            terms.append(self.b.op("right_shift", [wide], f"{v}_align", shift=ev - e) if ev != e else wide)
        acc = self.b.op("add", terms, f"{n.name}_acc")
        shift = e - e_out
        if shift > 0:
            acc = self.b.op("add", [acc, self.b.const(np.int32(1 << (shift - 1)), f"{n.name}_round")], f"{n.name}_rnd")
        if relu is not None:
            acc = self.b.op("relu", [acc], f"{relu.name}_acc")
            self.absorbed.add(relu.name)
        self.requantize(acc, shift, e_out, out_node.name)

    def run(self) -> Graph:
        for n in self.graph.nodes:
            if n.name in self.absorbed:
                continue
            if n.op in ("input", "constant"):
                self.rw.copy(n)
            elif self.quantizable(n):
                self.linear(n)
            elif n.op == "add" and n.type.dtype.startswith("float") and self._any_int8(n) and self._same_shape(n):
                self.residual_add(n)
            elif n.op in _PASSTHROUGH and self.rw[n.inputs[0]] in self.exp:
                out = self.rw.copy(n)
                self.exp[out] = self.exp[self.rw[n.inputs[0]]]
            else:
                self.rw.copy(n, [self.as_float(self.rw[i]) for i in n.inputs])
        for o in self.graph.outputs:
            self.rw.bind(o, self.as_float(self.rw[o]))
        return self.rw.finish()

    def _any_int8(self, n: Node) -> bool:
        return any(self.rw[i] in self.exp for i in n.inputs)

    def _same_shape(self, n: Node) -> bool:
        return all(self.graph.node(i).type.shape == n.type.shape for i in n.inputs)


def quantize(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]], *, skip_first_conv: bool = True) -> Graph:
    """Quantize conv2d/dense (and the residual adds, relus and max pools between them) to int8.

    ``samples`` are calibration inputs (name -> array, like :func:`run_graph`'s ``inputs``).
    Run :func:`fold_batch_norm` first so batch norms are part of the convolutions' weights.
    """
    return _Quantizer(graph, calibrate(graph, samples), skip_first_conv).run()
