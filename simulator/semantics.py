"""Bit-exact semantics of one VDLA instruction on the machine state.

:func:`execute` applies the memory effects of a single LOAD, STORE, GEMM, ALU or
FINISH to a :class:`~vdla.simulator.state.MachineState` and returns an
:class:`~vdla.simulator.state.InsnEffect` with the work it did (MACs, bytes, rows, loop
iterations); the functional simulator sums these into counters and the cycle model turns them
into time.  Token handling is not done here (see :mod:`vdla.simulator.tokens`): a caller decides
*when* an instruction runs, this module decides *what* it does, and which checks it must pass
(:mod:`vdla.simulator.access`).

The first run of an instruction is checked in full here; it leaves a replay that later runs of an
equal instruction call instead, and a GEMM/ALU loop is computed through a cached plan: both are
:mod:`vdla.simulator.replay`.  An ALU instruction whose micro-ops read an accumulator an earlier
micro-op of the same instruction wrote runs micro-op by micro-op here, keeping the sequential result.
"""

from __future__ import annotations

import numpy as np

from vdla_hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Insn, MemInsn, MemType, Opcode, alu_apply, requantize

from vdla.simulator import packing
from vdla.simulator.access import (
    check_sram, loop_range, require_loop_written, require_uops_written, sram_range_error, uninitialized_read_error,
)
from vdla.simulator.errors import MemoryAccessError, ProtocolError
from vdla.simulator.replay import alu_replay, gemm_replay, load_replay, loop_plan, plan_checked
from vdla.simulator.state import (
    REPLAY_KEYS, SEEN_ONCE, InsnEffect, MachineState, first_unwritten, mark_written, remember_replay,
)
from vdla.simulator.tokens import describe
from vdla.simulator.window import dram_window_error, in_window


# Enum members as module constants: in Python 3.11 looking a member up on its Enum class costs
# several times a global lookup, and the hot paths below compare against them per instruction.
_UOP, _INP, _WGT, _ACC, _OUT = MemType.UOP, MemType.INP, MemType.WGT, MemType.ACC, MemType.OUT
_LOAD, _STORE, _GEMM, _ALU, _FINISH = Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.ALU, Opcode.FINISH
_MOV = AluOp.MOV


def execute(state: MachineState, insn: Insn, index: int) -> InsnEffect:
    """Apply the memory effects of ``insn`` (the program's instruction ``index``) to ``state``.

    Raises :class:`ProtocolError` for an instruction the ISA forbids and
    :class:`MemoryAccessError` for any SRAM or DRAM access out of range.

    Programs run the same few instruction objects thousands of times: the first run of one
    checks it and leaves a *replay* in ``state.replays`` -- its views of DRAM and SRAM, index
    arrays and effect, resolved once -- that later runs of an equal instruction (dependency
    flags aside, which do not change what it does) call instead.  A replay does exactly
    what the full path would: every check it skips passed on the first run and cannot fail
    again (instructions are frozen, the DRAM image and window are fixed, written-ness only
    grows), and a GEMM/ALU replay holds only while the micro-op buffer is unchanged (``uop_gen``).
    """
    kind = type(insn)
    key = REPLAY_KEYS.get(kind)
    if key is not None:
        table, fields = state.replays[kind], key(insn)
        hit = table.get(fields)
        if hit is None:
            table[fields] = SEEN_ONCE  # a LOAD met once (im2col rows often are) is not worth a replay yet
            state.repeated = False
        else:
            gen = hit[0]
            if gen == -1 or gen == state.uop_gen:
                return hit[1]()
            state.repeated = True
    if isinstance(insn, GemmInsn):
        return _gemm(state, insn, index)
    if isinstance(insn, AluInsn):
        return _alu(state, insn, index)
    if isinstance(insn, MemInsn):
        return _load(state, insn, index) if insn.opcode == _LOAD else _store(state, insn, index)
    if isinstance(insn, FinishInsn):
        return InsnEffect(_FINISH)
    raise ProtocolError(f"instruction {index}: {insn!r} is not a VDLA instruction")


# ---- LOAD / STORE ----------------------------------------------------------------------


