"""The ``llvm`` lowerings of the graph operators, and fused kernels built from them.

Every graph operator registers ``fn(node, inputs) -> te.Tensor`` for the ``llvm`` target
(:func:`~vdla.compiler.graph.ops.register_lowering`); ``inputs`` are :class:`Operand` s: a
tensor plus its value when it is a compile-time constant, so a lowering can re-layout
weights once at compile time instead of in every call.  This file holds the element-wise,
quantization and data-movement lowerings; :mod:`vdla.compiler.graph.lower_llvm_nn` the
compute-heavy ones, which use ``vdla.compiler.topi``'s scheduled operators where they fit and
record their schedules here.  Every lowering keeps the reference's exact semantics
(integer wrap, truncating division, round-half-even quantization).

:func:`build_kernel` turns one ``fused`` node into one PrimFunc in two steps:
:func:`draft_kernel` lowers the body node by node into tensor expressions (cheap), and
:func:`compile_draft` applies the recorded topi schedules, inlines the element-wise stages
into their consumers (so conv + bias + relu is one loop nest writing the output once),
vectorizes the remaining stages and lowers to TIR (expensive).  Lowerings never bake a
constant's value into code (constants reach kernels as parameters through
:meth:`KernelBuilder.constant`), so two structurally identical kernels share one compiled
function: :func:`vdla.compiler.graph.build.build_model` drafts every kernel but compiles each
distinct one once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from vdla.compiler import te, topi
from vdla.compiler.autotune import dispatch
from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.layout import parse_layout
from vdla.compiler.graph.ops import lower, register_lowering
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.te import ComputeOp, PlaceholderOp, Tensor
from vdla.compiler.tir import op as tir
from vdla.compiler.tir.ir import IterVar, PrimExpr, PrimFunc, const
from vdla.compiler.tir.pipeline import lower as lower_tir
from vdla.compiler.topi.utils import ElementwiseKnobs, schedule_elementwise, vector_lanes


@dataclass
class KernelBuilder:
    """State of one kernel being lowered: its parameters and the schedules to apply."""

    name: str
    params: list[tuple[Tensor, str | np.ndarray]] = field(default_factory=list)
    """(placeholder, source): a graph value's name, or a constant computed at compile time."""
    schedules: list[Callable[[Schedule], None]] = field(default_factory=list)
    anchors: set[int] = field(default_factory=set)
    epilogues: dict[int, tuple[Callable[[Schedule], None], Callable[[Schedule, Tensor], None]]] = \
        field(default_factory=dict)
    """Per anchor output op (id): its schedule, and the schedule that also fuses an element-wise epilogue."""

    def constant(self, array: np.ndarray, hint: str) -> Tensor:
        """A kernel parameter holding ``array`` (e.g. weights re-laid out for a topi operator)."""
        t = te.placeholder(array.shape, array.dtype.name, name=f"{hint}_{len(self.params)}")
        self.params.append((t, np.array(array, order="C")))
        return t

    def scheduled(self, out: Tensor, fn: Callable[[Schedule], None], inputs: Sequence[Tensor],
                  with_epilogue: Callable[[Schedule, Tensor], None] | None = None) -> Tensor:
        """Mark ``out`` as scheduled by ``fn`` (a topi schedule of ``out`` computed from ``inputs``):
        it and the stages topi made on the way are left to ``fn``, never inlined or re-scheduled.
        ``with_epilogue(s, stage)`` replaces ``fn`` when the kernel's output is an element-wise
        ``stage`` of ``out``'s shape over it (:func:`compile_draft` picks)."""
        self.schedules.append(fn)
        if with_epilogue is not None:
            self.epilogues[id(out.op)] = (fn, with_epilogue)
        outside = {id(op) for op in te.topo_ops(list(inputs))}
        self.anchors.update(id(op) for op in te.topo_ops([out]) if id(op) not in outside)
        return out


@dataclass(frozen=True)
class Operand:
    """An operator input: its tensor, its value when constant, and the kernel it belongs to."""

    tensor: Tensor
    value: np.ndarray | None
    kernel: KernelBuilder


