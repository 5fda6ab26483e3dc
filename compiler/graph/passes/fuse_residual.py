"""fuse_residual_add: a residual add placed on the VDLA joins the epilogue of the conv that produces it.

After :func:`~vdla.compiler.graph.passes.partition.partition`, a ResNet block's ``add(conv(x), skip)``
[+ ReLU] is two VDLA kernels: the conv (requantizing to int8 on its STORE) and a ``qadd`` kernel that
LOADs both operands back from DRAM, moves them into the accumulators with identity GEMMs, adds and
stores.  When the conv's int8 result is read by nothing but that add (and is not a graph output), the two
become one VDLA kernel whose body is the conv's chain followed by the ``qadd``: its program
(:class:`~vdla.compiler.vdla.topi.epilogue.Residual`) LOADs only the skip beside each output tile, moves
it with one identity GEMM, and the ALU requantizes and adds while the conv's tile is still in the
accumulator SRAM.  The conv's own int8 value never reaches DRAM.

The fusion happens only where the fused schedule fits the config's buffers (the fit model with the skip's
tiles; else the two kernels stay as they were), and the integer graph keeps its meaning: the fused body is
the two bodies joined, so the NumPy int8 reference of the kernel is the same computation.
"""

from __future__ import annotations

from dataclasses import replace

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.lower_vdla import kernel_gemm
from vdla.compiler.graph.passes.rewrite import Rewriter
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi import default_knobs
from vdla.compiler.vdla.topi.epilogue import Residual

VDLA = "vdla"


def _is_vdla_conv(node: Node) -> bool:
    return (node.op == "fused" and node.attrs.get("target") == VDLA and
            any(b.op == "conv2d" for b in node.attrs["body"].nodes) and
            node.attrs["body"].node(node.attrs["body"].outputs[0]).op != "qadd")


def _is_vdla_add(node: Node) -> bool:
    if node.op != "fused" or node.attrs.get("target") != VDLA:
        return False
    ops = [b for b in node.attrs["body"].nodes if b.op != "input"]
    return len(ops) == 1 and ops[0].op == "qadd"


def _fits(conv: Node, add: Node, operand: int, graph: Graph, cfg: HwConfig) -> bool:
    """Whether the conv's schedule with the add fused into its epilogue fits ``cfg`` (some tiling)."""
    a = [b for b in add.attrs["body"].nodes if b.op != "input"][0].attrs
    try:
        g, _ = kernel_gemm(conv, graph, cfg)
        ep = g.requantize()
    except NotLoweredError:
        return False
    mult = None if a.get("mult") is None else tuple(a["mult"])
    align = tuple(a["align"])
    if operand == 1:
        mult = None if mult is None else mult[::-1]
        align = align[::-1]
    res = Residual(mult, align, int(a["round"]), int(a["shift"]), bool(a["relu"]))  # type: ignore[arg-type]
    try:
        default_knobs(g.workload, VdlaTarget(cfg), 1, replace(ep, residual=res))
    except UnsupportedError:  # CapacityError included: keep the two kernels
        return False
    return True


def residual_pairs(graph: Graph, cfg: HwConfig) -> dict[str, tuple[str, int]]:
    """``{add kernel: (conv kernel, operand index)}`` for every VDLA ``qadd`` kernel one of whose operands is
    a VDLA conv kernel read by nothing else, whose fused schedule fits ``cfg``."""
    pairs: dict[str, tuple[str, int]] = {}
    outputs = set(graph.outputs)
    taken: set[str] = set()
    for n in graph.nodes:
        if not _is_vdla_add(n) or len(set(n.inputs)) != 2:
            continue
        for k, i in enumerate(n.inputs):
            p = graph.node(i)
            if (i in taken or i in outputs or not _is_vdla_conv(p) or graph.consumers[i] != (n.name,)
                    or not _fits(p, n, k, graph, cfg)):
                continue
            pairs[n.name] = (i, k)
            taken.add(i)
            break
    return pairs


def _fused_body(conv: Node, add: Node, operand: int) -> tuple[Graph, list[str]]:
    """The conv's body with the ``qadd`` after it, and the outer values it reads (the conv's, then the skip)."""
    body: Graph = conv.attrs["body"]
    q = [b for b in add.attrs["body"].nodes if b.op != "input"][0]
    skip = add.inputs[1 - operand]
    b = GraphBuilder()
    for p in body.input_nodes:
        b.input(p.name, p.type.shape, p.type.dtype)
    names = {n.name for n in body.nodes}
    skip_name = skip if skip not in names else f"{skip}.skip"
    skip_type = add.attrs["body"].input_nodes[1 - operand].type if len(add.attrs["body"].input_nodes) == 2 else None
    if skip_type is None:
        raise NotLoweredError(f"kernel {add.name!r}: its qadd does not read two kernel inputs")
    b.input(skip_name, skip_type.shape, skip_type.dtype)
    for n in body.nodes:
        if n.op != "input":
            b.add(Node(n.name, n.op, n.inputs, n.attrs, n.type))
    inputs = [body.outputs[0], skip_name] if operand == 0 else [skip_name, body.outputs[0]]
    name = q.name if q.name not in names else f"{q.name}.fused"
    b.add(Node(name, q.op, tuple(inputs), q.attrs, q.type))
    return b.build([name]), list(conv.inputs) + [skip]


def fuse_residual_add(graph: Graph, cfg: HwConfig) -> Graph:
    """Fuse every VDLA residual add into the epilogue of the VDLA conv producing one of its operands, where
    that conv's result has no other reader and the fused schedule fits (see the module doc)."""
    pairs = residual_pairs(graph, cfg)
    if not pairs:
        return graph
    convs = {c for c, _ in pairs.values()}
    rw = Rewriter(graph)
    for n in graph.nodes:
        if n.name in convs:
            continue  # emitted inside its add's kernel
        if n.name not in pairs:
            rw.copy(n)
            continue
        conv, k = pairs[n.name]
        body, params = _fused_body(graph.node(conv), n, k)
        rw.emit("fused", [rw[p] for p in params], n.name, body=body, pattern="COMPLEX_OUT_FUSABLE", target=VDLA)
    return rw.finish()


__all__ = ["fuse_residual_add", "residual_pairs"]
