"""The fast paths of :func:`vdla.simulator.semantics.execute`: GEMM/ALU plans and replays.

Programs run a few loop instructions thousands of times over unchanged micro-ops.  A *plan* is a
GEMM or ALU instruction's loop resolved once for the micro-op words it reads: its bounds-checked
element indices, sorted and grouped for one vectorized update (:class:`GemmPlan`,
:class:`AluPlan`), cached in the :class:`~vdla.simulator.state.MachineState`.  A *replay* is a
closure that applies a checked instruction again -- a LOAD's byte copy between fixed views, a
GEMM's gathers and float32/int32 products, an ALU's gather/compute/scatter -- with every shape
and buffer resolved when it is built; ``execute`` keeps it in the state's replay registry.

Everything is vectorized with NumPy: a GEMM over ``iter_out x iter_in x uops`` is one gather,
one batched product and one grouped sum (a float32 matmul where its sums are exact, see
:func:`float_chunk`; one matrix product when the loop is a tiled matmul, see
:func:`factor_gemm`); a hazard-free ALU instruction is one gather/compute/scatter.  A replay
computes exactly what the reference semantics say, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluInsn, AluOp, GemmInsn, MemInsn, MemType, Opcode, alu_apply

from vdla.simulator.access import check_copy_forwarding, check_loop, loop_indices
from vdla.simulator.state import InsnEffect, MachineState


# Enum members as module constants: in Python 3.11 looking a member up on its Enum class costs
# several times a global lookup, and the replays compare against them per instruction.
_LOAD, _GEMM = Opcode.LOAD, Opcode.GEMM
_MIN, _MAX, _ADD, _MUL, _MOV = AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.MUL, AluOp.MOV


@dataclass(frozen=True)
class GemmPlan:
    """Bounds-checked GEMM indices; ``src``/``wgt``/``targets``/``starts`` are None for a reset.

    ``src``/``wgt`` list the iterations' operands sorted (stably) by destination, so the
    iterations into each distinct destination (``targets``, ascending) are adjacent and
    ``starts`` marks where each of those groups begins; ``src_rows``/``wgt_rows`` are the
    distinct elements read, for the written-ness check.  For an ``overwrite`` GEMM, ``src``/``wgt``
    hold only the last iteration into each destination (the one whose product stays) and
    ``starts`` is every position.
    """

    dst: np.ndarray
    src: np.ndarray | None = None
    wgt: np.ndarray | None = None
    targets: np.ndarray | None = None
    starts: np.ndarray | None = None
    src_rows: np.ndarray | None = None
    wgt_rows: np.ndarray | None = None
    group: int = 0
    """Iterations into every destination when all have the same count and the float path is exact
    (:func:`float_chunk`), else 0 (the integer path)."""
    chunk: int = 0
    """Iterations summed by one float matmul row: a divisor of ``group`` small enough to be exact."""
    target_rows: slice | np.ndarray | None = None
    """``targets`` as a slice when they are consecutive (a slice updates in place, no gather/scatter)."""
    factored: tuple[np.ndarray, np.ndarray, int, int, int, slice | np.ndarray] | None = None
    """``(src, wgt, iter_out, iter_in, uops, targets)`` when the loop is one matrix product
    (see :func:`factor_gemm`), else None."""


@dataclass(frozen=True)
class AluPlan:
    """Bounds-checked ALU indices; ``src`` is None with an immediate operand. ``rows`` are the
    distinct accumulator elements read (destinations and sources), for the written-ness check."""

    dst: np.ndarray
    src: np.ndarray | None
    hazard_free: bool
    rows: np.ndarray


def loop_plan(state: MachineState, insn: GemmInsn | AluInsn, index: int, bgn: int, end: int) -> GemmPlan | AluPlan:
    """The cached plan of ``insn`` over the micro-ops now in ``uop[bgn:end]``, built on first use.

    Instructions are frozen and the key holds the micro-op words, so a cached plan is exactly
    what building it again would give; a plan that fails its bounds checks is never stored.
    """
    words = state.uop_words[bgn:end].tobytes()
    # First by the instruction object: hashing a frozen instruction (its fields, enums among them)
    # costs more than the rest of a cached lookup. The entry holds the object, so its id stays its own.
    hit = state.plans_by_id.get((id(insn), words))
    if hit is not None and hit[0] is insn:
        return hit[1]
    key = (insn, words)
    plan = state.plans.get(key)
    if plan is None:
        build = gemm_plan if isinstance(insn, GemmInsn) else alu_plan
        plan = state.plans[key] = build(state, insn, index, bgn, end)  # type: ignore[arg-type]
    state.plans_by_id[(id(insn), words)] = (insn, plan)
    return plan


def plan_checked(state: MachineState, plan: GemmPlan | AluPlan) -> bool:
    """Whether a run of ``plan`` passed its written-ness checks (and recorded its writes) before.
    Written-ness only grows, so the elements it read and wrote then still are: skip the checks."""
    return id(plan) in state.checked_plans  # plans stay in state.plans for the whole run: ids are stable


def gemm_plan(state: MachineState, insn: GemmInsn, index: int, bgn: int, end: int) -> GemmPlan:
    """Build the plan of GEMM ``insn`` over the micro-ops ``uop[bgn:end]``, checking its loop's bounds."""
    dst = loop_indices(insn, state.uop_fields["dst"][bgn:end], insn.dst_factor_out, insn.dst_factor_in)
    if insn.reset:
        check_loop(insn, index, [("ACC", dst, state.acc.shape[0])])
        return GemmPlan(dst)
    src = loop_indices(insn, state.uop_fields["src"][bgn:end], insn.src_factor_out, insn.src_factor_in)
    wgt = loop_indices(insn, state.uop_fields["wgt"][bgn:end], insn.wgt_factor_out, insn.wgt_factor_in)
    check_loop(insn, index, [("ACC", dst, state.acc.shape[0]), ("INP", src, state.inp_sram.shape[0]),
                              ("WGT", wgt, state.wgt_sram.shape[0])])
    order = np.argsort(dst, kind="stable")
    sorted_dst = dst[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_dst[1:] != sorted_dst[:-1])))
    if insn.overwrite:
        # Each iteration writes its product: the last into each destination wins.
        last = np.concatenate((starts[1:], [sorted_dst.size])) - 1
        keep = order[last]
        chunk = float_chunk(state.cfg, 1)
        targets = sorted_dst[starts]
        return GemmPlan(dst, src[keep], wgt[keep], targets, np.arange(starts.size), np.unique(src),
                         np.unique(wgt), group=1 if chunk else 0, chunk=chunk, target_rows=_as_slice(targets))
    group = sorted_dst.size // starts.size
    uniform = sorted_dst.size == group * starts.size and np.array_equal(starts, np.arange(starts.size) * group)
    chunk = float_chunk(state.cfg, group) if uniform else 0
    targets = sorted_dst[starts]
    return GemmPlan(dst, src[order], wgt[order], targets, starts, np.unique(src), np.unique(wgt),
                     group=group if chunk else 0, chunk=chunk, target_rows=_as_slice(targets),
                     factored=factor_gemm(state, insn, bgn, end))


