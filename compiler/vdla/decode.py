"""Read VDLA statements of an instruction stream as instruction fields.

Shared by ``insert_dep_token`` (which needs each instruction's module and the SRAM ranges
it reads and writes) and by code generation (which needs the fields and micro-ops).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from vdla_hw.isa import AluOp, DepFlags, Module, Uop

from vdla.compiler.tir import NE, AttrStmt, Buffer, For, IfThenElse, IntImm, Or, PrimExpr, Stmt, Var

from .affine import NotAffineError, affine, eval_int
from .intrin import ALU_UOP, GEMM_OVERWRITE_UOP, GEMM_RESET_UOP, GEMM_UOP
from .stmt import DEPS, FINISH, LOAD, STORE, UOP_LOOP, UOP_SCOPE, Requant, buffer_arg, int_arg, packed_call
from .target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT

Range = tuple[str, int, int]
"""(scope, first tile, one past the last tile)."""


@dataclass(frozen=True)
class Dma:
    load: bool
    sram: Buffer
    sram_base: int
    dram: Buffer
    dram_base: int
    y_size: int
    x_size: int
    x_stride: int
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)
    requant: Requant = Requant()
    bias: tuple[Buffer, int, int] | None = None
    """STORE only: (accumulator buffer, first tile, step per row) of the bias it adds."""

    @property
    def sram_tiles(self) -> int:
        y0, y1, x0, x1 = self.pad
        return (y0 + self.y_size + y1) * (x0 + self.x_size + x1)


@dataclass(frozen=True)
class UopInsn:
    """A GEMM or ALU instruction: its folded loops, micro-ops and (ALU) operation."""

    kind: str
    reset: bool
    loops: tuple[tuple[int, tuple[int, int, int]], ...]
    uops: tuple[Uop, ...]
    alu_op: AluOp | None = None
    imm: int | None = None
    overwrite: bool = False

    @property
    def iterations(self) -> int:
        n = len(self.uops)
        for extent, _ in self.loops:
            n *= extent
        return n


def split_deps(stmt: Stmt) -> tuple[DepFlags, Stmt]:
    if isinstance(stmt, AttrStmt) and stmt.key == DEPS:
        return stmt.value, stmt.body
    return DepFlags(), stmt


def as_dma(stmt: Stmt) -> Dma | None:
    call = packed_call(stmt)
    if call is None or call[0] not in (LOAD, STORE):
        return None
    name, a = call
    if name == LOAD:
        return Dma(True, buffer_arg(a[0]), int_arg(a[1]), buffer_arg(a[2]), int_arg(a[3]), int_arg(a[4]),
                   int_arg(a[5]), int_arg(a[6]), tuple(int_arg(x) for x in a[7:11]))  # type: ignore[arg-type]
    shift, clip, relu = (int_arg(x) for x in a[7:10])
    bias = (buffer_arg(a[10]), int_arg(a[11]), int_arg(a[12])) if len(a) > 10 else None
    return Dma(False, buffer_arg(a[2]), int_arg(a[3]), buffer_arg(a[0]), int_arg(a[1]), int_arg(a[4]),
               int_arg(a[5]), int_arg(a[6]), requant=Requant(shift, bool(clip), bool(relu)), bias=bias)


def is_finish(stmt: Stmt) -> bool:
    call = packed_call(stmt)
    return call is not None and call[0] == FINISH


_UOP_CACHE: dict[int, tuple[Stmt, UopInsn]] = {}


def as_uop_insn(stmt: Stmt) -> UopInsn | None:
    """The instruction of an instruction scope (cached per statement object: streams repeat them)."""
    if not (isinstance(stmt, AttrStmt) and stmt.key == UOP_SCOPE):
        return None
    hit = _UOP_CACHE.get(id(stmt))
    if hit is not None and hit[0] is stmt:
        return hit[1]
    insn = _decode_scope(stmt)
    if len(_UOP_CACHE) > 4096:
        _UOP_CACHE.clear()
    _UOP_CACHE[id(stmt)] = (stmt, insn)
    return insn


def _decode_scope(attr: AttrStmt) -> UopInsn:
    folded: list[tuple[Var, int, tuple[int, int, int]]] = []
    inner: list[tuple[Var, int]] = []
    s: Stmt = attr.body
    while isinstance(s, For):
        ext = s.extent.value if isinstance(s.extent, IntImm) else eval_int(s.extent, {})
        ann = dict(s.annotations).get(UOP_LOOP)
        if ann is not None and not inner:
            folded.append((s.loop_var, ext, tuple(ann)))  # type: ignore[arg-type]
        else:
            inner.append((s.loop_var, ext))
        s = s.body
    skip: list[Var] = []
    if isinstance(s, IfThenElse) and s.else_case is None:
        skip = guard_vars(s.condition)
        s = s.then_case
    call = packed_call(s)
    if call is None:
        raise ValueError(f"instruction scope body must be a micro-op nest, got {s}")
    name, args = call
    zero = {v: 0 for v, _, _ in folded}
    if name in (GEMM_UOP, GEMM_OVERWRITE_UOP):
        idx = (args[1], args[3], args[5])
    elif name == GEMM_RESET_UOP:
        idx = (args[1], IntImm(0), IntImm(0))
    elif name == ALU_UOP:
        idx = (args[1], args[3], IntImm(0))
    else:
        raise ValueError(f"unknown micro-op {name}")
    cols = [_enumerate(e, inner, zero) for e in idx]
    if skip:  # the guard: only the points where some guard variable is nonzero
        keep = np.zeros([ext for _, ext in inner] or [1], dtype=bool)
        for axis, (v, ext) in enumerate(inner):
            if any(v is g for g in skip):
                shape = [1] * len(inner)
                shape[axis] = ext
                keep = keep | (np.arange(ext).reshape(shape) != 0)
        cols = [c[keep.reshape(-1)] for c in cols]
    uops = tuple(Uop(int(d), int(sv), int(w)) for d, sv, w in zip(*cols))
    loops = tuple((ext, f) for _, ext, f in folded)
    if name == ALU_UOP:
        use_imm = int_arg(args[5])
        return UopInsn("alu", False, loops, uops, AluOp(int_arg(args[4])), int_arg(args[6]) if use_imm else None)
    return UopInsn("gemm", name == GEMM_RESET_UOP, loops, uops, overwrite=name == GEMM_OVERWRITE_UOP)


def guard_vars(cond: PrimExpr) -> list[Var]:
    """The loop variables of a micro-op guard ``v0 != 0 || v1 != 0 || ...`` (``fold_bias_store``)."""
    if isinstance(cond, Or):
        return guard_vars(cond.a) + guard_vars(cond.b)
    if isinstance(cond, NE) and isinstance(cond.a, Var) and isinstance(cond.b, IntImm) and cond.b.value == 0:
        return [cond.a]
    raise ValueError(f"a micro-op guard must be `v != 0 || ...` over loop variables, got {cond}")


def _enumerate(e: PrimExpr, inner: list[tuple[Var, int]], env: dict[Var, int]) -> np.ndarray:
    """Values of ``e`` over the inner loops (row-major, innermost fastest)."""
    extents = [ext for _, ext in inner]
    try:
        coef, rest = affine(e, [v for v, _ in inner])
        total = np.full(extents or [1], eval_int(rest, env), dtype=np.int64)
        for axis, (v, ext) in enumerate(inner):
            shape = [1] * len(inner)
            shape[axis] = ext
            total = total + coef[v] * np.arange(ext).reshape(shape)
        return total.reshape(-1)
    except NotAffineError:
        vals = []
        for point in itertools.product(*(range(x) for x in extents)):
            vals.append(eval_int(e, {**env, **{v: p for (v, _), p in zip(inner, point)}}))
        return np.array(vals, dtype=np.int64)


def module_and_ranges(stmt: Stmt) -> tuple[Module, list[Range], list[Range]]:
    """The module that runs instruction ``stmt`` and the SRAM ranges it reads and writes."""
    dma = as_dma(stmt)
    if dma is not None:
        scope = dma.sram.scope
        if dma.load:
            module = Module.LOAD if scope in (SCOPE_INP, SCOPE_WGT) else Module.COMPUTE
            return module, [], [(scope, dma.sram_base, dma.sram_base + dma.sram_tiles)]
        reads = [(scope, dma.sram_base, dma.sram_base + dma.y_size * dma.x_size)]
        if dma.bias is not None:
            reads.append((dma.bias[0].scope, dma.bias[1], dma.bias[1] + (dma.y_size - 1) * dma.bias[2] + 1))
        return Module.STORE, reads, []
    insn = as_uop_insn(stmt)
    if insn is None:
        raise ValueError(f"not a VDLA instruction: {stmt}")
    uops = np.array([(u.dst, u.src, u.wgt) for u in insn.uops], dtype=np.int64)
    lo = uops.min(axis=0)
    hi = uops.max(axis=0)
    for extent, factors in insn.loops:
        hi = hi + (extent - 1) * np.array(factors)
    dst = (SCOPE_ACC, int(lo[0]), int(hi[0]) + 1)
    if insn.kind == "alu":
        reads = [dst] if insn.imm is not None else [dst, (SCOPE_ACC, int(lo[1]), int(hi[1]) + 1)]
        return Module.COMPUTE, reads, [dst]
    if insn.reset:
        return Module.COMPUTE, [], [dst]
    return Module.COMPUTE, [dst, (SCOPE_INP, int(lo[1]), int(hi[1]) + 1), (SCOPE_WGT, int(lo[2]), int(hi[2]) + 1)], [dst]


__all__ = ["Dma", "UopInsn", "Range", "as_dma", "as_uop_insn", "is_finish", "module_and_ranges", "split_deps"]
