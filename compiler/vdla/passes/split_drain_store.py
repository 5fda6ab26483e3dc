"""split_drain_store: the last GEMMs and their STOREs split by block, so the stores overlap the compute.

After the last LOAD of the stream nothing is left to hide a STORE behind but the GEMMs of the
same last tiles: unsplit, a thread's STORE waits for its whole last GEMM, and the last thread's
STORE runs after everything (C11 on ``default``: both threads' last STOREs, 1,607 cycles each,
back to back after the last GEMM).  For every STORE after the last LOAD whose producer (the newest
GEMM writing what it reads) has an outer instruction loop of ``n`` blocks that match the STORE's
row groups one to one (piece ``b`` writes exactly what STORE group ``b`` reads), this pass splits
both (``split_block``) and places each STORE group right after the GEMM piece it waits for, so
block ``b``'s STORE runs while block ``b + 1`` computes.

Only STOREs move, and only earlier, past compute instructions that do not write what they read
(the group goes right after its newest writer); STOREs keep their relative order; a STORE whose
DRAM output a LOAD of the same program reads is left alone (moving it would reorder the two
in DRAM, which no token orders).  ``insert_dep_token`` then synchronizes the pieces by their ranges.
A function with attribute ``vdla.split_edges`` False is returned unchanged.
"""

from __future__ import annotations

from vdla_hw.isa import Module

from vdla.compiler.tir import PrimFunc, Stmt

from ..target import VdlaTarget
from ..decode import as_uop_insn, module_and_ranges
from .common import flat_stream
from .split_block import (drain_pairs, overlap, piece_ranges, rebuild_stream, split_count, split_dma, split_enabled, split_gemm,
                          store_overhead)


def split_drain_store(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Split the stream's last GEMMs and their STOREs by block and interleave them (after ``unroll_stream``)."""
    if not split_enabled(func):
        return func
    arenas, insns = flat_stream(func, "split_drain_store")
    info = [module_and_ranges(s) for s in insns]
    pairs = drain_pairs(insns, info)
    gemm_pieces: dict[int, list[Stmt]] = {}
    store_pieces: dict[int, list[Stmt]] = {}
    for producer, j in pairs:
        insn = as_uop_insn(insns[producer])
        assert insn is not None
        groups = split_count(insn.loops[0][0], insn.iterations, store_overhead(target), len(pairs))
        gemms = split_gemm(insns[producer], target, groups)
        stores = split_dma(insns[j], groups) if gemms else None
        if gemms is None or stores is None:
            continue
        g_writes = [w for _, w in piece_ranges(gemms)]
        s_reads = [r for r, _ in piece_ranges(stores)]
        # piece b writes exactly the accumulators group b stores (its first read range)
        if any(len(w) != 1 or w[0] != r[0] for w, r in zip(g_writes, s_reads)):
            continue
        gemm_pieces[producer] = gemms
        store_pieces[j] = stores
    if not store_pieces:
        return func
    # Rebuild: the GEMMs in pieces, each STORE group right after its newest writer (and after every
    # STORE before it in the original order).
    out: list[Stmt] = []
    out_info: list[tuple] = []
    origin: list[int] = []  # original index of each output instruction
    for i, s in enumerate(insns):
        if i in store_pieces:
            continue
        for p in gemm_pieces.get(i, [s]):
            out.append(p)
            out_info.append(module_and_ranges(p))
            origin.append(i)
    result = list(out)
    inserted: list[tuple[int, Stmt]] = []  # (position in `out` after which it goes, piece)
    floor = -1  # stores keep their order: after the previous store's position
    for j in sorted(store_pieces):
        # everything that stayed before STORE j in the original order
        limit = max((k for k, o in enumerate(origin) if o < j), default=-1)
        for piece in store_pieces[j]:
            _, reads, _ = module_and_ranges(piece)
            writer = max((k for k in range(limit + 1) if out_info[k][0] == Module.COMPUTE
                          and any(overlap(w, r) for w in out_info[k][2] for r in reads)), default=-1)
            prev_store = max((k for k in range(limit + 1) if out_info[k][0] == Module.STORE), default=-1)
            at = max(writer, prev_store, floor)
            inserted.append((at, piece))
            floor = at
    # insert from the back so earlier positions stay valid; equal positions keep their order
    for at, piece in sorted(enumerate(inserted), key=lambda e: (e[1][0], e[0]), reverse=True):
        result.insert(piece[0] + 1, piece[1])
    return rebuild_stream(func, arenas, result)
