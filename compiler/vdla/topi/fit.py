"""Does a conv2d schedule fit a hardware config?  The legality and capacity model of the knobs.

Every buffer the config bounds is accounted for before a schedule is built: the input,
weight and accumulator SRAM tiles of all virtual threads (plus the resident bias) and the
micro-op buffer, whose footprint is the set of distinct micro-op lists the program loads
(derived from the schedule's loop nests and SRAM placement the way ``fold_uop_loop`` and
code generation make them, so it is exact, not an estimate).  :func:`fits` answers for one
knob setting without raising, so an auto-tuner can filter its spaces with it;
:func:`default_knobs` picks the fastest fitting setting, falling back from the requested
virtual threads (split over output-channel or row tiles) to fewer, and raises a
:class:`~vdla.compiler.vdla.target.CapacityError` only when no tiling fits, with a hint naming
the config fields to enlarge and by how much.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product
from math import prod

from vdla_hw.config import ConfigError, HwConfig
from vdla_hw.errors import UnsupportedError
from vdla_hw.isa import LOOP_ITER_W

from .epilogue import Requantize
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_UOP, SCOPE_WGT, CapacityError, VdlaTarget
from ..passes.split_block import dma_cycles, load_overhead, split_count, store_overhead
from .tiling import MAX_LOOP, Conv2dKnobs, Conv2dWorkload, TileGeometry, estimate_cycles, geometry, hoisted

_PLAIN = Requantize()
"""The default epilogue: bias (initialising the accumulators), ReLU, the STORE requantizing."""


Uop = tuple[int, int, int]
Loop = tuple[int, Uop]
"""A loop of a micro-op nest: extent and the (dst, src, wgt) index step per iteration."""


def footprint(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig, ep: Requantize = _PLAIN) -> dict[str, int]:
    """Elements each on-chip buffer needs: SRAM tiles (all virtual threads, plus the resident bias and
    per-channel multiplier of the epilogue ``ep``) and micro-ops (every distinct micro-op list of the
    program, see :func:`uop_count`)."""
    sram = _sram_footprint(wl, k, cfg, ep)
    sram[SCOPE_UOP] = uop_count(wl, k, cfg, ep)
    return sram


def shape_error(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> str | None:
    """Why the knobs do not describe a tiling of the layer (capacity aside), or None."""
    ocb, icb = wl.oc // cfg.block_out, wl.ic_blocks(cfg)
    if k.virtual_threads < 1:
        return f"virtual_threads must be >= 1, got {k.virtual_threads}"
    if k.vt_axis not in ("oc", "oh") or k.loop_order not in ("oc_oh", "oh_oc"):
        return f"vt_axis must be 'oc' or 'oh' and loop_order 'oc_oh' or 'oh_oc', got {k}"
    for name, tile, total in (("oc_tile", k.oc_tile, ocb), ("oh_tile", k.oh_tile, wl.oh), ("ic_tile", k.ic_tile, icb),
                              ("ow_tile", k.tile_ow(wl), wl.ow)):
        if tile <= 0 or total % tile:
            return f"{name}={tile} must divide {total}"
    g = geometry(wl, k, cfg)
    split = g.oc_tiles if k.vt_axis == "oc" else g.oh_tiles
    if split % k.virtual_threads:
        return f"{k.virtual_threads} virtual threads must divide the {split} {k.vt_axis} tiles"
    if k.oh_tile * g.ow_tile > MAX_LOOP or k.oc_tile > MAX_LOOP:
        return f"tile {k.oc_tile}x{k.oh_tile}x{g.ow_tile} exceeds the {LOOP_ITER_W}-bit instruction loop"
    return None


def overflows(wl: Conv2dWorkload, k: Conv2dKnobs, target: VdlaTarget, ep: Requantize = _PLAIN) -> dict[str, int]:
    """The buffers the knobs overflow, with the elements each would need (empty when everything fits)."""
    cfg = target.config
    need = _sram_footprint(wl, k, cfg, ep)
    gemm, epi = _uop_sizes(wl, k, cfg)
    vt, depth = k.virtual_threads, cfg.uop_buff_depth
    # Each thread's GEMM list is distinct (so are its reset lists and the bias lists): the exact
    # count, which builds the lists, is needed only between these bounds.
    bias_lists = _bias_lists(wl, k, cfg) * ep.resident_tiles
    upper = vt * (gemm + (int(ep.alu_imm) + int(not ep.inits_from_bias)) * epi) + bias_lists * epi
    lower = max(vt * gemm, vt * epi, bias_lists * epi)
    if ep.bias_on_store:
        need[SCOPE_UOP] = uop_count(wl, k, cfg, ep)  # exact from the loop extents, nothing enumerated
    else:
        need[SCOPE_UOP] = upper if upper <= depth or lower > depth else uop_count(wl, k, cfg, ep)
    if ep.residual is not None:
        need[SCOPE_UOP] += residual_uops(wl, k, cfg)
    return {scope: n for scope, n in need.items() if n > target.scope(scope).depth}


def fits(target: VdlaTarget | HwConfig, wl: Conv2dWorkload, knobs: Conv2dKnobs, ep: Requantize = _PLAIN) -> str | None:
    """Why ``knobs`` cannot compile ``wl`` for the config (an illegal tiling or the buffers it overflows),
    or None when the schedule fits every buffer.  Cheap and never raises for a tiling it rejects."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget(target)
    try:
        wl.check(tgt.config)
    except UnsupportedError as exc:  # channels this config cannot map: the reason itself
        return str(exc)
    reason = shape_error(wl, knobs, tgt.config)
    if reason is not None:
        return reason
    over = overflows(wl, knobs, tgt, ep)
    what = f"conv2d {wl} with {knobs}"
    return "; ".join(tgt.scope(s).overflow(n, what) or "" for s, n in over.items()) or None


