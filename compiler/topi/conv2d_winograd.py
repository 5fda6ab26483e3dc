"""Winograd minimal filtering F(m x m, 3 x 3) for stride-1 3x3 convs in the blocked NCHW[x]c layout.

A 3x3 conv computes each ``m x m`` output tile from an ``a x a`` input tile (``a = m + 2``) with
``a^2`` element-wise products per channel pair instead of ``9 m^2``: 2.25x fewer multiplies for
F(2x2,3x3), 4x for F(4x4,3x3), 4.59x for F(5x5,3x3), 5.06x for F(6x6,3x3).  F(5x5) is for planes whose
side 5 divides better than 4 (14 x 14: 3 x 3 tiles of 5, where tiles of 4 pad it to 16 x 16).  Three stages in one kernel:

* **input transform** ``V[e, ic, n, ty, tx, i] = (B^T d B)[e]`` of each input tile (``e`` = the
  ``a x a`` transform point, ``i`` the input-channel lane): sums with the constant coefficients
  written out, zero terms dropped, so after unrolling the ``a^2`` points the loads and partial sums
  are shared (the separable cost, ~``4 a^3`` adds per tile and channel);
* **batched GEMM** ``M[e, oc, n, ty, tx, o] = sum_ic V[e, ic, ...] * U[e, oc, ic, i, o]``: per point
  ``e`` a GEMM of the tiles by the channels, the same register micro-kernel as the direct conv (a
  broadcast input times ``oc_block`` weight vectors of the output-channel lane);
* **output transform** ``out[n, oc, y, x, o] = (A^T M A)[y % m, x % m]``: an element-wise stage of
  the conv's output shape, so a bias, ReLU or residual add fuses into it and the output is stored
  once.

The weight transform ``U = G g G^T`` runs at compile time (:func:`transform_weights`, NumPy in
float64) on constant weights.  The schedule computes the input transform and the GEMM of one row of
tiles inside the parallel loop over tile rows, so their buffers stay in L2 instead of streaming
the whole transformed image through memory; or (``WinogradKnobs.gemm_at="plane"``) both over the
whole plane first, so each transform point's weights are read once for every tile, where the
transformed weights, not the image, are what streams (small planes, many channels).

Accuracy (fp32, against float64): the transforms' coefficients grow with ``m`` (F(2): 0/±1/½;
F(4): up to 5 and 1/24; F(6): up to 5.25 and 1/90), and so does the rounding error; see
:func:`winograd_tolerance` and ``docs/cpu_speed.md``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import te
from ..codegen.llvm import Target, current_target
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from ..tir import op as tir
from ..tir.ir import PrimExpr, Select
from .conv2d_nchwc import balance_columns, max_accumulators
from .utils import TopiError, const_shape, largest_divisor, vector_lanes, vector_registers

#: Output tile sizes ``m`` of F(m x m, 3 x 3) this module builds.
WINOGRAD_TILES = (2, 4, 5, 6)
#: The tiles the tuner searches: F(6x6) was slower than F(4x4) on every ResNet layer measured (its
#: transforms cost ~a^3 = 512 adds per tile and channel) and its kernel takes ~3x F(4)'s time to compile;
#: F(5x5) is the 14 x 14 planes' (see :func:`default_winograd_tile`).
TUNED_TILES = (2, 4, 5)
#: Interpolation points of each tile size (plus the point at infinity): small integers and halves
#: keep the transforms' coefficients, hence the fp32 rounding error, small.
_POINTS = {2: (0, 1, -1), 4: (0, 1, -1, 2, -2), 5: (0, 1, -1, 0.5, -0.5, 2), 6: (0, 1, -1, 2, -2, 0.5, -0.5)}
#: Where a Winograd conv's input transform and GEMM run (:class:`WinogradKnobs`): per row of tiles or
#: over the whole plane.
GEMM_AT = ("row", "plane")
#: Max abs error over max |out| against float64 each tile size is tested to (random normal data and
#: weights, 256-512 input channels).  Measured on ResNet's layers (64-512 channels): F(2) 1-2e-6,
#: F(4) 6e-6-1.3e-5, F(6) 1-1.2e-5; F(5) 1.3e-5 at 256 x 14 x 14 (F(4) 1.1e-5 there).  F(2) holds the issue's bound; the larger tiles' coefficients
#: (up to 5 and 1/24, 5.25 and 1/90) grow the rounding error ~10x, and the error of a sum grows with
#: the square root of the channels: 5e-4 and 1e-3 leave ~40x and ~80x room over the worst measured.
WINOGRAD_TOLERANCE = {2: 1e-4, 4: 5e-4, 5: 1e-3, 6: 1e-3}


def winograd_tolerance(m: int) -> float:
    """The relative max abs error (over max |out|) of F(m x m, 3 x 3) in fp32 that the tests hold."""
    return WINOGRAD_TOLERANCE[m]


@lru_cache(maxsize=None)
def winograd_matrices(m: int, r: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(A^T, G, B^T)`` of F(m, r) (Toom-Cook on :data:`_POINTS`): ``y = A^T [(G g) * (B^T d)]`` is
    the correlation ``y[i] = sum_k g[k] d[i + k]`` of ``m`` outputs, exactly in real arithmetic.

    ``A^T`` evaluates at the points, ``G`` too (scaled by the Lagrange denominators); ``B^T`` is the
    unique solution of the bilinear identity, solved in float64 and rounded to its exact
    eighths (every entry of these point sets is a multiple of 1/8)."""
    if m not in _POINTS:
        raise TopiError(f"Winograd output tile {m} is not one of {WINOGRAD_TILES}")
    pts = [float(p) for p in _POINTS[m]]
    a = m + r - 1
    at = np.array([[p ** i for p in pts] + [1.0 if i == m - 1 else 0.0] for i in range(m)])
    denom = [math.prod(pj - pl for l, pl in enumerate(pts) if l != j) for j, pj in enumerate(pts)]
    g = np.array([[p ** k / denom[j] for k in range(r)] for j, p in enumerate(pts)]
                 + [[1.0 if k == r - 1 else 0.0 for k in range(r)]])
    # sum_j AT[i, j] G[j, k] BT[j, t] = [t == i + k] for every i, k, t: linear in BT.
    rows = np.zeros((m * r * a, a * a))
    rhs = np.zeros(m * r * a)
    for n, (i, k, t) in enumerate((i, k, t) for i in range(m) for k in range(r) for t in range(a)):
        rows[n].reshape(a, a)[:, t] = at[i] * g[:, k]
        rhs[n] = float(t == i + k)
    bt = np.round(np.linalg.lstsq(rows, rhs, rcond=None)[0].reshape(a, a) * 8) / 8
    if np.abs(rows @ bt.ravel() - rhs).max() > 1e-9:
        raise AssertionError(f"F({m},{r}): the rounded input transform does not satisfy the identity")
    return at, g, bt


