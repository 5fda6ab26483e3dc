"""The analytic cost of a blocked conv2d config by algorithm: the tuner's prior (``Conv2dNCHWcTemplate``).

Cycles of one call on one core (a cycle: two vector FMAs), built from the work each algorithm does
on a given conv, not fitted to one measured table:

* **direct**: ``9 C K H W`` multiply-adds on the config's register tile, every tile of the plane on
  its own: a column or row block that does not divide the plane leaves a narrower last tile, which the
  schedule partitions off with fewer accumulators.  A tile's reduction step (:func:`step_cycles`) takes
  the slowest of its FMAs, its loads (broadcast inputs and weight vectors on the core's load pipes,
  the weights from the L2 when the block the tile sweeps does not fit the L1), its instructions at the
  core's dispatch width and the FMA latency its accumulator chains wait on; spilled accumulators add a
  store and a load.  The weights' ``9 C K`` floats come from memory (the measurement flushes the caches
  before each call, as the rest of a model would between two uses of a layer's weights): the part of
  that stream the first tile's steps do not cover is added.
* **Winograd F(m x m, 3 x 3)** (``a = m + 2``): the plane in ``ceil(H/m) * ceil(W/m)`` tiles (the last
  ones overhang: 56 is 14 tiles of 4 but 12 tiles of 5 cover 60), each of ``a^2`` transform points;
  the batched GEMM's ``a^2 C K`` multiply-adds per tile on the config's register tile (tiles x
  channel vectors) by the same step model, its last blocks of tiles partitioned off as the direct
  conv's; the input and output transforms' work per tile, which scales
  with ``C + K`` (not ``C K``): each nonzero of ``B^T`` and ``A^T`` a vector load and an add, each
  result a store, one vector operation a cycle, for both sides of each transform; and the transformed
  weights' ``a^2 C K`` floats read from memory once, and again per step of the loop over rows of
  tiles when the GEMM runs per row -- free from the L2 when they fit it, from L3 while they fit the cache the codegen assumes
  (:data:`~vdla.compiler.topi.conv2d_winograd.STREAMED_WEIGHT_BYTES`), from memory beyond it.  A GEMM
  over the plane reads them once but keeps the transformed image and the GEMM's output for the whole
  plane (``a^2 (C + K)`` floats per tile): past the L2, both go out to L3 and back.

The core's figures (FMA latency and datapath, load pipes, dispatch width, L1, L2 bandwidth) are an
AMD Zen 4's; the target's vector width and register count come with the conv (:class:`ConvShape`).

What it leaves out (the learned model's part): loop orders, unrolling and their code size, the
fixed cost of a call and of each stage's loop nest (the template passes the tile and ``plane`` only:
the direct conv's ``reduce_at="row"`` counts as ``"tile"``).
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
#: Clocks from an FMA's issue to its result on AMD Zen 4 (and Zen 3, and Intel's AVX-512 cores).
FMA_LATENCY_CLOCKS = 4
#: FMA datapath bits one core issues per clock: a Zen 4 has two 256-bit FMA pipes and a 512-bit FMA
#: takes both (one a clock: the 117.9 GFLOP/s of docs/cpu_speed.md), a 256-bit one takes one (two a clock).
FMA_BITS_PER_CLOCK = 512
#: Load pipes of one core and the bits each reads from L1 a clock: a Zen 4 loads two 256-bit values a
#: clock, a 512-bit vector takes both, a broadcast float one.
LOAD_PIPES = 2
LOAD_PIPE_BITS = 256
#: A core's L1 data cache (32 KiB on a Zen 4): a weight block the register tile sweeps between two uses
#: stays there when it fits, else every step reads its weight vectors from the L2 again.
L1_BYTES = 32 << 10
#: Bytes the L2 delivers to the L1 a clock (32 on a Zen 4).
L2_BYTES_PER_CLOCK = 32
#: Instructions (macro-ops) one core dispatches a clock: 6 on a Zen 4.
DISPATCH_WIDTH = 6
#: A reduction step's own loop instructions: the induction variable's add and the fused compare-and-branch.
LOOP_OPS = 2
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
    ``plane`` (a Winograd GEMM over the whole plane rather than per row of tiles; a direct conv reducing
    its input-channel blocks outside the plane)."""

    columns: int
    rows: int = 1
    channel_blocks: int = 1
    plane: bool = False


def fmas_per_clock(shape: ConvShape) -> float:
    """Vector FMAs one core issues a clock at ``shape``'s vector width (``FMA_BITS_PER_CLOCK`` of datapath)."""
    return FMA_BITS_PER_CLOCK / (32 * shape.lanes)


def latency_floor(shape: ConvShape) -> float:
    """Model cycles a reduction step of the register tile takes at least: each accumulator's FMAs form
    a chain (a step's FMA adds to the last step's result), so a step cannot retire before the FMA
    latency has passed since the last one, however few FMAs it issues: ``FMA_LATENCY_CLOCKS`` clocks,
    in model cycles of two FMAs.  Below ``FMA_LATENCY_CLOCKS * fmas_per_clock`` accumulators (4 of 512
    bits, 8 of 256 on a Zen 4) a tile waits on its own results."""
    return FMA_LATENCY_CLOCKS * fmas_per_clock(shape) / 2


