"""int8 quantization realized exactly as the VDLA computes: per-tensor powers of two, or per-channel
weight scales with an integer multiplier per output channel.

Every quantized value ``q`` (int8) stands for ``q * scale``, the scale chosen by calibration
(:mod:`.calibration`: the threshold ``T`` of the value's magnitude fits int8).  Two schemes:

* per-tensor (``per_channel=False``): every scale a power of two ``2**-e``, one per weight
  tensor too.  A conv2d/dense with a constant weight becomes::

      acc = conv2d(x_q:int8, w_q:int8, bias_q:int32, out_dtype=int32)   # int32 accumulate (wraps)
      acc = relu(acc)                              # when a relu follows (fused, before the shift)
      y_q = cast(clip(right_shift(acc, s), -128, 127), int8)

  with ``s = e_x + e_w - e_y``: the GEMM core, one ALU SHR, two ALU clips and the STORE narrowing.

* per-channel (the default): activation scales ``T / 127``, weight scales ``max|w[c]| / 127`` per
  output channel.  The requantization ``s_x * s_w[c] / s_y`` becomes ``m[c] * 2**-s``, one ALU MUL
  by an int32 per-channel tile (``multiply`` by a constant) before the common shift::

      acc = relu(conv2d(x_q, w_q, bias_q))       # relu when one follows
      y_q = cast(clip(right_shift(multiply(acc, m), s), -128, 127), int8)

  ``s`` is the largest shift whose multipliers cannot overflow int32 for ANY int8 input: per
  channel, ``(128 * sum|w_q[c]| + |bias_q[c]|) * m[c] < 2**31`` (see :func:`requant_multipliers`);
  the bound is checked when the graph is built, so the accumulators never wrap at run time.

Round-to-nearest comes for free: ``2**(s-1)`` (per-tensor) or ``2**(s-1) / m[c]`` (per-channel)
is folded into the int32 bias.  A residual ``add`` of quantized values becomes one ``qadd``: it
rescales both operands to the output (left shifts, or integer multipliers), adds in int32 and
requantizes the same way.  An average pool (global or not, no dilation, padding counted) of an
int8 value becomes one ``qavg_pool2d`` keeping the input's scale, its divide a fixed-point
multiply (:mod:`vdla.compiler.graph.ops.qnn`).  relu, max_pool2d, reshape, transpose and take pass int8 values
through unchanged, and so does a concatenation of int8 values (calibrated to one shared scale); every other
operator runs in float on dequantized inputs, and graph outputs are dequantized.  With
``skip_first_conv`` the first convolution stays in float (its few input channels suit the CPU
better).  :func:`quantize_model` also returns which value each quantized layer's output replaced
(for :mod:`.sqnr`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.passes.calibration import Calibration, calibrate, parse_calibration
from vdla.compiler.graph.passes.rewrite import Rewriter

QMIN, QMAX = -128, 127
ACC_BITS = 32  # the int32 accumulator the multipliers must not overflow
_PASSTHROUGH = {"relu", "max_pool2d", "reshape", "transpose", "take"}


def exponent_for(max_abs: float) -> int:
    """The exponent ``e`` of the finest power-of-two scale ``2**-e`` with ``max_abs <= 127 * 2**-e``."""
    if max_abs <= 0 or not math.isfinite(max_abs):
        return 0
    return math.floor(math.log2(QMAX / max_abs))


def quantize_weight(w: np.ndarray) -> tuple[np.ndarray, int]:
    """Symmetric per-tensor int8 weights with a power-of-two scale: ``(w_q, e_w)``."""
    e = exponent_for(float(np.max(np.abs(w))))
    return np.clip(np.rint(w.astype(np.float64) * 2.0 ** e), -QMAX, QMAX).astype(np.int8), e


def quantize_weight_per_channel(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights with one scale per output channel (axis 0): ``(w_q, s_w)``."""
    absmax = np.max(np.abs(w.reshape(w.shape[0], -1)), axis=1).astype(np.float64)
    s_w = np.where(absmax > 0, absmax / QMAX, 1.0)
    q = np.rint(w.astype(np.float64) / s_w.reshape((-1,) + (1,) * (w.ndim - 1)))
    return np.clip(q, -QMAX, QMAX).astype(np.int8), s_w