# ---- helpers -------------------------------------------------------------------------------------
def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(int(s.value) for s in t.shape)  # type: ignore[attr-defined]


def _c(value: float | int, dtype: str) -> PrimExpr:
    return const(value, dtype)


def _bcast(t: Tensor, idx: Sequence[PrimExpr]) -> PrimExpr:
    """``t`` read at output index ``idx`` with NumPy broadcasting."""
    shape = _shape(t)
    tail = idx[len(idx) - len(shape):] if shape else ()
    return t[tuple(0 if s == 1 else i for s, i in zip(shape, tail))]


def _out_shape(node: Node) -> tuple[int, ...]:
    return node.type.shape


def reduced_index(rank: int, axes: Sequence[int], rs: Sequence[IterVar], keepdims: bool
                  ) -> Callable[[Sequence[PrimExpr]], tuple[PrimExpr, ...]]:
    """The input index of a reduction over ``axes``: output indices with the reduce axes ``rs``
    put in at ``axes`` (an output index of a kept, size-1 reduced dimension is skipped)."""
    def full(i: Sequence[PrimExpr]) -> tuple[PrimExpr, ...]:
        it = iter(i)
        out: list[PrimExpr] = []
        for d in range(rank):
            if d in axes:
                out.append(rs[axes.index(d)])
                if keepdims:
                    next(it)
            else:
                out.append(next(it))
        return tuple(out)

    return full


def _elementwise(node: Node, fn: Callable[..., PrimExpr], *xs: Tensor) -> Tensor:
    return te.compute(_out_shape(node), lambda *i: fn(*(_bcast(x, i) for x in xs)), name=node.name)


