"""Batched matrix multiply with NumPy semantics: ``out[b] = a[b] @ bm[b]``.

``a`` is ``[B, M, K]`` and ``bm`` is ``[B, K, N]``, so a row of ``bm`` is contiguous along
the output columns: the schedule keeps an ``m_block x n_vectors`` tile of vector
accumulators in registers and, per ``k``, loads ``n_vectors`` vectors of ``bm`` and
broadcasts ``m_block`` values of ``a``.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from .utils import TopiError, const_shape, largest_divisor, vector_lanes


def batch_matmul(a: Tensor, bm: Tensor, name: str = "batch_matmul") -> Tensor:
    """``[B, M, K] x [B, K, N] -> [B, M, N]``; a batch of 1 in either operand broadcasts."""
    ba, m, k = const_shape(a)
    bb, kb, n = const_shape(bm)
    if kb != k or (ba != bb and 1 not in (ba, bb)):
        raise TopiError(f"batch_matmul of {[ba, m, k]} and {[bb, kb, n]}: the inner sizes "
                        f"must match and the batches be equal or 1")
    r = te.reduce_axis(k, "rk")

    def f(b, i, j):  # noqa: ANN001, ANN202
        return te.sum(a[0 if ba == 1 else b, i, r] * bm[0 if bb == 1 else b, r, j], axis=r)

    return te.compute((max(ba, bb), m, n), f, name=name)


@dataclass(frozen=True)
class BatchMatmulKnobs:
    """``m_block`` rows x ``n_vectors`` vectors of ``n_vector`` columns per register tile;
    ``k_unroll``: unroll factor of the reduction; ``parallel`` over batch x row tiles."""

    m_block: int
    n_vector: int
    n_vectors: int = 2
    k_unroll: int = 1
    parallel: bool = True


def default_batch_matmul_knobs(out: Tensor, target: Target | None = None) -> BatchMatmulKnobs:
    _, m, n = const_shape(out)
    lanes = min(vector_lanes(target), n)
    return BatchMatmulKnobs(m_block=largest_divisor(m, 6), n_vector=lanes,
                            n_vectors=2 if n >= 2 * lanes else 1)


def schedule_batch_matmul(out: Tensor, knobs: BatchMatmulKnobs | None = None,
                          s: Schedule | None = None,
                          target: Target | None = None) -> Schedule:
    s = s or create_schedule(out)
    knobs = knobs or default_batch_matmul_knobs(out, target)
    _, m, _ = const_shape(out)
    if m % knobs.m_block or min(knobs.n_vector, knobs.n_vectors, knobs.k_unroll) < 1:
        raise TopiError(f"bad batch_matmul knobs {knobs} (m_block must divide M={m})")
    b, i, j, r = s.get_loops(out)
    io, ii = s.split(i, factor=knobs.m_block)
    jo, jv = s.split(j, factor=knobs.n_vector * knobs.n_vectors)
    jvo, jvi = s.split(jv, factor=knobs.n_vector)
    ro, ri = s.split(r, factor=knobs.k_unroll)
    s.reorder(b, io, jo, ro, ri, ii, jvo, jvi)
    s.unroll(ii)
    s.unroll(jvo)
    if knobs.k_unroll > 1:
        s.unroll(ri)
    s.vectorize(jvi)
    fused = s.fuse(b, io)
    if knobs.parallel:
        s.parallel(fused)
    return s