def requant_multipliers(ratio: np.ndarray, bound: np.ndarray) -> tuple[np.ndarray, int, np.ndarray]:
    """Integer multipliers ``m`` and a common shift ``s`` with ``m * 2**-s ~= ratio`` (per channel),
    and the rounding term ``r = 2**(s-1) / m`` to add before multiplying: ``(acc + r) * m >> s``.

    ``bound[c]`` is the largest magnitude channel ``c``'s accumulator can take; ``s`` is the largest
    shift (hence the finest multipliers) with ``(bound + r) * m < 2**31`` for every channel.
    """
    limit = 1 << (ACC_BITS - 1)
    for s in range(ACC_BITS - 2, -1, -1):
        m = np.rint(ratio * 2.0 ** s)
        r = np.rint(2.0 ** (s - 1) / np.maximum(m, 1)) if s else np.zeros_like(m)
        if np.all((bound + r) * m < limit):
            return m.astype(np.int64), s, r.astype(np.int64)
    raise ValueError(f"no int32 requantization of ratios up to {ratio.max():g} for accumulators up to {bound.max():g}")


@dataclass(frozen=True)
class QuantizedLayer:
    """One quantized node's output: the float value it replaces and its int8 value and scale(s)."""

    name: str
    """The float value (in the graph given to :func:`quantize_model`)."""
    value: str
    """The int8 value of the quantized graph."""
    scale: float
    op: str
    multiplier_bits: int = 0
    """The widest per-channel multiplier (0 without multipliers)."""


@dataclass(frozen=True)
class QuantizedModel:
    """The quantized graph and what :func:`quantize_model` did to each layer."""

    graph: Graph
    source: Graph
    """The float graph that was quantized (the names of ``layers`` are its values)."""
    layers: tuple[QuantizedLayer, ...]
    calibration: Calibration
    per_channel: bool


