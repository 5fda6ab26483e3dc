"""Block splitting on the flat instruction stream: what ``split_prologue_load`` and
``split_drain_store`` share.

After ``unroll_stream`` a program is ``Allocate(arenas, SeqStmt(instructions))``.  Two splits keep
an instruction's effect and cut it into consecutive pieces:

- a GEMM scope along its outermost instruction loop (an output-channel block, or an output row):
  piece ``b`` is the scope with that loop's variable set to ``b``.  The pieces run the same
  micro-ops in the same order as the whole instruction, so splitting alone changes no result;
  a GEMM has no base index, so every piece is its own micro-op list (shifted by ``b`` times
  the loop's factors), which code generation loads beside the others;
- a 2-D DMA into groups of consecutive rows (its y extent divided evenly).

Which pieces then run when is the passes' business: they move pieces in the stream, and
``insert_dep_token`` (which synchronizes by SRAM ranges) makes each piece wait only for what it
really touches.
"""

from __future__ import annotations

from vdla_hw.isa import Module

from vdla.compiler.tir import Allocate, AttrStmt, For, IfThenElse, IntImm, PrimFunc, SeqStmt, Stmt
from vdla.compiler.tir.functor import free_vars, substitute

from ..decode import Range, as_dma, as_uop_insn, module_and_ranges
from ..stmt import UOP_LOOP, UOP_SCOPE, dma_load, dma_store
from ..target import VdlaTarget
from .common import flat_stream
from .fold_uop_loop import fold_uop_scope
from .unroll_stream import simplify_uop_nest

SPLIT_ATTR = "vdla.split_edges"
"""PrimFunc attribute: True lets ``split_prologue_load`` and ``split_drain_store`` split the prologue and
the drain (a schedule opts in: its fit model must count the pieces' micro-op lists; absent = False)."""


def rebuild_stream(func: PrimFunc, arenas: list, insns: list[Stmt]) -> PrimFunc:
    stream: Stmt = SeqStmt(tuple(insns))
    for buf in reversed(arenas):
        stream = Allocate(buf, stream)
    return func.with_body(stream)


def split_enabled(func: PrimFunc) -> bool:
    return bool(dict(func.attrs).get(SPLIT_ATTR, False))


def first_gemm(insns: list[Stmt]) -> int | None:
    """Index of the flat stream's first GEMM instruction (where the prologue ends), or None."""
    return next((i for i, s in enumerate(insns) if (u := as_uop_insn(s)) is not None and u.kind == "gemm"), None)


def split_gemm(stmt: Stmt, target: VdlaTarget, groups: int | None = None) -> list[Stmt] | None:
    """The GEMM scope ``stmt`` as ``groups`` scopes (default: one per iteration) over consecutive
    iterations of its outermost instruction loop, in order; None when it is not a GEMM, has no such
    loop of two or more iterations, ``groups`` does not divide it, or that loop guards the nest.

    A piece of one iteration is refolded (``fold_uop_scope``: the loop under the removed one becomes an
    instruction loop, so its micro-op list is a fraction of the whole list's); a piece of several keeps
    the loop, shorter, and the whole list shifted to its first iteration."""
    insn = as_uop_insn(stmt)
    if insn is None or insn.kind != "gemm" or insn.reset or not insn.loops or insn.loops[0][0] < 2:
        return None
    assert isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE
    outer = stmt.body
    if not (isinstance(outer, For) and UOP_LOOP in dict(outer.annotations)):
        return None
    n = insn.loops[0][0]
    groups = n if groups is None else groups
    if groups < 2 or n % groups:
        return None
    var = outer.loop_var
    inner = outer.body
    while isinstance(inner, For):
        inner = inner.body
    if isinstance(inner, IfThenElse) and var in free_vars(inner.condition):
        return None  # a guard over this loop: the pieces would not be the same micro-op lists
    step = n // groups
    if step == 1:
        return [fold_uop_scope(AttrStmt(stmt.node, stmt.key, stmt.value,
                                        simplify_uop_nest(substitute(outer.body, {var: IntImm(b, var.dtype)}))), target)
                for b in range(n)]
    return [AttrStmt(stmt.node, stmt.key, stmt.value,
                     simplify_uop_nest(For(var, outer.min, IntImm(step, outer.extent.dtype), outer.kind,
                                           substitute(outer.body, {var: var + IntImm(g * step, var.dtype)}),
                                           outer.annotations)))
            for g in range(groups)]


def split_count(blocks: int, work: int, overhead: int, streams: int = 1) -> int:
    """How many pieces to cut ``blocks`` into (a divisor, 1 = do not split): the first piece's share of
    ``work`` cycles is what waits, each piece costs ``overhead`` cycles more on a module that
    ``streams`` such splits share, so the count minimises ``work / G + G * overhead * streams``."""
    options = [g for g in range(1, blocks + 1) if blocks % g == 0]
    return min(options, key=lambda g: (work / g + g * overhead * max(1, streams), g))


