"""The two-phase resident 1x1 conv template: a layer whose input, weights and accumulators all fit in SRAM
at once, scheduled for small edges (what the tiled template of ``conv2d.py`` cannot express).

The layer is a GEMM of ``m`` output pixels x ``kb`` input-channel blocks x ``nb`` output-channel blocks.
Nothing is ever re-loaded, so no LOAD waits for a buffer to be released, and the order of the work is
chosen for the edges of the timeline:

- *ic-major start*: the first ``b1`` input-channel blocks reduce into every output block, one input
  block at a time; each block's GEMM is cut into pieces of output blocks (``first_piece`` for the first
  block, ``piece`` after), each with its own weight LOAD, so the first GEMM waits only for the micro-ops,
  one input column (or its first rows, ``first_rows``) and one weight piece.  The first block's GEMMs
  overwrite the accumulators (the STORE adds the bias: no initialisation at all);
- *oc-major end*: the other input blocks run per group of ``group`` output blocks; a group is final after
  its GEMM and is stored at once (the STORE adds the bias, ReLU, shift and clip), so after the last GEMM
  only the last group's STORE is left (the last group cut into groups of ``last_group``).

One micro-op per GEMM piece or per (group, reduction block): the output blocks are the inner instruction
loop and the pixels the outer, so the micro-op LOAD before the first GEMM stays small.  The input of a
strided 1x1 layer is loaded as its used rows, whole (a 2-D DMA cannot skip columns), at a pitch of
``stride * ow`` tiles: pixel ``p`` of a column then sits at ``stride * p``, one loop factor.

:func:`emit_two_phase` writes the instructions over DRAM buffers it is given (the conv template here and
``bench/vdla_edge_bound.py``'s im2col GEMM both call it); :func:`conv2d_resident` compiles a conv layer into
a :class:`~vdla.compiler.vdla.build.VdlaModule` whose parameters are the tiled template's (same packed
layouts), so ``CompiledConv`` runs and checks it alike.  ``resident_fit.resident_error`` says whether it fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError
from vdla_hw.isa import MAX_ELEM_STRIDE, AluOp, MemType, Uop

from vdla.runtime.program import ProgramBuilder

from ..build import VdlaModule
from ..codegen import ParamBinding
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .epilogue import Requantize
from .resident_fit import (double_accumulators, double_columns, resident_consts, resident_error, resident_shape,
                           tile_b1, tile_groups, tile_pieces)
from .tiling import Conv2dWorkload, ResidentKnobs


@dataclass(frozen=True)
class InputColumns:
    """Where each input-channel block's pixels are in DRAM and how they land in SRAM (tile units)."""

    dram: int
    """DRAM tile address of block 0's first used row."""
    block_stride: int
    """DRAM tiles from one input-channel block to the next."""
    rows: int
    """Used rows per block (one DMA row each)."""
    row_tiles: int
    """Tiles loaded per row."""
    row_stride: int
    """DRAM tiles from one used row to the next."""
    pitch: int
    """SRAM tiles per row (``row_tiles`` plus zero padding on the right)."""
    pixel_step: int
    """SRAM tiles from one output pixel to the next (the stride)."""
    row_pixels: int
    """Output pixels per row."""
    pixel_dram_step: int = 0
    """DRAM tiles from one used pixel to the next when each row is loaded as its used pixels only, one DMA row
    of one tile per pixel (0: the row's ``row_tiles`` tiles as one DMA row)."""
    gather: bool = True
    """With ``pixel_dram_step``: the rows' used pixels as one gathering LOAD (``elem_stride``, rows at
    ``row_stride``, pixels at ``pixel_dram_step``) instead of one LOAD per row (False: the ISA before it)."""

    @property
    def col(self) -> int:
        """SRAM tiles of one block's column."""
        return self.rows * self.pitch

    def load(self, pb: ProgramBuilder, sram: int, b: int, row0: int, row1: int, **deps: bool) -> None:
        """LOAD rows ``[row0, row1)`` of block ``b`` to SRAM ``sram`` (one DMA row when they are contiguous)."""
        dram = self.dram + b * self.block_stride + row0 * self.row_stride
        n = row1 - row0
        if self.pixel_dram_step and self.gather and self.pixel_dram_step <= MAX_ELEM_STRIDE \
                and self.pitch == self.row_pixels:
            # One gathering LOAD: rows at the used-row pitch, pixels at the stride; the DMA still reads one
            # command per pixel, but the load module pays one instruction's start and latency, not one per row.
            pb.load(MemType.INP, sram, dram, n, self.row_pixels, self.row_stride, elem_stride=self.pixel_dram_step,
                    **deps)
        elif self.pixel_dram_step:
            # A 2-D DMA cannot skip columns, but its rows can be single pixels: one LOAD per row (the rows of a
            # strided layer are not evenly spaced in pixels); the tokens pop on the first, push on the last.
            pops = {d: v for d, v in deps.items() if d.startswith("pop")}
            pushes = {d: v for d, v in deps.items() if d.startswith("push")}
            for r in range(n):
                pb.load(MemType.INP, sram + r * self.pitch, dram + r * self.row_stride, self.row_pixels, 1,
                        self.pixel_dram_step, **(pops if r == 0 else {}), **(pushes if r == n - 1 else {}))
        elif self.row_stride == self.row_tiles == self.pitch:
            pb.load(MemType.INP, sram, dram, 1, n * self.row_tiles, n * self.row_tiles, **deps)
        else:
            pb.load(MemType.INP, sram, dram, n, self.row_tiles, self.row_stride,
                    pad=(0, 0, 0, self.pitch - self.row_tiles), **deps)


