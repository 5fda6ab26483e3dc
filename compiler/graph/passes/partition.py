"""CPU/VDLA partitioning of a fused graph.

Each fused kernel anchored on a conv2d/dense that the VDLA can run in its packed layout
splits into a VDLA kernel -- the GEMM plus the chain of ALU ops that directly follows it
(relu, bias/constant add, shift, clip, the final narrowing cast) -- and, when the group
went on past what the ALU can do, a CPU kernel for the rest.  A kernel of one ``qadd``
(residual add) or ``qavg_pool2d`` goes to the VDLA when its rule in
:mod:`~vdla.compiler.graph.vdla_rules` allows (an identity GEMM moves the int8 operands into the
accumulators, the ALU does the rest).  Every other kernel runs on the CPU (``llvm``) and carries
the ``reason``: from :func:`~vdla.compiler.graph.vdla_rules.gemm_unsupported_reason` for a
conv2d/dense, from the op's rule, or :func:`~vdla.compiler.graph.vdla_rules.host_reason`.  Layout transforms are
injective CPU ops, so they sit in the CPU kernels at the borders; the VDLA kernels only see
packed tensors.  Every ``fused`` node of
the result carries its ``target``.
"""

from __future__ import annotations

from vdla_hw.config import HwConfig

from vdla.compiler.graph.errors import GraphError
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.passes.fuse_ops import group_body
from vdla.compiler.graph.passes.rewrite import Rewriter
from vdla.compiler.graph.vdla_rules import (ALU_OPS, clamp_unsupported_reason, gemm_unsupported_reason, host_reason, is_packed_for,
                                            max_pool_unsupported_reason, qadd_unsupported_reason,
                                            qpool_unsupported_reason)

CPU, VDLA = "llvm", "vdla"


def _alu_capable(body: Graph, node: Node, chain_end: str) -> bool:
    """An ALU op reading the chain's last value, with any other operand a scalar constant (or, for a
    multiply, a per-channel tile: ``lower_vdla`` checks it is a constant)."""
    if node.op not in ALU_OPS or node.inputs[0] != chain_end or body.node(chain_end).type.dtype != "int32":
        return False
    if node.op == "cast" and node.type.dtype != "int8":
        return False
    others = [body.node(i) for i in node.inputs[1:]]
    shape = body.node(chain_end).type.shape
    tile_ok = node.op == "multiply" and len(others) == 1 and len(others[0].type.shape) == len(shape)
    return all(o.op == "input" and (o.type.size == 1 or tile_ok) for o in others) and node.type.shape == shape


def _vdla_prefix(body: Graph, cfg: HwConfig) -> tuple[list[str] | None, str | None]:
    """Names of the VDLA part of a fused body (the GEMM and its ALU chain), or None and -- when the
    body has a conv2d/dense -- why it stays on the CPU."""
    gemms = [n for n in body.nodes if n.op in ("conv2d", "dense", "batch_matmul")]
    if len(gemms) != 1:
        return None, None
    g = gemms[0]
    types = [body.node(i).type for i in g.inputs]
    reason = gemm_unsupported_reason(g, types, cfg)
    if reason is None and not is_packed_for(g, cfg):
        reason = f"its layouts are not the packed layouts of config {cfg.name!r}"
    if reason is not None:
        return None, f"{g.op} {g.name!r}: {reason}"
    chain = [g.name]
    order = [n for n in body.nodes if n.op != "input"]
    for n in order[order.index(g) + 1:]:
        if body.consumers[chain[-1]] != (n.name,) or not _alu_capable(body, n, chain[-1]):
            break
        chain.append(n.name)
    return chain, None


#: Kernels of one requantizing int8 op that run on the VDLA ALU (after an identity GEMM), by op.
ALU_KERNEL_RULES = {"qadd": qadd_unsupported_reason, "qavg_pool2d": qpool_unsupported_reason,
                    "max_pool2d": max_pool_unsupported_reason, "relu": clamp_unsupported_reason,
                    "clip": clamp_unsupported_reason}


def alu_kernel_reason(body: Graph, cfg: HwConfig) -> tuple[bool, str | None]:
    """(is an ALU kernel, why it stays on the host or None) for a body of one ``qadd``/``qavg_pool2d``."""
    ops = [n for n in body.nodes if n.op != "input"]
    if len(ops) != 1 or ops[0].op not in ALU_KERNEL_RULES:
        return False, None
    n = ops[0]
    reason = ALU_KERNEL_RULES[n.op](n, [body.node(i).type for i in n.inputs], cfg)
    return True, None if reason is None else f"{n.op} {n.name!r}: {reason}"


def partition(graph: Graph, cfg: HwConfig) -> Graph:
    """Assign every fused kernel to the VDLA or the CPU (see the module doc); run after fuse_ops."""
    rw = Rewriter(graph)
    for n in graph.nodes:
        if n.op in ("input", "constant"):
            rw.copy(n)
            continue
        if n.op != "fused":
            raise GraphError(f"partition runs on a fused graph, but node {n.name!r} is a bare {n.op!r}; run fuse_ops first")
        body: Graph = n.attrs["body"]
        alu, reason = alu_kernel_reason(body, cfg)
        if alu:
            rw.copy(n, target=CPU if reason else VDLA, reason=reason)
            continue
        prefix, reason = _vdla_prefix(body, cfg)
        if prefix is None:
            rw.copy(n, target=CPU, reason=reason or host_reason([m for m in body.nodes if m.op != "input"]))
            continue
        outer = dict(zip((p.name for p in body.input_nodes), (rw[i] for i in n.inputs)))
        if prefix[-1] == body.outputs[0]:
            rw.copy(n, target=VDLA)
            continue
        # Split: the VDLA part's result becomes an input of a CPU kernel holding the rest.
        vdla_body, params = group_body(body, prefix)
        vdla = rw.builder.op("fused", [outer[p] for p in params], f"{prefix[-1]}", body=vdla_body,
                             pattern="COMPLEX_OUT_FUSABLE", target=VDLA)
        outer[prefix[-1]] = vdla
        rest = [m.name for m in body.nodes if m.op != "input" and m.name not in prefix]
        rest_body, rest_params = group_body(body, rest)
        pattern = "INJECTIVE" if n.attrs["pattern"] == "COMPLEX_OUT_FUSABLE" else n.attrs["pattern"]
        rw.emit("fused", [outer[p] for p in rest_params], n.name, body=rest_body, pattern=pattern, target=CPU,
                reason=host_reason([m for m in rest_body.nodes if m.op != "input"]))
    return rw.finish()


def placement(graph: Graph) -> dict[str, str]:
    """The target of every kernel of a partitioned graph."""
    return {n.name: n.attrs["target"] for n in graph.nodes if n.op == "fused"}
