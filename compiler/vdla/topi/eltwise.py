"""VDLA residual add: two packed int8 tensors rescaled to a common scale, added, requantized.

The ALU only reads the accumulator SRAM, and an int8 activation reaches it through the GEMM
core: each operand tile is multiplied by a BLOCK_OUT x BLOCK_IN identity weight tile, which
copies it exactly into int32 accumulators (``move`` below).  Then, in place on the ALU::

    acc_a = acc_a * m_a   [or acc_a >> k_a]      (one MUL by a resident tile, or an immediate SHR)
    acc_b = acc_b * m_b   [or acc_b >> k_b]
    acc_a = acc_a + acc_b
    acc_a = acc_a + r                            (the rounding term, a resident tile)

and the STORE does ``[ReLU] >> shift``, the clip and the narrowing.  This is the quantizer's
``residual_add`` (``vdla.compiler.graph.passes.quantize``) term for term, so the result is
bit-exact against the graph's int8 reference.  The multipliers and the rounding term are int32
and usually wider than the ALU's immediate, so they are one resident accumulator tile each
(``consts``: ``(3, BATCH, BLOCK_OUT)`` = ``m_a, m_b, r`` broadcast over the lanes).

Lowered through the same path as conv2d: tensor expressions, the schedule primitives,
``tensorize`` with the GEMM intrinsic, and ``inject_alu_op`` for the ALU chain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from vdla.compiler import te
from vdla.compiler.schedule import Schedule, create_schedule
from vdla.compiler.tir import IntImm, PrimFunc
from vdla.compiler.tir.ir import max_, min_

from ..build import VdlaModule, build
from ..intrin import GemmIntrin
from ..passes.fold_alu_store import ATTR as ALU_FOLD
from ..passes.fold_bias_init import ATTR as BIAS_INIT
from ..passes.fold_requant_store import ATTR as REQUANT_ON_STORE
from ..target import SCOPE_ACC, SCOPE_INP, SCOPE_WGT, VdlaTarget
from .epilogue import scale_to_common


@dataclass(frozen=True)
class AddWorkload:
    """A residual add of two packed ``(N, C, H, W)`` int8 tensors and its requantization.

    Each operand ``x`` is scaled by ``mult`` (an int32 multiplier, or None) or shifted right by
    ``align`` (the per-tensor form; negative: left), the sum gets ``round`` added, then ``[ReLU] >> shift``
    and the int8 clip (the graph operator ``qadd``)."""

    n: int
    c: int
    h: int
    w: int
    mult: tuple[int, int] | None = None
    align: tuple[int, int] = (0, 0)
    round: int = 0
    shift: int = 0
    relu: bool = False

    def check(self, cfg) -> None:  # type: ignore[no-untyped-def]
        """Raise :class:`UnsupportedError` unless the add maps onto ``cfg``'s tiles."""
        if cfg.block_in != cfg.block_out:
            raise UnsupportedError(f"config {cfg.name!r} has BLOCK_IN={cfg.block_in} != BLOCK_OUT={cfg.block_out}: "
                                   f"the identity GEMM that moves int8 tiles into the accumulators needs them equal")
        if self.n % cfg.batch or self.c % cfg.block_in or min(self.n, self.c, self.h, self.w) <= 0:
            raise UnsupportedError(f"add of {self.n}x{self.c}x{self.h}x{self.w} does not tile into BATCH={cfg.batch}, "
                                   f"BLOCK={cfg.block_in}", hint="pad the channels to a multiple of the block")
        if not 0 <= self.shift < cfg.acc_width or any(not -15 < a < cfg.acc_width for a in self.align):
            raise UnsupportedError(f"shift {self.shift} is outside [0, {cfg.acc_width}) or an alignment {self.align} "
                                   f"outside (-15, {cfg.acc_width}) (a left shift is an ALU MUL by a 16-bit immediate)")

    @property
    def elements(self) -> int:
        return self.n * self.c * self.h * self.w


