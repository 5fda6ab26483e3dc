"""fuse_residual_add: a residual add placed on the VDLA joins the epilogue of the conv that produces it.

After :func:`~vdla.compiler.graph.passes.partition.partition`, a ResNet block's ``add(conv(x), skip)``
[+ ReLU] is two VDLA kernels: the conv (requantizing to int8 on its STORE) and a ``qadd`` kernel that
LOADs both operands back from DRAM, moves them into the accumulators with identity GEMMs, adds and
stores.  When the conv's int8 result is read by nothing but that add (and is not a graph output), the two
become one VDLA kernel whose body is the conv's chain followed by the ``qadd``: its program
(:class:`~vdla.compiler.vdla.topi.epilogue.Residual`) LOADs only the skip beside each output tile, moves
it with one identity GEMM, and the ALU requantizes and adds while the conv's tile is still in the
accumulator SRAM.  The conv's own int8 value never reaches DRAM.

It is not free: the conv's shift and clamp move from the STORE onto the ALU (the value must be int8 before
the add), and the ALU shares the compute unit with the GEMM core.  So the pass fuses only where the fused
program compiles for the config (its tiles fit) and its static estimate says the add costs less inside the
conv than as its own kernel -- and, given the cost rule's host, than on the host with its transfers
(:class:`FusionFigures`); elsewhere the two kernels stay as they were and the cost rule places the add.
The integer graph keeps its meaning: the fused body is the two bodies joined, so the NumPy int8 reference
of the kernel is the same computation.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.cost import CostDecision, HostModel, program_cycles, weigh_kernel
from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.graph.ir import Attrs, Graph, Node
from vdla.compiler.graph.kernel_cache import KernelCache
from vdla.compiler.graph.passes.rewrite import Rewriter

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


@dataclass(frozen=True)
class FusionFigures:
    """The static estimates (:func:`~vdla.compiler.graph.cost.program_cycles`) that decide a fusion, in cycles."""

    fused: int
    """The conv with the add in its epilogue."""
    conv: int
    """The conv alone."""
    add: int
    """The add as its own VDLA kernel (identity GEMMs + ALU)."""
    host: CostDecision | None = None
    """The cost rule's figures of the add kernel (host arithmetic + transfers), when a host is given."""

    @property
    def fused_add(self) -> int:
        """What the add costs inside the conv: the fused program's cycles beyond the conv's."""
        return self.fused - self.conv

    def fuse(self, cfg: HwConfig) -> bool:
        """Fuse when the add costs less inside the conv than as its own VDLA kernel and (with a host) than on
        the host with its transfers."""
        if self.fused_add > self.add:
            return False
        return self.host is None or self.fused_add / (cfg.clock_mhz * 1e6) <= self.host.host_s + self.host.transfer_s


def fusion_figures(conv: Node, add: Node, operand: int, graph: Graph, cfg: HwConfig,
                   host: HostModel | None = None, kernels: KernelCache | None = None) -> FusionFigures | None:
    """Compile the conv with and without the add fused, and the add alone; None when the fused form does not
    compile for ``cfg`` (no tiling fits the skip's tiles, or its epilogue is not one the VDLA runs). With
    ``kernels`` (the build's cache) the build's own compile of whichever form is kept costs nothing."""
    kernels = KernelCache() if kernels is None else kernels
    body, params = _fused_body(conv, add, operand)
    fused = Node(add.name, "fused", tuple(params),
                 Attrs(body=body, pattern="COMPLEX_OUT_FUSABLE", target=VDLA), add.type)
    try:
        compiled = [kernels.compile(n, graph, cfg) for n in (fused, conv, add)]
    except (NotLoweredError, UnsupportedError):
        return None
    f, c, a = (program_cycles(cfg, k.program.instructions) for k in compiled)
    decision = None
    if host is not None:
        q = [b for b in add.attrs["body"].nodes if b.op != "input"][0]
        decision = weigh_kernel(q, [add.attrs["body"].node(i).type for i in q.inputs], compiled[2].program.instructions,
                                cfg, host)
    return FusionFigures(f, c, a, decision)


def residual_pairs(graph: Graph, cfg: HwConfig, host: HostModel | None = None,
                   kernels: KernelCache | None = None) -> dict[str, tuple[str, int]]:
    """``{add kernel: (conv kernel, operand index)}`` for every VDLA ``qadd`` kernel one of whose operands is
    a VDLA conv kernel read by nothing else, where fusing wins (:meth:`FusionFigures.fuse`)."""
    pairs: dict[str, tuple[str, int]] = {}
    outputs = set(graph.outputs)
    taken: set[str] = set()
    for n in graph.nodes:
        if not _is_vdla_add(n) or len(set(n.inputs)) != 2:
            continue
        for k, i in enumerate(n.inputs):
            p = graph.node(i)
            if i in taken or i in outputs or not _is_vdla_conv(p) or graph.consumers[i] != (n.name,):
                continue
            figures = fusion_figures(p, n, k, graph, cfg, host, kernels)
            if figures is None or not figures.fuse(cfg):
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


def fuse_residual_add(graph: Graph, cfg: HwConfig, host: HostModel | None = None,
                      kernels: KernelCache | None = None) -> Graph:
    """Fuse every VDLA residual add into the epilogue of the VDLA conv producing one of its operands, where
    that conv's result has no other reader and fusing wins (see the module doc); ``host``: the cost rule's host
    (``placement="cost"``), or None to compare only the two VDLA forms; ``kernels``: the build's
    :class:`KernelCache`, which keeps the kernels compiled to decide."""
    pairs = residual_pairs(graph, cfg, host, kernels)
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


__all__ = ["FusionFigures", "fuse_residual_add", "fusion_figures", "residual_pairs"]
