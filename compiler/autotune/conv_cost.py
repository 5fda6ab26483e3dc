"""The analytic cost of a blocked conv2d config by algorithm: the tuner's prior (``Conv2dNCHWcTemplate``).

Cycles of one call on one core (a cycle: two vector FMAs), built from the work each algorithm does
on a given conv, not fitted to one measured table:

* **direct**: ``9 C K H W`` multiply-adds on the config's register tile (:func:`register_tile_cycles`:
  two FMAs a cycle, the loads of a reduction step, spilled accumulators), a column block that does
  not divide the row charged as a whole tile, plus the weights' ``9 C K`` floats read from memory once
  (the measurement flushes the caches before each call, as the rest of a model would between two uses
  of a layer's weights).
* **Winograd F(m x m, 3 x 3)** (``a = m + 2``): the plane in ``ceil(H/m) * ceil(W/m)`` tiles (the last
  ones overhang: 56 is 14 tiles of 4 but 12 tiles of 5 cover 60), each of ``a^2`` transform points;
  the batched GEMM's ``a^2 C K`` multiply-adds per tile on the config's register tile (tiles x
  channel vectors) by the same model; the input and output transforms' work per tile, which scales
  with ``C + K`` (not ``C K``): each nonzero of ``B^T`` and ``A^T`` a vector load and an add, each
  result a store, one vector operation a cycle, for both sides of each transform; and the transformed
  weights' ``a^2 C K`` floats read from memory once, and again per step of the loop over rows of
  tiles when the GEMM runs per row -- free from the L2 when they fit it, from L3 while they fit the cache the codegen assumes
  (:data:`~vdla.compiler.topi.conv2d_winograd.STREAMED_WEIGHT_BYTES`), from memory beyond it.  A GEMM
  over the plane reads them once but keeps the transformed image and the GEMM's output for the whole
  plane (``a^2 (C + K)`` floats per tile): past the L2, both go out to L3 and back.

What it leaves out (the learned model's part): loop orders, unrolling and their code size, the
fixed cost of a call and of each stage's loop nest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla.compiler.topi import transform_points, winograd_matrices
from vdla.compiler.topi.conv2d_winograd import STREAMED_WEIGHT_BYTES

#: Bytes one core streams from memory per model cycle.  The model's cycle is two vector FMAs (the
#: register-tile model's "two a cycle"); on an AMD Zen 4 one 512-bit FMA issues per clock (3.68 G a
#: second, 117.9 GFLOP/s measured: docs/cpu_speed.md), so ~1.84 G model cycles a second, and a core's
#: ~30 GB/s of memory bandwidth is ~16 bytes per model cycle.
MEMORY_BYTES_PER_CYCLE = 16.0
#: Bytes one core reads from its L3 per model cycle (weights re-read from there): twice memory's.
L3_BYTES_PER_CYCLE = 32.0
#: The per-core L2 the Winograd schedule keeps its row buffers in (1 MiB on Zen 4 and Intel's
#: AVX-512 server cores; a plane buffer beyond it goes out to L3 and back).
L2_BYTES = 1 << 20
#: fp32 bytes.
_FLOAT = 4


@dataclass(frozen=True)
class ConvShape:
    """What the cost depends on: a stride-1 (for Winograd) conv's channels, output plane and batch, and
    the target's vector lanes (fp32), vector registers and vectors per output-channel block."""

    in_channels: int
    out_channels: int
    out_height: int
    out_width: int
    kernel: int = 3
    lanes: int = 16
    registers: int = 32
    vectors: int = 1
    batch: int = 1


@dataclass(frozen=True)
class TileKnobs:
    """A config's register tile and where a Winograd GEMM runs: ``columns`` (output columns, or tiles
    of a row), ``rows`` (output rows, or rows of tiles), ``channel_blocks`` (output-channel blocks) and
    ``plane`` (a Winograd GEMM over the whole plane rather than per row of tiles)."""

    columns: int
    rows: int = 1
    channel_blocks: int = 1
    plane: bool = False


