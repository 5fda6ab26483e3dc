"""The ``vdla`` lowerings: a partitioned VDLA kernel (packed int8 conv2d/dense and its ALU chain)
becomes one VDLA program (a kernel of one ``qadd`` or ``qavg_pool2d``:
:mod:`vdla.compiler.graph.lower_vdla_alu`).

The GEMM's lowering starts a :class:`VdlaGemm` description; each ALU op after it
(``relu``, a per-channel ``multiply``, ``right_shift``, ``clip``, the narrowing ``cast``) folds
into it, checking that the chain is one the accelerator's epilogue runs exactly:
``((acc + bias) [relu] * m[c]) >> shift``,
clamped to ``[0 | -128, 127]`` and narrowed by the STORE.  A chain outside that form raises
:class:`~vdla.compiler.graph.NotLoweredError` naming the reason, and ``build_model`` runs the
kernel on the CPU instead.  :func:`compile_kernel` compiles the description with
``vdla.compiler.vdla.topi.compile_conv2d`` and binds the weights and bias into the program's
DRAM image once, so the runtime only re-binds the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from vdla.compiler.autotune import dispatch
from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.graph.ir import Graph, Node, TensorType
from vdla.compiler.graph.ops import lower, register_lowering
from vdla.compiler.graph.lower_vdla_alu import ALU_KERNEL_OPS, compile_alu_kernel
from vdla.compiler.graph.vdla_kernel import VdlaKernel, compile_conv_workload
from vdla.compiler.graph.vdla_rules import gemm_unsupported_reason, is_packed_for
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import (CompiledConv, Conv2dWorkload, Requantize, batch_matmul_workload, compile_conv2d,
                                     dense_workload)
from vdla.compiler.vdla.topi.epilogue import Residual
from vdla.compiler.vdla.topi.ops import residual_constants
from vdla.compiler.vdla.topi.reference import pack_bias, pack_depthwise_kernel
from vdla.runtime.program import Program


@dataclass(frozen=True)
class VdlaOperand:
    """An input of a VDLA kernel's body: its type, its value when constant, the target config."""

    type: TensorType
    value: np.ndarray | None
    cfg: HwConfig


@dataclass(frozen=True)
class VdlaGemm:
    """A VDLA GEMM and the part of its epilogue folded so far."""

    op: str
    workload: Conv2dWorkload
    kernel: np.ndarray | None
    """Weights in the program's layout (O/BO, I/BI, KH, KW, BO, BI); None for a ``batch_matmul``, whose weights
    are its second activation, bound on every call."""
    bias: np.ndarray | None
    out_type: TensorType
    cfg: HwConfig
    relu: bool = False
    multiplier: np.ndarray | None = None
    """Per-output-channel int32 multipliers (the ALU MUL before the shift), when the chain has one."""
    shift: int | None = None
    clip: tuple[int, int] | None = None
    narrowed: bool = False

    def requantize(self) -> Requantize:
        """The epilogue this chain computes; raises NotLoweredError when it is not one."""
        hi = (1 << (self.cfg.out_width - 1)) - 1
        if not self.narrowed or self.clip is None:
            raise NotLoweredError("the VDLA epilogue always clamps and narrows to int8: the chain needs a clip "
                                  "and a cast to int8 after the GEMM")
        lo = max(self.clip[0], 0) if self.relu else self.clip[0]
        if self.clip[1] != hi or lo not in (0, -hi - 1):
            raise NotLoweredError(f"clip bounds {self.clip} are not the int8 range (or [0, {hi}] after relu)")
        return Requantize(shift=self.shift or 0, relu=lo == 0, bias=self.bias is not None,
                          multiplier=self.multiplier is not None)


def _gemm_checks(node: Node, xs: Sequence[VdlaOperand]) -> HwConfig:
    cfg = xs[0].cfg
    reason = gemm_unsupported_reason(node, [x.type for x in xs], cfg)
    if reason is None and not is_packed_for(node, cfg):
        reason = f"its layouts are not the packed layouts of config {cfg.name!r} (run alter_layout)"
    if reason is None and xs[0].value is not None:
        reason = "its data operand is a constant (fold it instead)"
    if reason is None and node.op != "batch_matmul" and xs[1].value is None:
        reason = "its weights are not constants"
    if reason is None and node.op == "batch_matmul" and xs[1].value is not None:
        reason = "its weights are a constant (a linear layer: rewrite it as dense)"
    if reason is not None:
        raise NotLoweredError(f"{node.op} {node.name!r} cannot run on the VDLA: {reason}")
    return cfg