class _Quantizer:
    def __init__(self, graph: Graph, ranges: Mapping[str, float], skip_first_conv: bool, per_channel: bool) -> None:
        self.graph, self.ranges, self.per_channel = graph, ranges, per_channel
        self.rw = Rewriter(graph)
        self.b = self.rw.builder
        self.scale: dict[str, float] = {}  # new int8 value -> its scale
        self.float_of: dict[str, str] = {}  # new int8 value -> its dequantized float value
        self.int_of: dict[str, str] = {}  # new float value -> its quantized int8 value
        self.absorbed: set[str] = set()  # old relu nodes folded into the op before them
        self.layers: list[QuantizedLayer] = []
        convs = [n for n in graph.nodes if n.op == "conv2d"]
        self.float_convs = {convs[0].name} if skip_first_conv and convs else set()

    def scale_for(self, old: str) -> float:
        """The scale of old value ``old`` (as float32, the precision the graph stores it in)."""
        t = self.ranges[old]
        if not self.per_channel:
            return 2.0 ** -exponent_for(t)
        return float(np.float32(t / QMAX)) if t > 0 and math.isfinite(t) else 1.0

    # ---- borders between float and int8 --------------------------------------------------------
    def as_int8(self, old: str) -> tuple[str, float]:
        new = self.rw[old]
        if new in self.scale:
            return new, self.scale[new]
        if new not in self.int_of:
            scale = self.scale_for(old)
            q = self.b.op("quantize_linear", [new, self.b.const(np.float32(scale), f"{old}_scale"),
                                              self.b.const(np.int8(0), f"{old}_zero")], f"{old}_q")
            self.scale[q] = scale
            self.int_of[new] = q
        q = self.int_of[new]
        return q, self.scale[q]

    def as_float(self, new: str) -> str:
        if new not in self.scale:
            return new
        if new not in self.float_of:
            scale = self.b.const(np.float32(self.scale[new]), f"{new}_scale")
            zero = self.b.const(np.int8(0), f"{new}_zero")
            self.float_of[new] = self.b.op("dequantize_linear", [new, scale, zero], f"{new}_dq")
        return self.float_of[new]

    def requantize(self, acc: str, shift: int, scale: float, replaces: Node, op: str, mbits: int = 0) -> None:
        """int32 accumulator -> int8 with ``scale``: shift, clip, narrow."""
        if shift:
            acc = self.b.op("right_shift", [acc], f"{replaces.name}_shift", shift=shift)
        acc = self.b.op("clip", [acc], f"{replaces.name}_clip", a_min=QMIN, a_max=QMAX)
        out = self.rw.emit("cast", [acc], replaces.name, dtype="int8")
        self.scale[out] = scale
        self.layers.append(QuantizedLayer(replaces.name, out, scale, op, mbits))

    def fused_relu(self, node: Node) -> Node | None:
        """The relu that alone reads ``node``'s output, if any (it folds into the requantization).

        Per-channel, a ReLU6-like ``clip(0, hi)`` folds too: its output's scale is at most
        ``hi / 127`` (calibrated on the clipped values), so the int8 clamp at 127 bounds it, and
        its saturated values come out exactly (with ``max`` calibration ``hi`` is 127 steps)."""
        users = self.graph.consumers[node.name]
        if len(users) == 1 and node.name not in self.graph.outputs:
            user = self.graph.node(users[0])
            if user.op == "relu" or (self.per_channel and user.op == "clip" and user.attrs.get("a_min") == 0
                                     and (user.attrs.get("a_max") or 0) > 0):
                return user
        return None

    def relu_acc(self, acc: str, relu: Node | None) -> str:
        if relu is None:
            return acc
        self.absorbed.add(relu.name)
        return self.b.op("relu", [acc], f"{relu.name}_acc")

    # ---- rewrites ------------------------------------------------------------------------------
    def quantizable(self, n: Node) -> bool:
        if n.op not in ("conv2d", "dense") or n.name in self.float_convs or not n.type.dtype.startswith("float"):
            return False
        # Grouped and depthwise convs too: every scale is per output channel (or per tensor), whatever
        # input channels a filter reads, and the accumulator bound sums each filter's own weights.
        return all(self.graph.node(i).op == "constant" for i in n.inputs[1:])

    def linear(self, n: Node) -> None:
        x, s_x = self.as_int8(n.inputs[0])
        w = self.graph.node(n.inputs[1]).value
        relu = self.fused_relu(n)
        out_node = relu or n
        s_y = self.scale_for(out_node.name)
        bias = self.graph.node(n.inputs[2]).value.astype(np.float64) if len(n.inputs) == 3 else np.zeros(w.shape[0])
        if self.per_channel:
            w_q, s_w = quantize_weight_per_channel(w)
            bias_q = np.rint(bias / (s_x * s_w))
            bound = 128.0 * np.abs(w_q.reshape(w_q.shape[0], -1).astype(np.int64)).sum(axis=1) + np.abs(bias_q)
            m, shift, rnd = requant_multipliers(s_x * s_w / s_y, bound)
            bias_q = bias_q + rnd
        else:
            w_q, e_w = quantize_weight(w)
            e_x = -round(math.log2(s_x))
            shift = e_x + e_w + round(math.log2(s_y))
            bias_q = np.rint(bias * 2.0 ** (e_x + e_w)) + (1 << (shift - 1) if shift > 0 else 0)
        inputs = [x, self.b.const(w_q, f"{n.name}_wq"), self.b.const(bias_q.astype(np.int32), f"{n.name}_bq")]
        acc = self.relu_acc(self.rw.copy(n, inputs, out_dtype="int32"), relu)
        mbits = 0
        if self.per_channel:
            shape = (1, -1) + (1,) * (len(n.type.shape) - 2)
            acc = self.b.op("multiply", [acc, self.b.const(m.astype(np.int32).reshape(shape), f"{n.name}_m")],
                            f"{out_node.name}_mul")
            mbits = int(m.max()).bit_length()
        self.requantize(acc, shift, s_y, out_node, n.op, mbits)
        if relu is not None:
            self.rw.bind(n.name, self.rw[relu.name])

    def residual_add(self, n: Node) -> None:
        """One ``qadd`` (:mod:`vdla.compiler.graph.ops.qnn`): both operands rescaled to a common scale
        (integer multipliers, or shifts aligning powers of two), added with the rounding term,
        [ReLU], shifted, clipped."""
        (a, s_a), (c, s_c) = self.as_int8(n.inputs[0]), self.as_int8(n.inputs[1])
        relu = self.fused_relu(n)
        out_node = relu or n
        s_y = self.scale_for(out_node.name)
        attrs: dict[str, object]
        if self.per_channel:
            m, shift, _ = requant_multipliers(np.array([s_a, s_c]) / s_y, np.full(2, 512.0))  # 2x margin: two terms
            attrs = {"mult": (int(m[0]), int(m[1]))}
        else:
            e_a, e_c = (-round(math.log2(v)) for v in (s_a, s_c))
            e = max(e_a, e_c)
            attrs = {"align": (e_a - e, e_c - e)}  # <= 0: the coarser operand shifts left onto the finer scale
            shift = e + round(math.log2(s_y))
            if shift < 0 or shift >= ACC_BITS or e - min(e_a, e_c) >= ACC_BITS:
                self.rw.copy(n, [self.as_float(self.rw[i]) for i in n.inputs])
                return
        if relu is not None:
            self.absorbed.add(relu.name)
        out = self.rw.emit("qadd", [a, c], out_node.name, round=(1 << (shift - 1)) if shift > 0 else 0,
                           shift=shift, relu=relu is not None, **attrs)
        self.scale[out] = s_y
        self.layers.append(QuantizedLayer(out_node.name, out, s_y, "add"))
        if relu is not None:
            self.rw.bind(n.name, out)

    def activation_matmul(self, n: Node) -> None:
        """A matmul of two activations (attention's Q.K^T and A.V, ``(..., M, K) @ (..., K, N)``) as one int8
        ``batch_matmul`` over the flattened leading axes (the heads), written as the VDLA's batched conv:
        data ``(B, K, M, 1)``, weights ``(B, N, K)`` (the second activation, transposed), the rounding term as
        the bias, then ``(acc * m) >> s`` clipped to int8 with one multiplier (per-tensor scales, calibrated
        like every activation).  The reshapes and transposes around it are data movement on the host."""
        a, b = (self.graph.node(i).type.shape for i in n.inputs)
        (x, s_a), (w, s_b) = self.as_int8(n.inputs[0]), self.as_int8(n.inputs[1])
        lead, (m_rows, k), cols = a[:-2], a[-2:], b[-1]
        batch = math.prod(lead)
        name = n.name
        x = self.b.op("reshape", [x], f"{name}_a3", newshape=(batch, m_rows, k))
        x = self.b.op("transpose", [x], f"{name}_aT", axes=(0, 2, 1))
        x = self.b.op("reshape", [x], f"{name}_data", newshape=(batch, k, m_rows, 1))
        w = self.b.op("reshape", [w], f"{name}_b3", newshape=(batch, k, cols))
        w = self.b.op("transpose", [w], f"{name}_weights", axes=(0, 2, 1))
        s_y = self.scale_for(n.name)
        m, shift, rnd = requant_multipliers(np.array([s_a * s_b / s_y]), np.array([128.0 * 128.0 * k]))
        bias = self.b.const(np.full(cols, rnd[0], np.int32), f"{name}_round")
        acc = self.b.op("batch_matmul", [x, w, bias], f"{name}_bmm", out_dtype="int32")
        acc = self.b.op("multiply", [acc, self.b.const(np.full((1, 1, 1, 1), m[0], np.int32), f"{name}_m")],
                        f"{name}_mul")
        if shift:
            acc = self.b.op("right_shift", [acc], f"{name}_shift", shift=shift)
        acc = self.b.op("clip", [acc], f"{name}_clip", a_min=QMIN, a_max=QMAX)
        y = self.b.op("cast", [acc], f"{name}_q", dtype="int8")  # (B, N, M, 1)
        y = self.b.op("reshape", [y], f"{name}_nm", newshape=(batch, cols, m_rows))
        y = self.b.op("transpose", [y], f"{name}_mn", axes=(0, 2, 1))
        out = self.rw.emit("reshape", [y], n.name, newshape=tuple(n.type.shape))
        self.scale[out] = s_y
        self.layers.append(QuantizedLayer(n.name, out, s_y, "matmul", int(m[0]).bit_length()))

    def _activation_matmul(self, n: Node) -> bool:
        """A float matmul of two computed values of rank >= 3 with the same leading axes (no broadcast)."""
        if n.op != "matmul" or not n.type.dtype.startswith("float"):
            return False
        a, b = (self.graph.node(i) for i in n.inputs)
        if a.op == "constant" or b.op == "constant" or len(a.type.shape) < 3 or len(b.type.shape) < 3:
            return False
        return a.type.shape[:-2] == b.type.shape[:-2]

    def scaled(self, n: Node) -> bool:
        """A multiply of an int8 value by a positive scalar constant (attention's 1/sqrt(sqrt(d)) on Q and K)
        changes only the scale: the int8 value passes through (a reshape keeps it a value of its own)."""
        if n.op != "multiply" or len(n.inputs) != 2:
            return False
        for i, j in ((0, 1), (1, 0)):
            x, c = self.rw[n.inputs[i]], self.graph.node(n.inputs[j])
            if (x in self.scale and c.op == "constant" and c.value.size == 1 and float(c.value.reshape(())) > 0
                    and self.graph.node(n.inputs[i]).type.shape == n.type.shape):
                out = self.rw.emit("reshape", [x], n.name, newshape=tuple(n.type.shape))
                self.scale[out] = float(np.float32(self.scale[x] * float(c.value.reshape(()))))
                return True
        return False

    def avg_pool(self, n: Node) -> None:
        """One ``qavg_pool2d`` keeping the input's scale: the divide by the window size is a fixed-point
        multiply (``requant_multipliers`` of ``1/K``: round half up to the multiplier's precision)."""
        x, s_x = self.as_int8(n.inputs[0])
        t = self.graph.node(n.inputs[0]).type
        if n.op in ("global_avg_pool2d", "mean"):
            pool, strides, padding = (t.shape[2], t.shape[3]), (1, 1), (0, 0, 0, 0)
        else:
            pool, strides, padding = tuple(n.attrs["pool_size"]), tuple(n.attrs["strides"]), tuple(n.attrs["padding"])
        k = pool[0] * pool[1]
        m, shift, r = requant_multipliers(np.array([1.0 / k]), np.array([128.0 * k]))
        attrs = dict(pool_size=pool, strides=strides, padding=padding, layout="NCHW", mult=int(m[0]),
                     round=int(r[0]), shift=shift)
        if n.op == "mean" and not n.attrs["keepdims"]:  # the pool, then the reshape dropping H and W
            pooled = self.b.op("qavg_pool2d", [x], f"{n.name}_pool", **attrs)
            out = self.rw.emit("reshape", [pooled], n.name, newshape=tuple(n.type.shape))
        else:
            out = self.rw.emit("qavg_pool2d", [x], n.name, **attrs)
        self.scale[out] = s_x
        self.layers.append(QuantizedLayer(n.name, out, s_x, "avg_pool"))

    def _int8_avg_pool(self, n: Node) -> bool:
        """An average pool of an int8 NCHW value that ``qavg_pool2d`` computes: every window divided by
        its full size (no padding, or padding counted), no dilation or ceil mode."""
        if n.op not in ("global_avg_pool2d", "avg_pool2d", "mean") or self.rw[n.inputs[0]] not in self.scale:
            return False
        if n.op == "mean":  # a global average pool spelled ReduceMean over H and W
            return sorted(n.attrs["axes"]) == [2, 3] and len(self.graph.node(n.inputs[0]).type.shape) == 4
        if n.attrs.get("layout", "NCHW") != "NCHW" or len(n.type.shape) != 4:
            return False
        if n.op == "avg_pool2d":
            a = n.attrs
            if tuple(a["dilation"]) != (1, 1) or a.get("ceil_mode") or (any(a["padding"]) and not a.get("count_include_pad")):
                return False
        return True

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
            elif self._int8_avg_pool(n):
                self.avg_pool(n)
            elif n.op == "concatenate" and self._int8_alike(n):
                out = self.rw.copy(n)
                self.scale[out] = self.scale[self.rw[n.inputs[0]]]
            elif self._activation_matmul(n):
                self.activation_matmul(n)
            elif self.scaled(n):
                pass
            elif n.op in _PASSTHROUGH and self.rw[n.inputs[0]] in self.scale:
                out = self.rw.copy(n)
                self.scale[out] = self.scale[self.rw[n.inputs[0]]]
            else:
                self.rw.copy(n, [self.as_float(self.rw[i]) for i in n.inputs])
        for o in self.graph.outputs:
            self.rw.bind(o, self.as_float(self.rw[o]))
        return self.rw.finish()

    def _int8_alike(self, n: Node) -> bool:
        """Every operand int8 with one scale (:func:`shared_concat_ranges` gives a concat's operands one)."""
        new = [self.rw[i] for i in n.inputs]
        return all(v in self.scale for v in new) and len({self.scale[v] for v in new}) == 1

    def _any_int8(self, n: Node) -> bool:
        return any(self.rw[i] in self.scale for i in n.inputs)

    def _same_shape(self, n: Node) -> bool:
        return all(self.graph.node(i).type.shape == n.type.shape for i in n.inputs)


