"""Whether the resident 1x1 template (``resident.py``) fits a layer and a config, its footprint, its knob space,
the setting the default rule tries, and a quick estimate of its cycles: the template's counterpart of ``fit.py``'s
functions for the tilings."""

from __future__ import annotations

from itertools import product

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_UOP, SCOPE_WGT, VdlaTarget
from .epilogue import Requantize
from .fit import divisors
from .tiling import MAX_LOOP, Conv2dWorkload, ResidentKnobs

_PLAIN = Requantize()


def resident_shape(wl: Conv2dWorkload, cfg: HwConfig, row_tiles: int = 1,
                   used_pixels: bool = False) -> tuple[int, int, int, int]:
    """(pixels ``m`` of a row tile, input-channel blocks ``kb``, output-channel blocks ``nb``, input SRAM tiles per
    ic block and row tile ``col``) of the resident 1x1 template: an ic block's input is its used rows at a pitch
    of ``stride * ow`` tiles, so pixel ``p`` sits at ``stride * p`` in its column (``used_pixels``: only the used
    pixels, at a pitch of ``ow``)."""
    rows = wl.oh // row_tiles
    pitch = wl.ow if used_pixels else wl.stride * wl.ow
    return rows * wl.ow, wl.ic // cfg.block_in, wl.oc // cfg.block_out, rows * pitch


def tile_b1(k: ResidentKnobs, tile: int) -> int:
    """The ic-major blocks of row tile ``tile``: ``first_b1`` (when set) for every tile but the last, ``b1`` for
    the last (whose oc-major phase stores as it goes, so the drain is short)."""
    return (k.first_b1 or k.b1) if tile == 0 and k.row_tiles > 1 else k.b1


def double_accumulators(k: ResidentKnobs, m: int, nb: int, consts: int, depth: int) -> bool:
    """Whether two row tiles' accumulators (``m`` pixels x ``nb`` blocks each, and ``consts`` rows of ``nb``: the
    bias, the multiplier) fit ``depth``: then tile ``t`` accumulates where tile ``t - 2`` did, and its first GEMMs
    wait only for that tile's STOREs, not for tile ``t - 1``'s."""
    return k.row_tiles > 1 and 2 * m * nb + consts * nb <= depth


def double_columns(kb: int, col: int, depth: int) -> bool:
    """Whether two row tiles' input columns fit the input buffer side by side (``kb`` columns of ``col`` tiles
    each in ``depth`` tiles): then tile ``t`` loads into the set tile ``t - 2`` used, and its LOADs wait only for
    that tile's end, not for tile ``t - 1``'s ic-major phase."""
    return 2 * kb * col <= depth


def tile_pieces(k: ResidentKnobs, nb: int, tile: int, dacc: bool) -> list[int]:
    """Output blocks per GEMM piece of each ic-major block of row tile ``tile``: ``first_piece`` for the first
    ``first_blocks``, ``piece`` after; with two accumulator sets (``dacc``) a later tile's weights are all in
    and no piece waits for a STORE, so its blocks are one GEMM each."""
    if dacc and tile > 0:
        return [nb] * tile_b1(k, tile)
    return [k.first_piece] * k.first_blocks + [k.piece] * (tile_b1(k, tile) - k.first_blocks)