def check_knobs(wl: Conv2dWorkload, k: Conv2dKnobs, target: VdlaTarget, ep: Requantize = _PLAIN) -> None:
    """Raise :class:`UnsupportedError` for knobs that do not tile the layer, :class:`CapacityError` (with
    the config field to enlarge) when a buffer overflows."""
    wl.check(target.config)
    reason = shape_error(wl, k, target.config)
    if reason is not None:
        raise UnsupportedError(reason, hint="choose knobs from knob_space(), or leave them to the compiler")
    over = overflows(wl, k, target, ep)
    for scope, tiles in over.items():
        target.scope(scope).check_fits(tiles, f"conv2d {wl} with {k}")


def knob_space(wl: Conv2dWorkload, target: VdlaTarget, virtual_threads: tuple[int, ...] = (1, 2),
               ep: Requantize = _PLAIN) -> list[Conv2dKnobs]:
    """Every knob setting that tiles the layer and fits the config (the auto-tuner's search space)."""
    cfg = target.config
    wl.check(cfg)
    ocb, icb = wl.oc // cfg.block_out, wl.ic_blocks(cfg)
    out = []
    for oc_t, oh_t, ic_t, vt, axis, order in product(divisors(ocb), divisors(wl.oh), divisors(icb), virtual_threads,
                                                     ("oc", "oh"), ("oc_oh", "oh_oc")):
        k = Conv2dKnobs(oc_t, oh_t, ic_t, vt, axis, order)
        if shape_error(wl, k, cfg) is None and not overflows(wl, k, target, ep):
            out.append(k)
    return out


def default_knobs(wl: Conv2dWorkload, target: VdlaTarget, virtual_threads: int = 2,
                  ep: Requantize = _PLAIN) -> Conv2dKnobs:
    """The fitting knobs with the lowest estimated cycles for ``virtual_threads`` threads (split over
    output-channel or row tiles, whichever is faster), else for fewer threads down to one.

    Raises :class:`CapacityError` when no tiling fits, naming the config fields to enlarge.
    """
    if virtual_threads < 1:
        raise UnsupportedError(f"virtual_threads must be >= 1, got {virtual_threads}")
    for vt in range(virtual_threads, 0, -1):
        space = knob_space(wl, target, (vt,), ep)
        if space:
            return min(space, key=lambda k: (estimate_cycles(wl, k, target.config, ep), -k.oh_tile))
    raise _no_tiling(wl, target, ep)