def shared_concat_ranges(graph: Graph, ranges: Mapping[str, float]) -> dict[str, float]:
    """``ranges`` with every concatenation's operands and result given one threshold (the largest of
    theirs), as TensorRT does: int8 operands of one scale concatenate as int8 with no requantization,
    so the concat is data movement (on the VDLA, by placement: :func:`~.plan_memory.placed_concats`)."""
    out = dict(ranges)
    for n in graph.nodes:
        if n.op != "concatenate" or any(graph.node(i).op == "constant" for i in n.inputs):
            continue
        names = [*n.inputs, n.name]
        if all(v in out for v in names):
            t = max(out[v] for v in names)
            out.update({v: t for v in names})
    return out


def quantize_model(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]], *, skip_first_conv: bool = True,
                   calibration: str | Calibration = "max", per_channel: bool = True) -> QuantizedModel:
    """Quantize conv2d/dense (and the residual adds, relus and max pools between them) to int8.

    ``samples`` are calibration inputs (name -> array, like :func:`run_graph`'s ``inputs``);
    ``calibration`` is ``max``, ``percentile[:P]`` or ``kl`` (:func:`parse_calibration`);
    ``per_channel`` picks per-channel weight scales with integer multipliers over per-tensor powers
    of two.  Run :func:`fold_batch_norm` first so batch norms are part of the convolutions' weights.
    """
    cal = parse_calibration(calibration)
    q = _Quantizer(graph, shared_concat_ranges(graph, calibrate(graph, samples, cal)), skip_first_conv, per_channel)
    out = q.run()
    return QuantizedModel(out, graph, tuple(q.layers), cal, per_channel)


def quantize(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]], *, skip_first_conv: bool = True,
             calibration: str | Calibration = "max", per_channel: bool = True) -> Graph:
    """The graph of :func:`quantize_model`."""
    return quantize_model(graph, samples, skip_first_conv=skip_first_conv, calibration=calibration,
                          per_channel=per_channel).graph


__all__ = ["QuantizedLayer", "QuantizedModel", "calibrate", "shared_concat_ranges", "exponent_for", "quantize", "quantize_model",
           "quantize_weight", "quantize_weight_per_channel", "requant_multipliers"]
