"""Features of a scheduled loop program, for the cost model.

The tuner's model sees the program a config produces, not the knob values: for the stages that
run the most iterations, the extents and annotations (parallel / vectorized / unrolled / virtual
thread, reduction or not) of their innermost loops, and for every buffer they touch the access
stride along those loops, the footprint of the innermost loop nests and the reuse it implies;
arithmetic intensity at three nest depths; and totals (iterations, unrolled body size, parallel
extent, on-chip allocations per memory scope).  Programs of one template give vectors of one
length, so models can also learn across tasks of the same kind (transfer learning).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vdla.compiler.tir import ir
from vdla.compiler.tir.functor import collect, stmt_children
from vdla.compiler.tir.stmt import Allocate, Block, BlockRealize, BufferStore, For, ForKind, IterKind, PrimFunc, Stmt

LOOPS = 8
"""Innermost loops described per stage."""
STRIDE_LOOPS = 6
BUFFERS = 3
DEPTHS = (2, 4, 6)
STAGES = 2
SCOPES = ("global", "vdla.inp", "vdla.wgt", "vdla.acc")
_KINDS = (ForKind.PARALLEL, ForKind.VECTORIZED, ForKind.UNROLLED, ForKind.VIRTUAL_THREAD)


@dataclass(frozen=True)
class _Loop:
    var: ir.Var
    extent: int
    kind: ForKind


@dataclass(frozen=True)
class _Stage:
    loops: tuple[_Loop, ...]
    realize: BlockRealize


def _log(x: float) -> float:
    return math.log2(1.0 + abs(x))


def _eval(e: ir.PrimExpr, env: dict[ir.Var, int]) -> int:
    """Integer value of an index expression (0 for anything that is not affine-like)."""
    if isinstance(e, ir.IntImm):
        return int(e.value)
    if isinstance(e, ir.Var):
        return env.get(e, 0)
    if isinstance(e, ir.Cast):
        return _eval(e.value, env)
    if isinstance(e, ir.BinaryOp):
        a, b = _eval(e.a, env), _eval(e.b, env)
        if isinstance(e, ir.Add):
            return a + b
        if isinstance(e, ir.Sub):
            return a - b
        if isinstance(e, ir.Mul):
            return a * b
        if isinstance(e, (ir.FloorDiv, ir.Div)):
            return a // b if b else 0
        if isinstance(e, ir.FloorMod):
            return a % b if b else 0
        if isinstance(e, ir.Min):
            return min(a, b)
        if isinstance(e, ir.Max):
            return max(a, b)
    return 0


def _stages(stmt: Stmt, loops: tuple[_Loop, ...], out: list[_Stage], allocs: dict[str, int]) -> None:
    if isinstance(stmt, For):
        extent = int(stmt.extent.value) if isinstance(stmt.extent, ir.IntImm) else 1
        loops = loops + (_Loop(stmt.loop_var, extent, stmt.kind),)
    elif isinstance(stmt, BlockRealize):
        out.append(_Stage(loops, stmt))
    elif isinstance(stmt, Allocate):
        size = math.prod(int(s.value) if isinstance(s, ir.IntImm) else 1 for s in stmt.buffer.shape)
        allocs[stmt.scope] = allocs.get(stmt.scope, 0) + size
    for child in stmt_children(stmt):
        _stages(child, loops, out, allocs)


def _flat_index(buf: ir.Buffer, indices: tuple[ir.PrimExpr, ...], env: dict[ir.Var, int]) -> int:
    flat = 0
    for extent, idx in zip(buf.shape, indices):
        flat = flat * (int(extent.value) if isinstance(extent, ir.IntImm) else 1) + _eval(idx, env)
    return flat


def _block_env(stage: _Stage, loop_env: dict[ir.Var, int]) -> dict[ir.Var, int]:
    block: Block = stage.realize.block
    env = dict(loop_env)
    for iv, value in zip(block.iter_vars, stage.realize.iter_values):
        env[iv.var] = _eval(value, loop_env)
    return env


def _accesses(block: Block) -> list[tuple[ir.Buffer, tuple[ir.PrimExpr, ...]]]:
    stores = collect(block.body, lambda n: isinstance(n, BufferStore))
    loads = collect(block.body, lambda n: isinstance(n, ir.BufferLoad))
    seen: dict[int, tuple[ir.Buffer, tuple[ir.PrimExpr, ...]]] = {}
    for n in stores + loads:
        seen.setdefault(id(n.buffer), (n.buffer, n.indices))
    return list(seen.values())


def _stage_features(stage: _Stage) -> list[float]:
    loops = stage.loops[-LOOPS:]
    block = stage.realize.block
    reduce_vars = {iv.var for iv in block.iter_vars if iv.kind == IterKind.REDUCE}
    feats: list[float] = []
    for k in range(LOOPS):
        if k < LOOPS - len(loops):
            feats += [0.0] * (2 + len(_KINDS))
            continue
        lp = loops[k - (LOOPS - len(loops))]
        is_reduce = any(lp.var in ir_vars(v) for iv, v in zip(block.iter_vars, stage.realize.iter_values)
                        if iv.var in reduce_vars)
        feats += [_log(lp.extent), float(is_reduce)] + [float(lp.kind == kind) for kind in _KINDS]
    inner = stage.loops[-STRIDE_LOOPS:]
    base_env = _block_env(stage, {})
    bytes_at = [0.0 for _ in DEPTHS]
    accesses = _accesses(block)[:BUFFERS]
    for b in range(BUFFERS):
        if b >= len(accesses):
            feats += [0.0] * (STRIDE_LOOPS + 2 * len(DEPTHS))
            continue
        buf, indices = accesses[b]
        base = _flat_index(buf, indices, base_env)
        strides = []
        for lp in inner:
            env = _block_env(stage, {lp.var: 1})
            strides.append(_flat_index(buf, indices, env) - base)
        feats += [0.0] * (STRIDE_LOOPS - len(strides)) + [_log(s) for s in strides]
        elem = max(1, ir_bits(buf.dtype) // 8)
        for d_i, depth in enumerate(DEPTHS):
            nest = list(zip(inner, strides))[-depth:]
            iters = math.prod(lp.extent for lp, _ in nest) or 1
            footprint = math.prod(lp.extent for lp, s in nest if s != 0) or 1
            bytes_at[d_i] += footprint * elem
            feats += [_log(footprint), _log(iters / footprint)]
    for d_i, depth in enumerate(DEPTHS):
        iters = math.prod(lp.extent for lp in stage.loops[-depth:]) or 1
        feats.append(_log(2 * iters / max(bytes_at[d_i], 1.0)))
    return feats


def ir_vars(e: ir.PrimExpr) -> set[ir.Var]:
    return set(collect(e, lambda n: isinstance(n, ir.Var)))


def ir_bits(dtype: str) -> int:
    digits = "".join(ch for ch in dtype if ch.isdigit())
    return int(digits.split("x")[0]) if digits else 32


def program_features(func: PrimFunc) -> np.ndarray:
    """The fixed-length feature vector of a scheduled loop program (see the module doc)."""
    stages: list[_Stage] = []
    allocs: dict[str, int] = {}
    _stages(func.body, (), stages, allocs)
    iters = [math.prod(lp.extent for lp in s.loops) for s in stages]
    order = sorted(range(len(stages)), key=lambda i: -iters[i])[:STAGES]
    feats: list[float] = []
    for rank in range(STAGES):
        if rank < len(order):
            feats += _stage_features(stages[order[rank]])
        else:
            feats += [0.0] * _stage_width()
    all_loops = [lp for s in stages for lp in s.loops]
    unrolled = math.prod(lp.extent for lp in all_loops if lp.kind == ForKind.UNROLLED) or 1
    parallel = max([lp.extent for lp in all_loops if lp.kind == ForKind.PARALLEL], default=0)
    vector = max([lp.extent for lp in all_loops if lp.kind == ForKind.VECTORIZED], default=0)
    feats += [_log(sum(iters)), _log(unrolled), _log(parallel), _log(vector), float(len(stages))]
    feats += [_log(allocs.get(scope, 0)) for scope in SCOPES]
    return np.asarray(feats, dtype=np.float32)


def _stage_width() -> int:
    return LOOPS * (2 + len(_KINDS)) + BUFFERS * (STRIDE_LOOPS + 2 * len(DEPTHS)) + len(DEPTHS)
