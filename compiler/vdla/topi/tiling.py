"""Tiling knobs of the VDLA conv2d schedule, their on-chip footprint and an analytic cost model.

The knob space is what the auto-tuner searches: tile sizes (output channels, output rows,
input channels per chunk, all in blocks/rows), the number of virtual threads, the axis the
threads split, and the loop order (which also decides which load is hoisted out of the
inner tile loop when a chunk covers all input channels).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from vdla_hw.config import HwConfig
from vdla_hw.isa import LOOP_ITER_W

from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_UOP, SCOPE_WGT, CapacityError, VdlaTarget

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

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.kh) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.kw) // self.stride + 1

    @property
    def macs(self) -> int:
        return self.n * self.oc * self.oh * self.ow * self.ic * self.kh * self.kw

    def check(self, cfg: HwConfig) -> None:
        """Raise ValueError unless the layer maps onto ``cfg``'s tiles."""
        for name, value, block, what in (("n", self.n, cfg.batch, "BATCH"), ("ic", self.ic, cfg.block_in, "BLOCK_IN"),
                                          ("oc", self.oc, cfg.block_out, "BLOCK_OUT")):
            if value <= 0 or value % block:
                raise ValueError(f"conv2d {name}={value} must be a positive multiple of {what}={block} on config "
                                 f"{cfg.name!r}; pad the channels (or batch) to a multiple of {block}")
        if min(self.h, self.w, self.kh, self.kw, self.stride) <= 0 or self.pad < 0:
            raise ValueError(f"invalid conv2d geometry {self}")
        if self.oh <= 0 or self.ow <= 0:
            raise ValueError(f"conv2d {self} has an empty output")
        if self.pad >= min(self.kh, self.kw) and self.pad > 0:
            raise ValueError(f"conv2d padding {self.pad} must be smaller than the kernel ({self.kh}x{self.kw})")


@dataclass(frozen=True)
class Conv2dKnobs:
    """Schedule knobs: tiles in blocks (channels) and rows, virtual threads and loop order."""

    oc_tile: int
    oh_tile: int
    ic_tile: int
    virtual_threads: int = 2
    vt_axis: str = "oc"
    """Axis split across the virtual threads: ``"oc"`` or ``"oh"``."""
    loop_order: str = "oc_oh"
    """``"oc_oh"`` (output-channel tiles outer) or ``"oh_oc"`` (row tiles outer)."""


@dataclass(frozen=True)
class TileGeometry:
    """Derived sizes of one tile of the schedule."""

    ocb: int
    icb: int
    oc_tiles: int
    oh_tiles: int
    ic_chunks: int
    in_rows: int
    in_cols: int