def factor_gemm(state: MachineState, insn: GemmInsn, bgn: int, end: int
                ) -> tuple[np.ndarray, np.ndarray, int, int, int, slice | np.ndarray] | None:
    """The loop of an accumulating GEMM as one matrix product, when it is one.

    That is the tiled matrix product compilers emit: every micro-op of the range has the same
    destination and the iterations ``(i0, i1)`` write distinct ones, the inputs do not depend on
    ``i1`` (``src_factor_in == 0``) and the weights not on ``i0`` (``wgt_factor_out == 0``).  Then
    ``acc[dst(i0, i1)] += sum_u inp[src(i0, u)] @ wgt[wgt(i1, u)].T`` is an ``iter_out x (uops *
    BLOCK_IN)`` by ``(uops * BLOCK_IN) x (iter_in * BLOCK_OUT)`` product, exact in float32 when a
    sum of ``uops`` iterations is (:func:`float_chunk`).  Returns ``(src, wgt, iter_out, iter_in,
    uops, targets)``: the input elements in (i0, u) order, the weight elements in (i1, u) order,
    the destinations in (i0, i1) order (a slice when consecutive); None otherwise.
    """
    uops, outer, inner = end - bgn, insn.iter_out, insn.iter_in
    fields = state.uop_fields
    dst_u = fields["dst"][bgn:end]
    if insn.overwrite or insn.src_factor_in or insn.wgt_factor_out or not (dst_u == dst_u[0]).all():
        return None
    if float_chunk(state.cfg, uops) != uops:
        return None
    o = np.arange(outer, dtype=np.int64)[:, None]
    i = np.arange(inner, dtype=np.int64)[None, :]
    dst = (int(dst_u[0]) + o * insn.dst_factor_out + i * insn.dst_factor_in).reshape(-1)
    if np.unique(dst).size != dst.size:
        return None
    src = (fields["src"][bgn:end][None, :] + o * insn.src_factor_out).reshape(-1)
    wgt = (fields["wgt"][bgn:end][None, :] + i.T * insn.wgt_factor_in).reshape(-1)
    consecutive = bool((dst == dst[0] + np.arange(dst.size)).all())
    targets: slice | np.ndarray = slice(int(dst[0]), int(dst[0]) + dst.size) if consecutive else dst
    return src, wgt, outer, inner, uops, targets