@register_lowering("conv2d", "vdla")
def _conv2d(node: Node, xs: Sequence[VdlaOperand]) -> VdlaGemm:
    cfg = _gemm_checks(node, xs)
    a = node.attrs
    n, c6, h, w, b, bi = xs[0].type.shape
    depthwise = a.get("groups", 1) > 1  # the rules pass only depthwise groupings, weights (C, 1, KH, KW)
    oc = xs[1].type.shape[0] if depthwise else xs[1].type.shape[0] * xs[1].type.shape[4]
    kh, kw = xs[1].type.shape[2:4]
    (sh, sw), pads = a["strides"], tuple(a["padding"])
    if sh != sw or len(set(pads)) != 1:
        raise NotLoweredError(f"conv2d {node.name!r}: the VDLA schedule takes one stride and one padding for both "
                              f"axes, got strides {(sh, sw)} and padding {pads}")
    wl = Conv2dWorkload(n * b, c6 * bi, h, w, oc, kh, kw, sh, pads[0], depthwise)
    try:
        wl.check(cfg)
    except ValueError as exc:
        raise NotLoweredError(f"conv2d {node.name!r}: {exc}") from None
    bias = xs[2].value if len(xs) == 3 else None
    if len(xs) == 3 and bias is None:
        raise NotLoweredError(f"conv2d {node.name!r}: the bias must be a constant")
    kernel = pack_depthwise_kernel(cfg, xs[1].value) if depthwise else xs[1].value  # type: ignore[arg-type]
    return VdlaGemm("conv2d", wl, kernel, bias, node.type, cfg)


@register_lowering("dense", "vdla")
def _dense(node: Node, xs: Sequence[VdlaOperand]) -> VdlaGemm:
    cfg = _gemm_checks(node, xs)
    if cfg.batch != 1:
        raise NotLoweredError(f"dense {node.name!r}: the VDLA dense schedule maps rows onto BATCH=1, "
                              f"config {cfg.name!r} has BATCH={cfg.batch}")
    m, kb, _, bi = xs[0].type.shape
    nb, _, bo, _ = xs[1].type.shape
    wl = dense_workload(m, kb * bi, nb * bo)
    bias = xs[2].value if len(xs) == 3 else None
    if len(xs) == 3 and bias is None:
        raise NotLoweredError(f"dense {node.name!r}: the bias must be a constant")
    kernel = xs[1].value.reshape(nb, kb, 1, 1, bo, bi)  # type: ignore[union-attr]
    return VdlaGemm("dense", wl, kernel, bias, node.type, cfg)


@register_lowering("batch_matmul", "vdla")
def _batch_matmul(node: Node, xs: Sequence[VdlaOperand]) -> VdlaGemm:
    cfg = _gemm_checks(node, xs)
    b, kb, m, _, _, bi = xs[0].type.shape
    _, nb, _, bo, _ = xs[1].type.shape
    wl = batch_matmul_workload(b, m, kb * bi, nb * bo)
    bias = xs[2].value if len(xs) == 3 else None
    if len(xs) == 3 and bias is None:
        raise NotLoweredError(f"batch_matmul {node.name!r}: the bias must be a constant")
    return VdlaGemm("batch_matmul", wl, None, bias, node.type, cfg)


def _gemm(node: Node, xs: Sequence[object]) -> VdlaGemm:
    g = xs[0]
    if not isinstance(g, VdlaGemm) or g.narrowed:
        raise NotLoweredError(f"{node.op} {node.name!r} does not follow a VDLA GEMM's accumulator")
    return g


@register_lowering("relu", "vdla")
def _relu(node: Node, xs: Sequence[object]) -> VdlaGemm:
    g = _gemm(node, xs)
    if g.multiplier is not None:
        raise NotLoweredError(f"relu {node.name!r}: the VDLA epilogue applies ReLU before the multiplier")
    return replace(g, relu=True, out_type=node.type)