def _no_tiling(wl: Conv2dWorkload, target: VdlaTarget, ep: Requantize) -> UnsupportedError:
    """The error for a layer no single-thread tiling fits: the tiling that needs the least extra
    buffer, and the config change that makes it fit."""
    cfg = target.config
    best: tuple[int, Conv2dKnobs, dict[str, int]] | None = None
    shape_reasons = []
    ocb, icb = wl.oc // cfg.block_out, wl.ic_blocks(cfg)
    for oc_t, oh_t, ic_t, order in product(divisors(ocb), divisors(wl.oh), divisors(icb), ("oc_oh", "oh_oc")):
        k = Conv2dKnobs(oc_t, oh_t, ic_t, 1, "oc", order)
        reason = shape_error(wl, k, cfg)
        if reason is not None:
            shape_reasons.append(reason)
            continue
        over = overflows(wl, k, target, ep)
        grow = sum(target.scope(s).log_size_for(n) - getattr(cfg, target.scope(s).field) for s, n in over.items())
        if best is None or grow < best[0]:
            best = (grow, k, over)
    if best is None:
        return UnsupportedError(f"conv2d {wl} has no VDLA tiling: {shape_reasons[0]}",
                                hint="run this layer on the CPU (the graph compiler does so by itself)")
    _, k, over = best
    need = ", ".join(f"{n} {s} tiles ({n * target.scope(s).elem_bytes} B; the buffer holds {target.scope(s).depth})"
                     for s, n in over.items())
    changes = {target.scope(s).field: target.scope(s).log_size_for(n) for s, n in over.items()}
    enlarge = " and ".join(f"{f} from {getattr(cfg, f)} to {v}" for f, v in changes.items())
    try:
        cfg.replace(name=f"{cfg.name}-enlarged", **changes)
        valid = ""
    except ConfigError as exc:
        valid = f" (that alone is not a valid config: {exc})"
    return CapacityError(
        f"conv2d {wl} fits no tiling on config {cfg.name!r}: even the smallest, {k} with one virtual thread, "
        f"needs {need} (a tile spans whole output rows of {wl.ow} pixels)",
        hint=f"enlarge {enlarge}{valid}, or run this layer on the CPU")


def uop_count(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig, ep: Requantize = _PLAIN) -> int:
    """Micro-ops the conv2d program loads into the micro-op buffer: the total length of its distinct
    micro-op lists, derived from the schedule's loop nests and SRAM placement without lowering.

    Per virtual thread: the GEMM list, the accumulator reset (none when ``ep.inits_from_bias``: a MOV
    of the bias rows, the bias-add list, initialises the accumulators), with ``ep.alu_imm`` the immediate
    ALU epilogue (ReLU, shift and clip share one list: the operation is an instruction field; without it
    the STORE requantizes and no immediate ALU op runs) and, with a bias, one bias-add
    list per output-channel tile the thread computes (its micro-ops name that tile's bias row), and
    likewise one multiply list per tile with a per-channel multiplier (``ep.multiplier``).  Code
    generation loads each distinct list once, so equal lists of different instructions count once:
    a list is its offsets from its first micro-op (a pattern) plus that first micro-op.
    """
    g = geometry(wl, k, cfg)
    if ep.bias_on_store:
        # fold_bias_store: per thread, the first chunk's GEMM splits into the overwriting first step
        # and the guarded rest; later chunks keep the whole list (which may equal the first step's:
        # no reduction loop, or every reduction loop folded into the instruction); the STORE adds
        # the bias (no ALU list).  The threads' accumulator bases differ, so no list is shared
        # between them, and the rest never starts at the first micro-op as the others do.
        first, rest = _split_sizes(wl, k, cfg)
        whole = _uop_sizes(wl, k, cfg)[0] if g.ic_chunks > 1 else 0
        if whole == first and _uop_lists(wl, k, cfg)[0] == _first_list(wl, k, cfg):
            whole = 0  # the later chunks' list is the first step's (code generation loads it once)
        if ep.splits_edges:
            return sum(_split_lists(wl, k, cfg, t, first, rest, whole) for t in range(k.virtual_threads))
        return k.virtual_threads * (first + rest + whole)
    inp, wgt, acc = _tile_sizes(wl, k, g)
    inp_copies, wgt_copies = _copies(wl, k, cfg)
    gemm, epi = _uop_lists(wl, k, cfg)
    flat = tuple((d, 0, 0) for d, _, _ in epi)
    patterns: dict[tuple[Uop, ...], int] = {}
    ids = [patterns.setdefault(tuple(p), len(patterns)) for p in (gemm, flat, epi)]
    sizes = [len(gemm), len(epi), len(epi)]
    lists: set[tuple[int, Uop]] = set()
    for t in range(k.virtual_threads):
        # allocate_sram stacks the resident bias first, the multiplier next, then thread 0's buffers
        # below thread 1's.
        a0 = g.ocb * ep.resident_tiles + t * acc
        lists.add((ids[0], (a0, t * inp if inp_copies > 1 else 0, t * wgt if wgt_copies > 1 else 0)))
        if not ep.inits_from_bias:
            lists.add((ids[1], (a0, 0, 0)))   # reset (a bias initialisation's MOV replaces it)
        if ep.alu_imm:
            lists.add((ids[1], (a0, a0, 0)))  # immediate ALU ops: src is the buffer's base
        if ep.bias:
            lists.update((ids[2], (a0, o * k.oc_tile, 0)) for o in _thread_oc_tiles(k, g, t))
        if ep.multiplier:
            base = g.ocb if ep.bias else 0
            lists.update((ids[2], (a0, base + o * k.oc_tile, 0)) for o in _thread_oc_tiles(k, g, t))
    size_of = {pid: size for pid, size in zip(ids, sizes)}
    return sum(size_of[pid] for pid, _ in lists)