def _as_slice(rows: np.ndarray) -> slice | np.ndarray:
    """Ascending unique ``rows`` as a slice when they are consecutive, else themselves."""
    if rows.size and int(rows[-1]) - int(rows[0]) == rows.size - 1:
        return slice(int(rows[0]), int(rows[-1]) + 1)
    return rows


def float_chunk(cfg: HwConfig, group: int) -> int:
    """The largest divisor of ``group`` (iterations summed into one destination) whose sum of
    products stays exact in float32: at most 2**24 in magnitude with every input and weight at its
    extreme value; 0 when not even one iteration's BLOCK_IN products are exact."""
    term = 1 << (cfg.inp_width + cfg.wgt_width - 2)  # |inp * wgt| <= 2**(iw-1) * 2**(ww-1)
    most = (1 << 24) // (term * cfg.block_in)
    for chunk in range(min(group, most), 0, -1):
        if group % chunk == 0:
            return chunk
    return 0


def alu_plan(state: MachineState, insn: AluInsn, index: int, bgn: int, end: int) -> AluPlan:
    """Build the plan of ALU ``insn`` over the micro-ops ``uop[bgn:end]``, checking its loop's bounds
    and, for a MOV, the copy-forwarding rule."""
    depth = state.acc.shape[0]
    dst = loop_indices(insn, state.uop_fields["dst"][bgn:end], insn.dst_factor_out, insn.dst_factor_in)
    src = None
    if not insn.use_imm:
        src = loop_indices(insn, state.uop_fields["src"][bgn:end], insn.src_factor_out, insn.src_factor_in)
    check_loop(insn, index, [("ACC", dst, depth)] + ([] if src is None else [("ACC", src, depth)]))
    if insn.alu_op == _MOV:
        if src is not None:
            check_copy_forwarding(insn, index, dst, src)
        # A copy never reads its destinations: only the sources must hold defined values.
        rows = np.unique(dst[:0] if src is None else src)
    else:
        rows = np.unique(dst if src is None else np.concatenate((dst, src)))
    return AluPlan(dst, src, _alu_hazard_free(dst, src, depth), rows)


def _alu_hazard_free(dst: np.ndarray, src: np.ndarray | None, depth: int) -> bool:
    """True when one gather/compute/scatter equals sequential execution: every destination is
    written once and no iteration reads a destination written by an earlier iteration."""
    position = np.full(depth, dst.size, dtype=np.int64)
    order = np.arange(dst.size, dtype=np.int64)
    position[dst] = order
    if not np.array_equal(position[dst], order):
        return False
    return src is None or not bool(np.any(position[src] < order))