def tile_groups(k: ResidentKnobs, nb: int, tile: int, dacc: bool) -> list[int]:
    """The first output block of each oc-major group (GEMM and STORE) of row tile ``tile``: groups of ``group``,
    the last cut into groups of ``last_group``.  With two accumulator sets a tile's STOREs drain while the next
    tile runs, so a tile before the last two is one group, and the one before the last two halves (its first
    half's STORE then starts early enough not to hold up the last tile's)."""
    if dacc and tile < k.row_tiles - 2:
        return [0]
    if dacc and tile == k.row_tiles - 2:
        return list(range(0, nb, max(1, nb // 2)))
    return list(range(0, nb - k.group, k.group)) + list(range(nb - k.group, nb, k.last_group))


def resident_uops(wl: Conv2dWorkload, k: ResidentKnobs, cfg: HwConfig, bias: bool = True,
                  multiplier: bool = False) -> int:
    """Micro-ops the resident template loads (``bias``: the epilogue adds one; ``multiplier``: a per-channel one,
    :func:`resident_consts`): per row tile one per ic-major GEMM piece and one per oc-major group and reduction
    block; one more for a first piece split by rows, a reduction's worth for a last group split; with a multiplier,
    per STORE one for the ALU's multiply (and ReLU) and one for its bias add."""
    m, kb, nb, _ = resident_shape(wl, cfg, k.row_tiles, k.used_pixels)
    dacc = double_accumulators(k, m, nb, resident_consts(bias, multiplier), cfg.acc_buff_depth)

    def per_tile(t: int) -> int:
        pieces = sum(nb // p for p in tile_pieces(k, nb, t, dacc))
        return pieces + len(tile_groups(k, nb, t, dacc)) * (kb - tile_b1(k, t))

    last_b1 = tile_b1(k, k.row_tiles - 1)
    stores = sum(len(tile_groups(k, nb, t, dacc)) for t in range(k.row_tiles)) + (1 if k.last_rows else 0)
    return (sum(per_tile(t) for t in range(k.row_tiles)) + (1 if k.first_rows else 0)
            + (kb - last_b1 if k.last_rows else 0) + (stores * (1 + int(bias)) if multiplier else 0))


def resident_consts(bias: bool, multiplier: bool) -> int:
    """Per-output-block rows the resident template keeps after the accumulators: the bias, the multiplier."""
    return int(bias) + int(multiplier)


def resident_footprint(wl: Conv2dWorkload, k: ResidentKnobs, cfg: HwConfig, ep: Requantize = _PLAIN) -> dict[str, int]:
    """Elements each on-chip buffer holds under the resident template: the input columns (one row tile's, and with
    several tiles also the next tile's ic-major ones beside the oc-major ones still read), every weight tile,
    one row tile's accumulators (plus the bias) and the micro-ops."""
    m, kb, nb, col = resident_shape(wl, cfg, k.row_tiles, k.used_pixels)
    columns = kb if k.row_tiles == 1 else 2 * kb if double_columns(kb, col, cfg.inp_buff_depth) else 2 * kb - k.b1
    consts = resident_consts(ep.bias, ep.multiplier)
    sets = 2 if double_accumulators(k, m, nb, consts, cfg.acc_buff_depth) else 1
    return {SCOPE_INP: columns * col, SCOPE_WGT: kb * nb, SCOPE_ACC: sets * m * nb + consts * nb,
            SCOPE_UOP: resident_uops(wl, k, cfg, ep.bias, ep.multiplier)}


def resident_error(wl: Conv2dWorkload, k: ResidentKnobs, target: VdlaTarget | HwConfig,
                   ep: Requantize = _PLAIN) -> str | None:
    """Why the resident template cannot compile ``wl`` with ``k`` (the layer's kind, the epilogue, the knobs
    or the buffers it overflows), or None.  Never raises."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget(target)
    cfg = tgt.config
    try:
        wl.check(cfg)
    except UnsupportedError as exc:
        return str(exc)
    if (wl.kh, wl.kw, wl.pad, wl.n, cfg.batch) != (1, 1, 0, 1, 1) or wl.depthwise or wl.batched_weights:
        return (f"the resident template compiles unpadded 1x1 convs of one image with BATCH=1; {wl} on "
                f"{cfg.name!r} (BATCH={cfg.batch}) is not one")
    if not ep.on_store or ep.residual is not None or (ep.bias and not ep.multiplier and not ep.bias_on_store):
        return (f"the resident template needs the epilogue on the STORE (bias, ReLU, shift, clip; with a per-channel "
                f"multiplier the bias add, ReLU and multiply on the ALU per output group), got {ep}")
    if k.used_pixels and wl.stride == 1:
        return "used_pixels loads a strided layer's used pixels only; a stride-1 layer uses every pixel of its rows"
    if k.row_tiles < 1 or wl.oh % k.row_tiles:
        return f"row_tiles={k.row_tiles} must divide the {wl.oh} output rows"
    m, kb, nb, _ = resident_shape(wl, cfg, k.row_tiles, k.used_pixels)
    if k.virtual_threads != 1:
        return f"the resident template runs one stream, virtual_threads must be 1, got {k.virtual_threads}"
    if not (0 < k.b1 < kb):
        return f"b1={k.b1} must be in 1..{kb - 1} (the layer has {kb} input-channel blocks)"
    if k.first_b1 and not (k.row_tiles > 1 and k.b1 <= k.first_b1 < kb):
        return (f"first_b1={k.first_b1} (tile 0's ic-major blocks) must be in b1={k.b1}..{kb - 1} and needs "
                f"row_tiles > 1 (got {k.row_tiles})")
    if not 1 <= k.first_blocks <= k.b1:
        return f"first_blocks={k.first_blocks} must be in 1..b1={k.b1}"
    for name, v in (("first_piece", k.first_piece), ("piece", k.piece), ("group", k.group)):
        if v <= 0 or nb % v:
            return f"{name}={v} must divide the {nb} output-channel blocks"
    if k.last_group <= 0 or k.group % k.last_group:
        return f"last_group={k.last_group} must divide group={k.group}"
    if k.last_rows and k.last_group != 1:
        # A STORE reads its accumulators contiguously, and a group's blocks sit a row tile's pixels apart.
        return (f"last_rows={k.last_rows} cuts the last group by pixels, which needs last_group=1 (got "
                f"{k.last_group}): a STORE of several blocks' first pixels would read the accumulators in between")
    rows = wl.oh // k.row_tiles
    for name, v in (("first_rows", k.first_rows), ("last_rows", k.last_rows)):
        if not 0 <= v < rows:
            return f"{name}={v} must be in 0..{rows - 1} (the output rows of a row tile)"
    if m > MAX_LOOP or max(k.first_piece, k.piece, k.group) > MAX_LOOP:
        return f"{m} output pixels exceed the instruction loop limit {MAX_LOOP}"
    over = {s: n for s, n in resident_footprint(wl, k, cfg, ep).items() if n > tgt.scope(s).depth}
    what = f"conv2d {wl} resident with {k}"
    return "; ".join(tgt.scope(s).overflow(n, what) or "" for s, n in over.items()) or None


def resident_space(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize = _PLAIN) -> list[ResidentKnobs]:
    """The resident template's settings the tuner measures: :func:`whole_space` for a layer that fits whole, else
    its :func:`row_tile_space` (empty when neither fits)."""
    return whole_space(wl, target, ep) or row_tile_space(wl, target, ep)


def whole_space(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize = _PLAIN) -> list[ResidentKnobs]:
    """The resident template's settings for a layer that fits SRAM whole (empty when it does not).

    Around what a sweep of C11 on ``default`` found best (docs/vdla_compiler.md): the ic-major share at a half,
    nine sixteenths and five eighths of the reduction; pieces of a quarter of the output blocks for the first one
    or two ic-major blocks and of a half after; groups of 4 output blocks, the last cut to single blocks and its
    last third or half of the rows stored apart; the first column split at half its rows; the bias after the first
    two GEMMs; and the plain schedule (no split, bias first) as a peer."""
    cfg = target.config
    _, kb, nb, _ = resident_shape(wl, cfg)
    if kb < 2 or nb < 1:
        return []
    group = next((g for g in (4, 2, 1) if nb % g == 0), 1)
    fp = max(d for d in divisors(nb) if d <= max(1, nb // 4))  # a divisor: nb // 4 need not be one (63 blocks)
    piece = 2 * fp if nb % (2 * fp) == 0 else fp
    shares = sorted({max(1, kb // 2), max(1, 9 * kb // 16), max(1, 5 * kb // 8)} - {kb})
    half, third = wl.oh // 2, max(1, wl.oh // 3) if wl.oh > 1 else 0
    candidates = [ResidentKnobs(shares[0], fp, piece, group)]
    candidates += [ResidentKnobs(b1, fp, piece, group, 1, first_rows=half, first_blocks=fb, later_from=fb + 1,
                                 last_rows=last, bias_after=2)
                   for b1, fb, last in product(shares, (1, 2), sorted({third, half}))]
    return [k for k in dict.fromkeys(candidates) if resident_error(wl, k, target, ep) is None]


def row_tile_space(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize = _PLAIN) -> list[ResidentKnobs]:
    """The resident template's row-tile settings the tuner measures for a 1x1 layer that does not fit SRAM whole
    (C3, C5, C8 on ``default``), around what sweeps of C5 and C8 found best (docs/vdla_compiler.md): every row
    tiling of at least two rows per tile; tile 0 ic-major for all but one input-channel block or five eighths of
    them, the later tiles for one (their columns are loaded ahead, their long oc-major phase stores as it goes);
    first pieces of all or half the output blocks, later ones of half; oc-major groups of all or a quarter of
    them, the last cut to single blocks and its last half of the rows stored apart; the first column split after
    one row or half the rows; the bias first or after the first or the fourth GEMM; for a strided layer the input as
    whole rows or as its used pixels only."""
    cfg = target.config
    _, kb, nb, _ = resident_shape(wl, cfg)
    if kb < 2 or nb < 2:
        return []
    shares = sorted({kb - 1, min(kb - 1, -(-5 * kb // 8))})
    out = []
    for tiles in divisors(wl.oh):
        rows = wl.oh // tiles
        if tiles < 2 or rows < 2:
            continue
        for pixels, first_rows, bias_after, first_piece, group, fb1 in product(
                (False, True) if wl.stride > 1 else (False,), sorted({1, rows // 2}), (0, 1, 4), (nb, nb // 2),
                sorted({nb, max(1, nb // 4)}), shares):
            k = ResidentKnobs(1, first_piece, nb // 2, group, 1, first_rows=first_rows, later_from=(fb1 + 1) // 2,
                              last_rows=rows // 2, row_tiles=tiles, bias_after=bias_after,
                              first_b1=fb1 if fb1 > 1 else 0, used_pixels=pixels)
            if resident_error(wl, k, target, ep) is None:
                out.append(k)
    return out


def default_resident(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize = _PLAIN) -> ResidentKnobs | None:
    """The resident setting compiled without a tuning log, or None when the layer does not fit resident at all.

    For a layer that fits SRAM whole, C11's best of ``whole_space`` on ``default`` (docs/vdla_compiler.md) -- the
    ic-major share at nine sixteenths, the first two blocks in quarter pieces, the last group's last third of the rows
    stored apart -- scaled to the layer, else the first setting that fits; for one that does not,
    :func:`default_row_tiles`."""
    space = whole_space(wl, target, ep)
    if not space:
        return default_row_tiles(wl, target, ep)
    _, kb, _, _ = resident_shape(wl, target.config)
    b1 = min(kb - 1, max(1, 9 * kb // 16))
    last = max(1, wl.oh // 3) if wl.oh > 1 else 0
    fb = min(2, b1)
    want = [k for k in space if (k.b1, k.first_blocks, k.last_rows) == (b1, fb, last)]
    return want[0] if want else space[0]


def default_row_tiles(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize = _PLAIN) -> ResidentKnobs | None:
    """The one row-tile setting of :func:`row_tile_space` compiled without a tuning log for a 1x1 layer that does not
    fit SRAM whole (None when no row tiling fits).

    From the tuner's measurements of C3, C5 and C8 on ``default`` (docs/vdla_compiler.md): the fewest row tiles whose
    two column sets fit (whole rows, else the used pixels of a strided layer) and, beyond two tiles, whose two
    accumulator sets fit too (with two tiles, tile 1 waits once for tile 0's STOREs; with more, every tile would);
    tile 0 ic-major for five eighths of the input blocks (at most all but one); first pieces of half the output
    blocks, oc-major groups of a quarter; the first column split at half a tile's rows; the bias loaded first.  On
    ``default`` this is C8's best of the 96 and within 0.7% of C5's and 0.01% of C3's."""
    cfg = target.config
    _, kb, nb, _ = resident_shape(wl, cfg)
    space = row_tile_space(wl, target, ep)
    if not space:
        return None
    fb1 = min(kb - 1, -(-5 * kb // 8))

    def sets_fit(k: ResidentKnobs) -> bool:
        m, _, _, col = resident_shape(wl, cfg, k.row_tiles, k.used_pixels)
        return double_columns(kb, col, cfg.inp_buff_depth) and (
            k.row_tiles == 2 or double_accumulators(k, m, nb, resident_consts(ep.bias, ep.multiplier),
                                                    cfg.acc_buff_depth))

    def rank(k: ResidentKnobs) -> tuple[int, ...]:
        rows = wl.oh // k.row_tiles
        want = (k.first_b1 or 1, k.first_piece, k.group, k.first_rows, k.bias_after) == (
            fb1 if fb1 > 1 else 1, max(1, nb // 2), max(1, nb // 4), max(1, rows // 2), 0)
        return (not sets_fit(k), k.row_tiles, k.used_pixels, not want)

    return min(space, key=rank)


def estimate_resident_cycles(wl: Conv2dWorkload, k: ResidentKnobs, cfg: HwConfig, ep: Requantize = _PLAIN) -> float:
    """A quick analytic estimate of the resident template's cycles, the counterpart of ``tiling.estimate_cycles``.

    Everything is loaded once, so the body is the larger of the GEMM core's time (MACs plus a pipeline fill per
    GEMM, one per micro-op) and the bus time of the layer's bytes; the edges add the first GEMM's wait (the
    micro-ops, the first input rows and weight piece) and the last STORE (the last group's last rows)."""
    t = cfg.timing
    m, kb, nb, col = resident_shape(wl, cfg, k.row_tiles, k.used_pixels)
    gemms = resident_uops(wl, k, cfg, ep.bias, ep.multiplier)
    compute = wl.core_macs(cfg) / cfg.macs_per_cycle + gemms * (t.gemm_pipeline_depth + t.insn_overhead)
    compute += (nb if ep.bias else 0) * cfg.out_elem_bytes * 4 / cfg.bus_bytes  # the bias LOAD: a compute-module LOAD
    # Nothing is re-loaded and each LOAD is one long burst: the bytes over the bus, no per-row latency.
    memory = (kb * col * cfg.inp_elem_bytes + kb * nb * cfg.wgt_elem_bytes + nb * m * cfg.out_elem_bytes) / cfg.bus_bytes
    first_rows = k.first_rows or wl.oh
    pitch = wl.ow if k.used_pixels else wl.stride * wl.ow
    prologue = ((first_rows * pitch * cfg.inp_elem_bytes + k.first_piece * cfg.wgt_elem_bytes)
                / cfg.bus_bytes + 3 * t.dram_latency)
    last_rows = k.last_rows or wl.oh
    drain = k.last_group * last_rows * wl.ow * cfg.out_elem_bytes / cfg.bus_bytes + t.dram_latency
    return max(compute, memory) + prologue + drain
