"""Tiling knobs of the VDLA conv2d schedule, their tile geometry and an analytic cost model
(``fit.py`` decides which knobs fit a config).

The knob space is what the auto-tuner searches: tile sizes (output channels, output rows,
output columns, input channels per chunk, in blocks/rows/columns), the number of virtual
threads, the axis the threads split, and the loop order (which also decides which load is
hoisted out of the inner tile loop when a chunk covers all input channels).
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError
from vdla_hw.isa import LOOP_ITER_W

from .epilogue import Requantize

MAX_LOOP = (1 << LOOP_ITER_W) - 1


@dataclass(frozen=True)
class Conv2dWorkload:
    """A conv2d layer: batch ``n``, ``ic`` -> ``oc`` channels, ``h x w`` input, ``kh x kw`` kernel."""

    n: int
    ic: int
    h: int
    w: int
    oc: int
    kh: int
    kw: int
    stride: int = 1
    pad: int = 0
    depthwise: bool = False
    """Each output channel reads only its own input channel (``ic == oc``, groups = channels).  It runs
    on the GEMM core as a block-diagonal GEMM: output block ``o`` contracts only input block ``o`` with a
    diagonal BLOCK_OUT x BLOCK_IN weight tile (BLOCK_IN x the useful MACs, no other waste)."""
    batched_weights: bool = False
    """Every image of the batch has its own weights (``(N, OC, IC, KH, KW)``): a batched matmul of two
    activations, e.g. attention's Q.K^T over heads (``batch_matmul_workload``); needs BATCH == 1."""

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.kh) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.kw) // self.stride + 1

    @property
    def macs(self) -> int:
        """Useful multiply-accumulates (a depthwise output reads one input channel)."""
        reads = 1 if self.depthwise else self.ic
        return self.n * self.oc * self.oh * self.ow * reads * self.kh * self.kw

    def task_workload(self) -> dict[str, int | bool]:
        """The fields as a tuning task's workload; the form flags only when set, so the task keys of plain
        convs (and the tuning logs written before the flags existed) stay the same."""
        out = {k: getattr(self, k) for k in ("n", "ic", "h", "w", "oc", "kh", "kw", "stride", "pad")}
        out.update({k: True for k in ("depthwise", "batched_weights") if getattr(self, k)})
        return out

    def core_macs(self, cfg: HwConfig) -> int:
        """Multiply-accumulates the GEMM core performs (a depthwise layer's block-diagonal tiles: BLOCK_IN x)."""
        return self.macs * cfg.block_in if self.depthwise else self.macs

    def ic_blocks(self, cfg: HwConfig) -> int:
        """Input-channel blocks one output block contracts (1 for a depthwise layer)."""
        return 1 if self.depthwise else self.ic // cfg.block_in

    def with_padded_channels(self, cfg: HwConfig) -> "Conv2dWorkload":
        """The layer with its input channels zero-padded to a multiple of BLOCK_IN (same result)."""
        ic = -(-self.ic // cfg.block_in) * cfg.block_in
        oc = ic if self.depthwise else self.oc  # a depthwise layer's extra channels are extra (zero) groups
        return self if ic == self.ic else Conv2dWorkload(self.n, ic, self.h, self.w, oc, self.kh, self.kw,
                                                         self.stride, self.pad, self.depthwise, self.batched_weights)

    def check(self, cfg: HwConfig) -> None:
        """Raise :class:`UnsupportedError` unless the layer maps onto ``cfg``'s tiles."""
        for name, value, block, what in (("n", self.n, cfg.batch, "BATCH"), ("ic", self.ic, cfg.block_in, "BLOCK_IN"),
                                          ("oc", self.oc, cfg.block_out, "BLOCK_OUT")):
            if value <= 0 or value % block:
                raise UnsupportedError(f"conv2d {name}={value} must be a positive multiple of {what}={block} on "
                                       f"config {cfg.name!r}", hint=f"pad the channels (or batch) to a multiple of {block}")
        if self.depthwise and (self.ic != self.oc or cfg.block_in != cfg.block_out):
            raise UnsupportedError(f"depthwise conv2d {self}: the block-diagonal GEMM needs ic == oc and "
                                   f"BLOCK_IN == BLOCK_OUT (config {cfg.name!r}: {cfg.block_in}, {cfg.block_out})",
                                   hint="run this layer on the CPU")
        if self.batched_weights and cfg.batch != 1:
            raise UnsupportedError(f"batched matmul {self}: per-image weights need BATCH == 1 (config {cfg.name!r} "
                                   f"has BATCH={cfg.batch})", hint="run it on the CPU")
        if min(self.h, self.w, self.kh, self.kw, self.stride) <= 0 or self.pad < 0:
            raise UnsupportedError(f"invalid conv2d geometry {self}")
        if self.oh <= 0 or self.ow <= 0:
            raise UnsupportedError(f"conv2d {self} has an empty output")
        if self.pad >= min(self.kh, self.kw) and self.pad > 0:
            raise UnsupportedError(f"conv2d padding {self.pad} must be smaller than the kernel ({self.kh}x{self.kw})")


@dataclass(frozen=True)
class Conv2dKnobs:
    """Schedule knobs: tiles in blocks (channels), rows and columns, virtual threads and loop order."""

    oc_tile: int
    oh_tile: int
    ic_tile: int
    virtual_threads: int = 2
    vt_axis: str = "oc"
    """Axis split across the virtual threads: ``"oc"`` or ``"oh"``."""
    loop_order: str = "oc_oh"
    """``"oc_oh"`` (output-channel tiles outer) or ``"oh_oc"`` (row tiles outer)."""
    ow_tile: int | None = None
    """Output columns per tile (a divisor of the output width); None: whole output rows.  Column
    tiles iterate right inside the row tiles, so a hoisted input copy covers one row x column tile."""

    def tile_ow(self, wl: Conv2dWorkload) -> int:
        """The output columns of one tile."""
        return wl.ow if self.ow_tile is None else self.ow_tile


@dataclass(frozen=True)
class TileGeometry:
    """Derived sizes of one tile of the schedule."""

    ocb: int
    icb: int
    oc_tiles: int
    oh_tiles: int
    ic_chunks: int
    ow_tile: int
    ow_tiles: int
    in_rows: int
    in_cols: int
    inp_blocks: int
    """Input-channel blocks of one input tile (``ic_tile``; a depthwise tile's own ``oc_tile`` blocks)."""


def geometry(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> TileGeometry:
    ocb, icb = wl.oc // cfg.block_out, wl.ic_blocks(cfg)
    one_row = wl.kh == 1
    in_rows = k.oh_tile if one_row else (k.oh_tile - 1) * wl.stride + wl.kh
    ow = k.tile_ow(wl)
    return TileGeometry(ocb, icb, ocb // k.oc_tile, wl.oh // k.oh_tile, icb // k.ic_tile, ow, wl.ow // ow, in_rows,
                        (ow - 1) * wl.stride + wl.kw, k.oc_tile if wl.depthwise else k.ic_tile)


def hoisted(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> str | None:
    """Which load moves out of the inner tile loop: ``"wgt"``, ``"inp"`` or None.

    With one input-channel chunk, each copy is computed at the innermost loop of the tile
    axis it depends on (weights: oc, input: oh), so the one of the outer axis is loaded once
    per outer tile and reused by the inner ones.
    """
    if k.ic_tile != wl.ic_blocks(cfg):
        return None
    if wl.depthwise:  # the input tile depends on the output-channel tile too: it is never hoisted
        return "wgt" if k.loop_order == "oc_oh" else None
    return "wgt" if k.loop_order == "oc_oh" else "inp"


def estimate_cycles(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig, ep: Requantize = Requantize()) -> float:
    """A quick analytic estimate of the program's cycles (used to pick default knobs).

    Compute: GEMM iterations, the accumulator initialisation and the ALU epilogue of ``ep`` (with
    ``ep.inits_from_bias`` one MOV of the bias per output tile at ``alu_copy_ii``; without it a GEMM
    reset and a bias add at ``alu_ii``; with ``ep.alu_imm`` also ReLU, shift and clip, which otherwise
    the STORE does on the way out) plus per-instruction pipeline fill; memory: DRAM bytes over the bus
    plus a latency per DMA row.  With two or more virtual threads the two overlap, with one they
    mostly add up.
    """
    t = cfg.timing
    g = geometry(wl, k, cfg)
    nb = wl.n // cfg.batch
    tiles = nb * g.oc_tiles * g.oh_tiles * g.ow_tiles
    out_tiles = k.oc_tile * k.oh_tile * g.ow_tile
    bias_init = ep.inits_from_bias
    # With the bias on the STORE the first reduction step is one more GEMM and nothing initialises.
    gemm_insns = tiles * (g.ic_chunks + (0 if bias_init and not ep.bias_on_store else 1))
    imm_ops = 3 if ep.alu_imm else 0
    init = 0 if ep.bias_on_store else (t.alu_copy_ii if bias_init else 1 + t.alu_ii)
    per_tile = init + imm_ops * t.alu_ii
    compute = (tiles * out_tiles * per_tile + wl.core_macs(cfg) // cfg.macs_per_cycle
               + gemm_insns * (t.gemm_pipeline_depth + t.insn_overhead)
               + tiles * (1 + imm_ops) * (t.alu_pipeline_depth + t.insn_overhead))
    hoist = hoisted(wl, k, cfg)
    inp_loads = tiles * g.ic_chunks if hoist != "inp" else nb * g.oh_tiles * g.ow_tiles
    wgt_loads = tiles * g.ic_chunks if hoist != "wgt" else nb * g.oc_tiles
    inp_bytes = inp_loads * g.inp_blocks * g.in_rows * g.in_cols * cfg.inp_elem_bytes
    wgt_bytes = wgt_loads * k.oc_tile * k.ic_tile * wl.kh * wl.kw * cfg.wgt_elem_bytes
    out_bytes = nb * g.ocb * wl.oh * wl.ow * cfg.out_elem_bytes
    rows = inp_loads * g.inp_blocks * g.in_rows + wgt_loads * k.oc_tile + tiles * k.oc_tile
    memory = (inp_bytes + wgt_bytes + out_bytes) / cfg.bus_bytes + rows * t.dram_latency / 4
    if k.virtual_threads > 1:
        return max(compute, memory) + min(compute, memory) / (4 * tiles)
    return compute + 0.6 * memory


@dataclass(frozen=True)
class ResidentKnobs:
    """Knobs of the two-phase resident 1x1 template (``resident.py``): the whole layer's input, weights and
    accumulators in SRAM at once, the reduction ic-major for the first ``b1`` input-channel blocks and
    oc-major after.

    ``first_piece`` / ``piece``: output-channel blocks per GEMM (and weight LOAD) of the first ic-major block /
    of the others; ``group``: output-channel blocks per oc-major GEMM and STORE, the last group cut into groups
    of ``last_group``; ``late_bias``: the bias LOAD after the ic-major phase instead of first; ``first_rows``:
    the first input column loaded (and its first GEMM run) in two parts, the first of this many output rows
    (0: whole); ``bias_after``: see below."""

    b1: int
    first_piece: int
    piece: int
    group: int
    last_group: int = 1
    late_bias: bool = False
    first_rows: int = 0
    first_blocks: int = 1
    """The leading ic-major blocks whose GEMMs are cut into ``first_piece`` pieces (the load module, which the
    prologue left behind, catches up on their smaller weight LOADs)."""
    later_from: int = 1
    """The ic-major block from which the oc-major phase's input columns are loaded (spread evenly over the blocks
    left, after each block's weight pieces): the blocks before it leave the load module time to get ahead."""
    last_rows: int = 0
    """The last group's GEMM and STORE cut in two by pixels, the second part its last this many output rows (0: not
    cut): the STORE left after the last GEMM is smaller."""
    row_tiles: int = 1
    """The output rows cut into this many tiles, run one after the other over the same accumulators and resident
    weights (a layer whose accumulators or input do not fit whole); see ``resident.emit_two_phase``."""
    bias_after: int = 0
    """The bias LOAD (a compute-module LOAD read only by the STOREs) after this many ic-major GEMMs (0: before
    the first), where the compute module would otherwise wait for the load module."""
    virtual_threads: int = 1
    """Always 1: the two phases order the work themselves (one load, compute and store stream)."""
    first_b1: int = 0
    """Row tile 0's ic-major blocks when the rows are cut into tiles (0: ``b1``, as every later tile): more than
    ``b1`` lets the load module, which brings tile 0's columns and every weight, keep ahead of its GEMMs (an
    ic-major block reads only its own column and weights), while later tiles, whose columns are loaded ahead, keep
    long oc-major phases.  With it every weight is kept in the ic-major layout."""
    used_pixels: bool = False
    """A strided layer's input loaded as its used pixels only (one DMA row of one tile per pixel, at the stride),
    not as whole rows: half the input SRAM of a stride-2 layer, so a row tile's next columns fit beside the
    oc-major ones still read with a smaller ``b1`` (a longer oc-major phase to store in)."""