def geometry(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> TileGeometry:
    ocb, icb = wl.oc // cfg.block_out, wl.ic // cfg.block_in
    one_row = wl.kh == 1
    in_rows = k.oh_tile if one_row else (k.oh_tile - 1) * wl.stride + wl.kh
    return TileGeometry(ocb, icb, ocb // k.oc_tile, wl.oh // k.oh_tile, icb // k.ic_tile, in_rows,
                        (wl.ow - 1) * wl.stride + wl.kw)


def hoisted(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> str | None:
    """Which load moves out of the inner tile loop: ``"wgt"``, ``"inp"`` or None.

    With one input-channel chunk, each copy is computed at the innermost loop of the tile
    axis it depends on (weights: oc, input: oh), so the one of the outer axis is loaded once
    per outer tile and reused by the inner ones.
    """
    if k.ic_tile != wl.ic // cfg.block_in:
        return None
    return "wgt" if k.loop_order == "oc_oh" else "inp"


def footprint(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> dict[str, int]:
    """Tiles each on-chip buffer needs (all virtual threads, plus the resident bias)."""
    g = geometry(wl, k, cfg)
    vt = k.virtual_threads
    inp = k.ic_tile * g.in_rows * g.in_cols
    wgt = k.oc_tile * k.ic_tile * wl.kh * wl.kw
    acc = k.oc_tile * k.oh_tile * wl.ow
    uops = wl.ow * k.ic_tile * wl.kh * wl.kw + 6
    # A hoisted copy outside the virtual-thread loop (threads split the inner axis) is shared.
    hoist = hoisted(wl, k, cfg)
    outer_axis = "oc" if k.loop_order == "oc_oh" else "oh"
    shared = hoist is not None and k.vt_axis != outer_axis
    inp_copies = 1 if shared and hoist == "inp" else vt
    wgt_copies = 1 if shared and hoist == "wgt" else vt
    return {SCOPE_INP: inp_copies * inp, SCOPE_WGT: wgt_copies * wgt, SCOPE_ACC: vt * acc + g.ocb,
            SCOPE_UOP: vt * uops}


def check_knobs(wl: Conv2dWorkload, k: Conv2dKnobs, target: VdlaTarget) -> None:
    """Raise ValueError for knobs that do not divide the layer, :class:`CapacityError` when a buffer overflows."""
    cfg = target.config
    wl.check(cfg)
    ocb, icb = wl.oc // cfg.block_out, wl.ic // cfg.block_in
    if k.virtual_threads < 1:
        raise ValueError(f"virtual_threads must be >= 1, got {k.virtual_threads}")
    if k.vt_axis not in ("oc", "oh") or k.loop_order not in ("oc_oh", "oh_oc"):
        raise ValueError(f"vt_axis must be 'oc' or 'oh' and loop_order 'oc_oh' or 'oh_oc', got {k}")
    for name, tile, total in (("oc_tile", k.oc_tile, ocb), ("oh_tile", k.oh_tile, wl.oh), ("ic_tile", k.ic_tile, icb)):
        if tile <= 0 or total % tile:
            raise ValueError(f"{name}={tile} must divide {total}")
    g = geometry(wl, k, cfg)
    split = g.oc_tiles if k.vt_axis == "oc" else g.oh_tiles
    if split % k.virtual_threads:
        raise ValueError(f"{k.virtual_threads} virtual threads must divide the {split} {k.vt_axis} tiles")
    if k.oh_tile * wl.ow > MAX_LOOP or k.oc_tile > MAX_LOOP:
        raise ValueError(f"tile {k.oc_tile}x{k.oh_tile}x{wl.ow} exceeds the {LOOP_ITER_W}-bit instruction loop")
    for scope, tiles in footprint(wl, k, cfg).items():
        target.scope(scope).check_fits(tiles, f"conv2d {wl} with {k}")


def knob_space(wl: Conv2dWorkload, target: VdlaTarget, virtual_threads: tuple[int, ...] = (1, 2)) -> list[Conv2dKnobs]:
    """Every valid knob setting of the layer (the auto-tuner's search space)."""
    cfg = target.config
    wl.check(cfg)
    ocb, icb = wl.oc // cfg.block_out, wl.ic // cfg.block_in
    out = []
    for oc_t, oh_t, ic_t, vt, axis, order in product(_divisors(ocb), _divisors(wl.oh), _divisors(icb), virtual_threads,
                                                     ("oc", "oh"), ("oc_oh", "oh_oc")):
        k = Conv2dKnobs(oc_t, oh_t, ic_t, vt, axis, order)
        try:
            check_knobs(wl, k, target)
        except ValueError:
            continue
        out.append(k)
    return out


def estimate_cycles(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> float:
    """A quick analytic estimate of the program's cycles (used to pick default knobs).

    Compute: GEMM iterations, resets and the 4-op ALU epilogue plus per-instruction
    pipeline fill; memory: DRAM bytes over the bus plus a latency per DMA row.  With two
    or more virtual threads the two overlap, with one they mostly add up.
    """
    t = cfg.timing
    g = geometry(wl, k, cfg)
    nb = wl.n // cfg.batch
    tiles = nb * g.oc_tiles * g.oh_tiles
    out_tiles = k.oc_tile * k.oh_tile * wl.ow
    gemm_insns = tiles * (g.ic_chunks + 1)
    compute = (tiles * out_tiles * (1 + 4 * t.alu_ii) + wl.macs // cfg.macs_per_cycle
               + gemm_insns * (t.gemm_pipeline_depth + t.insn_overhead) + tiles * 4 * t.alu_pipeline_depth)
    hoist = hoisted(wl, k, cfg)
    inp_loads = tiles * g.ic_chunks if hoist != "inp" else nb * g.oh_tiles
    wgt_loads = tiles * g.ic_chunks if hoist != "wgt" else nb * g.oc_tiles
    inp_bytes = inp_loads * k.ic_tile * g.in_rows * g.in_cols * cfg.inp_elem_bytes
    wgt_bytes = wgt_loads * k.oc_tile * k.ic_tile * wl.kh * wl.kw * cfg.wgt_elem_bytes
    out_bytes = nb * g.ocb * wl.oh * wl.ow * cfg.out_elem_bytes
    rows = inp_loads * k.ic_tile * g.in_rows + wgt_loads * k.oc_tile + tiles * k.oc_tile
    memory = (inp_bytes + wgt_bytes + out_bytes) / cfg.bus_bytes + rows * t.dram_latency / 4
    if k.virtual_threads > 1:
        return max(compute, memory) + min(compute, memory) / (4 * tiles)
    return compute + 0.6 * memory


def default_knobs(wl: Conv2dWorkload, target: VdlaTarget, virtual_threads: int = 2) -> Conv2dKnobs:
    """The knobs with the lowest estimated cycles; a :class:`CapacityError` explains a layer that cannot fit."""
    space = knob_space(wl, target, (virtual_threads,))
    if not space:
        smallest = Conv2dKnobs(1, 1, 1, virtual_threads, "oc", "oc_oh")
        check_knobs(wl, smallest, target)  # raises the error naming the overflowing buffer
        raise CapacityError(f"conv2d {wl} cannot be tiled for {target.config.name!r} with "
                            f"{virtual_threads} virtual threads")
    return min(space, key=lambda k: (estimate_cycles(wl, k, target.config), -k.oh_tile))


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]