def step_cycles(shape: ConvShape, knobs: TileKnobs, swept: float = 0.0) -> float:
    """Model cycles of one reduction step (one input channel at one kernel tap) of the register tile,
    the slowest of four: its accumulators' FMAs (one each, ``fmas_per_clock``); its loads -- a
    broadcast float per tile column of every row, one load pipe each, and a weight vector per channel
    vector, as many pipes as its bits need -- on ``LOAD_PIPES`` pipes; its instructions (those FMAs and
    loads and the loop's ``LOOP_OPS``), ``DISPATCH_WIDTH`` a clock; and :func:`latency_floor`.  When the
    weight block the tile sweeps before it uses a weight again (``swept`` bytes) does not fit the L1,
    every weight vector comes from the L2 again, ``L2_BYTES_PER_CLOCK``: a tile of one column (a
    multiply-add per weight vector) then waits on the L2.  Accumulators beyond the register file (less
    the weight and input registers) are spilled, a store and a load each."""
    columns, rows = knobs.rows * knobs.columns, knobs.channel_blocks * shape.vectors
    accumulators = columns * rows
    per_clock = fmas_per_clock(shape)
    vector_loads = -(-32 * shape.lanes // LOAD_PIPE_BITS)
    load_clocks = (columns + rows * vector_loads) / LOAD_PIPES
    dispatch_clocks = (accumulators + columns + rows + LOOP_OPS) / DISPATCH_WIDTH
    l2_clocks = rows * shape.lanes * _FLOAT / L2_BYTES_PER_CLOCK if swept > L1_BYTES else 0.0
    issue = max(accumulators / per_clock, load_clocks, dispatch_clocks, l2_clocks) * per_clock / 2
    return max(issue, latency_floor(shape)) + 2 * max(0, accumulators + 2 - shape.registers)


def register_tile_cycles(macs: float, shape: ConvShape, knobs: TileKnobs, swept: float = 0.0) -> float:
    """Cycles of ``macs`` multiply-adds on the register tile, :func:`step_cycles` (``swept``: the weight
    block's bytes) per ``lanes`` times its accumulators."""
    accumulators = knobs.rows * knobs.columns * knobs.channel_blocks * shape.vectors
    return macs / (shape.lanes * accumulators) * step_cycles(shape, knobs, swept)


def channel_block_bytes(shape: ConvShape, knobs: TileKnobs) -> float:
    """Bytes of one input channel's weights for the tile's output channels (a weight vector per channel
    vector)."""
    return knobs.channel_blocks * shape.vectors * shape.lanes * _FLOAT


def _parts(extent: int, block: int) -> list[tuple[int, int]]:
    """An extent cut into blocks: (block size, how many) of the full blocks and the narrower last one."""
    block = min(block, extent)
    full, tail = divmod(extent, block)
    return [(block, full)] + ([(tail, 1)] if tail else [])


def direct_cycles(shape: ConvShape, knobs: TileKnobs) -> float:
    """Cycles of the direct conv on ``knobs``' register tile (see the module doc): every tile of the
    plane on its own register tile -- a column or row block that does not divide the plane leaves a
    narrower last tile (the schedule partitions it off), with fewer accumulators, which may then wait
    on the FMA latency or the loads -- plus the part of the weights' stream from memory that the
    tiles' FMAs do not cover."""
    k2 = shape.kernel * shape.kernel
    per_output = k2 * shape.in_channels * shape.out_channels * shape.batch
    # A tile reducing over every input channel sweeps its channel group's whole weight block; reduced
    # outside the plane (``plane``), the tiles share one input-channel block's (one lanes-wide block of
    # input channels).  The template's ``reduce_at="row"`` is not told apart from ``"tile"`` here.
    channels = min(shape.in_channels, shape.lanes) if knobs.plane else shape.in_channels
    swept = k2 * channels * channel_block_bytes(shape, knobs)
    compute = 0.0
    for columns, across in _parts(shape.out_width, knobs.columns):
        for rows, down in _parts(shape.out_height, knobs.rows):
            part = TileKnobs(columns=columns, rows=rows, channel_blocks=knobs.channel_blocks)
            compute += register_tile_cycles(per_output * columns * across * rows * down, shape, part, swept)
    weights = k2 * shape.in_channels * shape.out_channels * _FLOAT
    # The first tile of a channel group meets each weight vector first (from memory: the caches are
    # cold); it loads one weight vector per channel vector a step, so its steps take that long while
    # the stream comes in.  The later tiles find the weights in cache.
    first = TileKnobs(columns=min(knobs.columns, shape.out_width), rows=min(knobs.rows, shape.out_height),
                      channel_blocks=knobs.channel_blocks)
    vector_bytes = shape.lanes * _FLOAT
    first_steps = weights / (vector_bytes * knobs.channel_blocks * shape.vectors)
    stream = weights / MEMORY_BYTES_PER_CYCLE
    return compute + max(0.0, stream - first_steps * step_cycles(shape, first, swept))


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
    # Per transform point and channel group the GEMM sweeps the input channels' weight vectors once per
    # group of tiles.
    swept = c * channel_block_bytes(shape, knobs)
    gemm = 0.0
    for columns, across in _parts(tiles_x, knobs.columns):
        for rows, down in _parts(tiles_y, knobs.rows):
            part = TileKnobs(columns=columns, rows=rows, channel_blocks=knobs.channel_blocks)
            gemm += register_tile_cycles(points * c * k * columns * across * rows * down / (tiles_x * tiles_y),
                                         shape, part, swept)
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
