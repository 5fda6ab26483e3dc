"""Dense (fully connected) layers: ``out[m, n] = sum_k x[m, k] * w[n, k]``.

``dense`` takes the weights as stored by frameworks (``[N, K]``). ``dense_pack`` takes
them packed to ``[ceil(N/b), K, b]`` (``layout.pack_dense_weight``, once at compile time),
so ``b`` consecutive outputs are one contiguous weight vector: the schedule keeps
``m_block x n_vectors`` vector accumulators in registers.  With ``outer_order="n_m"`` the column
panel of one tile (``K x n_vectors`` vectors) is the outer loop and every row tile reuses it from
cache, so the weights stream from memory once however many rows there are (transformer
activations: ~200 rows); ``"m_n"`` sweeps all the weights per row tile (best for a few rows).
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from .utils import (PARALLEL_MIN_ELEMENTS, TopiError, const_shape, largest_divisor,
                    vector_lanes)


def dense(x: Tensor, weight: Tensor, name: str = "dense") -> Tensor:
    """``x [M, K] @ weight[N, K].T``."""
    m, k = const_shape(x)
    n, wk = const_shape(weight)
    if wk != k:
        raise TopiError(f"dense: x has K={k} but weight {weight.name} has K={wk}")
    r = te.reduce_axis(k, "rk")
    return te.compute((m, n), lambda i, j: te.sum(x[i, r] * weight[j, r], axis=r), name=name)


def dense_pack(x: Tensor, packed: Tensor, out_features: int,
               name: str = "dense_pack") -> Tensor:
    """``dense`` with weights packed as ``[ceil(N/b), K, b]``; ``out_features`` is N."""
    m, k = const_shape(x)
    nb, pk, b = const_shape(packed)
    if pk != k or nb * b < out_features or (nb - 1) * b >= out_features:
        raise TopiError(f"dense_pack: packed weights {[nb, pk, b]} do not hold {out_features} "
                        f"outputs of K={k}")
    r = te.reduce_axis(k, "rk")
    return te.compute((m, out_features),
                      lambda i, j: te.sum(x[i, r] * packed[j // b, r, j % b], axis=r), name=name)


@dataclass(frozen=True)
class DenseKnobs:
    """``n_vector``: outputs per vector (the packing block for dense_pack);
    ``n_vectors``: vectors per register tile (independent FMA chains); ``m_block``: rows
    per register tile; ``k_unroll``: unroll factor of the reduction loop; ``parallel``;
    ``outer_order``: ``"m_n"`` (row tiles outermost) or ``"n_m"`` (column panels outermost)."""

    n_vector: int
    n_vectors: int = 4
    m_block: int = 1
    k_unroll: int = 4
    parallel: bool = True
    outer_order: str = "m_n"


def default_dense_knobs(out: Tensor, target: Target | None = None,
                        n_vector: int | None = None) -> DenseKnobs:
    m, n = const_shape(out)
    lanes = n_vector or vector_lanes(target)
    full = n // lanes
    return DenseKnobs(n_vector=lanes, n_vectors=largest_divisor(max(full, 1), 4),
                      m_block=largest_divisor(m, 4))


def schedule_dense(out: Tensor, knobs: DenseKnobs | None = None, s: Schedule | None = None,
                   target: Target | None = None) -> Schedule:
    """x86 schedule for ``dense`` and ``dense_pack`` outputs."""
    s = s or create_schedule(out)
    if knobs is None:
        packed = out.op.input_tensors()[1]
        block = const_shape(packed)[2] if len(packed.shape) == 3 else None
        knobs = default_dense_knobs(out, target, block)
    m, n = const_shape(out)
    if m % knobs.m_block or knobs.n_vector < 1 or knobs.n_vectors < 1 or knobs.k_unroll < 1:
        raise TopiError(f"bad dense knobs {knobs} for output {m}x{n}")
    if knobs.outer_order not in ("m_n", "n_m"):
        raise TopiError(f"dense outer_order {knobs.outer_order!r} is not 'm_n' or 'n_m'")
    i, j, r = s.get_loops(out)
    io, ii = s.split(i, factor=knobs.m_block)
    jo, jv = s.split(j, factor=knobs.n_vector * knobs.n_vectors)
    jvo, jvi = s.split(jv, factor=knobs.n_vector)
    ro, ri = s.split(r, factor=knobs.k_unroll)
    outer = (io, jo) if knobs.outer_order == "m_n" else (jo, io)
    s.reorder(*outer, ro, ri, ii, jvo, jvi)
    s.unroll(ri)
    s.unroll(ii)
    s.unroll(jvo)
    s.vectorize(jvi)
    fused = s.fuse(*outer)
    k = const_shape(out.op.input_tensors()[0])[1]
    if knobs.parallel and m * n * k >= PARALLEL_MIN_ELEMENTS * 4:
        s.parallel(fused)
    return s