def dram_block(state: MachineState, insn: MemInsn, index: int, eb: int) -> np.ndarray:
    """The ``y_size x x_size`` DRAM elements of ``insn`` as a writable ``(y, x, eb)`` byte view of
    ``state.dram`` (rows ``x_stride`` elements apart, a row's elements ``elem_stride`` apart), after checking the window and the image."""
    y, x = insn.y_size, insn.x_size
    if y == 0 or x == 0:
        return state.dram[:0].reshape(y, x, eb)
    first, stride, step = insn.dram_base, insn.x_stride, insn.elem_stride
    last = insn.last_elem
    if not in_window(insn, eb, state.window):
        raise dram_window_error(insn, index, eb, state.window)
    dram = state.dram
    limit = dram.size // eb
    if last >= limit:
        raise MemoryAccessError(
            f"instruction {index} ({describe(insn)}): DRAM {insn.mem_type.name} elements [{first}, {last}] "
            f"(bytes [{first * eb}, {(last + 1) * eb})) are outside the {dram.size}-byte DRAM image "
            f"(valid element addresses [0, {limit - 1}] of {eb} bytes); fix dram_base/x_stride/y_size or enlarge DRAM"
        )
    if step != 1:  # a gathering LOAD: element (r, c) at first + r*stride + c*step (read only, never written)
        return np.lib.stride_tricks.as_strided(dram[first * eb :], (y, x, eb), (stride * eb, step * eb, 1))
    if stride == x or y == 1:
        return dram[first * eb : (first + y * x) * eb].reshape(y, x, eb)
    if x <= stride and first + y * stride <= limit:  # rows of whole strides fit: a reshape, then a column slice
        return dram[first * eb : (first + y * stride) * eb].reshape(y, stride, eb)[:, :x]
    # Overlapping rows (x_stride < x_size) or a last row ending near the end of the image.
    return np.lib.stride_tricks.as_strided(dram[first * eb :], (y, x, eb), (stride * eb, eb, 1))


def _load(state: MachineState, insn: MemInsn, index: int) -> InsnEffect:
    mt = insn.mem_type
    if mt == _OUT:
        raise ProtocolError(
            f"instruction {index} ({describe(insn)}): LOAD of memory type OUT; the output buffer can only be "
            f"stored, load accumulators with mem_type ACC"
        )
    y_pad0, x_pad0 = insn.y_pad0, insn.x_pad0
    padded = bool(y_pad0 or insn.y_pad1 or x_pad0 or insn.x_pad1)
    if mt == _UOP and padded:
        raise ProtocolError(f"instruction {index} ({describe(insn)}): micro-op loads cannot pad; set all pads to 0")
    eb = state.elem_bytes[mt]
    sram = state.buffers[mt]
    y, x = insn.y_size, insn.x_size
    rows_y = y_pad0 + y + insn.y_pad1
    cols_x = x_pad0 + x + insn.x_pad1
    n = rows_y * cols_x
    base = insn.sram_base
    if n and (base < 0 or base + n > sram.shape[0]):
        raise sram_range_error(insn, index, mt.name, base, base + n - 1, sram.shape[0])
    raw = dram_block(state, insn, index, eb)
    if mt == _UOP:
        words = raw.reshape(-1).view("<u4").astype(np.uint32)
        _set_uops(state, insn, index, base, words)
        mark_written(state, mt, slice(base, base + n))
        return InsnEffect(_LOAD, mt, rows=y, row_bytes=x * eb, sram_elems=n)
    sram_bytes = state.sram_bytes.get(mt)
    if sram_bytes is not None and n and state.repeated:
        replay = load_replay(state, insn, mt, sram_bytes, raw, rows_y, cols_x)
        remember_replay(state, insn, -1, replay)
        mark_written(state, mt, slice(base, base + n))
        return replay()
    if sram_bytes is not None:  # whole-byte little-endian elements: the DRAM bytes are the SRAM bytes
        if padded:
            block = sram_bytes[base : base + n].reshape(rows_y, cols_x, eb)
            block[:] = 0
            block[y_pad0 : y_pad0 + y, x_pad0 : x_pad0 + x] = raw
        else:
            sram_bytes[base : base + n] = raw.reshape(n, eb)
    else:
        values = packing.decode(raw, state.widths[mt]).reshape((y, x) + sram.shape[1:])
        block = sram[base : base + n].reshape((rows_y, cols_x) + sram.shape[1:])
        if padded:
            block[:] = 0
        block[y_pad0 : y_pad0 + y, x_pad0 : x_pad0 + x] = values
    mark_written(state, mt, slice(base, base + n))
    return InsnEffect(_LOAD, mt, rows=y, row_bytes=x * eb, sram_elems=n, pad_elems=n - y * x)


def _set_uops(state: MachineState, insn: MemInsn, index: int, base: int, words: np.ndarray) -> None:
    layout = state.isa.uop
    bad = np.flatnonzero(words.astype(np.uint64) >> np.uint64(layout.used_bits))
    if bad.size:
        k = int(bad[0])
        raise ProtocolError(
            f"instruction {index} ({describe(insn)}): micro-op word {k} (0x{int(words[k]):08x}) sets reserved bits "
            f"above bit {layout.used_bits - 1}; encode micro-ops with Isa.encode_uops"
        )
    n = words.size
    state.uop_gen += 1
    state.uop_words[base : base + n] = words
    fields = state.uop_fields
    fields["dst"][base : base + n], fields["src"][base : base + n], fields["wgt"][base : base + n] = \
        state.isa.decode_uop_fields(words)