def store_overhead(target: VdlaTarget) -> int:
    """Fixed cycles of one STORE besides its beats: pipeline fill and the last write response."""
    t = target.config.timing
    return t.insn_overhead + 2 + t.store_pipeline_depth + t.queue_latency + t.dram_latency


def load_overhead(target: VdlaTarget) -> int:
    """Fixed cycles of one LOAD besides its beats: the instruction and the first read's latency."""
    t = target.config.timing
    return t.insn_overhead + t.read_latency


def dma_cycles(target: VdlaTarget, tiles: int, elem_bytes: int) -> int:
    """Bus cycles of ``tiles`` elements of ``elem_bytes`` bytes (one beat per ``bus_bytes``)."""
    cfg = target.config
    return -(-tiles * elem_bytes // cfg.bus_bytes) * cfg.timing.dram_beat_cycles


def split_dma(stmt: Stmt, pieces: int) -> list[Stmt] | None:
    """The LOAD or STORE ``stmt`` as ``pieces`` DMAs, in order: of consecutive row groups (its y extent
    divided evenly), or of one row's consecutive tile groups when it moves one row; None when it does
    not divide evenly or pads rows (top or bottom zero rows belong to no group; a one-row split
    pads nothing)."""
    dma = as_dma(stmt)
    if dma is None or pieces < 2:
        return None
    y0, y1, x0, x1 = dma.pad
    if y0 or y1:
        return None
    if dma.y_size == 1:
        if x0 or x1 or dma.x_size % pieces:
            return None
        rows, cols, width = 1, dma.x_size // pieces, dma.x_size // pieces  # one row: tile groups along x
        step_sram, step_dram = cols, cols
    else:
        if dma.y_size % pieces:
            return None
        rows, cols, width = dma.y_size // pieces, dma.x_size, x0 + dma.x_size + x1
        step_sram, step_dram = rows * width, rows * dma.x_stride
    out: list[Stmt] = []
    for g in range(pieces):
        s0, d0 = dma.sram_base + g * step_sram, dma.dram_base + g * step_dram
        if dma.load:
            out.append(dma_load(dma.sram, s0, dma.dram, d0, rows, cols, dma.x_stride, dma.pad))
        else:
            bias = None
            if dma.bias is not None:  # one bias tile per DRAM row: a one-row split keeps its row's
                bias = (dma.bias[0], dma.bias[1] + (g * rows * dma.bias[2] if dma.y_size > 1 else 0), dma.bias[2])
            out.append(dma_store(dma.dram, d0, dma.sram, s0,
                                 rows, cols, dma.x_stride, dma.requant, bias))
    return out


def drain_pairs(insns: list[Stmt], info: list[tuple[Module, list[Range], list[Range]]]) -> list[tuple[int, int]]:
    """``(producer GEMM, STORE)`` for every STORE after the stream's last LOAD: its producer is the newest
    compute instruction writing what it reads, when that is a GEMM with instruction loops (one STORE
    per producer).  A STORE whose DRAM buffer some LOAD reads is left out (moving it would reorder
    the two in DRAM, which no token orders)."""
    last_load = max((i for i, (m, _, _) in enumerate(info) if m == Module.LOAD), default=-1)
    loaded = {d.dram for s, (m, _, _) in zip(insns, info) if m == Module.LOAD and (d := as_dma(s)) is not None}
    pairs: list[tuple[int, int]] = []
    for j in range(last_load + 1, len(insns)):
        module, reads, _ = info[j]
        dma = as_dma(insns[j])
        if module != Module.STORE or dma is None or dma.dram in loaded or dma.y_size * dma.x_size < 2:
            continue
        producer = next((i for i in range(j - 1, -1, -1) if info[i][0] == Module.COMPUTE
                         and any(overlap(w, r) for w in info[i][2] for r in reads)), None)
        insn = None if producer is None else as_uop_insn(insns[producer])
        if insn is None or insn.kind != "gemm" or not insn.loops or any(p == producer for p, _ in pairs):
            continue
        pairs.append((producer, j))
    return pairs


def ranges_in(ranges: list[Range], scope: str) -> list[Range]:
    return [r for r in ranges if r[0] == scope]


def covers(outer: Range, inner: Range) -> bool:
    """Whether range ``outer`` contains range ``inner`` (same scope)."""
    return outer[0] == inner[0] and outer[1] <= inner[1] and inner[2] <= outer[2]


def overlap(a: Range, b: Range) -> bool:
    return a[0] == b[0] and a[1] < b[2] and b[1] < a[2]


def piece_ranges(pieces: list[Stmt]) -> list[tuple[list[Range], list[Range]]]:
    """(reads, writes) of each piece."""
    out = []
    for p in pieces:
        _, reads, writes = module_and_ranges(p)
        out.append((reads, writes))
    return out
