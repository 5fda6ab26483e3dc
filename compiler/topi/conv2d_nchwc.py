"""2-D convolution in the blocked NCHW[x]c layout, the fast CPU path.

Data is ``[N, C/cb, H, W, cb]`` and weights ``[OC/ob, C/cb, KH, KW, cb, ob]``, so the
``ob`` output channels of one position are one contiguous vector (``ob`` = 16 fills a
zmm register with fp32). The x86 schedule is a register-blocked micro-kernel: for one
output row it keeps ``ow_block x ob`` accumulators in registers, and for every input
channel, ``kh`` and ``kw`` does one weight-vector load and ``ow_block`` FMAs of that
vector with a broadcast input value. Layout transforms (``layout.py``) run outside.

Grouped convolutions use the same compute and schedule: with ``groups`` > 1 the kernel is
``[OC/ob, C/groups/cb, KH, KW, cb, ob]`` and an output-channel block reads the input-channel
blocks of its own group, so each block must lie inside one group (``cb`` divides the input
channels per group and ``ob`` the output channels per group).  The output channels of a group
are still one vector, so a grouped conv is as vectorized as a dense one; only its reduction is
``groups`` times shorter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .. import te
from ..codegen.llvm import Target, current_target
from ..schedule import Schedule, create_schedule
from ..te import ComputeOp, Tensor
from ..tir.ir import Var
from .utils import TopiError, const_shape, largest_divisor, vector_lanes, vector_registers

#: Vector registers a register tile leaves free on x86: weight vectors, the broadcast input, addresses.
_SPARE_REGISTERS = 4


def spare_registers(target: Target | None = None) -> int:
    """Vector registers the register tile leaves beside its accumulators on ``target`` (default: the one
    compiled for).  x86: 4.  ARM (NEON): half the register file.  LLVM's AArch64 back end keeps the tile's
    loop-invariant weight vectors in registers too, and reloads them from stack slots inside the hot loop
    when they do not fit: ResNet-18's C9 with a 14 x 2 tile (28 of 32 registers) measured 3.1 instructions
    and 0.9 stack accesses per ``fmla``, with 7 x 2 (16 spare) 1.6 and 0.16 (bench/arm_codegen.py)."""
    tgt = target or current_target()
    return tgt.vector_registers // 2 if tgt.is_arm else _SPARE_REGISTERS
_REDUCE_ORDERS = ("ic_kh_kw", "kh_kw_ic")
#: Marks the padding stage ``pad_nchwc`` made, which the conv schedule owns (any other input stage is
#: the caller's to schedule).
_PAD_TAG = "pad_nchwc"
_OUTER_ORDERS = ("oc_y", "y_oc")
#: The register tile's loop order (:class:`Conv2dNCHWcKnobs`): columns outside channel blocks, or inside them.
_TILE_ORDERS = ("columns", "channels")
#: Where the input-channel-block loop sits: inside each register tile, outside a row of tiles, or
#: outside the output plane of a channel group (:class:`Conv2dNCHWcKnobs`).
_REDUCE_AT = ("tile", "row", "plane")
#: The largest partial-sum plane the default puts outside the input-channel loop (a quarter of a
#: typical L2).
_PLANE_BUFFER_BYTES = 256 << 10
#: Channel groups ``reduce_at="plane"`` needs: its only parallel loop is over them.
_MIN_PLANE_GROUPS = 4
#: A 1 x 1 conv's row wider than this, spanned by one register tile, is split in two (default_conv2d_nchwc_knobs).
_HALF_ROW_MIN_COLUMNS = 8
#: Output-channel blocks of the default ``tile_order="channels"`` tile (:func:`_channels_order_tile`).
_CHANNEL_ORDER_BLOCKS = 4
#: Output rows from this width up take the default ``tile_order="channels"`` tile in 1 x 1 convs, narrower
#: ones in convs with more kernel taps (:func:`_channels_order_tile`).
_CHANNEL_ORDER_WIDTH = 14
#: Kernel taps above which a conv of one input channel per block reduces the taps outside the channels
#: (:func:`_default_reduce_order`: measured on the 7 x 7 stem; 3 x 3 stems not measured).
_STEM_MIN_TAPS = 9
#: The widest kernel row whose taps the default unrolls (wider rows multiply the loop body past the micro-op cache).
_UNROLL_MAX_KW = 3
#: Vector registers from which a stem's spilling default tile narrows to half of them as accumulators
#: (:func:`default_conv2d_nchwc_knobs`; AVX2's 16 would leave 8 accumulators, too few).
_STEM_NARROW_REGISTERS = 32


def _pair(v: int | tuple[int, int], what: str) -> tuple[int, int]:
    p = (v, v) if isinstance(v, int) else tuple(v)
    if len(p) != 2 or any(not isinstance(x, int) or x < 0 for x in p):
        raise TopiError(f"{what} must be a non-negative int or a pair of them, got {v!r}")
    return p  # type: ignore[return-value]


def conv_out_size(size: int, k: int, stride: int, pad: int) -> int:
    out = (size + 2 * pad - k) // stride + 1
    if out < 1:
        raise TopiError(f"kernel {k} with padding {pad} does not fit the input size {size}")
    return out


def pad_nchwc(data: Tensor, ph: int, pw: int, name: str = "pad") -> Tensor:
    """Zero-pad the two spatial axes of a ``[N, C, H, W, c]`` tensor."""
    n, c, h, w, cb = const_shape(data)
    if ph == 0 and pw == 0:
        return data

    def f(i, j, y, x, k):  # noqa: ANN001, ANN202 - te index callbacks
        inside = (y >= ph) & (y < h + ph) & (x >= pw) & (x < w + pw)
        return te.if_then_else(inside, data[i, j, y - ph, x - pw, k], te.const(0.0, data.dtype))

    return te.compute((n, c, h + 2 * ph, w + 2 * pw, cb), f, name=name, tag=_PAD_TAG)


def subsample_nchwc(data: Tensor, ph: int, pw: int, sh: int, sw: int, oh: int, ow: int,
                    name: str = "subsample") -> Tensor:
    """The ``oh x ow`` input positions a strided 1 x 1 conv reads (``y * sh - ph``, zero outside), as a
    dense ``[N, C, oh, ow, c]`` tensor.

    A 1 x 1 conv with stride 2 in ``NCHWc`` reads one vector of every two along a row and every other
    row: each input cache line it loads is half used, and ResNet-50's downsampling convs have input
    planes bigger than L2.  One pass copying the quarter of the input the conv needs makes it a stride-1
    conv over contiguous rows: ResNet-50's 512 -> 1024 (28 -> 14) one 3.76 -> 2.77 ms, the others 1.02-1.08x
    (AMD Zen 3, AVX2, one thread; docs/cpu_speed.md, "Strided 1 x 1 convs")."""
    n, c, h, w, cb = const_shape(data)

    def f(i, j, y, x, k):  # noqa: ANN001, ANN202 - te index callbacks
        sy, sx = y * sh - ph, x * sw - pw
        if ph == 0 and pw == 0:
            return data[i, j, sy, sx, k]
        inside = (sy >= 0) & (sy < h) & (sx >= 0) & (sx < w)
        return te.if_then_else(inside, data[i, j, sy, sx, k], te.const(0.0, data.dtype))

    return te.compute((n, c, oh, ow, cb), f, name=name, tag=_PAD_TAG)


def conv2d_nchwc(data: Tensor, kernel: Tensor, stride: int | tuple[int, int] = 1,
                 padding: int | tuple[int, int] = 0, name: str = "conv2d_nchwc", groups: int = 1) -> Tensor:
    """``out[n, oc, y, x, o] = sum(pad(data)[n, g(oc)*icg + ic, y*sh+ky, x*sw+kx, i] *
    kernel[oc, ic, ky, kx, i, o])`` over ``ic < icg, ky, kx, i``, where ``icg`` is the input-channel
    blocks per group and ``g(oc)`` the group of output-channel block ``oc`` (0 when ``groups`` is 1)."""
    sh, sw = _pair(stride, "stride")
    ph, pw = _pair(padding, "padding")
    if sh == 0 or sw == 0:
        raise TopiError("stride must be positive")
    n, ico, h, w, icb = const_shape(data)
    oco, kico, kh, kw, kicb, ocb = const_shape(kernel)
    if groups < 1 or ico % groups or oco % groups:
        raise TopiError(f"{groups} groups must divide the {ico} input- and {oco} output-channel blocks: "
                        f"choose channel blocks that divide the channels per group")
    if (kico * groups, kicb) != (ico, icb):
        raise TopiError(f"kernel {kernel.name} has input channels {kico}x{kicb} per group but data "
                        f"{data.name} has {ico}x{icb} in {groups} group(s): pack both with the same block")
    oc_per_group = oco // groups
    oh, ow = conv_out_size(h, kh, sh, ph), conv_out_size(w, kw, sw, pw)
    if (kh, kw) == (1, 1) and (sh, sw) != (1, 1):
        padded = subsample_nchwc(data, ph, pw, sh, sw, oh, ow, name=f"{name}_subsample")
        sh = sw = 1
    else:
        padded = pad_nchwc(data, ph, pw, name=f"{name}_pad")
    rc = te.reduce_axis(kico, "rc")
    ry = te.reduce_axis(kh, "ry")
    rx = te.reduce_axis(kw, "rx")
    ri = te.reduce_axis(icb, "ri")
    return te.compute(
        (n, oco, oh, ow, ocb),
        lambda b, oc, y, x, o: te.sum(padded[b, rc if groups == 1 else oc // oc_per_group * kico + rc,
                                             y * sh + ry, x * sw + rx, ri] *
                                      kernel[oc, rc, ry, rx, ri, o], axis=[rc, ry, rx, ri]),
        name=name)


@dataclass(frozen=True)
class Conv2dNCHWcKnobs:
    """Tunable choices of the NCHWc schedule.

    ``ow_block``: output columns per register tile (need not divide the output width: the last
    tile of a row is partitioned off with fewer columns, so AVX2's 12 accumulators can hold a
    6 x 2 tile of a 56-wide row, 15% faster than the 4 x 2 that divides it);
    ``unroll_kw``: unroll the kernel-width loop; ``reduce_order``: ``"ic_kh_kw"`` (input
    channel blocks outermost) or ``"kh_kw_ic"``; ``outer_order``: ``"oc_y"`` (channel
    blocks outside rows: a weight block stays in cache over all rows) or ``"y_oc"`` (an
    input row stays in cache over all channel blocks); ``parallel``: run the fused outer
    loop on all threads; ``oc_block``: output-channel blocks per register tile (the tile is
    ``oh_block x oc_block x ow_block`` vectors: each broadcast input feeds ``oc_block`` FMAs,
    each weight vector ``oh_block x ow_block``); ``oh_block``: output rows per register tile
    (need not divide the output height: the last tile of a column is partitioned off with fewer
    rows).

    ``reduce_at``: where the loop over input-channel blocks sits. ``"tile"``: inside each register
    tile, which reduces over every input channel and is stored once. ``"row"``: outside a row of
    tiles (``oh_block`` rows of one channel group), whose partial sums wait in an L1-sized buffer:
    the weights of one input-channel block (``oc_block x kh x kw`` vectors per input channel) then
    stay in L1 across the row's tiles instead of streaming from L2 once per tile. ``"plane"``:
    outside the whole output plane of a channel group (``outer_order`` ``"oc_y"`` only), so each
    weight is fetched from memory once and used by every tile, spreading a big layer's weight
    stream evenly over the conv instead of loading it all during the first row.  In both, the
    kernel taps and channels of one block are reduced inside the tile (``reduce_order`` must be
    ``"ic_kh_kw"``).

    ``tile_order``: the order of the register tile's unrolled loops (:func:`tile_registers` counts what each
    keeps live). ``"columns"``: rows and columns outside channel blocks, so each broadcast input feeds
    ``oc_block`` FMAs and dies while the tile's ``oc_block`` weight vectors stay in registers.
    ``"channels"``: channel blocks outside rows and columns, so each weight vector feeds the tile's
    ``oh_block x ow_block`` FMAs and dies while its broadcast inputs stay in registers: AVX2's 3 columns x 4
    channel blocks then take 12 accumulators + 3 inputs + 1 weight vector = 16 ymm, where the columns order
    needs 17.
    """

    ow_block: int
    unroll_kw: bool = True
    reduce_order: str = "ic_kh_kw"
    outer_order: str = "oc_y"
    parallel: bool = True
    oc_block: int = 1
    oh_block: int = 1
    reduce_at: str = "tile"
    tile_order: str = "columns"

    def validate(self, out_width: int, oc_outer: int | None = None, out_height: int | None = None) -> None:
        if not 1 <= self.ow_block <= out_width:
            raise TopiError(f"ow_block {self.ow_block} must be between 1 and the output width {out_width}")
        if self.oc_block < 1 or (oc_outer is not None and oc_outer % self.oc_block):
            raise TopiError(f"oc_block {self.oc_block} must divide the {oc_outer} output-channel blocks")
        if self.oh_block < 1 or (out_height is not None and self.oh_block > out_height):
            raise TopiError(f"oh_block {self.oh_block} must be between 1 and the output height {out_height}")
        if self.reduce_order not in _REDUCE_ORDERS:
            raise TopiError(f"reduce_order {self.reduce_order!r} is not one of {_REDUCE_ORDERS}")
        if self.outer_order not in _OUTER_ORDERS:
            raise TopiError(f"outer_order {self.outer_order!r} is not one of {_OUTER_ORDERS}")
        if self.reduce_at not in _REDUCE_AT:
            raise TopiError(f"reduce_at {self.reduce_at!r} is not one of {_REDUCE_AT}")
        if self.tile_order not in _TILE_ORDERS:
            raise TopiError(f"tile_order {self.tile_order!r} is not one of {_TILE_ORDERS}")
        if self.reduce_at != "tile" and self.reduce_order != "ic_kh_kw":
            raise TopiError(f"reduce_at {self.reduce_at!r} puts the input-channel loop outside the tiles; "
                            f"reduce_order must be 'ic_kh_kw', not {self.reduce_order!r}")
        if self.reduce_at == "plane" and self.outer_order != "oc_y":
            raise TopiError("reduce_at 'plane' computes a channel group's whole plane: outer_order must be 'oc_y'")
        if self.reduce_at == "plane" and oc_outer is not None and oc_outer // self.oc_block < _MIN_PLANE_GROUPS:
            raise TopiError(f"reduce_at 'plane' runs its {oc_outer // self.oc_block} channel group(s) in parallel, "
                            f"fewer than {_MIN_PLANE_GROUPS}: choose a smaller oc_block or reduce_at 'tile'")


def tile_registers(knobs: Conv2dNCHWcKnobs, vectors_per_column: int) -> int:
    """Vector registers ``knobs``' register tile keeps live in its inner loop: the accumulators, plus what its
    ``tile_order`` holds beside them -- one weight vector per channel-block vector and one broadcast input
    (``"columns"``), or one broadcast input per row and column and one channel block's weight vectors
    (``"channels"``)."""
    positions = knobs.oh_block * knobs.ow_block
    accumulators = positions * knobs.oc_block * vectors_per_column
    if knobs.tile_order == "channels":
        return accumulators + positions + vectors_per_column
    return accumulators + knobs.oc_block * vectors_per_column + 1


def default_nchwc_blocks(in_channels: int, out_channels: int,
                         target: Target | None = None) -> tuple[int, int]:
    """``(input block, output block)``: one vector register of fp32 where it divides."""
    lanes = vector_lanes(target)
    return largest_divisor(in_channels, lanes), largest_divisor(out_channels, lanes)


def max_accumulators(target: Target | None = None) -> int:
    """Accumulator vectors a register tile may hold on ``target`` (by default the one being compiled
    for): 28 of AVX-512's 32 zmm, 12 of AVX2's 16 ymm, 16 of AArch64's 32 and 8 of ARMv7's 16 q registers."""
    return vector_registers(target) - spare_registers(target)


def default_conv2d_nchwc_tile(out_width: int, oc_outer: int, vectors_per_column: int,
                          accumulators: int) -> tuple[int, int]:
    """``(oc_block, ow_block)`` of the default two-dimensional register tile.

    Columns first, up to half the accumulator budget (14 of AVX-512's 28: a 28-column row ran slower
    on ResNet-18's layers), unless the widths that divide the row jump past that (a 7-wide row on
    AVX2's 12 accumulators takes 7 columns, not 1); then as many output-channel blocks (at most 4)
    as the register file holds with their weight vectors and one broadcast input beside the
    accumulators (4 x 7 tiles need 33 of 32 zmm and spill).
    """
    fits = [d for d in range(1, out_width + 1) if out_width % d == 0 and d * vectors_per_column <= accumulators]
    half = [d for d in fits if 2 * d * vectors_per_column <= accumulators] or [1]
    ow_block = max(fits) if max(fits) > 2 * max(half) else max(half)
    registers = accumulators + spare_registers()
    room = (registers - 1) // (vectors_per_column * (ow_block + 1))
    oc_block = largest_divisor(oc_outer, max(1, min(4, room, accumulators // (ow_block * vectors_per_column))))
    return oc_block, ow_block


def default_tile_rows(out_height: int, tile_vectors: int, accumulators: int) -> int:
    """Output rows of the default register tile: as many as the accumulators left by one row of
    ``tile_vectors`` hold (ResNet's 7-wide rows: 2 rows of 7 x 2 vectors on AVX-512, which halves
    the weight loads per FMA; a 56-wide row's 14 x 2 tile already fills the budget)."""
    return max(1, min(out_height, accumulators // max(1, tile_vectors)))


def widen_tile(out_width: int, oc_outer: int, vectors_per_column: int, accumulators: int,
               oc_block: int, ow_block: int, oh_block: int, pointwise: bool = False) -> tuple[int, int]:
    """``(oc_block, ow_block)``: a one-row tile of column blocks that divide the row but leave room for
    another column becomes two channel blocks of half the accumulators' columns, the last tile of
    the row partitioned off narrower.  AVX2's 12 accumulators hold 4 x 2 of a 56-wide row and 7 x 1
    of a 14- or 7-wide one; 6 x 2 made ResNet-18 6.6% faster, ResNet-50 5.6% and MobileNetV2 3.6%
    (AVX2, one thread).  AVX-512's tiles of ResNet's rows are full already and stay as they are.

    ``pointwise`` (a 1 x 1 kernel): two channel blocks of two thirds of those columns.  A 1 x 1 conv
    does one FMA per weight vector and column per input channel, with no kernel taps to reuse the
    broadcast inputs, so the full 6 x 2 tile runs its 12 FMA chains on 8 loads per step; 4 x 2 was
    faster on every 1 x 1 layer of ResNet-50 and MobileNetV2 measured on an AMD Zen 3 (AVX2, one
    thread, 1.02-1.38x; docs/cpu_speed.md, "1 x 1 convs"), on 14- and 7-wide rows too, where the
    default took 7 x 1."""
    registers = accumulators + spare_registers()
    # The widened tile's accumulators, its two channel blocks' weight vectors and a broadcast input.
    columns = min(out_width, accumulators // (2 * vectors_per_column),
                  (registers - 1 - 2 * vectors_per_column) // (2 * vectors_per_column))
    if pointwise:
        columns = max(1, 2 * columns // 3)
    columns = balance_columns(out_width, columns)
    if oh_block > 1 or oc_outer % 2 or 2 * columns <= oc_block * ow_block:
        return oc_block, ow_block
    return 2, columns


def balance_columns(out_width: int, columns: int) -> int:
    """The narrowest column block that covers a row in as few tiles as ``columns`` does, so the row's
    tiles are even instead of full ones and a sliver: 4 + 3 for a 7-wide row rather than 6 + 1, 5 + 5 + 4
    for a 14-wide one rather than 6 + 6 + 2 (56-wide rows keep 6).  The sliver runs one or two columns
    at a fraction of the tile's FMA rate: on an AMD Zen 3 (AVX2) ResNet-50's 512-channel 7 x 7 3 x 3
    conv took 3.14 ms with 4 x 2 against 3.85 with 6 x 2, its 14 -> 7 stride-2 conv 3.55 against 3.84,
    and the 28 -> 14 one 3.29 with 5 x 2 against 3.66 with 6 x 2 (docs/cpu_speed.md)."""
    tiles = -(-out_width // max(1, columns))
    return -(-out_width // tiles)


def default_conv2d_nchwc_knobs(out: Tensor, target: Target | None = None) -> Conv2dNCHWcKnobs:
    """The register tile that best fills the target's vector register file (:func:`default_conv2d_nchwc_tile`,
    then :func:`default_tile_rows`, then :func:`widen_tile`), unless it is a stem conv's tile with its kernel
    taps unrolled (:func:`stem_taps_unrolled`) and more than half of 32 or more registers as accumulators:
    that tile takes at most half of them.

    Such a tile spills: MobileNetV2's stem (3 -> 32, 3 x 3 stride 2, 224 px) with AVX-512's 2 x 14 tile
    stored 19 and reloaded 18 vectors at fixed stack offsets (``bench/conv_spills.py``; 2 x 13: 11 reloads,
    2 x 12: 8, 2 x 11: 5, 2 x 10: 2, 2 x 9 and narrower the prologue's 1), and a spilling kernel's time moves with the stack position of
    its call (docs/autotune.md, "The large-activation nodes").  Its 2 x 8 tile does not spill: 1.26-1.43x
    the 2 x 14 as the tuner measures it (``bench/conv_knobs.py --nchw-input``), 1.09-1.26x in the model
    (``bench/node_classes.py``).  AVX2's 16 registers keep their tile (2 x 6: 5 reloads): half of them would
    leave 8 accumulators, the FMA chains a Zen 4 needs in flight (4 clocks x 2 pipes; 2 x 4 measured 0.99x),
    and rolling its taps instead (``kh_kw_ic``, ``unroll_kw=False``: no spills) measured 1.03-1.05x in the
    tuner but 0.93x and 1.06x in the model with the two builds swapped (no gain).  AMD Zen 4 (AVX2 through ``bench/avx2_host``), one thread; docs/cpu_speed.md,
    "The stem's default tile without spills"."""
    knobs = _default_knobs(out, max_accumulators(target), target)
    data, kernel = out.op.input_tensors()
    vectors_per_column = max(1, -(-const_shape(out)[-1] // vector_lanes(target)))
    accumulators = knobs.oh_block * knobs.ow_block * knobs.oc_block * vectors_per_column
    registers = vector_registers(target)
    if (registers >= _STEM_NARROW_REGISTERS and 2 * accumulators > registers
            and stem_taps_unrolled(knobs, const_shape(data)[-1], const_shape(kernel)[3], target)):
        return _default_knobs(out, registers // 2, target)
    return knobs


def stem_taps_unrolled(knobs: Conv2dNCHWcKnobs, in_block: int, kw: int, target: Target | None = None) -> bool:
    """Whether ``knobs``' tile is an x86 stem conv's (one input channel per block: an NCHW input of 3 channels)
    with its kernel-width taps unrolled over the channel blocks (``ic_kh_kw``, the columns order).

    The reduction over a block's channels is then one step, so the ``kw`` unrolled taps become one straight
    block of code and LLVM keeps every tap's ``oc_block`` weight vectors (and the overlapping inputs of a
    strided row) live beside the accumulators: ``kw - 1`` taps' weights more than :func:`tile_registers`
    counts.  ARM is not measured."""
    tgt = target or current_target()
    return (not tgt.is_arm and in_block == 1 and kw > 1 and knobs.unroll_kw and knobs.reduce_order == "ic_kh_kw"
            and knobs.tile_order == "columns")


def _default_knobs(out: Tensor, accumulators: int, target: Target | None) -> Conv2dNCHWcKnobs:
    """:func:`default_conv2d_nchwc_knobs`' rule for a budget of ``accumulators`` vector registers."""
    _, oco, oh, ow, ocb = const_shape(out)
    data, kernel = out.op.input_tensors()
    vectors_per_column = max(1, -(-ocb // vector_lanes(target)))
    oc_block, ow_block = default_conv2d_nchwc_tile(ow, oco, vectors_per_column, accumulators)
    oh_block = default_tile_rows(oh, oc_block * ow_block * vectors_per_column, accumulators)
    kh, kw = const_shape(kernel)[2:4]
    oc_block, ow_block = widen_tile(ow, oco, vectors_per_column, accumulators, oc_block, ow_block, oh_block,
                                    pointwise=(kh, kw) == (1, 1))
    oh_block = default_tile_rows(oh, oc_block * ow_block * vectors_per_column, accumulators)
    # A 1 x 1 conv whose one register tile spans a whole row of more than 8 columns (AVX-512's 14 x 2 on
    # 14-wide rows): two tiles of half the row, each reducing in registers.  On an AMD Zen 4 ResNet-50's
    # 1024 -> 256 and 256 -> 1024 14 x 14 convs took 0.918 ms each that way, against 1.007 / 1.036 with the
    # full-row tile and `plane` (docs/cpu_speed.md, "Zen 4"); AVX2's and NEON's two-block tiles never span
    # such a row (6 and 4 columns).
    half_row = ((kh, kw) == (1, 1) and oh_block == 1 and oc_block >= 2
                and ow_block == ow > _HALF_ROW_MIN_COLUMNS)
    if half_row:
        ow_block = -(-ow // 2)
    channels_order = _channels_order_tile(ow, oco, vectors_per_column, (kh, kw) == (1, 1), target)
    if channels_order:
        oc_block, ow_block, oh_block = channels_order
    # Keep the smaller operand in cache while sweeping the bigger one once.
    kernel_smaller = math.prod(const_shape(kernel)) < math.prod(const_shape(data))
    # Weights bigger than the data (ResNet's last stages: 9.4 MB against 100 KB) stream from memory:
    # reducing input-channel blocks outside the plane spreads that stream over the whole conv (a 7x7
    # layer 16% faster from cold caches) while the plane's partial sums wait in L2.
    # Not for a 1 x 1 conv with 512-bit vectors: on an AMD Zen 4 ResNet-50's and MobileNetV2's 7 x 7 1 x 1
    # convs ran 1.05-1.11x faster reducing in the tile's registers (docs/cpu_speed.md, "Zen 4").
    pointwise_512 = (kh, kw) == (1, 1) and vector_lanes(target) >= 16
    # A 1 x 1 conv's channels-order tile reduces in its registers (its 14-wide rows: 1.27x over ``plane``).
    pointwise_channels = (kh, kw) == (1, 1) and channels_order is not None
    plane = (not kernel_smaller and not half_row and not pointwise_512 and not pointwise_channels
             and oc_block * oh * ow * ocb * 4 <= _PLANE_BUFFER_BYTES and oco // oc_block >= _MIN_PLANE_GROUPS)
    # Unrolling a wide kernel row multiplies the loop body past the micro-op cache.
    return Conv2dNCHWcKnobs(ow_block=ow_block, oc_block=oc_block, oh_block=oh_block, unroll_kw=kw <= _UNROLL_MAX_KW,
                            reduce_order=_default_reduce_order(const_shape(data)[-1], kh, kw, plane, target),
                            outer_order="y_oc" if kernel_smaller else "oc_y",
                            reduce_at="plane" if plane else "tile",
                            tile_order="channels" if channels_order else "columns")


def _channels_order_tile(out_width: int, oc_outer: int, vectors_per_column: int, pointwise: bool,
                         target: Target | None) -> tuple[int, int, int] | None:
    """``(oc_block, ow_block, oh_block)`` of the default ``tile_order="channels"`` tile, or None where the
    default keeps the columns order.

    On AVX2 (16 ymm) a two-block tile in the columns order holds at most 4 (1 x 1) to 6 columns x 2 channel
    blocks; with the channel blocks outermost each weight vector dies after its row of FMAs, so 3 columns x
    4 channel blocks fill 12 accumulators beside 3 broadcast inputs and one weight vector.  Measured on an
    AMD Zen 4 running AVX2 code (``bench/avx2_host``, the tuner's measurement, one thread; docs/cpu_speed.md,
    "an eleventh session"), against the columns-order default: ResNet-50's 1 x 1 convs on 56-, 28- and
    14-wide rows 1.02-1.08x (reducing in the tile's registers: with ``plane`` the 14-wide ones ran 0.83x),
    on 7-wide rows 0.87x; its 3 x 3 convs on 7-wide rows (512 channels, stride 1 and 2) 1.09x, on 14- and
    28-wide ones (stride 2) 0.94-1.00x.  x86 AVX2 only: AVX-512's 28-accumulator tiles and ARM were not
    measured."""
    tgt = target or current_target()
    if tgt.isa != "avx2" or vectors_per_column != 1 or oc_outer % _CHANNEL_ORDER_BLOCKS:
        return None
    if (out_width >= _CHANNEL_ORDER_WIDTH) != pointwise:
        return None
    registers = max_accumulators(tgt) + spare_registers(tgt)
    # Accumulators and a broadcast input per column, one channel block's weight vector.
    columns = (registers - vectors_per_column) // (_CHANNEL_ORDER_BLOCKS * vectors_per_column + 1)
    return _CHANNEL_ORDER_BLOCKS, balance_columns(out_width, columns), 1


def _default_reduce_order(in_block: int, kh: int, kw: int, plane: bool, target: Target | None) -> str:
    """The default ``reduce_order``: the kernel taps outside the input-channel blocks (``"kh_kw_ic"``) for a
    stem conv on x86 vectors narrower than 512 bits (one input channel per block, a kernel wider than 3 x 3:
    ResNet's 7 x 7 over 3 NCHW channels), the channel blocks outermost otherwise.  Measured in the model on an
    AMD Zen 4 running AVX2 code (``bench/avx2_host``, ``bench/node_classes.py``, one thread; docs/cpu_speed.md,
    "a tenth session"): ResNet-50's stem 2.09-2.13 ms against 2.79-2.99 with the channel blocks outermost
    (the kernel alone, as the tuner times it, only 1.03x)."""
    tgt = target or current_target()
    stem = in_block == 1 and kh * kw > _STEM_MIN_TAPS and not plane
    # x86 only: ARM's NEON was not measured.
    return "kh_kw_ic" if stem and tgt.vector_lanes() < 16 and not tgt.is_arm else "ic_kh_kw"


def schedule_conv2d_nchwc(out: Tensor, knobs: Conv2dNCHWcKnobs | None = None,
                          s: Schedule | None = None, target: Target | None = None,
                          epilogue: Tensor | None = None) -> Schedule:
    """The x86 schedule of ``conv2d_nchwc``'s output (a fresh schedule unless ``s``).

    ``epilogue``: an element-wise stage of the conv's shape that reads it (bias, residual add, ReLU
    already inlined into it).  The register tile then loops over the epilogue, the conv is computed
    at its column-block loop into a tile-sized buffer (registers, after LLVM's SROA) and each tile
    is stored once, through the epilogue: no conv-sized temporary and no second pass over it.
    """
    if s is None:
        s = create_schedule(epilogue if epilogue is not None else out)
    knobs = knobs or default_conv2d_nchwc_knobs(out, target)
    knobs.validate(const_shape(out)[3], const_shape(out)[1], const_shape(out)[2])
    pad = out.op.input_tensors()[0]
    if isinstance(pad.op, ComputeOp) and pad.op.tag == _PAD_TAG:
        _schedule_pad(s, pad, knobs.parallel)
    if epilogue is not None:
        if const_shape(epilogue) != const_shape(out):
            raise TopiError(f"epilogue {epilogue.name} has shape {const_shape(epilogue)}, the conv "
                            f"{out.name} {const_shape(out)}: only a same-shape element-wise stage fuses")
        return _schedule_with_epilogue(s, out, epilogue, knobs)
    b, oc, y, x, o, rc, ry, rx, ri = s.get_loops(out)
    xo, xi = s.split(x, factor=knobs.ow_block)
    oc, oci = s.split(oc, factor=knobs.oc_block)
    y, yi = s.split(y, factor=knobs.oh_block)
    # Rows and columns outside channel blocks: one broadcast input feeds oc_block FMAs and dies, while
    # the oc_block weight vectors stay live (with AVX-512's 14 columns the other order keeps every
    # broadcast live and spills); tile_order "channels" takes that other order for narrow tiles.
    tile = _tile_loops(knobs, yi, xi, oci, o)
    if knobs.reduce_at == "plane":
        outer: tuple[Var, ...] = (b, oc)
        s.reorder(b, oc, rc, y, xo, ry, rx, ri, *tile)
    else:
        outer = (b, oc, y) if knobs.outer_order == "oc_y" else (b, y, oc)
        if knobs.reduce_at == "row":
            s.reorder(*outer, rc, xo, ry, rx, ri, *tile)
        else:
            reduce = (rc, ry, rx, ri) if knobs.reduce_order == "ic_kh_kw" else (ry, rx, rc, ri)
            s.reorder(*outer, xo, *reduce, *tile)
    _unroll_tile(s, yi, xi, oci, o)
    if knobs.unroll_kw:
        s.unroll(rx)
    fused = s.fuse(*outer)
    if knobs.parallel:
        s.parallel(fused)
    return s


def _tile_loops(knobs: Conv2dNCHWcKnobs, rows: Var, columns: Var, channels: Var, lanes: Var) -> tuple[Var, ...]:
    """The register tile's loops, outermost first, in ``knobs.tile_order``."""
    if knobs.tile_order == "channels":
        return channels, rows, columns, lanes
    return rows, columns, channels, lanes


def _unroll_tile(s: Schedule, rows: Var, columns: Var, channels: Var, lanes: Var) -> None:
    for v in (rows, columns, channels):
        s.unroll(v)
    s.vectorize(lanes)


def _schedule_with_epilogue(s: Schedule, conv: Tensor, epilogue: Tensor, knobs: Conv2dNCHWcKnobs) -> Schedule:
    b, oc, y, x, o = s.get_loops(epilogue)
    oc, oci = s.split(oc, factor=knobs.oc_block)
    if knobs.reduce_at == "tile":
        # The conv is computed tile by tile inside the epilogue's tile loop and stored once, through it.
        xo, xi = s.split(x, factor=knobs.ow_block)
        y, yi = s.split(y, factor=knobs.oh_block)
        outer = (b, oc, y) if knobs.outer_order == "oc_y" else (b, y, oc)
        s.reorder(*outer, xo, yi, oci, xi, o)
        _unroll_tile(s, yi, xi, oci, o)
        s.compute_at(conv, xo)
        _, oc_t, y_t, x_t, o_t, rc, ry, rx, ri = s.get_loops(conv)[-9:]
        reduce = (rc, ry, rx, ri) if knobs.reduce_order == "ic_kh_kw" else (ry, rx, rc, ri)
        s.reorder(*reduce, *_tile_loops(knobs, y_t, x_t, oc_t, o_t))  # as in the unfused schedule
    else:
        # The conv of a row (or plane) of tiles is computed into a buffer, then the epilogue reads it.
        if knobs.reduce_at == "plane":
            outer = (b, oc)
            s.reorder(b, oc, y, oci, x, o)
        else:
            y, yi = s.split(y, factor=knobs.oh_block)
            outer = (b, oc, y) if knobs.outer_order == "oc_y" else (b, y, oc)
            s.reorder(*outer, yi, oci, x, o)
        s.vectorize(o)
        s.compute_at(conv, outer[-1])
        _, oc_t, y_t, x_t, o_t, rc, ry, rx, ri = s.get_loops(conv)[-9:]
        xo_t, x_t = s.split(x_t, factor=knobs.ow_block)
        yo_t, y_t = s.split(y_t, factor=knobs.oh_block)
        s.reorder(rc, yo_t, xo_t, ry, rx, ri, *_tile_loops(knobs, y_t, x_t, oc_t, o_t))
    _unroll_tile(s, y_t, x_t, oc_t, o_t)
    if knobs.unroll_kw:
        s.unroll(rx)
    fused = s.fuse(*outer)
    if knobs.parallel:
        s.parallel(fused)
    s.compact_buffers()
    return s


def _schedule_pad(s: Schedule, pad: Tensor, parallel: bool) -> None:
    b, c, y, x, i = s.get_loops(pad)
    s.vectorize(i)
    fused = s.fuse(b, c, y)
    if parallel:
        s.parallel(fused)
