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
from vdla_hw.isa import MemType, Uop

from vdla.runtime.program import ProgramBuilder

from ..build import VdlaModule
from ..codegen import ParamBinding
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .epilogue import Requantize
from .resident_fit import resident_error, resident_shape
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

    @property
    def col(self) -> int:
        """SRAM tiles of one block's column."""
        return self.rows * self.pitch

    def load(self, pb: ProgramBuilder, sram: int, b: int, row0: int, row1: int, **deps: bool) -> None:
        """LOAD rows ``[row0, row1)`` of block ``b`` to SRAM ``sram`` (one DMA row when they are contiguous)."""
        dram = self.dram + b * self.block_stride + row0 * self.row_stride
        n = row1 - row0
        if self.row_stride == self.row_tiles == self.pitch:
            pb.load(MemType.INP, sram, dram, 1, n * self.row_tiles, n * self.row_tiles, **deps)
        else:
            pb.load(MemType.INP, sram, dram, n, self.row_tiles, self.row_stride,
                    pad=(0, 0, 0, self.pitch - self.row_tiles), **deps)


def column_slots(k: ResidentKnobs, kb: int, slots: int) -> list[list[int]]:
    """The SRAM slot of each input column per row tile: tile 0 in order; a later tile in the slots its predecessor's
    oc-major columns do not hold (its ic-major ones are free once its ic-major phase is over).  The caller checks
    there are enough (``resident_fit.resident_error``)."""
    out = [list(range(kb))]
    for _ in range(1, k.row_tiles):
        busy = set(out[-1][k.b1:])
        out.append([s for s in range(slots) if s not in busy][:kb])
    return out


@dataclass(frozen=True)
class StoreEpilogue:
    """What the STOREs do on the way out: add the bias (when loaded), ReLU, ``>> shift``, saturate."""

    shift: int = 0
    relu: bool = True
    clip: bool = True