@register_lowering("multiply", "vdla")
def _multiply(node: Node, xs: Sequence[object]) -> VdlaGemm:
    gemms = [x for x in xs if isinstance(x, VdlaGemm)]
    consts = [x for x in xs if isinstance(x, VdlaOperand)]
    if len(gemms) != 1 or len(consts) != 1:
        raise NotLoweredError(f"multiply {node.name!r}: the VDLA epilogue multiplies the accumulator by a constant")
    g = _gemm(node, gemms)
    if g.multiplier is not None or g.shift is not None or g.clip is not None:
        raise NotLoweredError(f"multiply {node.name!r}: the VDLA epilogue multiplies once, before the shift")
    m = per_channel_vector(consts[0].value, g.out_type.shape, g.workload.oc)
    if m is None or consts[0].type.dtype != "int32":
        raise NotLoweredError(f"multiply {node.name!r}: the multiplier must be an int32 constant per output "
                              f"channel (the same for every pixel)")
    return replace(g, multiplier=m, out_type=node.type)


def per_channel_vector(value: np.ndarray | None, out_shape: Sequence[int], channels: int) -> np.ndarray | None:
    """The per-channel values of a constant broadcast against a packed GEMM output
    (``(N/B, C/BO, [H, W,] B, BO)``), or None when it varies along any other axis."""
    if value is None:
        return None
    if value.size == 1:
        return np.full(channels, value.reshape(()), np.int32)
    if value.ndim != len(out_shape) or value.shape[1] * value.shape[-1] != channels:
        return None
    per = value[(0, slice(None)) + (0,) * (value.ndim - 3) + (slice(None),)]
    if not np.array_equal(value, np.broadcast_to(per.reshape((1, per.shape[0]) + (1,) * (value.ndim - 3) +
                                                             (per.shape[1],)), value.shape)):
        return None
    return per.reshape(-1).astype(np.int32)


@register_lowering("right_shift", "vdla")
def _right_shift(node: Node, xs: Sequence[object]) -> VdlaGemm:
    g, s = _gemm(node, xs), node.attrs["shift"]
    if g.shift is not None or g.clip is not None or not 0 <= s < g.cfg.acc_width:
        raise NotLoweredError(f"right_shift {node.name!r}: the VDLA epilogue shifts once, right, before clamping "
                              f"(shift {s})")
    return replace(g, shift=s, out_type=node.type)


@register_lowering("clip", "vdla")
def _clip(node: Node, xs: Sequence[object]) -> VdlaGemm:
    g = _gemm(node, xs)
    lo, hi = node.attrs.get("a_min"), node.attrs.get("a_max")
    if lo is None or hi is None or g.clip is not None:
        raise NotLoweredError(f"clip {node.name!r}: the VDLA epilogue clamps once to both bounds")
    return replace(g, clip=(int(lo), int(hi)), out_type=node.type)


@register_lowering("cast", "vdla")
def _cast(node: Node, xs: Sequence[object]) -> VdlaGemm:
    g = _gemm(node, xs)
    if node.type.dtype != f"int{g.cfg.out_width}":
        raise NotLoweredError(f"cast {node.name!r} to {node.type.dtype}: the STORE narrows to int{g.cfg.out_width}")
    return replace(g, narrowed=True, out_type=node.type)


def residual_add(body: Graph) -> Node | None:
    """The ``qadd`` a VDLA GEMM kernel ends in when a residual add is fused into its epilogue
    (:func:`~vdla.compiler.graph.passes.fuse_residual.fuse_residual_add`), else None."""
    last = body.node(body.outputs[0])
    has_gemm = any(n.op in ("conv2d", "dense", "batch_matmul") for n in body.nodes)
    return last if last.op == "qadd" and has_gemm else None


def kernel_gemm(node: Node, graph: Graph, cfg: HwConfig) -> tuple[VdlaGemm, str]:
    """The GEMM a ``fused`` node placed on the VDLA computes, and the name of its data input (without a fused
    residual add: :func:`kernel_residual` gives that)."""
    body: Graph = node.attrs["body"]
    env: dict[str, object] = {}
    data_value = None
    for p, outer in zip(body.input_nodes, node.inputs):
        src = graph.node(outer)
        env[p.name] = VdlaOperand(p.type, src.value if src.op == "constant" else None, cfg)
        if src.op != "constant":
            data_value = outer
    add = residual_add(body)
    for n in body.nodes:
        if n.op != "input" and n is not add:
            env[n.name] = lower(n, "vdla", [env[i] for i in n.inputs])
    g = env[body.outputs[0] if add is None else _chain_operand(body, add)[0]]
    gemm = next((n for n in body.nodes if n.op in ("conv2d", "dense", "batch_matmul")), None)
    outer_of = dict(zip((p.name for p in body.input_nodes), node.inputs))
    if gemm is not None and gemm.inputs[0] in outer_of:  # the data operand (a batch_matmul has two activations)
        data_value = outer_of[gemm.inputs[0]]
    if not isinstance(g, VdlaGemm) or data_value is None:
        raise NotLoweredError(f"kernel {node.name!r} does not compute a VDLA GEMM")
    return g, data_value