def transform_weights(weight: np.ndarray, m: int, in_block: int, out_block: int) -> np.ndarray:
    """OIHW 3x3 float weights -> ``U[a*a, OC/ob, IC/ib, ib, ob]`` (``U = G g G^T`` in float64, then
    fp32): the constant operand of :func:`conv2d_winograd_nchwc`, computed once at compile time."""
    o, c, kh, kw = weight.shape
    if (kh, kw) != (3, 3):
        raise TopiError(f"Winograd F(m x m, 3 x 3) takes 3x3 kernels, not {kh}x{kw}")
    if o % out_block or c % in_block:
        raise TopiError(f"channel blocks {in_block}/{out_block} must divide the {c} input / {o} output channels")
    _, g, _ = winograd_matrices(m)
    a = m + 2
    u = np.einsum("ek,ockl,fl->efoc", g, weight.astype(np.float64), g).reshape(a * a, o, c)
    u = u.reshape(a * a, o // out_block, out_block, c // in_block, in_block).transpose(0, 1, 3, 4, 2)
    return np.ascontiguousarray(u, dtype=np.float32)


def _linear(coefs: np.ndarray, terms: list[PrimExpr]) -> PrimExpr:
    """``sum(c * t)`` over the non-zero coefficients, a ±1 coefficient without a multiply."""
    out: PrimExpr | None = None
    # Positive terms first, so a negative one is a subtraction rather than a negation.
    for c, t in sorted(zip(coefs, terms), key=lambda ct: ct[0] < 0):
        if c == 0:
            continue
        if abs(c) != 1:
            t = t * te.const(float(abs(c)), t.dtype)
        if out is None:
            out = t if c > 0 else te.const(0.0, t.dtype) - t
        else:
            out = out + t if c > 0 else out - t
    assert out is not None, "a transform row with no non-zero coefficient"
    return out


def _choose(index: PrimExpr, options: list[PrimExpr]) -> PrimExpr:
    """``options[index]`` as a select chain, which folds to one option once ``index`` is a constant
    (the unrolled transform loops)."""
    out = options[-1]
    for k in range(len(options) - 2, -1, -1):
        out = Select(index == k, options[k], out)
    return out


def winograd_out_size(size: int, pad: int) -> int:
    out = size + 2 * pad - 2
    if out < 1:
        raise TopiError(f"a 3x3 kernel with padding {pad} does not fit the input size {size}")
    return out


def conv2d_winograd_nchwc(data: Tensor, u: Tensor, m: int, padding: int | tuple[int, int] = 1,
                          name: str = "conv2d_winograd") -> Tensor:
    """Stride-1 3x3 conv of ``[N, C/ib, H, W, ib]`` data with the transformed weights ``u``
    (:func:`transform_weights`, ``[a*a, OC/ob, C/ib, ib, ob]``) by F(m x m, 3 x 3): the output is
    ``[N, OC/ob, OH, OW, ob]``, the same as :func:`~vdla.compiler.topi.conv2d_nchwc` of the raw weights."""
    ph, pw = (padding, padding) if isinstance(padding, int) else padding
    n, ico, h, w, icb = const_shape(data)
    aa, oco, kico, kicb, ocb = const_shape(u)
    a = m + 2
    if m not in WINOGRAD_TILES or aa != a * a:
        raise TopiError(f"weights {u.name} have {aa} transform points; F({m}x{m},3x3) needs {a * a}")
    if (kico, kicb) != (ico, icb):
        raise TopiError(f"weights {u.name} have input channels {kico}x{kicb} but data {data.name} has "
                        f"{ico}x{icb}: pack both with the same block")
    oh, ow = winograd_out_size(h, ph), winograd_out_size(w, pw)
    th, tw = -(-oh // m), -(-ow // m)
    at, _, bt = winograd_matrices(m)
    # Zero rows/columns around the image, enough for every tile (the last may overhang the output).
    hp, wp = th * m + 2, tw * m + 2
    pad = te.compute((n, ico, hp, wp, icb), lambda b, c, y, x, i: te.if_then_else(
        (y >= ph) & (y < h + ph) & (x >= pw) & (x < w + pw),
        data[b, c, tir.max(tir.min(y - ph, h - 1), 0), tir.max(tir.min(x - pw, w - 1), 0), i],
        te.const(0.0, data.dtype)), name=f"{name}_pad", tag="winograd_pad")
    # B^T d B in two passes of one side each, so each element is a few terms of plain loads (the
    # one-pass sum over the a x a tile makes expressions that take minutes to lower).
    rows = te.compute((a, ico, n, th, tw, a, icb), lambda eps, c, b, ty, tx, r2, i: _choose(
        eps, [_linear(bt[p], [pad[b, c, ty * m + r1, tx * m + r2, i] for r1 in range(a)]) for p in range(a)]),
        name=f"{name}_in_rows", tag="winograd_input_rows")
    v = te.compute((a * a, ico, n, th, tw, icb), lambda e, c, b, ty, tx, i: _choose(
        e % a, [_linear(bt[p], [rows[e // a, c, b, ty, tx, r2, i] for r2 in range(a)]) for p in range(a)]),
        name=f"{name}_in", tag="winograd_input")
    rc, ri = te.reduce_axis(ico, "rc"), te.reduce_axis(icb, "ri")
    mm = te.compute((a * a, oco, n, th, tw, ocb),
                    lambda e, k, b, ty, tx, o: te.sum(v[e, rc, b, ty, tx, ri] * u[e, k, rc, ri, o], axis=[rc, ri]),
                    name=f"{name}_gemm", tag="winograd_gemm")
    # A^T M A, again one side at a time: M A per transform row, then A^T of that per output pixel.
    cols = te.compute((a, oco, n, th, tw, m, ocb), lambda eps, k, b, ty, tx, j, o: _choose(
        j, [_linear(at[q], [mm[eps * a + nu, k, b, ty, tx, o] for nu in range(a)]) for q in range(m)]),
        name=f"{name}_out_cols", tag="winograd_output_cols")

    def output_transform(b: PrimExpr, k: PrimExpr, y: PrimExpr, x: PrimExpr, o: PrimExpr) -> PrimExpr:
        ty, tx, j = y // m, x // m, x % m
        return _choose(y % m, [_linear(at[q], [cols[eps, k, b, ty, tx, j, o] for eps in range(a)]) for q in range(m)])

    return te.compute((n, oco, oh, ow, ocb), output_transform, name=name, tag="winograd_output")


@dataclass(frozen=True)
class WinogradKnobs:
    """Tunable choices of the Winograd schedule.

    ``tile``: the output tile ``m`` of F(m x m, 3 x 3) (a different compute, so it is fixed when the
    conv is built); ``tx_block``: tiles of a row per GEMM register tile (the broadcast operand);
    ``oc_block``: output-channel vectors per GEMM register tile; ``ty_block``: rows of tiles per
    GEMM register tile and per step of the parallel loop (each pass over the transformed weights
    then serves that many rows); ``parallel``: run the loop over tile rows on all threads.

    ``gemm_at``: where the input transform and the GEMM run.  ``"row"``: inside the loop over rows
    of tiles, on buffers of ``ty_block`` rows (in L2), each step reading all the transformed weights
    again.  ``"plane"``: over the whole plane before it, each transform point's weights read once
    for every tile (the GEMM's outer loop is the point, then the output-channel group), at the cost
    of the transformed image and the GEMM's output in buffers of the whole plane; the output
    transform stays per row of tiles.
    """

    tile: int = 4
    tx_block: int = 4
    oc_block: int = 2
    parallel: bool = True
    ty_block: int = 1
    gemm_at: str = "row"

    def validate(self, tiles_x: int, oc_outer: int, tiles_y: int | None = None) -> None:
        if self.tile not in WINOGRAD_TILES:
            raise TopiError(f"Winograd tile {self.tile} is not one of {WINOGRAD_TILES}")
        if not 1 <= self.tx_block <= tiles_x:
            raise TopiError(f"tx_block {self.tx_block} must be between 1 and the {tiles_x} tiles of a row")
        if self.oc_block < 1 or oc_outer % self.oc_block:
            raise TopiError(f"oc_block {self.oc_block} must divide the {oc_outer} output-channel blocks")
        if self.ty_block < 1 or (tiles_y is not None and self.ty_block > tiles_y):
            raise TopiError(f"ty_block {self.ty_block} must be between 1 and the {tiles_y} rows of tiles")
        if self.gemm_at not in GEMM_AT:
            raise TopiError(f"gemm_at {self.gemm_at!r} is not one of {GEMM_AT}")


def default_winograd_knobs(out: Tensor, target: Target | None = None) -> WinogradKnobs:
    """The GEMM register tile that fills the target's accumulators: two channel vectors (the weight
    vectors a broadcast feeds) by as many tiles of a row as the rest holds, balanced over the row
    (:func:`~vdla.compiler.topi.conv2d_nchwc.balance_columns`): a row of 7 tiles in 4 + 3 rather than
    6 + 1, whose one-tile sliver runs two FMA chains, latency-bound.  Measured on a loaded AMD Zen 3
    (AVX2), kernel alone: 1.01-1.11x on ResNet's 14-, 28- and 56-wide layers, within that host's noise
    (docs/cpu_speed.md, "Where ResNet-50 loses").

    One row of tiles per register tile (``ty_block`` 1), also where a row leaves half of AVX-512's 28
    accumulators free (7 x 2 on the 7-tile rows of 14 x 14 F(2x2) and 28 x 28 F(4x4)): two rows, 7 x 2
    x 2, were slower on an AMD Zen 4 (kernel alone, one thread: 28 x 28 F(4x4) 0.787 ms against
    0.719, 14 x 14 F(2x2) 1.083 against 1.066; docs/cpu_speed.md, "Zen 4").  The tuner may take more
    rows (its ``oh_block`` of a Winograd config).

    Except where the transformed weights stream from memory (over :data:`STREAMED_WEIGHT_BYTES`: 9.4 MB
    for F(4x4) at 256 channels, 16.8 MB for F(2x2) at 512): the GEMM then runs over the whole plane
    (``gemm_at="plane"``), each transform point's weights read once for every tile instead of once per
    row of tiles (:func:`_plane_knobs`).  On an AMD Zen 4 (AVX-512, kernel alone, one thread;
    docs/cpu_speed.md, "Zen 4, a seventh session"): 256 x 14 x 14 F(4x4) over the plane 0.926 ms against
    F(2x2) per row 1.050 (F(4x4) per row, two rows: 1.014); 512 x 7 x 7 F(4x4) over the plane 1.304
    against F(2x2) 4 x 2 x 2 per row pair 1.606; 256 x 14 x 14 F(2x2) (4.2 MB, not streamed) over
    the plane 1.101 against 1.050 per row."""
    m, tiles_x, oco, vectors = _winograd_dims(out, target)
    acc = max_accumulators(target)
    if _transformed_weight_bytes(out) > STREAMED_WEIGHT_BYTES:
        # The tile's accumulators beside its weight vectors and one broadcast input (the tuner's register
        # model), in tiles of the plane.
        return _plane_knobs(out, m, tiles_x, min(acc, vector_registers(target) - vectors - 1) // vectors)
    oc_block = largest_divisor(oco, 2)
    tx = balance_columns(tiles_x, max(1, min(tiles_x, acc // (oc_block * vectors))))
    return WinogradKnobs(tile=m, tx_block=tx, oc_block=oc_block)


def _plane_knobs(out: Tensor, m: int, tiles_x: int, tiles: int) -> WinogradKnobs:
    """The plane GEMM's register tile: one channel vector by as many of the plane's tiles as its
    accumulators hold (``tiles``) (a whole row, then rows), so each weight vector, streamed from memory in the order
    it is laid out (:func:`_schedule_plane_stages`), serves every tile of the plane or a large part of it
    (14 x 14 F(5x5): 3 x 1 x 3, 9 accumulators; 7 x 7 F(4x4): 2 x 1 x 2).  More channel vectors by fewer
    tiles (the tenth session's 4, with 2 rows on AVX-512) read as many stretches of the weights at once,
    each vector for fewer tiles.  Measured on an AMD Zen 4, kernel alone, one thread (``bench/conv_knobs.py``;
    docs/cpu_speed.md, "an eleventh session"): with AVX2 code (``bench/avx2_host``) 256 x 14 x 14 F(5x5)
    3 x 1 x 3 0.70 ms against the tenth session's F(4x4) 2 x 4 x 1 1.15, 512 x 7 x 7 F(4x4) 2 x 1 x 2
    1.50 against its F(2x2) 2 x 4 x 1 1.90; with AVX-512 F(5x5) 3 x 1 x 3 0.69 ms against 3 x 4 x 2 0.80
    (3 x 2 x 3 0.90), F(4x4) 2 x 1 x 2 1.33 against 2 x 4 x 2 1.44 (2 x 2 x 2 1.62)."""
    tx = max(1, min(tiles_x, tiles))
    tiles_y = _winograd_tile_rows(out)
    ty = balance_columns(tiles_y, max(1, min(tiles_y, tiles // tx)))
    return WinogradKnobs(tile=m, tx_block=tx, oc_block=1, ty_block=ty, gemm_at="plane")


#: Transformed weights above this many bytes are taken to stream from memory (past L2 and a share of
#: L3), so the default GEMM runs over the whole plane, one pass over them.
STREAMED_WEIGHT_BYTES = 8 << 20


def _transformed_weight_bytes(out: Tensor) -> int:
    """Bytes of the transformed weights ``U`` a Winograd conv's GEMM reads."""
    u = out.op.input_tensors()[0].op.input_tensors()[0].op.input_tensors()[1]
    return math.prod(const_shape(u)) * 4


def transformed_weight_bytes(m: int, in_channels: int, out_channels: int) -> int:
    """Bytes of the fp32 weights of F(m x m, 3 x 3) transformed at compile time (``(m + 2)^2`` points per
    channel pair)."""
    return (m + 2) ** 2 * in_channels * out_channels * 4


def _winograd_dims(out: Tensor, target: Target | None) -> tuple[int, int, int, int]:
    gemm = out.op.input_tensors()[0].op.input_tensors()[0]
    aa, oco, _, _, tiles_x, ocb = const_shape(gemm)
    return math.isqrt(aa) - 2, tiles_x, oco, max(1, -(-ocb // vector_lanes(target)))


def _winograd_tile_rows(out: Tensor) -> int:
    """Rows of output tiles of a Winograd conv's output tensor."""
    return const_shape(out.op.input_tensors()[0].op.input_tensors()[0])[3]


def schedule_conv2d_winograd_nchwc(out: Tensor, knobs: WinogradKnobs | None = None, s: Schedule | None = None,
                                   target: Target | None = None, epilogue: Tensor | None = None) -> Schedule:
    """The x86 schedule of :func:`conv2d_winograd_nchwc`'s output (a fresh schedule unless ``s``).

    ``epilogue``: an element-wise stage of the conv's shape over it (bias, residual add, ReLU): the
    output transform is inlined into it, so the conv's output is never stored on its own.  The
    loop over tile rows is the parallel one; each row's input transform and GEMM are computed
    inside it (their buffers a row of tiles, in L2), then its outputs, ``m x m`` unrolled per tile.
    """
    if s is None:
        s = create_schedule(epilogue if epilogue is not None else out)
    m, tiles_x, oco, _ = _winograd_dims(out, target)
    a = m + 2
    knobs = knobs or default_winograd_knobs(out, target)
    knobs.validate(tiles_x, oco, _winograd_tile_rows(out))
    if knobs.tile != m:
        raise TopiError(f"knobs for F({knobs.tile}x{knobs.tile}) cannot schedule the F({m}x{m}) conv {out.name}")
    cols = out.op.input_tensors()[0]
    gemm = cols.op.input_tensors()[0]
    v = gemm.op.input_tensors()[0]
    rows = v.op.input_tensors()[0]
    pad = rows.op.input_tensors()[0]
    stage = out
    if epilogue is not None:
        if const_shape(epilogue) != const_shape(out):
            raise TopiError(f"epilogue {epilogue.name} has shape {const_shape(epilogue)}, the conv "
                            f"{out.name} {const_shape(out)}: only a same-shape element-wise stage fuses")
        s.compute_inline(out)
        stage = epilogue
    b, k, y, x, o = s.get_loops(stage)
    ty, vy = s.split(y, factor=m)
    tx, vx = s.split(x, factor=m)
    # ty_block rows of tiles per step of the parallel loop: the stages computed at it cover them all.
    ty, tyi = s.split(ty, factor=knobs.ty_block)
    s.reorder(b, ty, k, tyi, tx, vy, vx, o)
    # Only the output row picks a row of A^T (the select on ``y % m``): unrolling the column too
    # doubled the straight-line code of the stage for no measured speed.
    s.unroll(vy)
    s.vectorize(o)
    row = s.fuse(b, ty)
    if knobs.parallel:
        s.parallel(row)
    if knobs.gemm_at == "plane":
        s.compute_at(cols, row)
        _schedule_plane_stages(s, knobs, a, gemm, v, rows)
    else:
        for stage_ in (cols, gemm, v, rows):
            s.compute_at(stage_, row)
    # The zero-padded image is one parallel pass of its own: computed per row of tiles, its border
    # guards made the row loop split into first / middle / last rows, three copies of every stage's
    # unrolled code (2-3x the compile time) for no measured speed.
    _schedule_padding(s, knobs, pad)
    if knobs.gemm_at == "row":
        _schedule_row_stages(s, knobs, a, gemm, v, rows)
    _schedule_output_columns(s, cols)
    # Each row's stages own buffers of one row of tiles (in L2, private to the thread running the row).
    s.compact_buffers()
    return s


def _schedule_padding(s: Schedule, knobs: WinogradKnobs, pad: Tensor) -> None:
    pb, pc, py, _, pi = s.get_loops(pad)
    s.vectorize(pi)
    padded_rows = s.fuse(pb, pc, py)
    if knobs.parallel:
        s.parallel(padded_rows)


def _schedule_input_rows(s: Schedule, rows: Tensor) -> None:
    """The input transform's first side: every point of a tile unrolled over a lane vector."""
    pe, pc, _, _, px, pr, pi = s.get_loops(rows)[-7:]
    s.reorder(pc, px, pr, pe, pi)
    s.unroll(pe)
    s.vectorize(pi)


def _schedule_row_stages(s: Schedule, knobs: WinogradKnobs, a: int, gemm: Tensor, v: Tensor, rows: Tensor) -> None:
    """The input transform and the GEMM of ``gemm_at="row"``, computed at the loop over rows of tiles."""
    # The input transform: one side then the other, every point of a tile unrolled over a lane vector.
    _schedule_input_rows(s, rows)
    ve, vc, _, _, vx_, vi = s.get_loops(v)[-6:]
    # The second side picks a row of B^T by ``e % a``: unroll those a points, loop over the a rows
    # (unrolling all a^2 points made a straight-line body a times bigger: most of the lowering and
    # LLVM time of the kernel).
    veo, vei = s.split(ve, factor=a)
    s.reorder(vc, vx_, veo, vei, vi)
    s.unroll(vei)
    s.vectorize(vi)
    # The GEMM of the rows: their tiles by the output channels, reduced over the input channels.
    e, gk, _, gy, gx, go, rc, ri = s.get_loops(gemm)[-8:]
    gko, gki = s.split(gk, factor=knobs.oc_block)
    gxo, gxi = s.split(gx, factor=knobs.tx_block)
    # (ty_block rows x tx_block tiles x oc_block vectors) accumulators.
    s.reorder(gko, e, gxo, rc, ri, gy, gxi, gki, go)
    s.unroll(gy)
    s.unroll(gxi)
    s.unroll(gki)
    s.vectorize(go)


def _schedule_plane_stages(s: Schedule, knobs: WinogradKnobs, a: int, gemm: Tensor, v: Tensor,
                           rows: Tensor) -> None:
    """The input transform and the GEMM of ``gemm_at="plane"``: each a loop nest over the whole plane."""
    # The input transform per input-channel block and row of tiles (the parallel loop), its first
    # side computed there; the second side as in the row schedule.
    ve, vc, vb, vty, vtx, vi = s.get_loops(v)
    veo, vei = s.split(ve, factor=a)
    s.reorder(vc, vb, vty, vtx, veo, vei, vi)
    s.unroll(vei)
    s.vectorize(vi)
    vrow = s.fuse(vc, vb, vty)
    if knobs.parallel:
        s.parallel(vrow)
    s.compute_at(rows, vrow)
    _schedule_input_rows(s, rows)
    # The GEMM: per transform point and output-channel group, its oc_block weight vectors of every
    # input channel are read once for all the plane's tiles, (ty_block x tx_block) tiles at a time.
    # The point outermost: the weights ``U[e, oc, ic, i, o]`` are then read in the order they are laid
    # out, one stream from memory over the whole kernel (with one channel vector per tile) rather than
    # a stretch of 8-32 KB per point and group, each starting a stream of its own.
    e, gk, gb, gy, gx, go, rc, ri = s.get_loops(gemm)
    gko, gki = s.split(gk, factor=knobs.oc_block)
    gyo, gyi = s.split(gy, factor=knobs.ty_block)
    gxo, gxi = s.split(gx, factor=knobs.tx_block)
    s.reorder(e, gko, gb, gyo, gxo, rc, ri, gyi, gxi, gki, go)
    outer = s.fuse(e, gko)
    s.unroll(gyi)
    s.unroll(gxi)
    s.unroll(gki)
    s.vectorize(go)
    if knobs.parallel:
        s.parallel(outer)


def _schedule_output_columns(s: Schedule, cols: Tensor) -> None:
    """M A: per output-channel vector and tile, every transform row and output column unrolled."""
    ce, ck, _, _, cx, cj, co = s.get_loops(cols)[-7:]
    s.reorder(ck, cx, ce, cj, co)
    # Only the output column picks a row of A^T (the select on ``j``); the transform row is a loop.
    s.unroll(cj)
    s.vectorize(co)


def winograd_eligible(kernel_hw: tuple[int, int], stride: tuple[int, int], groups: int = 1) -> bool:
    """Whether a conv can run as F(m x m, 3 x 3): a 3x3 kernel, stride 1, no groups."""
    return tuple(kernel_hw) == (3, 3) and tuple(stride) == (1, 1) and groups == 1


def default_winograd_tile(in_channels: int, out_channels: int, out_height: int, out_width: int,
                          target: Target | None = None) -> int | None:
    """The output tile ``m`` of the Winograd conv the default schedule takes for an eligible conv, or
    None for the direct conv: the rule measured on ResNet's layers (docs/cpu_speed.md, "Winograd").

    F(4x4) on planes of at least 28 x 28 (64 x 56 x 56: 2.2x the direct conv; 128 x 28 x 28: 1.8x),
    F(2x2) on 14 x 14 (256 channels: 1.3x; F(4x4) only 1.05x there: 14 is 3.5 tiles of 4 and the
    transformed weights, streamed once per row of tiles, are 2.25x bigger), the direct conv below
    (512 x 7 x 7: Winograd 1.5x slower, its 16 MB of transformed weights streamed per row).  Fewer
    channels than one 64-wide block leave too little GEMM to pay for the transforms.  Measured with
    AVX2 on an AMD Zen 3, per row of tiles; with the GEMM over the plane (AVX2 code on an AMD Zen 4)
    F(5x5) on 14 x 14 and F(4x4) on 7 x 7 where F(4x4)'s weights stream (:func:`_narrow_vector_tile`).

    With 512-bit vectors (AVX-512) F(2x2) down to 7 x 7: on an AMD Zen 4 512 x 7 x 7 took 1.71 ms by
    F(2x2) over two rows of tiles (:func:`default_winograd_knobs`) against 2.15 for the direct conv
    (docs/cpu_speed.md, "Zen 4"); the larger planes' choices held there (F(4x4) 2.7x the direct conv
    on 64 x 56 x 56 and 128 x 28 x 28, F(2x2) 1.9x on 256 x 14 x 14, F(4x4) 0.96x F(2x2) there).
    And F(4x4) on those smaller planes too where its transformed weights stream from memory (over
    :data:`STREAMED_WEIGHT_BYTES`: 256 channels and up), its GEMM over the whole plane
    (:func:`default_winograd_knobs`): 256 x 14 x 14 0.926 ms against F(2x2)'s 1.050, 512 x 7 x 7 1.304
    against 1.606 (Zen 4, docs/cpu_speed.md, "Zen 4, a seventh session").  Of F(4x4) and F(5x5) there, the
    one whose tiles cover the plane with fewer transform points (:func:`transform_points`), F(4x4) on a tie:
    14 x 14 is 3 x 3 tiles of 5 (441 points) against 4 x 4 tiles of 4 (576: 14 is padded to 16), so F(5x5)
    (256 x 14 x 14, kernel alone, its GEMM over the plane 3 x 4 x 2: 0.726-0.751 ms against F(4x4)'s
    0.880, 1.17-1.21x; docs/cpu_speed.md, "Zen 4, an eighth session"); 7 x 7 stays F(4x4) (144 points
    against 196)."""
    if min(in_channels, out_channels) < _MIN_CHANNELS:
        return None
    size = min(out_height, out_width)
    if vector_lanes(target) < 16:
        tgt = target or current_target()
        # The GEMM over the plane was measured on x86's 256-bit AVX2 only; NEON keeps the per-row rule.
        return _narrow_vector_tile(in_channels, out_channels, size, plane=not tgt.is_arm)
    if size >= _MIN_OUT and transformed_weight_bytes(4, in_channels, out_channels) > STREAMED_WEIGHT_BYTES:
        return _streamed_tile(out_height, out_width)
    return 4 if size >= _F4_MIN_OUT else 2 if size >= _MIN_OUT else None


def _narrow_vector_tile(in_channels: int, out_channels: int, size: int, plane: bool) -> int | None:
    """:func:`default_winograd_tile` for vectors narrower than 512 bits (AVX2's 256: 16 registers, 12 of them
    accumulators); ``plane``: whether the streamed-weight choices below apply (x86; ARM's NEON keeps F(4x4)
    from 28 x 28 and F(2x2) on 14 x 14, as measured per row of tiles).

    F(4x4) per row of tiles on planes of at least 28 x 28; below that, where F(4x4)'s transformed weights
    stream (over :data:`STREAMED_WEIGHT_BYTES`: 256 channels and up), the AVX-512 rule's tile of fewer
    transform points with its GEMM over the plane (:func:`_streamed_tile`: F(5x5) on 14 x 14, F(4x4) on
    7 x 7), on one channel vector by every tile of the plane (:func:`_plane_knobs`); else F(2x2)
    per row on 14 x 14 (the Zen 3 rule) and the direct conv below.  Measured on an AMD Zen 4 running AVX2
    code (``bench/avx2_host``, kernel alone, one thread, ``bench/conv_knobs.py``; docs/cpu_speed.md, "an
    eleventh session"): 256 x 14 x 14 F(5x5) 3 x 1 x 3 0.70 ms against the tenth session's F(4x4) 2 x 4 x 1
    1.15 (F(5x5) 3 x 2 x 1 1.26, F(4x4) 4 x 1 x 2 1.14); 512 x 7 x 7 F(4x4) 2 x 1 x 2 1.50 ms against the
    tenth session's F(2x2) 2 x 4 x 1 1.90 (F(2x2) 4 x 1 x 2 2.42).  Before the GEMM read its weights in their layout's order
    (the tenth session) F(5x5) lost on AVX2 (1.26 ms at best against F(4x4)'s 1.16) and F(2x2) won on 7 x 7.
    On the Zen 3 (AVX2) the 14 x 14 and 7 x 7 choices were measured per row of tiles only."""
    if size >= _F4_MIN_OUT:
        return 4
    if plane and size >= _MIN_OUT and transformed_weight_bytes(4, in_channels, out_channels) > STREAMED_WEIGHT_BYTES:
        return _streamed_tile(size, size)
    if size >= _F2_MIN_OUT:
        return 2
    return None


def _streamed_tile(out_height: int, out_width: int) -> int:
    """Of the tiles whose GEMM runs over the plane (:data:`_STREAMED_TILES`), the one whose tiles cover the
    plane with the fewest transform points (:func:`transform_points`), the smaller tile on a tie."""
    return min(_STREAMED_TILES, key=lambda m: (transform_points(m, out_height, out_width), m))


def transform_points(m: int, out_height: int, out_width: int) -> int:
    """Transform points of F(m x m, 3 x 3) over an ``out_height x out_width`` plane (whole tiles, the last
    ones overhanging): the element-wise products per channel pair, the GEMM's work."""
    return -(-out_height // m) * -(-out_width // m) * (m + 2) ** 2


#: The default rule's thresholds (measured: docs/cpu_speed.md, "Winograd" and "Zen 4").
_MIN_CHANNELS = 64
#: The tiles the AVX-512 rule weighs where F(4x4)'s transformed weights stream (by their transform points).
_STREAMED_TILES = (4, 5)
_F4_MIN_OUT = 28
_F2_MIN_OUT = 14
#: The smallest plane any default takes Winograd on (7 x 7: ResNet's last stage).
_MIN_OUT = 7