def register_tile_cycles(macs: float, shape: ConvShape, knobs: TileKnobs) -> float:
    """Cycles of ``macs`` multiply-adds on the register tile: per reduction step the tile's accumulators
    take one FMA each and the step loads one broadcast per tile column (of every row) and one weight
    vector per channel vector, two of either per cycle; accumulators beyond the register file (less
    the weight and input registers) are spilled, a store and a load each."""
    columns, rows = knobs.rows * knobs.columns, knobs.channel_blocks * shape.vectors
    accumulators = columns * rows
    per_step = max(accumulators, columns + rows) / 2 + 2 * max(0, accumulators + 2 - shape.registers) + 0.5
    return macs / (shape.lanes * accumulators) * per_step


def _covered(extent: int, block: int) -> float:
    """How much a block that does not divide ``extent`` overcounts it (its last block charged whole)."""
    return -(-extent // block) * block / extent


def direct_cycles(shape: ConvShape, knobs: TileKnobs) -> float:
    """Cycles of the direct conv on ``knobs``' register tile (see the module doc)."""
    k2 = shape.kernel * shape.kernel
    macs = k2 * shape.in_channels * shape.out_channels * shape.out_height * shape.out_width * shape.batch
    compute = register_tile_cycles(macs, shape, knobs) * _covered(shape.out_width, knobs.columns)
    weights = k2 * shape.in_channels * shape.out_channels * _FLOAT
    return compute + weights / MEMORY_BYTES_PER_CYCLE


def transform_cycles(m: int) -> tuple[float, float]:
    """Cycles per tile and channel vector of F(m x m, 3 x 3)'s input and output transforms, each done
    one side then the other (as :func:`~vdla.compiler.topi.conv2d_winograd_nchwc` computes them): each
    nonzero coefficient a load from the stage's buffer and an add, each result a store, one vector
    operation a cycle (the stages move data; their few adds do not fill the FMA pipes)."""
    at, _, bt = winograd_matrices(m)
    a = m + 2
    nnz_b, nnz_a = int(np.count_nonzero(bt)), int(np.count_nonzero(at))
    # B^T d: a columns of a outputs (a * nnz_b terms), then (.) B the same; A^T M A: a rows of m
    # outputs (a * nnz_a terms), then m x m outputs of a terms each row's nonzeros (m * nnz_a).
    input_side = 2 * (2 * a * nnz_b + a * a)
    output_side = 2 * a * nnz_a + a * m + 2 * m * nnz_a + m * m
    return input_side, output_side


def winograd_cycles(shape: ConvShape, m: int, knobs: TileKnobs) -> float:
    """Cycles of Winograd F(m x m, 3 x 3) with ``knobs``' GEMM register tile (see the module doc)."""
    c, k = shape.in_channels, shape.out_channels
    tiles_y, tiles_x = -(-shape.out_height // m), -(-shape.out_width // m)
    a2 = (m + 2) ** 2
    points = transform_points(m, shape.out_height, shape.out_width) * shape.batch
    gemm = register_tile_cycles(points * c * k, shape, knobs) * _covered(tiles_x, knobs.columns) * _covered(
        tiles_y, knobs.rows)
    per_input, per_output = transform_cycles(m)
    tiles = tiles_y * tiles_x * shape.batch
    transforms = tiles * (per_input * c + per_output * k) / shape.lanes
    # The zero-padded image: one store per vector.
    padding = (tiles_y * m + 2) * (tiles_x * m + 2) * c / shape.lanes * shape.batch
    weights = a2 * c * k * _FLOAT
    # Read from memory once (the caches are cold); a GEMM per row of tiles reads them again per step
    # of that loop: from L3 while they fit the cache the codegen assumes, else from memory again.
    passes = 1 if knobs.plane else -(-tiles_y // knobs.rows)
    again = (passes - 1) * weights
    memory = weights + (again if weights > STREAMED_WEIGHT_BYTES else 0)
    cached = again if L2_BYTES < weights <= STREAMED_WEIGHT_BYTES else 0
    if knobs.plane:
        # The transformed image and the GEMM's output of the whole plane: beyond the L2, out and back.
        buffers = points * (c + k) * _FLOAT
        cached += 2 * buffers if buffers > L2_BYTES else 0
    return gemm + transforms + padding + memory / MEMORY_BYTES_PER_CYCLE + cached / L3_BYTES_PER_CYCLE