def _chain_operand(body: Graph, add: Node) -> tuple[str, int]:
    """The GEMM chain's value among a fused ``qadd``'s operands, and its operand index."""
    inside = [k for k, i in enumerate(add.inputs) if body.node(i).op != "input"]
    if len(inside) != 1:
        raise NotLoweredError(f"qadd {add.name!r}: a fused residual add takes the GEMM's result and one other value")
    return add.inputs[inside[0]], inside[0]


def kernel_residual(node: Node) -> tuple[Residual, str] | None:
    """The fused residual add of a VDLA GEMM kernel (its operands ordered GEMM result first) and the outer value
    of its second operand (the skip), or None when the kernel has none."""
    body: Graph = node.attrs["body"]
    add = residual_add(body)
    if add is None:
        return None
    _, k = _chain_operand(body, add)
    skip = add.inputs[1 - k]
    outer = dict(zip((p.name for p in body.input_nodes), node.inputs))
    a = add.attrs
    mult = None if a.get("mult") is None else tuple(int(m) for m in a["mult"])
    align = tuple(int(v) for v in a["align"])
    if k == 1:  # the GEMM result is the second operand: swap the per-operand fields
        mult = None if mult is None else (mult[1], mult[0])
        align = (align[1], align[0])
    return Residual(mult, align, int(a["round"]), int(a["shift"]), bool(a["relu"])), outer[skip]  # type: ignore[arg-type]


def compile_kernel(node: Node, graph: Graph, cfg: HwConfig, virtual_threads: int = 2) -> VdlaKernel:
    """Compile a ``fused`` node placed on the VDLA; raises NotLoweredError when its body does not fit."""
    ops = [n for n in node.attrs["body"].nodes if n.op != "input"]
    if len(ops) == 1 and ops[0].op in ALU_KERNEL_OPS:
        return compile_alu_kernel(node, graph, cfg, virtual_threads)
    g, data_value = kernel_gemm(node, graph, cfg)
    epilogue = g.requantize()
    residual = kernel_residual(node)
    if residual is not None:
        if g.op != "conv2d":
            raise NotLoweredError(f"kernel {node.name!r}: a residual add fuses into a conv2d's epilogue only")
        epilogue = replace(epilogue, residual=residual[0])
    compiled = compile_conv_workload(g.workload, VdlaTarget(cfg), epilogue, virtual_threads, node.name)
    wl = g.workload
    data = np.zeros((wl.n // cfg.batch, wl.ic // cfg.block_in, wl.h, wl.w, cfg.batch, cfg.block_in), np.int8)
    kernel, more = g.kernel, ()
    if kernel is None:  # a batch_matmul: its second activation is the weight operand, written on every call
        kernel = np.zeros((wl.n, wl.oc // cfg.block_out, wl.ic // cfg.block_in, 1, 1, cfg.block_out, cfg.block_in),
                          np.int8)
        more = ((weight_value(node, graph), "kernel"),)
    args = [data, kernel] + [pack_bias(cfg, v) for v in (g.bias, g.multiplier) if v is not None]
    if residual is not None:  # the skip is bound on every call; the identity and constant tiles once
        more = ((residual[1], "skip"),)
        args += [np.zeros(node.type.shape, np.int8), *residual_constants(cfg, residual[0])]
    program = compiled.module.bind(*args)
    perm = (1, 0, 2, 3) if g.op == "dense" else None
    out_shape = tuple(np.empty(node.type.shape, np.bool_).transpose(perm).shape) if perm else node.type.shape
    return VdlaKernel(node.name, program, data_value, perm, out_shape, perm, wl, epilogue, more_inputs=more)


def weight_value(node: Node, graph: Graph) -> str:
    """The outer value a ``batch_matmul`` kernel reads as its weights (its second operand)."""
    body: Graph = node.attrs["body"]
    outer = dict(zip((p.name for p in body.input_nodes), node.inputs))
    gemm = next(n for n in body.nodes if n.op == "batch_matmul")
    return outer[gemm.inputs[1]]


__all__ = ["VdlaGemm", "VdlaKernel", "VdlaOperand", "compile_conv_workload", "compile_kernel", "kernel_gemm", "kernel_residual",
           "per_channel_vector", "residual_add"]
