"""split_prologue_load: the first weight LOADs and the GEMMs that first read them, split by block.

Before the first GEMM nothing computes: unsplit, a thread's first GEMM waits for its whole weight
LOAD (C11 on ``default``: 16 output-channel blocks, 8 KB, ~1,400 cycles), though its first block
needs one sixteenth of it.  For every weight LOAD issued before the stream's first GEMM, this pass
takes the first GEMM that reads it; when that GEMM's outer instruction loop of ``n`` blocks reads the
LOAD's ``n`` row groups one to one (piece ``b`` reads, of what the LOAD writes, only group ``b``),
both are split (``split_block``).  The LOADs before the first GEMM are then issued in the order
their first reader runs (a stable sort), so the load module brings block 0's weights and the
input first and the first GEMM piece waits only for those; the next pieces follow their blocks.

Only LOADs before the first GEMM move, among themselves (they write disjoint SRAM ranges, or
the pass leaves the order alone); a GEMM that ``split_drain_store`` splits (it also produces a
STORE of the drain) is left to it; the compute module's own loads (micro-ops, the resident bias)
stay first.  ``insert_dep_token`` then synchronizes the pieces by their ranges.  A function with
attribute ``vdla.split_edges`` False is returned unchanged.
"""

from __future__ import annotations

from vdla_hw.isa import Module

from vdla.compiler.tir import PrimFunc, Stmt

from ..target import SCOPE_WGT, VdlaTarget
from ..decode import as_dma, as_uop_insn, module_and_ranges
from .common import flat_stream
from .split_block import (dma_cycles, drain_pairs, first_gemm, load_overhead, overlap, piece_ranges, rebuild_stream, split_count, split_dma,
                          split_enabled, split_gemm)


def _aligned(gemms: list[Stmt], loads: list[Stmt]) -> bool:
    """Whether GEMM piece ``b`` reads, of all the LOAD pieces write, something of piece ``b`` only."""
    reads = [r for r, _ in piece_ranges(gemms)]
    writes = [w for _, w in piece_ranges(loads)]
    for b, rs in enumerate(reads):
        for c, ws in enumerate(writes):
            touches = any(overlap(r, w) for r in rs for w in ws)
            if touches != (b == c):
                return False
    return True


def split_prologue_load(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Split the first weight LOADs and their first GEMMs by block; issue the prologue's LOADs in
    the order their readers run (after ``unroll_stream``)."""
    if not split_enabled(func):
        return func
    arenas, insns = flat_stream(func, "split_prologue_load")
    info = [module_and_ranges(s) for s in insns]
    first = first_gemm(insns)
    if first is None:
        return func
    loads = [i for i in range(first) if info[i][0] == Module.LOAD]
    writes = [w for i in loads for w in info[i][2]]
    if any(overlap(a, b) for k, a in enumerate(writes) for b in writes[k + 1:]):
        return func  # prologue LOADs that overwrite each other: their order matters
    if any(overlap(r, w) for i in range(first) if info[i][0] != Module.LOAD for r in info[i][1] for w in writes):
        return func  # something before the first GEMM reads them
    pairs: list[tuple[int, int]] = []  # (LOAD, its first reader)
    drains = {p for p, _ in drain_pairs(insns, info)}  # split_drain_store's: the drain's split is theirs
    for w in loads:
        reader = next((g for g in range(first, len(insns)) if info[g][0] == Module.COMPUTE
                       and any(overlap(r, x) for r in info[g][1] for x in info[w][2])), None)
        insn = None if reader is None else as_uop_insn(insns[reader])
        dma = as_dma(insns[w])
        if dma is None or dma.sram.scope != SCOPE_WGT:
            continue
        if (insn is None or insn.kind != "gemm" or not insn.loops or dma is None or dma.y_size * dma.x_size < 2
                or reader in drains or any(r == reader for _, r in pairs)):
            continue
        pairs.append((w, reader))
    gemm_pieces: dict[int, list[Stmt]] = {}
    load_pieces: dict[int, list[Stmt]] = {}
    for w, reader in pairs:
        insn, dma = as_uop_insn(insns[reader]), as_dma(insns[w])
        assert insn is not None and dma is not None
        work = dma_cycles(target, dma.sram_tiles, target.scope(dma.sram.scope).elem_bytes)
        groups = split_count(insn.loops[0][0], work, load_overhead(target), len(pairs))
        gemms = split_gemm(insns[reader], target, groups)
        parts = split_dma(insns[w], groups) if gemms else None
        if gemms is None or parts is None or not _aligned(gemms, parts):
            continue
        gemm_pieces[reader] = gemms
        load_pieces[w] = parts
    if not load_pieces:
        return func
    rest: list[Stmt] = [p for g in range(first, len(insns)) for p in gemm_pieces.get(g, [insns[g]])]
    rest_info = [module_and_ranges(s) for s in rest]
    head = [insns[i] for i in range(first) if info[i][0] != Module.LOAD]
    pending = [p for i in loads for p in load_pieces.get(i, [insns[i]])]

    def first_reader(load: Stmt) -> int:
        ws = module_and_ranges(load)[2]
        return next((k for k, (m, rs, _) in enumerate(rest_info) if m == Module.COMPUTE
                     and any(overlap(r, w) for r in rs for w in ws)), len(rest))

    ordered = [s for _, _, s in sorted((first_reader(s), k, s) for k, s in enumerate(pending))]
    return rebuild_stream(func, arenas, head + ordered + rest)