def _store(state: MachineState, insn: MemInsn, index: int) -> InsnEffect:
    if insn.mem_type != _OUT:
        raise ProtocolError(
            f"instruction {index} ({describe(insn)}): STORE of memory type {insn.mem_type.name}; only OUT can be "
            f"stored (it narrows accumulators to the output width)"
        )
    if insn.y_pad0 or insn.y_pad1 or insn.x_pad0 or insn.x_pad1:
        raise ProtocolError(f"instruction {index} ({describe(insn)}): STORE cannot pad; set all pads to 0")
    cfg = state.cfg
    y, x = insn.y_size, insn.x_size
    n = y * x
    eb = state.elem_bytes[_OUT]
    if n == 0:
        return InsnEffect(_STORE, _OUT)
    check_sram(insn, index, "ACC (stored as OUT)", insn.sram_base, insn.sram_base + n - 1, state.acc.shape[0])
    block = dram_block(state, insn, index, eb)
    missing = first_unwritten(state, _ACC, slice(insn.sram_base, insn.sram_base + n))
    if missing is not None:
        raise uninitialized_read_error(insn, index, "ACC", insn.sram_base + missing, f"tile {missing} of the STORE")
    tiles = state.acc[insn.sram_base : insn.sram_base + n].reshape(y, x, cfg.batch * cfg.block_out)
    if insn.bias:
        tiles = tiles + _store_bias(state, insn, index)[:, None, :]  # wraps in the accumulator type
    data = packing.encode(requantize(tiles, insn.shift, insn.clip, insn.relu, cfg.out_width), cfg.out_width)
    block[...] = data.reshape(y, x, eb)
    return InsnEffect(_STORE, _OUT, rows=y, row_bytes=x * eb, sram_elems=n)


def _store_bias(state: MachineState, insn: MemInsn, index: int) -> np.ndarray:
    """The bias row of each DRAM row of a STORE with ``bias``: ``acc[bias_row + y * bias_step]``."""
    if insn.bias_step not in (0, 1):
        raise ProtocolError(f"instruction {index} ({describe(insn)}): bias_step {insn.bias_step} is not 0 or 1")
    rows = insn.bias_row + np.arange(insn.y_size, dtype=np.int64) * insn.bias_step
    last = int(rows[-1])
    check_sram(insn, index, "ACC (the STORE's bias)", insn.bias_row, last, state.acc.shape[0])
    missing = first_unwritten(state, _ACC, slice(insn.bias_row, last + 1))
    if missing is not None:
        raise uninitialized_read_error(insn, index, "ACC", insn.bias_row + missing, "the bias of the STORE")
    return state.acc[rows].reshape(insn.y_size, -1)


# ---- GEMM / ALU --------------------------------------------------------------------------


def _gemm(state: MachineState, insn: GemmInsn, index: int) -> InsnEffect:
    """Check a GEMM's loop (bounds through its plan, written-ness once per plan), then run it as a replay."""
    bgn, end = loop_range(state, insn, index)
    iters = insn.iter_out * insn.iter_in * (end - bgn)
    if iters == 0:
        return InsnEffect(_GEMM)
    plan = loop_plan(state, insn, index, bgn, end)
    if not plan_checked(state, plan):
        require_uops_written(state, insn, index)
        if plan.src is None:
            mark_written(state, _ACC, plan.dst)
        else:
            require_loop_written(state, insn, index, _INP, "src", plan.src_rows)
            require_loop_written(state, insn, index, _WGT, "wgt", plan.wgt_rows)
            if insn.overwrite:
                mark_written(state, _ACC, plan.targets)
            else:
                require_loop_written(state, insn, index, _ACC, "dst", plan.targets)
        state.checked_plans.add(id(plan))
    replay = gemm_replay(state, insn, plan, iters)
    remember_replay(state, insn, state.uop_gen, replay)
    return replay()


def _alu(state: MachineState, insn: AluInsn, index: int) -> InsnEffect:
    """Check an ALU instruction's loop like :func:`_gemm`; run it as a replay when one gather/compute/scatter
    equals sequential execution, else micro-op iteration by iteration."""
    bgn, end = loop_range(state, insn, index)
    iters = insn.iter_out * insn.iter_in * (end - bgn)
    if iters == 0:
        return InsnEffect(_ALU)
    plan = loop_plan(state, insn, index, bgn, end)
    dst, src = plan.dst, plan.src
    if not plan_checked(state, plan):
        require_uops_written(state, insn, index)
        if first_unwritten(state, _ACC, plan.rows) is not None:
            if insn.alu_op != _MOV:
                require_loop_written(state, insn, index, _ACC, "dst", np.unique(dst))
            require_loop_written(state, insn, index, _ACC, "src", plan.rows)
        if insn.alu_op == _MOV:
            mark_written(state, _ACC, dst)
        state.checked_plans.add(id(plan))
    acc = state.acc
    if plan.hazard_free:
        replay = alu_replay(state, insn, plan, InsnEffect(_ALU, uop_iters=iters, alu_copy=insn.alu_op == _MOV))
        remember_replay(state, insn, state.uop_gen, replay)
        return replay()
    else:
        # A micro-op reads or rewrites an accumulator an earlier micro-op of this
        # instruction wrote: keep the sequential order, one micro-op iteration at a time.
        for k in range(dst.size):
            operand = insn.imm if src is None else acc[src[k]]
            acc[dst[k]] = alu_apply(insn.alu_op, acc[dst[k]], operand)
    return InsnEffect(_ALU, uop_iters=iters, alu_copy=insn.alu_op == _MOV)