def column_slots(k: ResidentKnobs, kb: int, slots: int, double: bool) -> list[list[int]]:
    """The SRAM slot of each input column per row tile.  With ``double`` (two tiles' columns fit:
    ``resident_fit.double_columns``) tiles alternate between two sets; otherwise tile 0 in order and a later tile in the slots its predecessor's oc-major
    columns do not hold (its ic-major ones are free once its ic-major phase is over).  The caller checks there are
    enough (``resident_fit.resident_error``)."""
    if double:
        return [list(range(kb * (t % 2), kb * (t % 2) + kb)) for t in range(k.row_tiles)]
    out = [list(range(kb))]
    for t in range(1, k.row_tiles):
        busy = set(out[-1][tile_b1(k, t - 1):])
        out.append([s for s in range(slots) if s not in busy][:kb])
    return out


@dataclass(frozen=True)
class StoreEpilogue:
    """What the STOREs do on the way out: add the bias (when loaded), ReLU, ``>> shift``, saturate."""

    shift: int = 0
    relu: bool = True
    clip: bool = True


def emit_two_phase(pb: ProgramBuilder, cfg: HwConfig, m: int, kb: int, nb: int, k: ResidentKnobs, inp: InputColumns,
                   wgt: int, bias: int | None, out: int, ep: StoreEpilogue, scale: int | None = None) -> None:
    """The two-phase schedule's instructions (micro-op LOAD first, FINISH last) into ``pb``.

    DRAM tile addresses: ``wgt`` holds ``[oc block][ic block]``, ``bias`` (or None: no bias) one accumulator
    row of ``nb`` tiles, ``out`` ``[oc block][pixel]``, ``scale`` (or None) a per-channel multiplier row like the
    bias.  SRAM: the ic-major weights ``[b][o]`` at ``b * nb + o``, the oc-major ones ``[o][b - b1]`` after them,
    all loaded once; accumulators ``[o][pixel of the row tile]`` (a group of output blocks is one contiguous
    STORE), the bias and the multiplier after them; input columns of one row tile in the slots of
    :func:`column_slots`.

    With ``scale`` the multiply comes after the bias add and the ReLU (the reference's order), which the STORE
    cannot do: after each group's last GEMM the ALU adds the bias, applies the ReLU (MAX 0) and multiplies, over the
    group's blocks and pixels, and the STORE does the shift and the clip only.

    With ``k.row_tiles`` > 1 the rows are cut into tiles run one after the other, each ic-major then oc-major over
    the same accumulators and resident weights: a tile's columns load while the previous tile runs -- into the
    slots the tile before that used (``double_columns``: a compute->load token at that tile's end), else into the
    previous tile's ic-major slots (a token at the end of its ic-major phase) -- and each ic-major block's GEMMs wait
    for its own column.  With two accumulator sets (``double_accumulators``) tile ``t`` accumulates where tile
    ``t - 2`` did and its first GEMM waits (a store->compute token) for that tile's last STORE; otherwise each
    first-block GEMM piece waits for the previous tile's STORE of the last group it overwrites.
    Tile 0 may run ``k.first_b1`` ic-major blocks (then every weight is in the ic-major layout, each block's
    loaded as its GEMM pieces need it).  The caller checks the fit (``resident_fit.resident_error``)."""
    b1, tiles = k.b1, k.row_tiles
    fb1 = tile_b1(k, 0)
    rest_blocks = kb - b1
    # With ``first_b1`` every weight is in the ic-major layout (then every GEMM steps 1 over output blocks, whichever
    # phase reads a block in whichever tile); otherwise the oc-major blocks are ``[o][b - b1]``, one LOAD per group.
    all_ic = k.first_b1 > 0
    w2 = (kb if all_ic else b1) * nb
    rows = inp.rows // tiles
    mt = rows * inp.row_pixels  # pixels per row tile
    col = rows * inp.pitch
    double = tiles > 1 and double_columns(kb, col, cfg.inp_buff_depth)
    alu = scale is not None  # the bias, ReLU and multiplier on the ALU before each STORE
    dacc = double_accumulators(k, mt, nb, resident_consts(bias is not None, alu), cfg.acc_buff_depth)
    acc0 = [(t % 2) * mt * nb if dacc else 0 for t in range(tiles)]  # each tile's first accumulator
    bias_base = (2 if dacc else 1) * mt * nb
    scale_base = bias_base + (nb if bias is not None else 0)
    slots = column_slots(k, kb, cfg.inp_buff_depth // col, double)
    tile_starts = [tile_groups(k, nb, t, dacc) for t in range(tiles)]
    tile_sizes = [tile_pieces(k, nb, t, dacc) for t in range(tiles)]
    starts = tile_starts[-1]  # the last tile's groups (every tile's without two accumulator sets)
    step = inp.pixel_step
    uops: list[Uop] = []

    def place(lst: list[Uop]) -> tuple[int, int]:
        uops.extend(lst)
        return len(uops) - len(lst), len(uops)

    def wgt_at(b: int, o: int) -> int:
        """SRAM tile of weight ``[o][b]``: ic-major layout for ``b < b1`` (every ``b`` with ``first_b1``), else oc-major."""
        return b * nb + o if b < b1 or all_ic else w2 + o * rest_blocks + (b - b1)

    def wgt_step(b: int) -> int:
        """SRAM tiles from one output block's weight of block ``b`` to the next."""
        return 1 if b < b1 or all_ic else rest_blocks

    size = tile_sizes[0]
    split = k.first_rows * inp.row_pixels  # pixels of the first GEMM's first part (0: not split)
    cut = mt - k.last_rows * inp.row_pixels if k.last_rows else mt  # the last tile's last group, cut by pixels
    first, rest = {}, {}
    for t in range(tiles):
        src = [sl * col for sl in slots[t]]
        tb1 = tile_b1(k, t)
        first.update({(t, b, o0): place([Uop(acc0[t] + o0 * mt, src[b], wgt_at(b, o0))])
                      for b in range(tb1) for o0 in range(0, nb, tile_sizes[t][b])})
        rest.update({(t, o0): place([Uop(acc0[t] + o0 * mt, src[b], wgt_at(b, o0)) for b in range(tb1, kb)])
                     for o0 in tile_starts[t]})
    tail = place([Uop(split, step * split, 0)]) if split else None  # tile 0's first piece's other rows
    last_src = [sl * col for sl in slots[-1]]
    last_b1 = tile_b1(k, tiles - 1)
    last_tail = place([Uop(acc0[-1] + starts[-1] * mt + cut, last_src[b] + step * cut, wgt_at(b, starts[-1]))
                       for b in range(last_b1, kb)]) if k.last_rows else None

    def parts_of(t: int, i: int, o0: int) -> list[tuple[tuple[int, int], int, int]]:
        """The (GEMM micro-ops, first pixel, end pixel) of each part of tile ``t``'s group ``i``: the last tile's last
        group cut by ``last_rows``, every other whole."""
        if i == len(tile_starts[t]) - 1 and t == tiles - 1 and last_tail:
            return [(rest[(t, o0)], 0, cut), (last_tail, cut, mt)]
        return [(rest[(t, o0)], 0, mt)]

    # With a multiplier, per STORE the ALU's micro-ops: the multiply's (the ReLU's too: an immediate ignores the
    # source) and the bias add's, each at the part's first accumulator, the source the block's constant.
    alu_uops = {(t, o0, j): (place([Uop(acc0[t] + o0 * mt + p0, scale_base + o0, 0)]),
                             place([Uop(acc0[t] + o0 * mt + p0, bias_base + o0, 0)]) if bias is not None else None)
                for t in range(tiles) for i, o0 in enumerate(tile_starts[t])
                for j, (_, p0, _) in enumerate(parts_of(t, i, o0))} if alu else {}
    pb.load_uops(pb.uops(uops, "uops"))
    gemms = 0
    bias_loaded = bias is None and scale is None

    def load_bias() -> None:
        """The bias and the multiplier (compute-module LOADs, read only after the reduction), once."""
        nonlocal bias_loaded
        if not bias_loaded:
            if bias is not None:
                pb.load(MemType.ACC, bias_base, bias, 1, nb, nb)
            if scale is not None:
                pb.load(MemType.ACC, scale_base, scale, 1, nb, nb)
            bias_loaded = True

    if not k.late_bias and k.bias_after == 0:
        load_bias()

    def gemm(span: tuple[int, int], pixels: int, blocks: int, wgt_step: int, **flags: bool) -> None:
        nonlocal gemms
        pb.gemm(*span, iter_out=pixels, iter_in=blocks, dst_factor=(1, mt), src_factor=(step, 0),
                wgt_factor=(0, wgt_step), **flags)
        gemms += 1
        if not k.late_bias and gemms == k.bias_after:
            load_bias()

    def group_of(o: int) -> int:
        return max(i for i, a in enumerate(starts) if a <= o)

    # Which group's STORE a next tile's first-block piece waits for (the last group it overwrites); each such
    # STORE pushes one store->compute token, each piece that needs a new one pops it.
    waits = [group_of(o0 + size[0] - 1) for o0 in range(0, nb, size[0])]
    wanted = set(waits)

    def load_column(t: int, b: int, **deps: bool) -> None:
        inp.load(pb, slots[t][b] * col, b, t * rows, (t + 1) * rows, **deps)

    def next_columns(t: int) -> list[Callable[[], None]]:
        """Tile ``t``'s column LOADs: the first waits for its slots to be free (the end of tile ``t - 2`` with two
        sets, of tile ``t - 1``'s ic-major phase without; tile 1's two-set slots are free from the start); each
        ic-major column tells its block's first GEMM that it is in, the last the first oc-major GEMM that all are
        (the load module runs them in order)."""
        wait = t >= 2 if double else True
        tb1 = tile_b1(k, t)
        return [lambda b=b: load_column(t, b, pop_next=wait and b == 0, push_next=b < tb1 or b == kb - 1)
                for b in range(kb)]

    for t in range(tiles):
        pending = next_columns(t + 1) if t + 1 < tiles else []
        last_tile = t == tiles - 1
        tb1 = tile_b1(k, t)
        if t == 0:
            # The load module's order: per ic-major block its input column and weight pieces (one token each for
            # the GEMM piece that reads them), the oc-major phase's columns spread over the blocks from
            # ``later_from`` on (before it the load module catches up with the first GEMMs).
            later = list(range(fb1, kb))
            for b in range(fb1):
                if b == 0 and split:
                    inp.load(pb, slots[0][0] * col, 0, 0, k.first_rows)
                else:
                    load_column(0, b)
                for o0 in range(0, nb, size[b]):
                    pb.load(MemType.WGT, b * nb + o0, wgt + o0 * kb + b, size[b], 1, kb, push_next=True)
                    end_of_phase = tiles > 1 and not double and b == fb1 - 1 and o0 + size[b] >= nb
                    if b == 0 and o0 == 0 and split:
                        gemm(first[(0, 0, 0)], split, size[0], 1, overwrite=True, pop_prev=True)
                        inp.load(pb, slots[0][0] * col + k.first_rows * inp.pitch, 0, k.first_rows, rows, push_next=True)
                        gemm(tail, mt - split, size[0], 1, overwrite=True, pop_prev=True,  # type: ignore[arg-type]
                             push_prev=end_of_phase)
                    else:
                        gemm(first[(0, b, o0)], mt, size[b], 1, overwrite=b == 0, pop_prev=True, push_prev=end_of_phase)
                for _ in range(0 if b < min(k.later_from, fb1 - 1) else -(-len(later) // (fb1 - b))):
                    if later:
                        load_column(0, later.pop(0))
            load_bias()  # if not yet: late, or after more GEMMs than the ic-major phase has
        else:
            prev = None
            for b in range(tb1):
                for o0 in range(0, nb, tile_sizes[t][b]):
                    # Two accumulator sets: the tile's first GEMM waits for tile t - 2's last STORE (one token).
                    wait = (0 if t >= 2 and b == 0 and o0 == 0 else None) if dacc else waits[o0 // size[0]] if b == 0 else None
                    end_of_phase = not last_tile and not double and b == tb1 - 1 and o0 + tile_sizes[t][b] >= nb
                    gemm(first[(t, b, o0)], mt, tile_sizes[t][b], wgt_step(b), overwrite=b == 0, pop_prev=o0 == 0,
                         pop_next=wait is not None and wait != prev, push_prev=end_of_phase)
                    prev = wait if wait is not None else prev
        if t > 0:
            for f in pending:  # the next tile's columns, while this tile runs its oc-major phase
                f()
            pending = []
        groups = tile_starts[t]
        for i, (o0, g) in enumerate(zip(groups, [b - a for a, b in zip(groups, groups[1:] + [nb])])):
            if t == 0:
                # The next tile's columns come after these (their tokens are popped after the groups').
                if all_ic:  # the group's weights block by block, the last LOAD tells its GEMM
                    for b in range(fb1, kb):
                        pb.load(MemType.WGT, b * nb + o0, wgt + o0 * kb + b, g, 1, kb, push_next=b == kb - 1)
                else:
                    pb.load(MemType.WGT, w2 + o0 * rest_blocks, wgt + o0 * kb + b1, g, rest_blocks, kb, push_next=True)
            last = i == len(groups) - 1
            parts = parts_of(t, i, o0)
            for j, (span, p0, p1) in enumerate(parts):
                final = j == len(parts) - 1
                # With two column sets, the tile's last GEMM frees its set for tile t + 2's columns.
                frees = double and last and final and t + 2 < tiles
                gemm(span, p1 - p0, g, wgt_step(kb - 1), pop_prev=j == 0 and (i == 0 or t == 0),  # type: ignore[arg-type]
                     push_next=not alu, push_prev=frees)
                if alu:  # blocks outer (a row tile's pixels apart), pixels inner; the constant steps with the block
                    mul, add = alu_uops[(t, o0, j)]
                    loops = dict(iter_out=g, iter_in=p1 - p0, dst_factor=(mt, 1), src_factor=(1, 0))
                    if add is not None:
                        pb.alu(AluOp.ADD, *add, **loops)  # type: ignore[arg-type]
                    if ep.relu:
                        pb.alu(AluOp.MAX, *mul, imm=0, **loops)  # type: ignore[arg-type]
                    pb.alu(AluOp.MUL, *mul, push_next=True, **loops)  # type: ignore[arg-type]
                tells = (last and t + 2 < tiles) if dacc else (not last_tile and i in wanted)
                pb.store(acc0[t] + o0 * mt + p0, out + o0 * m + t * mt + p0, g, p1 - p0, m, pop_prev=True,
                         push_prev=final and ((last and last_tile) or tells),
                         shift=ep.shift, clip=ep.clip, relu=ep.relu and not alu,
                         bias=None if bias is None or alu else (bias_base + o0, 1))
        for f in pending:
            f()
    pb.finish(pop_next=True)


def conv_input_columns(wl: Conv2dWorkload, dram: int, used_pixels: bool = False, gather: bool = True) -> InputColumns:
    """The used rows of a packed 1x1 layer's input ``(1, IC/BI, H, W, 1, BI)`` at DRAM tile ``dram``: output
    row ``y`` reads input row ``stride * y``; whole rows (up to ``stride * ow`` tiles, zero-padded to it), or with
    ``used_pixels`` only the ``ow`` pixels each row uses, packed (one DMA row per pixel; with ``gather``, one
    gathering LOAD for all the rows, else one LOAD per row)."""
    s = wl.stride
    if used_pixels:
        return InputColumns(dram, wl.h * wl.w, wl.oh, wl.ow, s * wl.w, wl.ow, 1, wl.ow, pixel_dram_step=s,
                            gather=gather)
    tiles = min(wl.w, s * wl.ow)
    return InputColumns(dram, wl.h * wl.w, wl.oh, tiles, s * wl.w, s * wl.ow, s, wl.ow)


def conv2d_resident(wl: Conv2dWorkload, knobs: ResidentKnobs, target: VdlaTarget, epilogue: Requantize = Requantize(),
                    name: str = "conv2d", gather: bool = True) -> VdlaModule:
    """Compile the 1x1 layer ``wl`` with the two-phase resident template; the module's parameters (data,
    kernel, [bias,] out) have the tiled template's packed shapes.  ``gather=False`` loads ``used_pixels`` one
    LOAD per row, as before the gathering LOAD existed (the benchmark's peer).  Raises :class:`UnsupportedError` naming the
    reason when the layer, the epilogue or the knobs do not fit (``resident_fit.resident_error``)."""
    cfg = target.config
    reason = resident_error(wl, knobs, target, epilogue)
    if reason is not None:
        raise UnsupportedError(reason, hint="use the tiled template (Conv2dKnobs), or the ResidentKnobs that "
                                            "resident_fit.resident_space lists for this layer")
    m, kb, nb, _ = resident_shape(wl, cfg)  # m: the whole layer's pixels (the DRAM output)
    acc_t = target.scope(SCOPE_ACC).dtype
    params = [ParamBinding("data", "inp", (1, kb, wl.h, wl.w, 1, cfg.block_in), target.scope(SCOPE_INP).dtype),
              ParamBinding("kernel", "wgt", (nb, kb, 1, 1, cfg.block_out, cfg.block_in), target.scope(SCOPE_WGT).dtype)]
    if epilogue.bias:
        params.append(ParamBinding("bias", "acc", (nb, 1, cfg.block_out), acc_t))
    if epilogue.multiplier:  # after the bias: the tiled template's parameter order
        params.append(ParamBinding("scale", "acc", (nb, 1, cfg.block_out), acc_t))
    params.append(ParamBinding("out", "out", (1, nb, wl.oh, wl.ow, 1, cfg.block_out), target.out_dtype))
    pb = ProgramBuilder(cfg)
    specs = {p.name: pb.alloc(p.name, p.kind, p.matrix_shape()) for p in params}
    emit_two_phase(pb, cfg, m, kb, nb, knobs, conv_input_columns(wl, specs["data"].addr, knobs.used_pixels, gather),
                   specs["kernel"].addr,
                   specs["bias"].addr if epilogue.bias else None, specs["out"].addr,
                   StoreEpilogue(epilogue.shift, epilogue.relu), specs["scale"].addr if epilogue.multiplier else None)
    return VdlaModule(name, target, pb.build(), tuple(params), None, ("out",))