def emit_two_phase(pb: ProgramBuilder, cfg: HwConfig, m: int, kb: int, nb: int, k: ResidentKnobs, inp: InputColumns,
                   wgt: int, bias: int | None, out: int, ep: StoreEpilogue) -> None:
    """The two-phase schedule's instructions (micro-op LOAD first, FINISH last) into ``pb``.

    DRAM tile addresses: ``wgt`` holds ``[oc block][ic block]``, ``bias`` (or None: no bias) one accumulator
    row of ``nb`` tiles, ``out`` ``[oc block][pixel]``.  SRAM: the ic-major weights ``[b][o]`` at ``b * nb + o``,
    the oc-major ones ``[o][b - b1]`` after them, all loaded once; accumulators ``[o][pixel of the row tile]``
    (a group of output blocks is one contiguous STORE), the bias after them; input columns of one row tile in
    the slots of :func:`column_slots`.

    With ``k.row_tiles`` > 1 the rows are cut into tiles run one after the other, each ic-major then oc-major over
    the same accumulators and resident weights: a tile's columns load (without waiting for any buffer but the
    previous tile's ic-major columns: a compute->load token at the end of its ic-major phase) while the previous
    tile runs its oc-major phase, and each first-block GEMM piece of a tile waits (a store->compute token) only
    for the previous tile's STORE of the last group it overwrites.  The caller checks the fit
    (``resident_fit.resident_error``)."""
    b1, tiles = k.b1, k.row_tiles
    rest_blocks = kb - b1
    w2 = b1 * nb
    rows = inp.rows // tiles
    mt = rows * inp.row_pixels  # pixels per row tile
    col = rows * inp.pitch
    bias_base = mt * nb
    slots = column_slots(k, kb, cfg.inp_buff_depth // col)
    starts = list(range(0, nb - k.group, k.group)) + list(range(nb - k.group, nb, k.last_group))
    sizes = [b - a for a, b in zip(starts, starts[1:] + [nb])]
    step = inp.pixel_step
    uops: list[Uop] = []

    def place(lst: list[Uop]) -> tuple[int, int]:
        uops.extend(lst)
        return len(uops) - len(lst), len(uops)

    size = [k.first_piece] * k.first_blocks + [k.piece] * (b1 - k.first_blocks)
    split = k.first_rows * inp.row_pixels  # pixels of the first GEMM's first part (0: not split)
    cut = mt - k.last_rows * inp.row_pixels if k.last_rows else mt  # the last tile's last group, cut by pixels
    first, rest = {}, {}
    for t in range(tiles):
        src = [sl * col for sl in slots[t]]
        first.update({(t, b, o0): place([Uop(o0 * mt, src[b], b * nb + o0)])
                      for b in range(b1) for o0 in range(0, nb, size[b])})
        rest.update({(t, o0): place([Uop(o0 * mt, src[b], w2 + o0 * rest_blocks + (b - b1)) for b in range(b1, kb)])
                     for o0 in starts})
    tail = place([Uop(split, step * split, 0)]) if split else None  # tile 0's first piece's other rows
    last_src = [sl * col for sl in slots[-1]]
    last_tail = place([Uop(starts[-1] * mt + cut, last_src[b] + step * cut, w2 + starts[-1] * rest_blocks + (b - b1))
                       for b in range(b1, kb)]) if k.last_rows else None
    pb.load_uops(pb.uops(uops, "uops"))
    gemms = 0
    bias_loaded = bias is None

    def load_bias() -> None:
        nonlocal bias_loaded
        if not bias_loaded:
            pb.load(MemType.ACC, bias_base, bias, 1, nb, nb)  # type: ignore[arg-type]
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
        """Tile ``t``'s column LOADs: the first waits for the previous tile's ic-major phase, the last tells tile
        ``t``'s first GEMM that all are in (the load module runs them in order)."""
        return [lambda b=b: load_column(t, b, pop_next=b == 0, push_next=b == kb - 1) for b in range(kb)]

    for t in range(tiles):
        pending = next_columns(t + 1) if t + 1 < tiles else []
        last_tile = t == tiles - 1
        if t == 0:
            # The load module's order: per ic-major block its input column and weight pieces (one token each for
            # the GEMM piece that reads them), the oc-major phase's columns spread over the blocks from
            # ``later_from`` on (before it the load module catches up with the first GEMMs).
            later = list(range(b1, kb))
            for b in range(b1):
                if b == 0 and split:
                    inp.load(pb, slots[0][0] * col, 0, 0, k.first_rows)
                else:
                    load_column(0, b)
                for o0 in range(0, nb, size[b]):
                    pb.load(MemType.WGT, b * nb + o0, wgt + o0 * kb + b, size[b], 1, kb, push_next=True)
                    end_of_phase = tiles > 1 and b == b1 - 1 and o0 + size[b] >= nb
                    if b == 0 and o0 == 0 and split:
                        gemm(first[(0, 0, 0)], split, size[0], 1, overwrite=True, pop_prev=True)
                        inp.load(pb, slots[0][0] * col + k.first_rows * inp.pitch, 0, k.first_rows, rows, push_next=True)
                        gemm(tail, mt - split, size[0], 1, overwrite=True, pop_prev=True,  # type: ignore[arg-type]
                             push_prev=end_of_phase)
                    else:
                        gemm(first[(0, b, o0)], mt, size[b], 1, overwrite=b == 0, pop_prev=True, push_prev=end_of_phase)
                for _ in range(0 if b < min(k.later_from, b1 - 1) else -(-len(later) // (b1 - b))):
                    if later:
                        load_column(0, later.pop(0))
            load_bias()  # if not yet: late, or after more GEMMs than the ic-major phase has
        else:
            prev = None
            for b in range(b1):
                for o0 in range(0, nb, size[b]):
                    wait = waits[o0 // size[0]] if b == 0 else None
                    end_of_phase = not last_tile and b == b1 - 1 and o0 + size[b] >= nb
                    gemm(first[(t, b, o0)], mt, size[b], 1, overwrite=b == 0, pop_prev=b == 0 and o0 == 0,
                         pop_next=wait is not None and wait != prev, push_prev=end_of_phase)
                    prev = wait if wait is not None else prev
        if t > 0:
            for f in pending:  # the next tile's columns, while this tile runs its oc-major phase
                f()
            pending = []
        for i, (o0, g) in enumerate(zip(starts, sizes)):
            if t == 0:
                pb.load(MemType.WGT, w2 + o0 * rest_blocks, wgt + o0 * kb + b1, g, rest_blocks, kb, push_next=True)
                if len(pending) > 1:  # the next tile's columns between the weight LOADs; the last (its token) after
                    pending.pop(0)()
            last = i == len(starts) - 1
            parts = [(rest[(t, o0)], 0, cut), (last_tail, cut, mt)] if last and last_tile and last_tail else \
                [(rest[(t, o0)], 0, mt)]
            for j, (span, p0, p1) in enumerate(parts):
                gemm(span, p1 - p0, g, rest_blocks, pop_prev=t == 0 and j == 0, push_next=True)  # type: ignore[arg-type]
                final = j == len(parts) - 1
                pb.store(o0 * mt + p0, out + o0 * m + t * mt + p0, g, p1 - p0, m, pop_prev=True,
                         push_prev=final and ((last and last_tile) or (not last_tile and i in wanted)),
                         shift=ep.shift, clip=ep.clip, relu=ep.relu, bias=None if bias is None else (bias_base + o0, 1))
        for f in pending:
            f()
    pb.finish(pop_next=True)


def conv_input_columns(wl: Conv2dWorkload, dram: int) -> InputColumns:
    """The used rows of a packed 1x1 layer's input ``(1, IC/BI, H, W, 1, BI)`` at DRAM tile ``dram``: output
    row ``y`` reads input row ``stride * y``; whole rows (up to ``stride * ow`` tiles, zero-padded to it)."""
    s = wl.stride
    tiles = min(wl.w, s * wl.ow)
    return InputColumns(dram, wl.h * wl.w, wl.oh, tiles, s * wl.w, s * wl.ow, s, wl.ow)


def conv2d_resident(wl: Conv2dWorkload, knobs: ResidentKnobs, target: VdlaTarget, epilogue: Requantize = Requantize(),
                    name: str = "conv2d") -> VdlaModule:
    """Compile the 1x1 layer ``wl`` with the two-phase resident template; the module's parameters (data,
    kernel, [bias,] out) have the tiled template's packed shapes.  Raises :class:`UnsupportedError` naming the
    reason when the layer, the epilogue or the knobs do not fit (``resident_fit.resident_error``)."""
    cfg = target.config
    reason = resident_error(wl, knobs, target, epilogue)
    if reason is not None:
        raise UnsupportedError(reason, hint="use the tiled template (Conv2dKnobs), or the ResidentKnobs that "
                                            "resident_fit.resident_space lists for this layer")
    m, kb, nb, _ = resident_shape(wl, cfg)
    acc_t = target.scope(SCOPE_ACC).dtype
    params = [ParamBinding("data", "inp", (1, kb, wl.h, wl.w, 1, cfg.block_in), target.scope(SCOPE_INP).dtype),
              ParamBinding("kernel", "wgt", (nb, kb, 1, 1, cfg.block_out, cfg.block_in), target.scope(SCOPE_WGT).dtype)]
    if epilogue.bias:
        params.append(ParamBinding("bias", "acc", (nb, 1, cfg.block_out), acc_t))
    params.append(ParamBinding("out", "out", (1, nb, wl.oh, wl.ow, 1, cfg.block_out), target.out_dtype))
    pb = ProgramBuilder(cfg)
    specs = {p.name: pb.alloc(p.name, p.kind, p.matrix_shape()) for p in params}
    emit_two_phase(pb, cfg, m, kb, nb, knobs, conv_input_columns(wl, specs["data"].addr), specs["kernel"].addr,
                   specs["bias"].addr if epilogue.bias else None, specs["out"].addr,
                   StoreEpilogue(epilogue.shift, epilogue.relu))
    return VdlaModule(name, target, pb.build(), tuple(params), None, ("out",))
