"""Code generation: the token-annotated instruction stream -> a runnable runtime ``Program``.

Every parameter of the function becomes a named DRAM buffer in the accelerator's packed
tile layout (its kind -- inp, wgt, acc or out -- is the memory type of the DMAs that touch
it); micro-op lists are de-duplicated into one list that a single LOAD UOP brings on chip
before the first instruction; every stream statement becomes one instruction through
:class:`~vdla.runtime.program.ProgramBuilder`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vdla_hw.isa import DepFlags, MemType, Uop

from vdla.compiler.tir import Allocate, Buffer, IntImm, PrimFunc, SeqStmt, Stmt
from vdla.runtime.memory import BufferSpec
from vdla.runtime.program import Program, ProgramBuilder

from .decode import as_dma, as_uop_insn, is_finish, split_deps
from .passes.common import VdlaLoweringError
from .target import SCOPE_ACC, SCOPE_INP, SCOPE_UOP, SCOPE_WGT, VdlaTarget

_KIND = {SCOPE_INP: "inp", SCOPE_WGT: "wgt", SCOPE_ACC: "acc"}
_MEM = {SCOPE_INP: MemType.INP, SCOPE_WGT: MemType.WGT, SCOPE_ACC: MemType.ACC}


@dataclass(frozen=True)
class ParamBinding:
    """How a function parameter lives in DRAM: program buffer ``name`` holding a ``kind`` matrix."""

    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: str

    def matrix_shape(self) -> tuple[int, int]:
        rows = 1
        for d in self.shape[:-1]:
            rows *= d
        return rows, self.shape[-1]


def _shape(buf: Buffer) -> tuple[int, ...]:
    if not all(isinstance(s, IntImm) for s in buf.shape):
        raise VdlaLoweringError(f"parameter {buf.name} needs a constant shape, got {[str(s) for s in buf.shape]}")
    return tuple(s.value for s in buf.shape)  # type: ignore[attr-defined]


def _stream(func: PrimFunc) -> list[Stmt]:
    body = func.body
    while isinstance(body, Allocate):
        body = body.body
    if not isinstance(body, SeqStmt):
        raise VdlaLoweringError("codegen needs the flat instruction stream (run the VDLA pipeline first)")
    return list(body.stmts)


def bindings(func: PrimFunc) -> dict[Buffer, ParamBinding]:
    """The DRAM role of every parameter, from the DMAs that use it."""
    kinds: dict[Buffer, str] = {}
    for s in _stream(func):
        dma = as_dma(split_deps(s)[1])
        if dma is None:
            continue
        kind = _KIND[dma.sram.scope] if dma.load else "out"
        if kinds.setdefault(dma.dram, kind) != kind:
            raise VdlaLoweringError(f"parameter {dma.dram.name} is used both as {kinds[dma.dram]} and as {kind}")
    out = {}
    for p in func.params:
        if p not in kinds:
            raise VdlaLoweringError(f"parameter {p.name} is never read or written by the accelerator")
        out[p] = ParamBinding(p.name, kinds[p], _shape(p), p.dtype)
    return out


def _flags(deps: DepFlags) -> dict[str, bool]:
    return {"pop_prev": deps.pop_prev, "pop_next": deps.pop_next, "push_prev": deps.push_prev,
            "push_next": deps.push_next}


def codegen(func: PrimFunc, target: VdlaTarget) -> tuple[Program, dict[str, ParamBinding]]:
    """The program of ``func`` (all parameter buffers zero) and how each parameter maps to a buffer."""
    cfg = target.config
    stream = _stream(func)
    binds = bindings(func)
    pb = ProgramBuilder(cfg)
    specs: dict[Buffer, BufferSpec] = {p: pb.alloc(b.name, b.kind, b.matrix_shape()) for p, b in binds.items()}

    # Micro-op kernels: one entry per distinct list, all loaded once up front.
    kernels: dict[tuple[Uop, ...], int] = {}
    table: list[Uop] = []
    decoded = []
    for s in stream:
        deps, insn = split_deps(s)
        uop_insn = as_uop_insn(insn)
        if uop_insn is not None and uop_insn.uops not in kernels:
            kernels[uop_insn.uops] = len(table)
            table.extend(uop_insn.uops)
        decoded.append((deps, insn, uop_insn))
    if table:
        target.scope(SCOPE_UOP).check_fits(len(table), f"the {len(kernels)} micro-op kernels of {func.name}")
        pb.load_uops(pb.uops(table, "uops"))

    for k, (deps, insn, uop_insn) in enumerate(decoded):
        fl = _flags(deps)
        if uop_insn is not None:
            bgn = kernels[uop_insn.uops]
            end = bgn + len(uop_insn.uops)
            loops = list(uop_insn.loops) + [(1, (0, 0, 0))] * (2 - len(uop_insn.loops))
            (n_out, f_out), (n_in, f_in) = loops
            common = dict(iter_out=n_out, iter_in=n_in, dst_factor=(f_out[0], f_in[0]), src_factor=(f_out[1], f_in[1]))
            if uop_insn.kind == "gemm":
                pb.gemm(bgn, end, **common, wgt_factor=(f_out[2], f_in[2]), reset=uop_insn.reset,
                        overwrite=uop_insn.overwrite, **fl)
            else:
                pb.alu(uop_insn.alu_op, bgn, end, imm=uop_insn.imm, **common, **fl)  # type: ignore[arg-type]
            continue
        dma = as_dma(insn)
        if dma is not None:
            if dma.y_size <= 0 or dma.x_size <= 0:
                raise VdlaLoweringError(f"instruction {k}: a DMA of {dma.y_size}x{dma.x_size} tiles (a tile that is all "
                                        f"padding); use output tiles larger than the padding")
            base = specs[dma.dram].addr + dma.dram_base
            if dma.load:
                pb.load(_MEM[dma.sram.scope], dma.sram_base, base, dma.y_size, dma.x_size, dma.x_stride, pad=dma.pad, **fl)
            else:
                r = dma.requant
                pb.store(dma.sram_base, base, dma.y_size, dma.x_size, dma.x_stride, shift=r.shift, clip=r.clip,
                         relu=r.relu, bias=None if dma.bias is None else dma.bias[1:], **fl)
            continue
        if is_finish(insn):
            pb.finish(**fl)
            continue
        raise VdlaLoweringError(f"instruction {k} is not a VDLA instruction: {insn}")
    return pb.build(), {p.name: b for p, b in binds.items()}


def pack_param(binding: ParamBinding, value: np.ndarray) -> np.ndarray:
    """A parameter's array as the matrix its DRAM buffer holds."""
    v = np.asarray(value)
    if v.shape != binding.shape:
        raise ValueError(f"argument {binding.name} has shape {v.shape}, expected {binding.shape}")
    return v.reshape(binding.matrix_shape())