@dataclass(frozen=True)
class AddTensors:
    a: te.Tensor
    b: te.Tensor
    eye: te.Tensor
    consts: te.Tensor | None
    """The resident ``m_a, m_b, r`` tiles; None when the add has neither multipliers nor rounding."""
    moves: tuple[te.Tensor, te.Tensor]
    stages: tuple[te.Tensor, ...]
    out: te.Tensor

    @property
    def params(self) -> list[te.Tensor]:
        return [self.a, self.b, self.eye] + ([self.consts] if self.consts is not None else []) + [self.out]


def add_compute(wl: AddWorkload, target: VdlaTarget) -> AddTensors:
    """The packed residual add of ``wl`` as tensor expressions."""
    cfg = target.config
    wl.check(cfg)
    bt, bi, bo = cfg.batch, cfg.block_in, cfg.block_out
    inp_t, wgt_t = target.scope(SCOPE_INP).dtype, target.scope(SCOPE_WGT).dtype
    acc_t, out_t = target.scope(SCOPE_ACC).dtype, target.out_dtype
    shape = (wl.n // bt, wl.c // bi, wl.h, wl.w, bt, bo)
    a = te.placeholder(shape[:-1] + (bi,), inp_t, "a")
    b = te.placeholder(shape[:-1] + (bi,), inp_t, "b")
    eye = te.placeholder((1, 1, 1, 1, bo, bi), wgt_t, "eye")
    consts = te.placeholder((3, bt, bo), acc_t, "consts") if wl.mult is not None or wl.round else None

    def move(x: te.Tensor, name: str) -> te.Tensor:
        k = te.reduce_axis(bi, "k")
        return te.compute(shape, lambda n, c, y, x_, t, j: te.sum(
            x[n, c, y, x_, t, k].astype(acc_t) * eye[0, 0, 0, 0, j, k].astype(acc_t), axis=k), name)

    ma, mb = move(a, "move_a"), move(b, "move_b")
    stages: list[te.Tensor] = []

    fa = scale_to_common(ma, 0, wl.mult, wl.align, consts, acc_t)
    fb = scale_to_common(mb, 1, wl.mult, wl.align, consts, acc_t)
    x = te.compute(shape, lambda *i: fa(*i) + fb(*i), "sum")
    stages.append(x)
    if wl.round:
        x = _stage(shape, lambda v, t, j: v + consts[2, t, j], x, "round")  # type: ignore[index]
        stages.append(x)
    hi = (1 << (cfg.out_width - 1)) - 1
    if wl.relu:
        x = _stage(shape, lambda v, t, j: max_(v, IntImm(0, acc_t)), x, "relu")
        stages.append(x)
    if wl.shift:
        x = _stage(shape, lambda v, t, j: v // IntImm(1 << wl.shift, acc_t), x, "shr")
        stages.append(x)
    if not wl.relu:
        x = _stage(shape, lambda v, t, j: max_(v, IntImm(-hi - 1, acc_t)), x, "clip_lo")
        stages.append(x)
    x = _stage(shape, lambda v, t, j: min_(v, IntImm(hi, acc_t)), x, "clip_hi")
    stages.append(x)
    out = te.compute(shape, lambda n, c, y, x_, t, j: x[n, c, y, x_, t, j].astype(out_t), "out")
    return AddTensors(a, b, eye, consts, (ma, mb), tuple(stages), out)


def _stage(shape, fn, prev: te.Tensor, name: str) -> te.Tensor:  # type: ignore[no-untyped-def]
    return te.compute(shape, lambda n, c, y, x, t, j: fn(prev[n, c, y, x, t, j], t, j), name)


def add_rows_per_tile(wl: AddWorkload, target: VdlaTarget, threads: int = 1) -> int:
    """Rows of one output tile: as many as fit a thread's share of the input buffer (both operands) and of
    the accumulator buffer (two moved tiles each, beside the resident constants)."""
    cfg = target.config
    inp_tiles = target.scope(SCOPE_INP).depth // (2 * threads)  # two operands per thread
    acc_tiles = (target.scope(SCOPE_ACC).depth - 3) // (2 * threads)  # two moved tiles; the resident constants
    rows = max(1, min(wl.h, inp_tiles // max(1, wl.w), acc_tiles // max(1, wl.w)))
    while wl.h % rows:
        rows -= 1
    if rows * wl.w > min(inp_tiles, acc_tiles):
        raise UnsupportedError(f"one row of {wl.w} tiles of the add does not fit config {cfg.name!r}'s buffers")
    return rows


def add_tiling(wl: AddWorkload, target: VdlaTarget) -> tuple[int, int, str | None, int]:
    """``(rows, channel blocks, thread axis, threads)`` of one tile: two virtual threads when the tiles split
    evenly between them (over channel blocks, else over row tiles, with fewer rows per tile if that evens
    them), so one thread's LOADs and STORE overlap the other's moves and ALU chain; else one thread.  When a
    whole image fits a tile, a tile takes several channel blocks (at least 8 tiles left: a short prologue and
    drain), so
    small images do not pay each instruction's fixed cycles per block."""
    cfg = target.config
    blocks = wl.c // cfg.block_in
    try:
        rows = add_rows_per_tile(wl, target, 2)
    except UnsupportedError:
        return add_rows_per_tile(wl, target), 1, None, 1
    if rows == wl.h:
        room = min(target.scope(SCOPE_INP).depth // 4, (target.scope(SCOPE_ACC).depth - 3) // 4)
        fit = [d for d in range(1, blocks + 1) if blocks % d == 0 and d * wl.h * wl.w <= room
               and (blocks // d) % 2 == 0 and blocks // d >= 8]
        if fit:
            return rows, max(fit), "c", 2
    if blocks % 2 == 0:
        return rows, 1, "c", 2
    for r in range(rows, 0, -1):
        if wl.h % r == 0 and (wl.h // r) % 2 == 0:
            return r, 1, "y", 2
    return add_rows_per_tile(wl, target), 1, None, 1


def add_schedule(wl: AddWorkload, target: VdlaTarget, name: str = "add") -> Schedule:
    """Schedule: per (image block, channel block, row tile) load both operands into the input
    buffer, move them into the accumulators with the identity GEMM, run the ALU chain, STORE."""
    t = add_compute(wl, target)
    s = create_schedule(t.out, t.params, name)
    gemm = GemmIntrin(target)
    inps = [s.cache_read(x, SCOPE_INP, [m]) for x, m in zip((t.a, t.b), t.moves)]
    wgt = s.cache_read(t.eye, SCOPE_WGT)
    if t.consts is not None:
        s.cache_read(t.consts, SCOPE_ACC)  # resident: loaded once, up front
    accs = [s.cache_write(m, SCOPE_ACC) for m in t.moves]
    for m in t.moves:
        s.compute_inline(m)
    for stage in t.stages:
        s.compute_inline(stage)
    rows, cb_tile, axis, threads = add_tiling(wl, target)
    n, c, y, x, b, j = s.get_loops(t.out)
    y_o, y_i = s.split(y, factor=rows)
    vthread = None
    if axis == "c" and cb_tile > 1:
        c_o, c_i = s.split(c, factor=cb_tile)
        c_o, vthread = s.split(c_o, factor=threads)
        s.reorder(n, c_o, y_o, vthread, c_i, y_i, x, b, j)
    elif axis == "c":
        c_o, vthread = s.split(c, factor=threads)
        s.reorder(n, c_o, y_o, vthread, y_i, x, b, j)
    elif axis == "y":
        y_oo, vthread = s.split(y_o, factor=threads)
        s.reorder(n, c, y_oo, vthread, y_i, x, b, j)
    else:
        s.reorder(n, c, y_o, y_i, x, b, j)
    tensorize_moves(s, gemm, accs, [wgt], inps, n, vthread if vthread is not None else y_o, vthread)
    return s


def tensorize_moves(s: Schedule, gemm: GemmIntrin, accs: list, wgts: list, inps: list, n: object,
                    y_o: object, vthread: object = None) -> None:
    """The common tail of the identity-GEMM kernels (add, max pool): each moved tile's accumulator and input
    copies at the row tile ``y_o``, the identity weight tiles once per image block ``n``, ``vthread`` (a loop)
    bound to virtual threads, the moves tensorized as GEMM reset + update."""
    inits = []
    for acc in accs:
        s.compute_at(acc, y_o)
        inits.append(s.decompose_reduction(acc, s.get_loops(acc)[-7]))
    for w in wgts:
        s.compute_at(w, n)
    for inp in inps:
        s.compute_at(inp, y_o)
    s.compact_buffers()
    if vthread is not None:
        s.bind(vthread, "vthread")
    for acc, init in zip(accs, inits):
        s.tensorize(s.get_loops(acc)[-3], gemm.update)
        s.tensorize(s.get_loops(init)[-2], gemm.reset)


def alu_kernel_func(s: Schedule, wl: object, target: VdlaTarget) -> PrimFunc:
    """The scheduled function of an identity-GEMM + ALU kernel, marked for the VDLA pipeline: requantization on
    the STORE, and no bias-init fold (its accumulator tiles are moved operands, not resident biases)."""
    func = s.func
    attrs = (("target", "vdla"), ("config", target.config.name), ("workload", wl), (REQUANT_ON_STORE, True),
             (BIAS_INIT, False), (ALU_FOLD, True))
    return PrimFunc(func.name, func.params, func.body, attrs)


def identity_tile(cfg: HwConfig) -> np.ndarray:
    """The int8 identity weight tile (packed OIHWoi, one block) that moves an input tile into the accumulators."""
    return np.eye(cfg.block_out, cfg.block_in, dtype=np.int8).reshape(1, 1, 1, 1, cfg.block_out, cfg.block_in)


def add_func(wl: AddWorkload, target: VdlaTarget, name: str = "add") -> PrimFunc:
    return alu_kernel_func(add_schedule(wl, target, name), wl, target)


@dataclass(frozen=True)
class CompiledAdd:
    workload: AddWorkload
    module: VdlaModule

    def constants(self) -> tuple[np.ndarray, ...]:
        """The identity weight tile and (when the add has any) the resident constant tiles (``m_a, m_b, r``)."""
        cfg = self.module.target.config
        wl = self.workload
        eye = identity_tile(cfg)
        m = wl.mult or (0, 0)
        consts = np.empty((3, cfg.batch, cfg.block_out), np.int32)
        for k, v in enumerate((m[0], m[1], wl.round)):
            consts[k] = v
        return (eye, consts) if len(self.module.params) == 5 else (eye,)

    def bind(self, a: np.ndarray | None = None, b: np.ndarray | None = None):  # type: ignore[no-untyped-def]
        """The program with the constants (and the operands, packed, when given) in DRAM."""
        shape = self.module.params[0].shape
        zeros = np.zeros(shape, np.int8)
        return self.module.bind(zeros if a is None else a, zeros if b is None else b, *self.constants())

    def run_packed(self, a: np.ndarray, b: np.ndarray, backend: str = "fsim", **options: object):  # type: ignore[no-untyped-def]
        outs, result = self.module.run(a, b, *self.constants(), backend=backend, **options)
        return outs["out"], result


def compile_add(wl: AddWorkload, target: VdlaTarget | str = "default") -> CompiledAdd:
    """Schedule, lower and generate the program of one residual add."""
    tgt = target if isinstance(target, VdlaTarget) else VdlaTarget.from_config(target)
    return CompiledAdd(wl, build(add_func(wl, tgt), tgt))


def add_reference(a: np.ndarray, b: np.ndarray, wl: AddWorkload) -> np.ndarray:
    """NumPy: the graph operator ``qadd``'s reference on int8 arrays of any layout."""
    from vdla.compiler.graph.ops.qnn import qadd_reference

    return qadd_reference([a, b], {"mult": wl.mult, "align": wl.align, "round": wl.round, "shift": wl.shift,
                                   "relu": wl.relu})
