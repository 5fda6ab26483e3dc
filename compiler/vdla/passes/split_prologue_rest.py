"""split_prologue_rest: the rest of the first tile's reduction split by block and run beside its weights.

``split_prologue_load`` lets the first GEMM *step* (the overwriting one) of a tile start on the first
weight block, but with a reduction over several input-channel blocks that step is a fraction of the
tile (C5 on ``default``: 62 of 908 cycles per block group): the guarded rest, one GEMM over all
output-channel blocks, still waits for the whole weight LOAD, and the compute module idles while the
load module brings the remaining blocks (~700 cycles on C5).  This pass cuts that rest the same way
-- one piece per weight LOAD piece, along its outer instruction loop -- and runs piece ``b`` right
after first-step piece ``b``, so block group ``b``'s whole reduction overlaps the load of group
``b + 1``.

A thread's rest is the first GEMM that reads two or more of the prologue's weight LOADs (those issued
before the first GEMM; each thread with its own weight copy has its own).  It splits only when its pieces read those LOADs one to one, in the order of their
first-step pieces, and when it is not one of the drain's GEMMs (``split_drain_store`` splits those).
A piece moves only earlier, past instructions whose SRAM ranges it neither reads what they write nor
writes what they touch, so ``insert_dep_token`` (which synchronizes by ranges) keeps every result.
Its micro-op lists are counted by ``fit.uop_count``.  A function with attribute ``vdla.split_edges``
False is returned unchanged.
"""

from __future__ import annotations

from vdla_hw.isa import Module

from vdla.compiler.tir import PrimFunc, Stmt

from ..decode import Range, as_uop_insn, module_and_ranges
from ..target import SCOPE_WGT, VdlaTarget
from .common import flat_stream
from .split_block import drain_pairs, first_gemm, overlap, piece_ranges, rebuild_stream, split_enabled, split_gemm


def conflicts(a: tuple[list[Range], list[Range]], b: tuple[list[Range], list[Range]]) -> bool:
    """Whether two instructions' (reads, writes) order matters: one writes what the other touches."""
    (ra, wa), (rb, wb) = a, b
    return any(overlap(w, x) for w in wa for x in rb + wb) or any(overlap(w, x) for w in wb for x in ra)


def split_prologue_rest(func: PrimFunc, target: VdlaTarget) -> PrimFunc:
    """Split the first tile's guarded rest by weight block and interleave it with the first-step
    pieces (after ``split_prologue_load``)."""
    if not split_enabled(func):
        return func
    arenas, insns = flat_stream(func, "split_prologue_rest")
    info = [module_and_ranges(s) for s in insns]
    first = first_gemm(insns)
    if first is None:
        return func
    loads = [i for i in range(first) if info[i][0] == Module.LOAD and any(w[0] == SCOPE_WGT for w in info[i][2])]

    def reads_load(g: int, w: int) -> bool:
        return any(overlap(r, x) for r in info[g][1] for x in info[w][2])

    drains = {p for p, _ in drain_pairs(insns, info)}
    after: dict[int, Stmt] = {}
    moved: set[int] = set()
    claimed: set[int] = set()
    for rest in range(first, len(insns)):
        read = [w for w in loads if reads_load(rest, w)]
        if info[rest][0] != Module.COMPUTE or len(read) < 2 or claimed & set(read):
            continue
        claimed.update(read)  # each thread's first rest (the threads' weight copies are their own LOADs)
        placed = split_rest(insns, info, rest, read, first, target) if rest not in drains else None
        if placed is not None and not placed.keys() & after.keys():
            after.update(placed)
            moved.add(rest)
    if not moved:
        return func
    out: list[Stmt] = []
    for i, stmt in enumerate(insns):
        if i in moved:
            continue
        out.append(stmt)
        if i in after:
            out.append(after[i])
    return rebuild_stream(func, arenas, out)


def split_rest(insns: list[Stmt], info: list[tuple[Module, list[Range], list[Range]]], rest: int, read: list[int],
               first: int, target: VdlaTarget) -> dict[int, Stmt] | None:
    """Where the pieces of GEMM ``rest`` (reading the prologue LOADs ``read``) go: {first-step piece index:
    rest piece}, or None when the rest does not split one to one with them or a piece cannot move."""
    insn = as_uop_insn(insns[rest])
    if insn is None or insn.kind != "gemm":
        return None

    def reads_load(g: int, w: int) -> bool:
        return any(overlap(r, x) for r in info[g][1] for x in info[w][2])

    # Each LOAD's first reader: a first-step piece reading that LOAD alone, in the LOADs' order.
    steps = [next((g for g in range(first, rest) if info[g][0] == Module.COMPUTE and reads_load(g, w)), None) for w in read]
    if any(s is None for s in steps) or steps != sorted(set(steps)):  # type: ignore[type-var]
        return None
    if any(sum(reads_load(s, w) for w in read) != 1 for s in steps):  # type: ignore[arg-type]
        return None
    pieces = split_gemm(insns[rest], target, len(read))
    if pieces is None:
        return None
    ranges = piece_ranges(pieces)
    for b, (reads, _) in enumerate(ranges):
        if [any(overlap(r, x) for r in reads for x in info[w][2]) for w in read] != [c == b for c in range(len(read))]:
            return None  # piece b must read LOAD piece b only
    # Piece b goes right after step b, past everything up to the rest, with which it must not conflict
    # (the earlier pieces of the rest come along in order and are disjoint from it by construction).
    placed: dict[int, Stmt] = {}
    for b, s in enumerate(steps):
        assert s is not None
        if any(conflicts(ranges[b], (info[j][1], info[j][2])) for j in range(s + 1, rest)):
            return None
        placed[s] = pieces[b]
    return placed
