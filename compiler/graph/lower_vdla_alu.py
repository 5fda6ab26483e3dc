"""The ``vdla`` lowerings of the requantizing int8 operators: a partitioned kernel of one ``qadd``
(residual add) or ``qavg_pool2d`` (average / global average pool) becomes one VDLA program.

Both reach the accumulators through the GEMM core with identity weight tiles (the ALU reads
only the accumulator SRAM) and are compiled through the schedule/tensorize path:

* ``qadd``: :func:`vdla.compiler.vdla.topi.eltwise.compile_add` (two identity GEMMs, the
  requantizing ALU chain, a STORE that shifts, clips and narrows);
* ``qavg_pool2d``: a packed ``(N/B, C/BI, H, W, B, BI)`` tensor is, byte for byte, a batch of
  ``N*C/BI`` images of BI channels, so the pool is the conv2d schedule of that batch with an
  identity weight tile per window tap (the window sum) and the epilogue ``((sum + round) * mult)
  >> shift`` (the fixed-point divide: ALU ADD of the rounding tile, ALU MUL, STORE shift);
* int8 ``max_pool2d``: :func:`vdla.compiler.vdla.topi.maxpool.compile_max_pool` (an identity GEMM
  per window tap into its own accumulator tile, an ALU MAX chain; padding made exact by an
  indicator offset that only real elements get);
* a standalone int8 ``relu`` / ``clip`` (nothing before it absorbs it): the same kernel with a 1x1
  window and the clamp.
"""

from __future__ import annotations

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.vdla_kernel import VdlaKernel, compile_conv_workload
from vdla.compiler.graph.vdla_rules import clamp_bounds
from vdla.compiler.vdla.target import VdlaTarget
from vdla.compiler.vdla.topi.eltwise import AddWorkload, compile_add
from vdla.compiler.vdla.topi.maxpool import MaxPoolWorkload, compile_max_pool
from vdla.compiler.vdla.topi.pool import AvgPoolWorkload, CompiledGlobalPool, compile_avg_pool


ALU_KERNEL_OPS = ("qadd", "qavg_pool2d", "max_pool2d", "relu", "clip")


def _data_inputs(node: Node, graph: Graph, op: Node) -> list[str]:
    """The outer values ``op``'s operands read, in ``op``'s operand order."""
    body: Graph = node.attrs["body"]
    outer = dict(zip((p.name for p in body.input_nodes), node.inputs))
    names = []
    for i in op.inputs:
        if i not in outer or graph.node(outer[i]).op == "constant":
            raise NotLoweredError(f"kernel {node.name!r}: operand {i!r} of {op.op} is not a computed value (a "
                                  f"constant operand should be folded instead)")
        names.append(outer[i])
    return names


def add_workload(op: Node, cfg: HwConfig) -> AddWorkload:
    """The :class:`AddWorkload` of a packed ``qadd``."""
    nb, cb, h, w, b, bi = op.type.shape
    a = op.attrs
    return AddWorkload(nb * b, cb * bi, h, w, None if a.get("mult") is None else tuple(a.get("mult")), tuple(a["align"]),
                       int(a["round"]), int(a["shift"]), bool(a["relu"]))


def avg_pool_workload(node: Node) -> AvgPoolWorkload | None:
    """The workload of a ``fused`` node whose op is ``qavg_pool2d`` (else None): a windowed pool's sum runs as a
    conv2d schedule, so it is also a ``vdla_conv2d`` tuning task (:func:`AvgPoolWorkload.conv`); a global pool
    has its own schedule (``topi/pool.py``)."""
    body: Graph = node.attrs["body"]
    op = next(n for n in body.nodes if n.op != "input")
    if op.op != "qavg_pool2d":
        return None
    nb, cb, h, w, b, bi = body.input_nodes[0].type.shape
    a = op.attrs
    (kh, kw), stride, pad = tuple(a["pool_size"]), int(a["strides"][0]), int(a["padding"][0])
    return AvgPoolWorkload(nb * b, cb * bi, h, w, kh, kw, stride, pad, int(a.get("mult")), int(a["round"]),
                           int(a["shift"]))


def compile_alu_kernel(node: Node, graph: Graph, cfg: HwConfig, virtual_threads: int = 2) -> VdlaKernel:
    """Compile a ``fused`` node of one ``qadd`` / ``qavg_pool2d`` / int8 ``max_pool2d`` / ``relu`` / ``clip`` placed on
    the VDLA."""
    body: Graph = node.attrs["body"]
    op = next(n for n in body.nodes if n.op != "input")
    values = _data_inputs(node, graph, op)
    target = VdlaTarget(cfg)
    if op.op == "qadd":
        wl = add_workload(op, cfg)
        try:
            compiled = compile_add(wl, target)
        except UnsupportedError as exc:
            raise NotLoweredError(f"qadd {op.name!r}: {exc}") from None
        return VdlaKernel(node.name, compiled.bind(), values[0], None, op.type.shape, None, wl, None,
                          input_buffer="a", more_inputs=((values[-1], "b"),), macs=0)
    x_type = body.input_nodes[0].type
    nb, cb, h, w, b, bi = x_type.shape
    a = op.attrs
    if op.op in ("max_pool2d", "relu", "clip"):
        if op.op == "max_pool2d":
            mw = MaxPoolWorkload(nb * b, cb * bi, h, w, *tuple(a["pool_size"]), int(a["strides"][0]),
                                 int(a["padding"][0]))
        else:  # a standalone clamp: the 1x1 "max pool" with its clamp
            bounds = clamp_bounds(op)
            if bounds is None:
                raise NotLoweredError(f"{op.op} {op.name!r}: its bounds are not int8 integers")
            mw = MaxPoolWorkload(nb * b, cb * bi, h, w, 1, 1, 1, 0, *bounds)
        try:
            mp = compile_max_pool(mw, target)
        except UnsupportedError as exc:
            raise NotLoweredError(f"{op.op} {op.name!r}: {exc}") from None
        return VdlaKernel(node.name, mp.bind(), values[0], None, op.type.shape, None, mw, None, macs=0)
    wl = avg_pool_workload(node)
    assert wl is not None, op.op
    try:
        pool = compile_avg_pool(wl, target, compile_conv=lambda c, t, ep: compile_conv_workload(
            c, t, ep, virtual_threads, node.name))
    except UnsupportedError as exc:
        raise NotLoweredError(f"qavg_pool2d {op.name!r}: {exc}") from None
    if isinstance(pool, CompiledGlobalPool):
        return VdlaKernel(node.name, pool.bind(), values[0], None, op.type.shape, None, wl, None, macs=0)
    return VdlaKernel(node.name, pool.bind(), values[0], None, op.type.shape, None, pool.compiled.workload,
                      pool.compiled.epilogue, macs=0)


__all__ = ["ALU_KERNEL_OPS", "add_workload", "avg_pool_workload", "compile_alu_kernel"]