def _layout_index(idx: Sequence[PrimExpr], src: str, dst: str) -> tuple[PrimExpr, ...]:
    """Index into a ``src``-layout tensor of the element at ``idx`` of its ``dst``-layout copy."""
    d, s = parse_layout(dst), parse_layout(src)
    primal = {}
    for a in d.primal:
        outer = idx[d.axes.index(a)]
        primal[a] = outer * d.factor(a) + idx[d.axes.index(a.lower())] if a.lower() in d.axes else outer
    out = []
    for a in s.axes:
        f = s.factor(a)
        if a.isupper():
            out.append(primal[a] // f if f > 1 else primal[a])
        else:
            out.append(primal[a.upper()] % f if f > 1 else primal[a.upper()] * 0)
    return tuple(out)


def _relayout(x: Tensor, src: str, dst: str, shape: tuple[int, ...], name: str) -> Tensor:
    if src == dst:
        return x
    return te.compute(shape, lambda *i: x[_layout_index(i, src, dst)], name=name)


def _round_half_even(x: PrimExpr) -> PrimExpr:
    """NumPy's ``rint`` on a float: floor, then resolve exact halves to the even neighbour."""
    f = tir.floor(x)
    d = x - f
    half = _c(0.5, x.dtype)
    odd = (f - _c(2.0, x.dtype) * tir.floor(f * half)) != _c(0.0, x.dtype)
    up = (d > half) | ((d == half) & odd)
    return tir.if_then_else(up, f + _c(1.0, x.dtype), f)


# ---- element-wise ----------------------------------------------------------------------------------
@register_lowering("relu", "llvm")
def _relu(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _elementwise(node, lambda v: tir.max(v, _c(0, v.dtype)), xs[0].tensor)


@register_lowering("sigmoid", "llvm")
def _sigmoid(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _elementwise(node, te.sigmoid, xs[0].tensor)


@register_lowering("tanh", "llvm")
def _tanh(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _elementwise(node, te.tanh, xs[0].tensor)


@register_lowering("clip", "llvm")
def _clip(node: Node, xs: Sequence[Operand]) -> Tensor:
    lo, hi = node.attrs.get("a_min"), node.attrs.get("a_max")
    dtype = node.type.dtype

    def bound(v: float | int) -> PrimExpr:
        return _c(np.asarray(v).astype(dtype).item(), dtype)  # the reference casts the bounds first

    def fn(v: PrimExpr) -> PrimExpr:
        if lo is not None:
            v = tir.max(v, bound(lo))
        return tir.min(v, bound(hi)) if hi is not None else v

    return _elementwise(node, fn, xs[0].tensor)


@register_lowering("cast", "llvm")
def _cast(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _elementwise(node, lambda v: v.astype(node.attrs["dtype"]), xs[0].tensor)


@register_lowering("right_shift", "llvm")
def _right_shift(node: Node, xs: Sequence[Operand]) -> Tensor:
    s, dtype = node.attrs["shift"], node.type.dtype
    # Floor division by 2**s is the arithmetic shift; a negative amount multiplies (wrapping).
    if s >= 0:
        return _elementwise(node, lambda v: v // _c(1 << s, dtype) if s else v, xs[0].tensor)
    return _elementwise(node, lambda v: v * _c(1 << -s, dtype), xs[0].tensor)


_BINARY: dict[str, Callable[[PrimExpr, PrimExpr], PrimExpr]] = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "maximum": tir.max, "minimum": tir.min,
}


def _register_binary(name: str, fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> None:
    @register_lowering(name, "llvm")
    def _lower(node: Node, xs: Sequence[Operand]) -> Tensor:
        return _elementwise(node, fn, xs[0].tensor, xs[1].tensor)


for _name, _fn in _BINARY.items():
    _register_binary(_name, _fn)


@register_lowering("batch_norm", "llvm")
def _batch_norm(node: Node, xs: Sequence[Operand]) -> Tensor:
    x, scale, bias, mean, var = (o.tensor for o in xs)
    eps = _c(node.attrs["epsilon"], node.type.dtype)

    def fn(*i: PrimExpr) -> PrimExpr:
        c = i[1]
        return (x[i] - mean[c]) / te.sqrt(var[c] + eps) * scale[c] + bias[c]

    return te.compute(_out_shape(node), fn, name=node.name)


# ---- quantization -------------------------------------------------------------------------------
def _per_axis(t: Tensor, idx: Sequence[PrimExpr], axis: int) -> PrimExpr:
    shape = _shape(t)
    if len(shape) == 0:
        return t[()]
    return t[(0,) if shape[0] == 1 else (idx[axis % len(idx)],)]


@register_lowering("quantize_linear", "llvm")
def _quantize_linear(node: Node, xs: Sequence[Operand]) -> Tensor:
    x, scale = xs[0].tensor, xs[1].tensor
    zp = xs[2].tensor if len(xs) == 3 else None
    axis, dtype = node.attrs["axis"], node.type.dtype
    info = np.iinfo(dtype)
    ft = x.dtype if x.dtype != "int32" else "float32"

    def fn(*i: PrimExpr) -> PrimExpr:
        q = _round_half_even(x[i].astype(ft) / _per_axis(scale, i, axis).astype(ft)).astype("float64")
        if zp is not None:
            q = q + _per_axis(zp, i, axis).astype("float64")
        q = tir.min(tir.max(q, _c(float(info.min), "float64")), _c(float(info.max), "float64"))
        return q.astype(dtype)

    return te.compute(_out_shape(node), fn, name=node.name)


@register_lowering("dequantize_linear", "llvm")
def _dequantize_linear(node: Node, xs: Sequence[Operand]) -> Tensor:
    x, scale = xs[0].tensor, xs[1].tensor
    zp = xs[2].tensor if len(xs) == 3 else None
    axis, dtype = node.attrs["axis"], node.type.dtype

    def fn(*i: PrimExpr) -> PrimExpr:
        v = x[i].astype("int64")
        if zp is not None:
            v = v - _per_axis(zp, i, axis).astype("int64")
        return v.astype(dtype) * _per_axis(scale, i, axis)

    return te.compute(_out_shape(node), fn, name=node.name)


# ---- data movement --------------------------------------------------------------------------------
@register_lowering("reshape", "llvm")
def _reshape(node: Node, xs: Sequence[Operand]) -> Tensor:
    x = xs[0].tensor
    src = _shape(x)
    out = _out_shape(node)
    if tuple(d for d in src if d != 1) == tuple(d for d in out if d != 1):
        # Only unit axes change: a pure re-indexing, no division.
        keep = [i for i, d in enumerate(out) if d != 1]
        src_keep = [i for i, d in enumerate(src) if d != 1]

        def squeeze(*i: PrimExpr) -> PrimExpr:
            idx: list[PrimExpr | int] = [0] * len(src)
            for so, oo in zip(src_keep, keep):
                idx[so] = i[oo]
            return x[tuple(idx)]

        return te.compute(out, squeeze, name=node.name)

    def fn(*i: PrimExpr) -> PrimExpr:
        flat: PrimExpr | int = 0
        for k, d in zip(i, out):
            flat = flat * d + k
        idx = []
        for d in reversed(src):
            idx.append(flat % d)
            flat = flat // d
        return x[tuple(reversed(idx))]

    return te.compute(out, fn, name=node.name)


@register_lowering("transpose", "llvm")
def _transpose(node: Node, xs: Sequence[Operand]) -> Tensor:
    return topi.transpose(xs[0].tensor, node.attrs["axes"], name=node.name)


@register_lowering("concatenate", "llvm")
def _concatenate(node: Node, xs: Sequence[Operand]) -> Tensor:
    out = _out_shape(node)
    axis = node.attrs["axis"] % len(out)
    starts = np.cumsum([0] + [_shape(o.tensor)[axis] for o in xs]).tolist()

    def pick(i: Sequence[PrimExpr], lo: int, hi: int) -> PrimExpr:
        """The element of inputs ``lo .. hi - 1`` at ``i``: a binary search over their start offsets, so
        DenseNet's concatenations of up to ~50 inputs test log2 of that many bounds per element, not all."""
        if hi - lo == 1:
            idx = list(i)
            idx[axis] = i[axis] - starts[lo]
            return xs[lo].tensor[tuple(idx)]
        mid = (lo + hi) // 2
        return tir.if_then_else(i[axis] < starts[mid], pick(i, lo, mid), pick(i, mid, hi))

    return te.compute(out, lambda *i: pick(i, 0, len(xs)), name=node.name)


def _pad_index(i: PrimExpr, lo: int, size: int, mode: str) -> PrimExpr:
    """Source index of output index ``i`` along one axis (before the crop) for the non-constant modes."""
    j = i - lo
    if mode == "edge":
        return tir.min(tir.max(j, 0), size - 1)
    if mode == "wrap":
        return j % size
    period = 2 * (size - 1)
    m = j % period if size > 1 else j * 0
    return tir.if_then_else(m < size, m, period - m)


@register_lowering("pad", "llvm")
def _pad(node: Node, xs: Sequence[Operand]) -> Tensor:
    x = xs[0].tensor
    shape, mode, dtype = _shape(x), node.attrs["mode"], node.type.dtype
    widths = node.attrs["pad_width"]
    fill = _c(np.asarray(node.attrs["value"]).astype(dtype).item(), dtype)

    def fn(*i: PrimExpr) -> PrimExpr:
        # Output index i is index i + crop of the grown array; grown index g reads source g - grow.
        idx, inside = [], []
        for k, (lo, _) in enumerate(widths):
            g = i[k] + max(-lo, 0)
            grow = max(lo, 0)
            if mode == "constant":
                idx.append(g - grow)
                if grow or widths[k][1] > 0:
                    inside += [g >= grow, g < grow + shape[k]]
            else:
                idx.append(_pad_index(g, grow, shape[k], mode))
        if not inside:
            return x[tuple(idx)]
        safe = tuple(tir.min(tir.max(j, 0), s - 1) for j, s in zip(idx, shape))
        cond = inside[0]
        for c in inside[1:]:
            cond = cond & c
        return tir.if_then_else(cond, x[safe], fill)

    return te.compute(_out_shape(node), fn, name=node.name)


@register_lowering("layout_transform", "llvm")
def _layout_transform(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _relayout(xs[0].tensor, node.attrs["src_layout"], node.attrs["dst_layout"], _out_shape(node), node.name)


# ---- kernels ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CpuKernel:
    """One compiled CPU kernel: its lowered function and where each parameter comes from."""

    name: str
    func: PrimFunc
    args: tuple[str | np.ndarray, ...]
    """Per input parameter, in order: a graph value name or a compile-time constant."""


def _inline_elementwise(s: Schedule, out: Tensor, kb: KernelBuilder) -> None:
    """Inline every element-wise stage whose consumers are all element-wise (never into a reduction).

    A topi operator's element-wise stages (a conv's zero padding) take their producers too: the
    channel packing of an NCHW input then happens in the padding pass instead of a pass of its own."""
    ops = te.topo_ops([out])
    consumers: dict[int, list[ComputeOp]] = {}
    for op in ops:
        for t in op.input_tensors():
            consumers.setdefault(id(t.op), []).append(op)  # type: ignore[arg-type]
    for op in reversed(ops):
        if op is out.op or not isinstance(op, ComputeOp) or op.reduce_axis or id(op) in kb.anchors:
            continue
        users = consumers.get(id(op), [])
        if users and all(isinstance(u, ComputeOp) and not u.reduce_axis for u in users):
            s.compute_inline(op.outputs[0])
        else:
            schedule_elementwise(s, op.outputs[0], vector_lanes(None))


@dataclass(frozen=True)
class KernelDraft:
    """A fused node lowered to tensor expressions, not yet scheduled: its output and parameters."""

    name: str
    kb: KernelBuilder
    out: Tensor
    params: tuple[tuple[Tensor, str | np.ndarray], ...]
    """The parameters the output depends on, in order, with their sources."""

    @property
    def args(self) -> tuple[str | np.ndarray, ...]:
        return tuple(src for _, src in self.params)

    @property
    def fuses_epilogue(self) -> bool:
        """Whether :func:`compile_draft` computes the output as an element-wise epilogue inside a conv's
        register tile (the tuner then times the conv with that epilogue, ``vdla.compiler.autotune.epilogue``)."""
        return _fusable_anchor(self.kb, self.out) is not None

    def signature(self) -> tuple[tuple[tuple[int, ...], str], ...]:
        """Shapes and dtypes of the parameters then the output: what a compiled function is called with."""
        return tuple((_shape(t), t.dtype) for t, _ in self.params) + ((_shape(self.out), self.out.dtype),)


def draft_kernel(node: Node, graph: Graph, name: str) -> KernelDraft:
    """Lower the body of one ``fused`` node of ``graph`` into tensor expressions (cheap; no schedule)."""
    body: Graph = node.attrs["body"]
    kb = KernelBuilder(name)
    env: dict[str, Operand] = {}
    for p, outer in zip(body.input_nodes, node.inputs):
        src = graph.node(outer)
        value = src.value if src.op == "constant" else None
        t = te.placeholder(p.type.shape, p.type.dtype, name=f"p{len(kb.params)}")
        kb.params.append((t, outer))
        env[p.name] = Operand(t, value, kb)
    for n in body.nodes:
        if n.op == "input":
            continue
        if n.op == "constant":
            env[n.name] = Operand(kb.constant(n.value, "c"), n.value, kb)
            continue
        out_t = lower(n, "llvm", [env[i] for i in n.inputs])
        env[n.name] = Operand(out_t, None, kb)
    out = env[body.outputs[0]].tensor
    if isinstance(out.op, PlaceholderOp):
        src = out  # the kernel returns one of its inputs: copy it
        out = te.compute(_shape(src), lambda *i: src[i], name=f"{name}_out")
    used = {id(op) for op in te.topo_ops([out])}
    return KernelDraft(name, kb, out, tuple((t, src) for t, src in kb.params if id(t.op) in used))


def _fusable_anchor(kb: KernelBuilder, out: Tensor) -> int | None:
    """The anchor (op id) whose element-wise epilogue ``out`` is: ``out`` has its shape and reaches it
    through element-wise stages only (inlined into ``out``); None when there is no such single anchor."""
    if id(out.op) in kb.anchors or not isinstance(out.op, ComputeOp) or out.op.reduce_axis:
        return None
    found: set[int] = set()
    stack, seen = [out.op], set()
    while stack:
        op = stack.pop()
        for t in op.input_tensors():
            if id(t.op) in seen:
                continue
            seen.add(id(t.op))
            if id(t.op) in kb.epilogues and _shape(t) == _shape(out):
                found.add(id(t.op))
            elif id(t.op) in kb.anchors:
                return None  # an anchor that cannot absorb the epilogue: keep the stages apart
            elif isinstance(t.op, ComputeOp):
                if t.op.reduce_axis:
                    return None
                stack.append(t.op)
    return found.pop() if len(found) == 1 else None


def elementwise_workload(draft: KernelDraft) -> dict[str, int] | None:
    """The auto-tuner's description of a float32 kernel made of element-wise stages only (no topi
    schedule, no reduction: a residual add + ReLU, a layout copy, ...): the fused outer extent of its
    output's loops, the innermost extent and how many full-size inputs it streams.  None for any
    other kernel."""
    out = draft.out
    if draft.kb.anchors or out.dtype != "float32" or not isinstance(out.op, ComputeOp):
        return None
    if any(isinstance(op, ComputeOp) and op.reduce_axis for op in te.topo_ops([out])):
        return None
    shape = _shape(out)
    size = math.prod(shape)
    if size == 0:
        return None  # an empty tensor: no loop to run, nothing to tune
    streams = sum(math.prod(_shape(t)) == size for t, _ in draft.params)
    return {"outer": size // shape[-1] if shape else 1, "inner": shape[-1] if shape else 1, "streams": streams}


def compile_draft(draft: KernelDraft) -> PrimFunc:
    """Schedule and lower a draft into the PrimFunc ``draft.name(params..., out)``.

    When the output is an element-wise epilogue of a conv (bias, residual add, ReLU), the conv's
    schedule computes it tile by tile inside the output's loops (:func:`_fusable_anchor`)."""
    kb, out = draft.kb, draft.out
    s = create_schedule(out)
    fused = _fusable_anchor(kb, out)
    plain, with_epilogue = kb.epilogues[fused] if fused is not None else (None, None)
    for fn in kb.schedules:
        if fn is not plain:
            fn(s)
    _inline_elementwise(s, out, kb)
    if with_epilogue is not None:
        with_epilogue(s, out)
    else:
        workload = elementwise_workload(draft)
        if workload is not None:
            knobs = dispatch.query("elementwise", workload) or ElementwiseKnobs(vector_lanes(None))
            schedule_elementwise(s, out, knobs.vector, knobs.parallel)
        elif id(out.op) not in kb.anchors and not (isinstance(out.op, ComputeOp) and out.op.reduce_axis):
            schedule_elementwise(s, out, vector_lanes(None))
    func = lower_tir(s, "llvm")
    order = [t.buffer for t, _ in draft.params] + [out.buffer]
    by_id = {id(b): b for b in func.params}
    missing = [b.name for b in order if id(b) not in by_id]
    if missing:
        raise NotLoweredError(f"kernel {draft.name}: parameters {missing} did not survive lowering")
    return PrimFunc(draft.name, tuple(order), func.body, func.attrs)


def build_kernel(node: Node, graph: Graph, name: str) -> CpuKernel:
    """Lower one ``fused`` node of ``graph`` into a scheduled, lowered PrimFunc named ``name``."""
    draft = draft_kernel(node, graph, name)
    return CpuKernel(name, compile_draft(draft), draft.args)


__all__ = ["CpuKernel", "KernelBuilder", "KernelDraft", "Operand", "build_kernel", "compile_draft", "draft_kernel"]

# The compute-heavy operators' lowerings use the helpers above; importing them registers them.
from vdla.compiler.graph import lower_llvm_nn  # noqa: E402,F401
from vdla.compiler.graph import lower_llvm_matmul  # noqa: E402,F401

# The indexing and float-math lowerings use the helpers above too.
from vdla.compiler.graph import lower_llvm_index  # noqa: E402,F401

# The requantizing int8 operators (qadd, qavg_pool2d) for the kernels left on the host.
from vdla.compiler.graph import lower_llvm_qnn  # noqa: E402,F401