def gemm_replay(state: MachineState, insn: GemmInsn, plan: GemmPlan, iters: int) -> Callable[[], InsnEffect]:
    """The checked GEMM ``insn`` over ``plan``, with its shapes and buffers resolved once."""
    acc = state.acc
    acc_t = acc.dtype
    if plan.src is None:
        effect = InsnEffect(_GEMM, uop_iters=iters)
        rows = _as_slice(np.unique(plan.dst))

        def reset() -> InsnEffect:
            acc[rows] = 0
            return effect

        return reset
    effect = InsnEffect(_GEMM, uop_iters=iters, macs=iters * state.macs_per_cycle)
    # The operand tiles a GEMM reads, gathered and converted to float32 (exact) into buffers of
    # its own; weights transposed to (BLOCK_IN, BLOCK_OUT) on the way.
    inp_i, wgt_i = state.inp_sram, state.wgt_sram
    batch, block_in, block_out = inp_i.shape[1], inp_i.shape[2], wgt_i.shape[1]
    copyto = np.copyto
    # Products and sums in the accumulator's type wrap modulo 2**acc_width, exactly as the
    # hardware's adders do; the order of a wrapping sum does not change its value.
    # ``take`` gathers whole tiles several times faster than fancy indexing (indices are checked).
    if plan.factored is not None:
        # dst(i0, i1), src(i0, u), wgt(i1, u): one product of the iter_out x (uops x BLOCK_IN) inputs
        # and the (uops x BLOCK_IN) x (iter_in x BLOCK_OUT) weights; every sum has ``uops`` terms
        # (exact in float32, see float_chunk), added to the accumulators in their own type.
        x_idx, w_idx, outer, inner, uops, targets = plan.factored
        depth = uops * block_in
        x_buf = np.empty((outer * uops, batch, block_in), np.float32)
        w_buf = np.empty((inner * uops, block_in, block_out), np.float32)
        w_into = w_buf.transpose(0, 2, 1)
        if batch == 1 and isinstance(targets, slice):
            # The accumulators as (i0, i1, BLOCK_OUT): add the iter_in products (iter_out x
            # BLOCK_OUT each) of one stacked matmul through a transposed view, no copies.
            view = acc[targets].reshape(outer, inner, block_out).transpose(1, 0, 2)

            def stacked() -> InsnEffect:
                copyto(x_buf, inp_i.take(x_idx, axis=0))
                copyto(w_into, wgt_i.take(w_idx, axis=0))
                x = x_buf.reshape(outer, depth)
                w = w_buf.reshape(inner, depth, block_out)
                np.add(view, np.matmul(x, w).astype(np.int32).astype(acc_t, copy=False), out=view)  # exact casts
                return effect

            return stacked

        def factored() -> InsnEffect:
            copyto(x_buf, inp_i.take(x_idx, axis=0))
            copyto(w_into, wgt_i.take(w_idx, axis=0))
            x = x_buf
            if batch == 1:
                x = x.reshape(outer, depth)
            else:
                x = x.reshape(outer, uops, batch, block_in).transpose(0, 2, 1, 3).reshape(outer * batch, depth)
            w = w_buf.reshape(inner, depth, block_out).transpose(1, 0, 2).reshape(depth, inner * block_out)
            part = np.matmul(x, w)
            if batch == 1:
                part = part.reshape(outer * inner, 1, block_out)
            else:
                part = part.reshape(outer, batch, inner, block_out).transpose(0, 2, 1, 3).reshape(-1, batch, block_out)
            acc[targets] += part.astype(np.int32).astype(acc_t, copy=False)  # |part| <= 2**24: exact casts
            return effect

        return factored
    if plan.group:
        # Every destination sums ``group`` iterations: ``chunk`` of them are one row of a batched
        # float32 matmul (exact, see float_chunk), the chunks are summed in the accumulator's type.
        rows = plan.targets.size * (plan.group // plan.chunk)
        src, wgt, chunk, group, target_rows = plan.src, plan.wgt, plan.chunk, plan.group, plan.target_rows
        n_targets, overwrite = plan.targets.size, insn.overwrite
        x_buf = np.empty((src.size, batch, block_in), np.float32)
        w_buf = np.empty((wgt.size, block_in, block_out), np.float32)
        w_into = w_buf.transpose(0, 2, 1)

        def grouped() -> InsnEffect:
            copyto(x_buf, inp_i.take(src, axis=0))
            copyto(w_into, wgt_i.take(wgt, axis=0))
            x = x_buf
            if batch == 1:
                x = x.reshape(rows, 1, chunk * block_in)
            else:
                x = x.reshape(rows, chunk, batch, block_in).transpose(0, 2, 1, 3).reshape(rows, batch, -1)
            w = w_buf.reshape(rows, chunk * block_in, -1)
            part = np.matmul(x, w).astype(np.int32).astype(acc_t, copy=False)  # |part| <= 2**24: the casts are exact
            if group != chunk:
                part = part.reshape(n_targets, -1, batch, part.shape[-1]).sum(axis=1, dtype=acc_t)
            if overwrite:
                acc[target_rows] = part
            else:
                acc[target_rows] += part
            return effect

        return grouped

    def integer() -> InsnEffect:
        inp = state.inp_sram.take(plan.src, axis=0).astype(acc_t)
        wgt = state.wgt_sram.take(plan.wgt, axis=0).astype(acc_t)
        prod = np.einsum("nbi,noi->nbo", inp, wgt)
        if insn.overwrite:
            acc[plan.targets] = prod
        else:
            acc[plan.targets] += np.add.reduceat(prod, plan.starts, axis=0)
        return effect

    return integer


_IN_PLACE = {_MIN: np.minimum, _MAX: np.maximum, _ADD: np.add, _MUL: np.multiply}


def alu_replay(state: MachineState, insn: AluInsn, plan: AluPlan, effect: InsnEffect) -> Callable[[], InsnEffect]:
    """The checked, hazard-free ALU ``insn``: one gather / compute / scatter, in place on a slice
    of the accumulators when its destinations are consecutive (each is written once)."""
    acc, op, src = state.acc, insn.alu_op, plan.src
    dst = _as_slice(plan.dst) if plan.dst.size and bool(np.all(np.diff(plan.dst) == 1)) else plan.dst
    ufunc = _IN_PLACE.get(op) if isinstance(dst, slice) else None
    # The operand as alu_apply takes it: ADD and MUL convert an immediate to the accumulator type.
    imm = np.asarray(insn.imm, dtype=acc.dtype) if op in (_ADD, _MUL) else insn.imm
    if ufunc is not None:
        view = acc[dst]

        def in_place() -> InsnEffect:
            ufunc(view, imm if src is None else acc.take(src, axis=0), out=view)
            return effect

        return in_place

    def gathered() -> InsnEffect:
        acc[dst] = alu_apply(op, acc[dst], insn.imm if src is None else acc.take(src, axis=0))
        return effect

    return gathered


def load_replay(state: MachineState, insn: MemInsn, mt: MemType, sram_bytes: np.ndarray, raw: np.ndarray,
                 rows_y: int, cols_x: int) -> Callable[[], InsnEffect]:
    """A checked LOAD of whole-byte elements as a byte copy between fixed views (``raw`` is a view
    of ``state.dram``, so the replay reads the DRAM as it is then)."""
    base, y, x = insn.sram_base, insn.y_size, insn.x_size
    n = rows_y * cols_x
    eb = raw.shape[-1]
    block = sram_bytes[base : base + n].reshape(rows_y, cols_x, eb)
    inner = block[insn.y_pad0 : insn.y_pad0 + y, insn.x_pad0 : insn.x_pad0 + x]
    padded = inner.size != block.size
    effect = InsnEffect(_LOAD, mt, rows=y, row_bytes=x * eb, sram_elems=n, pad_elems=n - y * x)
    copyto = np.copyto

    def replay() -> InsnEffect:
        if padded:
            block[...] = 0
        copyto(inner, raw)
        return effect

    return replay
