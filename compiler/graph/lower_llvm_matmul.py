"""The ``llvm`` lowering of MatMul (NumPy semantics): the transformer's two kinds of products.

* A constant 2-D right operand (every linear layer of a ViT: ``x[1, 197, 768] @ W[768, 3072]``):
  the leading axes and the rows become one row axis of topi's packed dense
  (:func:`~vdla.compiler.graph.lower_llvm_nn.dense_packed`: weights packed at compile time, register
  tile from the target's vector registers, rows padded to the tile).
* Two float activations (attention's ``Q @ K^T`` and ``softmax @ V``, ``[1, 12, 197, 64]``): the
  leading axes flatten into topi's ``batch_matmul``.  Both operands are first copied into
  contiguous ``[B, M', K]`` and ``[B, K, N']`` buffers, rows and columns zero-padded to the register
  tile (197 is prime), so the micro-kernel's loads are unit-stride vectors whatever transposes and
  scalings the exporter put in front of the MatMul (they fuse into the copies).

Everything else (integer operands, a 1-D operand, leading axes that broadcast only in part) is a
plain reduction with the reference's semantics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vdla.compiler import te, topi
from vdla.compiler.autotune import dispatch
from vdla.compiler.graph.ir import Node
from vdla.compiler.graph.lower_llvm import KernelBuilder, Operand, _c, _out_shape, _shape
# A module reference, not the function: lower_llvm_nn may be mid-import when this module loads
# (importing it first imports lower_llvm, whose registrations import this module).
from vdla.compiler.graph import lower_llvm_nn
from vdla.compiler.graph.ops import register_lowering
from vdla.compiler.te import Tensor
from vdla.compiler.tir import op as tir
from vdla.compiler.tir.ir import PrimExpr
from vdla.compiler.topi.utils import schedule_elementwise, vector_lanes, vector_registers


@register_lowering("matmul", "llvm")
def _matmul(node: Node, xs: Sequence[Operand]) -> Tensor:
    a, b = xs[0].tensor, xs[1].tensor
    sa, sb = _shape(a), _shape(b)
    out = _out_shape(node)
    k = sa[-1]
    is_float = node.type.dtype == "float32" and a.dtype == b.dtype == "float32"
    if is_float and xs[1].value is not None and len(sb) == 2 and len(sa) >= 2:
        return _matmul_const(node, a, xs[1].value, xs[0].kernel)
    if is_float and len(sa) >= 2 and len(sb) >= 2 and _batches(sa[:-2], sb[:-2], out[:-2]) is not None:
        return _batch_matmul(node, a, b, xs[0].kernel)
    r = te.reduce_axis(k, "rk")

    def fn(*i: PrimExpr) -> PrimExpr:
        # NumPy matmul: a 1-D operand gains (then loses) a unit axis; leading axes broadcast.
        lead = i[: len(out) - (len(sa) > 1) - (len(sb) > 1)]
        ia = (r,) if len(sa) == 1 else tuple(_bcast_lead(sa[:-2], lead)) + (i[len(lead)], r)
        jb = i[-1] if len(sb) > 1 else None
        ib = (r,) if len(sb) == 1 else tuple(_bcast_lead(sb[:-2], lead)) + (r, jb)
        return te.sum(a[ia] * b[ib], axis=r)

    return te.compute(out, fn, name=node.name)


def _bcast_lead(shape: Sequence[int], lead: Sequence[PrimExpr]) -> list[PrimExpr | int]:
    tail = lead[len(lead) - len(shape):] if shape else ()
    return [0 if s == 1 else i for s, i in zip(shape, tail)]


def _unflat(r: PrimExpr, shape: Sequence[int]) -> tuple[PrimExpr, ...]:
    """The row-major index into ``shape`` of flat index ``r`` (unit axes index 0, so a batch-1
    operand needs no division)."""
    out: list[PrimExpr] = []
    for d, size in enumerate(shape):
        stride = math.prod(shape[d + 1:])
        if size == 1:
            out.append(_c(0, "int32"))
            continue
        v = r // stride if stride > 1 else r
        out.append(v % size if d else v)
    return tuple(out)


def _flat_index(idx: Sequence[PrimExpr], shape: Sequence[int]) -> PrimExpr:
    """Row-major flat index of ``idx`` in ``shape`` (unit axes skipped)."""
    flat: PrimExpr | None = None
    for i, size in zip(idx, shape):
        if size == 1:
            continue
        flat = i if flat is None else flat * size + i
    return flat if flat is not None else _c(0, "int32")


def _matmul_const(node: Node, a: Tensor, b: np.ndarray, kb: KernelBuilder) -> Tensor:
    """``a [..., M, K] @ b [K, N]`` with a constant ``b``: one packed dense over the flattened rows."""
    sa = _shape(a)
    lead, k = sa[:-1], sa[-1]
    flat = a if len(sa) == 2 else te.compute((math.prod(lead), k), lambda r, j: a[_unflat(r, lead) + (j,)],
                                             name=f"{node.name}_flat")
    mm = lower_llvm_nn.dense_packed(flat, np.ascontiguousarray(b.T), kb, node.name)
    if len(sa) == 2:
        return mm
    return te.compute(node.type.shape, lambda *i: mm[_flat_index(i[:-1], lead), i[-1]], name=node.name)


def _batches(la: Sequence[int], lb: Sequence[int], lo: Sequence[int]) -> tuple[int, int] | None:
    """(batches of a, of b) when each operand's leading axes are the output's or all unit (a
    broadcast batch of 1); None when they broadcast only in part."""
    def count(lx: Sequence[int]) -> int | None:
        if math.prod(lx) == 1:
            return 1
        return math.prod(lo) if tuple(lx) == tuple(lo[len(lo) - len(lx):]) and len(lx) == len(lo) else None

    ba, bb = count(la), count(lb)
    return None if ba is None or bb is None else (ba, bb)


def _batch_tile(m: int, n: int) -> tuple[int, int, int]:
    """(rows, vectors per row, lanes) of the batched micro-kernel's register tile."""
    lanes = vector_lanes(None)
    vectors = 2 if n > lanes else 1
    rows = max(1, min(m, 6, (vector_registers(None) - vectors - 1) // vectors))
    return rows, vectors, lanes


def default_batch_matmul_knobs(batch_a: int, batch_b: int, m: int, n: int) -> topi.BatchMatmulKnobs:
    """The graph's default batched schedule for ``m`` rows and ``n`` columns (both already padded to the tile)."""
    rows, vectors, lanes = _batch_tile(m, n)
    return topi.BatchMatmulKnobs(m_block=rows, n_vector=lanes, n_vectors=vectors, parallel=max(batch_a, batch_b) > 1)


def _batch_matmul(node: Node, a: Tensor, b: Tensor, kb: KernelBuilder) -> Tensor:
    """Float ``a [..., M, K] @ b [..., K, N]`` through topi's ``batch_matmul`` on padded contiguous copies."""
    sa, sb, out = _shape(a), _shape(b), node.type.shape
    m, k, n = sa[-2], sa[-1], sb[-1]
    ba, bb = _batches(sa[:-2], sb[:-2], out[:-2])  # type: ignore[misc]
    rows, vectors, lanes = _batch_tile(m, n)
    mp, np_ = -(-m // rows) * rows, -(-n // (lanes * vectors)) * lanes * vectors
    zero = _c(0.0, "float32")

    def lead(x_shape: Sequence[int], batch: PrimExpr) -> tuple[PrimExpr, ...]:
        return _unflat(batch, x_shape[:-2])

    ap = te.compute((ba, mp, k), lambda t, i, j: tir.if_then_else(
        i < m, a[lead(sa, t) + (tir.min(i, m - 1), j)], zero), name=f"{node.name}_a")
    bp = te.compute((bb, k, np_), lambda t, r, j: tir.if_then_else(
        j < n, b[lead(sb, t) + (r, tir.min(j, n - 1))], zero), name=f"{node.name}_b")
    for copy, src in ((ap, a), (bp, b)):
        kb.scheduled(copy, lambda s, c=copy: schedule_elementwise(s, c, lanes, False), [src])
    mm = topi.batch_matmul(ap, bp, name=f"{node.name}_bmm")
    workload = {"batch_a": ba, "batch_b": bb, "m": mp, "k": k, "n": np_}
    knobs = dispatch.query("batch_matmul", workload) or default_batch_matmul_knobs(ba, bb, mp, np_)
    kb.scheduled(mm, lambda s: topi.schedule_batch_matmul(mm, knobs, s=s), [ap, bp])
    lo = out[:-2]
    return te.compute(out, lambda *i: mm[(_flat_index(i[:-2], lo), i[-2], i[-1])], name=node.name)
