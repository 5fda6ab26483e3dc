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


def resident_shape(wl: Conv2dWorkload, cfg: HwConfig, row_tiles: int = 1) -> tuple[int, int, int, int]:
    """(pixels ``m`` of a row tile, input-channel blocks ``kb``, output-channel blocks ``nb``, input SRAM tiles per
    ic block and row tile ``col``) of the resident 1x1 template: an ic block's input is its used rows at a pitch
    of ``stride * ow`` tiles, so pixel ``p`` sits at ``stride * p`` in its column."""
    rows = wl.oh // row_tiles
    return rows * wl.ow, wl.ic // cfg.block_in, wl.oc // cfg.block_out, rows * wl.stride * wl.ow


def resident_uops(wl: Conv2dWorkload, k: ResidentKnobs, cfg: HwConfig) -> int:
    """Micro-ops the resident template loads: per row tile one per ic-major GEMM piece and one per oc-major group
    and reduction block; one more for a first piece split by rows, a reduction's worth for a last group split."""
    _, kb, nb, _ = resident_shape(wl, cfg, k.row_tiles)
    groups = len(range(0, nb - k.group, k.group)) + k.group // k.last_group
    per_tile = k.first_blocks * (nb // k.first_piece) + (k.b1 - k.first_blocks) * (nb // k.piece) + groups * (kb - k.b1)
    return k.row_tiles * per_tile + (1 if k.first_rows else 0) + (kb - k.b1 if k.last_rows else 0)


def resident_footprint(wl: Conv2dWorkload, k: ResidentKnobs, cfg: HwConfig, ep: Requantize = _PLAIN) -> dict[str, int]:
    """Elements each on-chip buffer holds under the resident template: the input columns (one row tile's, and with
    several tiles also the next tile's ic-major ones beside the oc-major ones still read), every weight tile,
    one row tile's accumulators (plus the bias) and the micro-ops."""
    m, kb, nb, col = resident_shape(wl, cfg, k.row_tiles)
    columns = kb if k.row_tiles == 1 else 2 * kb - k.b1
    return {SCOPE_INP: columns * col, SCOPE_WGT: kb * nb, SCOPE_ACC: m * nb + (nb if ep.bias else 0),
            SCOPE_UOP: resident_uops(wl, k, cfg)}


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
    if not ep.on_store or ep.multiplier or ep.residual is not None or (ep.bias and not ep.bias_on_store):
        return f"the resident template needs the epilogue on the STORE (bias, ReLU, shift, clip only), got {ep}"
    if k.row_tiles < 1 or wl.oh % k.row_tiles:
        return f"row_tiles={k.row_tiles} must divide the {wl.oh} output rows"
    m, kb, nb, _ = resident_shape(wl, cfg, k.row_tiles)
    if k.virtual_threads != 1:
        return f"the resident template runs one stream, virtual_threads must be 1, got {k.virtual_threads}"
    if not (0 < k.b1 < kb):
        return f"b1={k.b1} must be in 1..{kb - 1} (the layer has {kb} input-channel blocks)"
    if not 1 <= k.first_blocks <= k.b1:
        return f"first_blocks={k.first_blocks} must be in 1..b1={k.b1}"
    for name, v in (("first_piece", k.first_piece), ("piece", k.piece), ("group", k.group)):
        if v <= 0 or nb % v:
            return f"{name}={v} must divide the {nb} output-channel blocks"
    if k.last_group <= 0 or k.group % k.last_group:
        return f"last_group={k.last_group} must divide group={k.group}"
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
    """The resident template's settings the tuner measures (empty when the layer does not fit resident).

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


def default_resident(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize = _PLAIN) -> ResidentKnobs | None:
    """The resident setting compiled without a tuning log (None when the layer does not fit resident): C11's best
    of ``resident_space`` on ``default`` (docs/vdla_compiler.md) -- the ic-major share at nine sixteenths, the first
    two blocks in quarter pieces, the last group's last third of the rows stored apart -- scaled to the layer, else
    the first setting of the space that fits."""
    space = resident_space(wl, target, ep)
    if not space:
        return None
    _, kb, _, _ = resident_shape(wl, target.config)
    b1 = min(kb - 1, max(1, 9 * kb // 16))
    last = max(1, wl.oh // 3) if wl.oh > 1 else 0
    fb = min(2, b1)
    want = [k for k in space if (k.b1, k.first_blocks, k.last_rows) == (b1, fb, last)]
    return want[0] if want else space[0]


def estimate_resident_cycles(wl: Conv2dWorkload, k: ResidentKnobs, cfg: HwConfig, ep: Requantize = _PLAIN) -> float:
    """A quick analytic estimate of the resident template's cycles, the counterpart of ``tiling.estimate_cycles``.

    Everything is loaded once, so the body is the larger of the GEMM core's time (MACs plus a pipeline fill per
    GEMM, one per micro-op) and the bus time of the layer's bytes; the edges add the first GEMM's wait (the
    micro-ops, the first input rows and weight piece) and the last STORE (the last group's last rows)."""
    t = cfg.timing
    m, kb, nb, col = resident_shape(wl, cfg, k.row_tiles)
    gemms = resident_uops(wl, k, cfg)
    compute = wl.core_macs(cfg) / cfg.macs_per_cycle + gemms * (t.gemm_pipeline_depth + t.insn_overhead)
    compute += (nb if ep.bias else 0) * cfg.out_elem_bytes * 4 / cfg.bus_bytes  # the bias LOAD: a compute-module LOAD
    # Nothing is re-loaded and each LOAD is one long burst: the bytes over the bus, no per-row latency.
    memory = (kb * col * cfg.inp_elem_bytes + kb * nb * cfg.wgt_elem_bytes + nb * m * cfg.out_elem_bytes) / cfg.bus_bytes
    first_rows = k.first_rows or wl.oh
    prologue = ((first_rows * wl.stride * wl.ow * cfg.inp_elem_bytes + k.first_piece * cfg.wgt_elem_bytes)
                / cfg.bus_bytes + 3 * t.dram_latency)
    last_rows = k.last_rows or wl.oh
    drain = k.last_group * last_rows * wl.ow * cfg.out_elem_bytes / cfg.bus_bytes + t.dram_latency
    return max(compute, memory) + prologue + drain