def residual_uops(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> int:
    """An upper bound of the micro-ops a fused residual add adds (``Requantize.residual``): per thread, the
    skip's identity GEMM and its reset, the moved tile's scale, the add, the rounding term -- each a list
    over the output tile -- and the conv value's scale (the conv's own immediate ops are in ``uop_count``)."""
    epi = _uop_sizes(wl, k, cfg)[1]
    return k.virtual_threads * 6 * epi


def _split_lists(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig, t: int, first: int, rest: int, whole: int) -> int:
    """Micro-ops of thread ``t``'s distinct lists after ``split_prologue_load`` and ``split_drain_store``.

    The prologue splits the first GEMM step of each thread whose own weight LOAD precedes the first
    GEMM (every thread, or thread 0 when the threads share one weight copy) into groups along its
    outer instruction loop, when that loop walks the weights (output-channel blocks); the drain
    splits each thread's last GEMM (the whole list with several chunks, else the guarded rest, else
    the first step) along its outer loop, when that loop walks the accumulators; a first step that
    is also the thread's last GEMM is the drain's.  The group count is
    :func:`~vdla.compiler.vdla.passes.split_block.split_count`'s, from the same config timing; when the
    prologue splits, ``split_prologue_rest`` cuts the first tile's guarded rest into the same groups.  A
    group of one iteration is refolded (its own, shorter list per block); a group of several keeps
    the loop and the whole list shifted.  The lists are described (:class:`UopList`, offsets from
    the thread's buffers, which no other thread shares) and equal ones count once, as code generation
    loads them (:func:`distinct_length` enumerates only lists alike in length and first micro-op);
    a list no instruction uses any more is not loaded."""
    g = geometry(wl, k, cfg)
    tgt = VdlaTarget(cfg)
    limits = (cfg.acc_buff_depth, cfg.inp_buff_depth, cfg.wgt_buff_depth)
    loops = [lp for lp in _gemm_loops(wl, k, cfg) if lp[0] > 1]
    f_loops = [lp for lp in loops if lp[1][0] != 0]
    nests = {"F": f_loops, "R": loops, "W": loops}
    tiles = g.oc_tiles * g.oh_tiles * g.ow_tiles // k.virtual_threads
    same = whole == 0 and g.ic_chunks > 1  # the later chunks run the first step's list
    uses = {"F": tiles * (g.ic_chunks if same else 1), "R": tiles if rest else 0,
            "W": tiles * (g.ic_chunks - 1) if whole else 0}

    def folded(nest: list[Loop], guarded: bool) -> int:
        n = 0
        for extent, factors in nest[:2]:
            if (guarded and factors[0] == 0) or extent > MAX_LOOP or not all(0 <= f < lim for f, lim in zip(factors, limits)):
                break
            n += 1
        return n

    def listing(kind: str, nest: list[Loop], at: Uop = (0, 0, 0)) -> UopList:
        """The micro-op list of ``nest`` (folded as ``fold_uop_loop`` folds it) from offset ``at``; the
        guarded rest keeps the points where some reduction index is off 0."""
        return UopList(tuple(nest[folded(nest, kind == "R"):]), at, kind == "R")

    lists = {kind: listing(kind, nests[kind]) for kind in ("F", "R", "W")}
    pieces: set[UopList] = set()

    def split(kind: str, groups: int) -> None:
        (n, step), nest = nests[kind][0], nests[kind]
        if groups == n:
            uses[kind] -= 1
            pieces.update(listing(kind, nest[1:], (b * step[0], b * step[1], b * step[2])) for b in range(n))
        else:
            m = n // groups
            whole_list = lists[kind]
            pieces.update(UopList(whole_list.loops, tuple(a + j * m * f for a, f in zip(whole_list.at, step)),
                                  whole_list.guarded) for j in range(1, groups))

    copies = _copies(wl, k, cfg)[1]
    last = "W" if whole else ("F" if g.ic_chunks > 1 or not rest else "R")
    if ((t == 0 or copies > 1) and f_loops and folded(f_loops, False) and f_loops[0][1][2] != 0
            and not (last == "F" and uses["F"] == 1)):
        work = dma_cycles(tgt, _tile_sizes(wl, k, g)[1], cfg.wgt_elem_bytes)
        pro = split_count(f_loops[0][0], work, load_overhead(tgt), copies)
        if pro > 1:
            split("F", pro)
            # split_prologue_rest: the first tile's guarded rest in the same groups, unless it is the drain's
            if (rest and uses["R"] > 0 and not (last == "R" and uses["R"] == 1) and loops[0] == f_loops[0]
                    and folded(loops, True)):
                split("R", pro)
    nest = nests[last]
    if nest and folded(nest, last == "R") and nest[0][1][0] != 0:
        iters = prod(e for e, _ in loops) if last == "W" else (
            prod(e for e, _ in loops) - prod(e for e, _ in f_loops) if last == "R" else prod(e for e, _ in f_loops))
        drain = split_count(nest[0][0], iters, store_overhead(tgt), k.virtual_threads)
        if drain > 1:
            split(last, drain)
    return distinct_length(pieces | {lists[kind] for kind in lists if uses[kind] > 0})


@dataclass(frozen=True)
class UopList:
    """A micro-op list described, not enumerated: the loops left after folding (outermost first), the
    offset of its first point, and whether only the points with some reduction index off 0 are kept
    (the guarded rest of ``fold_bias_store``).  Its length and first micro-op are closed-form, so
    distinct lists are told apart without building them; only lists equal in both are enumerated."""

    loops: tuple[Loop, ...]
    at: Uop
    guarded: bool

    @property
    def length(self) -> int:
        n = prod(e for e, _ in self.loops)
        return n - prod(e for e, f in self.loops if f[0] != 0) if self.guarded else n

    def first(self) -> Uop | None:
        """The first micro-op (None for an empty list): for the guarded rest, the point whose innermost
        reduction index is 1 and every other index 0 (the first off 0 in loop order)."""
        if not self.guarded:
            return self.at
        red = [f for _, f in self.loops if f[0] == 0]
        return None if not red else tuple(a + f for a, f in zip(self.at, red[-1]))  # type: ignore[return-value]

    def uops(self) -> tuple[Uop, ...]:
        points: list[tuple[int, int, int, bool]] = [(*self.at, False)]
        for extent, (fd, fs, fw) in self.loops:
            points = [(d + i * fd, s_ + i * fs, w + i * fw, off or (fd == 0 and i > 0))
                      for d, s_, w, off in points for i in range(extent)]
        return tuple((d, s_, w) for d, s_, w, off in points if off or not self.guarded)


def distinct_length(lists: set[UopList]) -> int:
    """Total length of the distinct micro-op lists among ``lists`` (equal lists count once, as code
    generation loads them): lists of different length or first micro-op differ; only those alike in
    both are enumerated and compared."""
    groups: dict[tuple[int, Uop | None], list[UopList]] = {}
    for lst in lists:
        if lst.length:
            groups.setdefault((lst.length, lst.first()), []).append(lst)
    total = 0
    for (length, _), alike in groups.items():
        total += length * (1 if len(alike) == 1 else len({lst.uops() for lst in alike}))
    return total


def _sram_footprint(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig, ep: Requantize) -> dict[str, int]:
    g = geometry(wl, k, cfg)
    inp, wgt, acc = _tile_sizes(wl, k, g)
    inp_copies, wgt_copies = _copies(wl, k, cfg)
    need = {SCOPE_INP: inp_copies * inp, SCOPE_WGT: wgt_copies * wgt,
            SCOPE_ACC: k.virtual_threads * acc + g.ocb * ep.resident_tiles}
    r = ep.residual
    if r is not None:
        # A fused residual add: per thread a skip tile in the input buffer and its moved copy in the
        # accumulators (one output tile each), the identity weight tile, and three resident constant tiles.
        vt = k.virtual_threads
        need[SCOPE_INP] += vt * acc
        need[SCOPE_WGT] += vt
        need[SCOPE_ACC] += vt * acc + (3 if r.consts else 0)
    return need


def _tile_sizes(wl: Conv2dWorkload, k: Conv2dKnobs, g: TileGeometry) -> tuple[int, int, int]:
    """SRAM tiles of one thread's input, weight and accumulator buffers."""
    return g.inp_blocks * g.in_rows * g.in_cols, k.oc_tile * k.ic_tile * wl.kh * wl.kw, k.oc_tile * k.oh_tile * g.ow_tile


def _copies(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> tuple[int, int]:
    """Copies of the input and weight buffers: one per thread, but a hoisted copy outside the
    virtual-thread loop (the threads split the inner axis) is shared."""
    hoist = hoisted(wl, k, cfg)
    outer_axis = "oc" if k.loop_order == "oc_oh" else "oh"
    shared = hoist is not None and k.vt_axis != outer_axis
    vt = k.virtual_threads
    return (1 if shared and hoist == "inp" else vt), (1 if shared and hoist == "wgt" else vt)


def _thread_oc_tiles(k: Conv2dKnobs, g: TileGeometry, t: int) -> range:
    """The output-channel tiles thread ``t`` computes."""
    if k.vt_axis == "oc" and k.virtual_threads > 1:
        return range(t, g.oc_tiles, k.virtual_threads)
    return range(g.oc_tiles)


def _bias_lists(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> int:
    g = geometry(wl, k, cfg)
    return sum(len(_thread_oc_tiles(k, g, t)) for t in range(k.virtual_threads))


def _gemm_loops(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> list[Loop]:
    """The GEMM micro-op nest's loops, outermost first (dst step 0: a reduction loop)."""
    g = geometry(wl, k, cfg)
    row_step = 1 if wl.kh == 1 else wl.stride  # a 1x1 kernel reads a stage of just the rows it uses
    ow, taps = g.ow_tile, wl.kh * wl.kw
    ohw = k.oh_tile * ow
    oc_src = g.in_rows * g.in_cols if wl.depthwise else 0  # a depthwise output block reads its own input block
    return [(k.oc_tile, (ohw, oc_src, k.ic_tile * taps)), (k.oh_tile, (ow, row_step * g.in_cols, 0)),
            (ow, (1, wl.stride, 0)), (k.ic_tile, (0, g.in_rows * g.in_cols, taps)),
            (wl.kh, (0, g.in_cols, wl.kw)), (wl.kw, (0, 1, 1))]


def _uop_nests(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> tuple[list[Loop], list[Loop]]:
    """The loops enumerated into the GEMM list and into the epilogue lists (reset and ALU over the
    output tile; the bias-add's src steps one bias row per output-channel block)."""
    g = geometry(wl, k, cfg)
    ow = g.ow_tile
    ohw = k.oh_tile * ow
    gemm = _unfolded(_gemm_loops(wl, k, cfg), (cfg.acc_buff_depth, cfg.inp_buff_depth, cfg.wgt_buff_depth))
    epi = _unfolded([(k.oc_tile, (ohw, 1, 0)), (k.oh_tile, (ow, 0, 0)), (ow, (1, 0, 0))],
                    (cfg.acc_buff_depth, cfg.acc_buff_depth, cfg.wgt_buff_depth))
    return gemm, epi


def _split_sizes(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> tuple[int, int]:
    """Lengths of the GEMM list split as ``fold_bias_store`` splits it: the overwriting first step
    (the reduction loops, whose dst step is 0, at 0; its other loops fold as ``fold_uop_loop``
    folds them) and the guarded rest (every point with a reduction index off 0; a guarded
    reduction loop is never folded into the instruction loops)."""
    limits = (cfg.acc_buff_depth, cfg.inp_buff_depth, cfg.wgt_buff_depth)
    loops = [lp for lp in _gemm_loops(wl, k, cfg) if lp[0] > 1]
    first = prod(extent for extent, _ in _unfolded([lp for lp in loops if lp[1][0] != 0], limits))
    folded = 0
    for extent, factors in loops[:2]:
        if factors[0] == 0 or extent > MAX_LOOP or not all(0 <= f < lim for f, lim in zip(factors, limits)):
            break
        folded += 1
    inner = loops[folded:]
    rest = prod(extent for extent, _ in inner) - prod(extent for extent, f in inner if f[0] != 0)
    return first, rest


def _first_list(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> list[Uop]:
    """The overwriting first step's micro-op offsets (see :func:`_split_sizes`)."""
    limits = (cfg.acc_buff_depth, cfg.inp_buff_depth, cfg.wgt_buff_depth)
    uops = [(0, 0, 0)]
    for extent, (fd, fs, fw) in _unfolded([lp for lp in _gemm_loops(wl, k, cfg) if lp[0] > 1 and lp[1][0] != 0], limits):
        uops = [(d + i * fd, s + i * fs, w + i * fw) for d, s, w in uops for i in range(extent)]
    return uops


def _unfolded(loops: list[Loop], limits: Uop) -> list[Loop]:
    """The loops of a micro-op nest left to enumerate, as ``fold_uop_loop`` decides: one-iteration
    loops vanish, up to two outer loops become the instruction's hardware loops."""
    loops = [lp for lp in loops if lp[0] > 1]
    folded = 0
    for extent, factors in loops[:2]:
        if extent > MAX_LOOP or not all(0 <= f < lim for f, lim in zip(factors, limits)):
            break
        folded += 1
    return loops[folded:]


def _uop_sizes(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> tuple[int, int]:
    """Lengths of the GEMM list and of an epilogue list."""
    return tuple(prod(extent for extent, _ in nest) for nest in _uop_nests(wl, k, cfg))  # type: ignore[return-value]


def _uop_lists(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> tuple[list[Uop], list[Uop]]:
    """The (dst, src, wgt) offsets of the GEMM list and of an epilogue list (code generation's order)."""
    out = []
    for nest in _uop_nests(wl, k, cfg):
        uops = [(0, 0, 0)]
        for extent, (fd, fs, fw) in nest:
            uops = [(d + i * fd, s + i * fs, w + i * fw) for d, s, w in uops for i in range(extent)]
        out.append(uops)
    return out[0], out[1]


def divisors(n: int) -> list[int]:
    """The divisors of ``n``, ascending."""
    return [d for d in range(1, n + 1) if n % d == 0]


def tiling_edges(wl: Conv2dWorkload, k: Conv2dKnobs, cfg: HwConfig) -> float:
    """The cycles ``estimate_cycles`` leaves out of a tiling: the wait for the first tile's input and first output
    block's weights before the first GEMM, and the last output block's STORE after the last one (the split
    prologue and drain)."""
    g = geometry(wl, k, cfg)
    t = cfg.timing
    first = (g.inp_blocks * g.in_rows * g.in_cols * cfg.inp_elem_bytes + k.ic_tile * wl.kh * wl.kw * cfg.wgt_elem_bytes)
    last = k.oh_tile * g.ow_tile * cfg.out_elem_bytes
    return (first + last) / cfg.bus_bytes + 3 * t.dram_latency
