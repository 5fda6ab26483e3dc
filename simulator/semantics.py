"""Bit-exact semantics of one VDLA instruction on the machine state.

:func:`execute` applies the memory effects of a single LOAD, STORE, GEMM, ALU or
FINISH to a :class:`MachineState` and returns an :class:`InsnEffect` with the
work it did (MACs, bytes, rows, loop iterations); the functional simulator sums
these into counters and the cycle model turns them into time.  Token handling is
not done here (see :mod:`vdla.simulator.tokens`): a caller decides *when* an
instruction runs, this module decides *what* it does.

Everything is vectorized with NumPy: a GEMM over ``iter_out x iter_in x uops``
is one gather, one batched product and one grouped sum; an ALU instruction is
one gather/compute/scatter unless a micro-op reads an accumulator an earlier
micro-op of the same instruction wrote, in which case it runs micro-op by
micro-op to keep the sequential result.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from operator import attrgetter
from typing import Callable, NamedTuple

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Insn, MemInsn, MemType, Opcode, requantize

from vdla.simulator import packing
from vdla.simulator.errors import MemoryAccessError, ProtocolError, UninitializedReadError
from vdla.simulator.tokens import describe
from vdla.simulator.window import Window, dram_window_error, in_window, resolve_window


# Enum members as module constants: in Python 3.11 looking a member up on its Enum class costs
# several times a global lookup, and the hot paths below compare against them per instruction.
_UOP, _INP, _WGT, _ACC, _OUT = MemType.UOP, MemType.INP, MemType.WGT, MemType.ACC, MemType.OUT
_LOAD, _STORE, _GEMM, _ALU, _FINISH = Opcode.LOAD, Opcode.STORE, Opcode.GEMM, Opcode.ALU, Opcode.FINISH
_MIN, _MAX, _ADD, _MUL, _MOV = AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.MUL, AluOp.MOV


class InsnEffect(NamedTuple):
    """The work one instruction did; the cycle model derives its duration from these counts.

    For LOAD/STORE, ``rows`` DRAM rows of ``row_bytes`` bytes each were moved and
    ``sram_elems`` SRAM elements (tiles) were written or read, ``pad_elems`` of them
    zero padding.  For GEMM/ALU, ``uop_iters`` = iter_out * iter_in * micro-ops; ``alu_copy``
    marks a MOV, whose iterations issue every cycle instead of every ``alu_ii``.

    A named tuple, not a frozen dataclass: one is built per simulated instruction, and a frozen
    dataclass's ``__init__`` cost a measurable share of a LOAD's simulation time.
    """

    opcode: Opcode
    mem_type: MemType | None = None
    rows: int = 0
    row_bytes: int = 0
    sram_elems: int = 0
    pad_elems: int = 0
    uop_iters: int = 0
    macs: int = 0
    alu_copy: bool = False

    @property
    def dram_bytes(self) -> int:
        """Bytes moved over the DRAM bus (read by LOAD, written by STORE)."""
        return self.rows * self.row_bytes


class MachineState:
    """The accelerator's memories: a private copy of DRAM and the four SRAM buffers.

    SRAM buffers are arrays of tiles: ``uop`` (depth,) uint32 words (with their
    decoded fields in ``uop_dst``/``uop_src``/``uop_wgt``), ``inp`` (depth, BATCH,
    BLOCK_IN), ``wgt`` (depth, BLOCK_OUT, BLOCK_IN) and ``acc`` (depth, BATCH,
    BLOCK_OUT), each in the smallest signed NumPy type of its configured width.

    ``written`` records, per buffer and element, whether an instruction has written it: the
    hardware's SRAM starts undefined, so reading an element never written raises
    :class:`UninitializedReadError`. ``zeroed_sram=True`` instead treats SRAM as starting at
    zero (for hand-made tests that rely on it; no hardware guarantees it).
    """

    def __init__(self, cfg: HwConfig, dram: np.ndarray, *, zeroed_sram: bool = False,
                 window: Window | None = None) -> None:
        self.cfg = cfg
        self.isa = cfg.isa
        self.dram: np.ndarray = np.array(dram, dtype=np.uint8, copy=True).reshape(-1)
        self.window: Window = resolve_window(window, self.dram.size)
        """The DRAM bytes ``[base, limit)`` DMA may touch (default: the whole image)."""
        self.uop_words = np.zeros(cfg.uop_buff_depth, dtype=np.uint32)
        self.uop_fields = {name: np.zeros(cfg.uop_buff_depth, dtype=np.int64) for name in ("dst", "src", "wgt")}
        """The decoded micro-op fields by operand (``"dst"``, ``"src"``, ``"wgt"``)."""
        self.uop_gen = 0
        """Bumped whenever the micro-op buffer may change (a LOAD UOP, or an array handed out by
        :attr:`uop` / :attr:`uop_dst` / ...): replays of GEMM/ALU instructions hold for one value."""
        self.repeated = False
        """Whether the instruction being executed was met before (its replay is worth building)."""
        self.replays: dict[type, dict[tuple, tuple[int, Callable[[], InsnEffect]]]] = {t: {} for t in _REPLAY_KEYS}
        """By instruction class and :data:`_REPLAY_KEYS` fields: ``(uop_gen or -1, replay)``, where
        ``replay()`` applies an equal instruction again exactly as its checked first run did (see
        :func:`execute`)."""
        self.inp_sram = np.zeros((cfg.inp_buff_depth, cfg.batch, cfg.block_in), dtype=packing.dtype_for(cfg.inp_width))
        self.wgt_sram = np.zeros((cfg.wgt_buff_depth, cfg.block_out, cfg.block_in), dtype=packing.dtype_for(cfg.wgt_width))
        self.acc = np.zeros((cfg.acc_buff_depth, cfg.batch, cfg.block_out), dtype=packing.dtype_for(cfg.acc_width))
        self.macs_per_cycle = cfg.macs_per_cycle
        self.elem_bytes = {
            MemType.UOP: cfg.uop_elem_bytes,
            MemType.INP: cfg.inp_elem_bytes,
            MemType.WGT: cfg.wgt_elem_bytes,
            MemType.ACC: cfg.acc_elem_bytes,
            MemType.OUT: cfg.out_elem_bytes,
        }
        self.buffers: dict[MemType, np.ndarray] = {MemType.UOP: self.uop_words, MemType.INP: self.inp_sram,
                                                   MemType.WGT: self.wgt_sram, MemType.ACC: self.acc}
        self.written: dict[MemType, np.ndarray] = {
            mt: np.full(buf.shape[0], zeroed_sram, dtype=bool) for mt, buf in self.buffers.items()
        }
        # Buffers whose every element has been written: their reads need no check, which keeps
        # the checks off the hot path of any program once its buffers are filled.
        self.all_written: set[MemType] = set(self.buffers) if zeroed_sram else set()
        self.checked_plans: set[int] = set()
        """ids of the plans whose reads were checked (and writes recorded) on their first run."""
        self.marked_ranges: set[tuple[MemType, int, int]] = set()
        """(buffer, start, stop) slices already recorded as written (written-ness only grows)."""
        self.widths: dict[MemType, int] = {MemType.INP: cfg.inp_width, MemType.WGT: cfg.wgt_width, MemType.ACC: cfg.acc_width}
        self.plans: dict[tuple[Insn, bytes], _GemmPlan | _AluPlan] = {}
        """Checked loop indices of GEMM/ALU instructions by (instruction, micro-op words they read):
        programs repeat a few loop instructions over unchanged micro-ops thousands of times."""
        self.plans_by_id: dict[tuple[int, bytes], tuple[Insn, _GemmPlan | _AluPlan]] = {}
        """The same plans by (id of the instruction object, micro-op words), with the object."""
        # A LOAD of whole-byte little-endian elements is a byte copy into the SRAM's own bytes.
        self.sram_bytes: dict[MemType, np.ndarray] = {}
        for mt, width in self.widths.items():
            buf = self.buffers[mt]
            if sys.byteorder == "little" and width in (8, 16, 32) and buf[0].nbytes == self.elem_bytes[mt]:
                self.sram_bytes[mt] = buf.view(np.uint8).reshape(buf.shape[0], -1)

    @property
    def uop(self) -> np.ndarray:
        """The micro-op buffer's words (writable: cached GEMM/ALU replays are dropped)."""
        self.uop_gen += 1
        return self.uop_words

    @property
    def uop_dst(self) -> np.ndarray:
        """The micro-ops' decoded destination fields (writable, as :attr:`uop`)."""
        self.uop_gen += 1
        return self.uop_fields["dst"]

    @property
    def uop_src(self) -> np.ndarray:
        """The micro-ops' decoded source fields (writable, as :attr:`uop`)."""
        self.uop_gen += 1
        return self.uop_fields["src"]

    @property
    def uop_wgt(self) -> np.ndarray:
        """The micro-ops' decoded weight fields (writable, as :attr:`uop`)."""
        self.uop_gen += 1
        return self.uop_fields["wgt"]

    @property
    def inp(self) -> np.ndarray:
        """The input SRAM, (depth, BATCH, BLOCK_IN) (writable)."""
        return self.inp_sram

    @property
    def wgt(self) -> np.ndarray:
        """The weight SRAM, (depth, BLOCK_OUT, BLOCK_IN) (writable)."""
        return self.wgt_sram


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
    key = _REPLAY_KEYS.get(kind)
    if key is not None:
        table, fields = state.replays[kind], key(insn)
        hit = table.get(fields)
        if hit is None:
            table[fields] = _SEEN  # a LOAD met once (im2col rows often are) is not worth a replay yet
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


def _replay_key(kind: type) -> Callable[[Insn], tuple]:
    """The fields of an instruction class that decide what it does: all but its dependency flags."""
    return attrgetter(*(f.name for f in dataclass_fields(kind) if f.name != "deps"))


_SEEN = (-2, None)
"""The replay entry of an instruction met once: no replay yet."""

_REPLAY_KEYS: dict[type, Callable[[Insn], tuple]] = {k: _replay_key(k) for k in (MemInsn, GemmInsn, AluInsn)}
"""Per instruction class, the key its replays are found by (a C-level tuple of fields: hashing
the frozen instruction itself, dependency flags and all, costs several times more)."""


def remember_replay(state: MachineState, insn: Insn, uop_gen: int, replay: Callable[[], InsnEffect]) -> None:
    """Keep ``replay`` for the instructions equal to ``insn`` (while ``state.uop_gen == uop_gen``,
    or for good with -1)."""
    kind = type(insn)
    state.replays[kind][_REPLAY_KEYS[kind](insn)] = (uop_gen, replay)


# ---- LOAD / STORE ----------------------------------------------------------------------


def dram_block(state: MachineState, insn: MemInsn, index: int, eb: int) -> np.ndarray:
    """The ``y_size x x_size`` DRAM elements of ``insn`` as a writable ``(y, x, eb)`` byte view of
    ``state.dram`` (rows ``x_stride`` elements apart), after checking the window and the image."""
    y, x = insn.y_size, insn.x_size
    if y == 0 or x == 0:
        return state.dram[:0].reshape(y, x, eb)
    first, stride = insn.dram_base, insn.x_stride
    last = first + (y - 1) * stride + (x - 1)
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
    if stride == x or y == 1:
        return dram[first * eb : (first + y * x) * eb].reshape(y, x, eb)
    if x <= stride and first + y * stride <= limit:  # rows of whole strides fit: a reshape, then a column slice
        return dram[first * eb : (first + y * stride) * eb].reshape(y, stride, eb)[:, :x]
    # Overlapping rows (x_stride < x_size) or a last row ending near the end of the image.
    return np.lib.stride_tricks.as_strided(dram[first * eb :], (y, x, eb), (stride * eb, eb, 1))


def sram_range_error(insn: Insn, index: int, buffer: str, lo: int, hi: int, depth: int) -> MemoryAccessError:
    """The error of an instruction addressing SRAM elements ``[lo, hi]`` of a ``depth``-element buffer."""
    return MemoryAccessError(
        f"instruction {index} ({describe(insn)}): {buffer} SRAM elements [{lo}, {hi}] are out of range; "
        f"the {buffer} buffer holds elements [0, {depth - 1}]"
    )


def _check_sram(insn: Insn, index: int, buffer: str, lo: int, hi: int, depth: int) -> None:
    """Raise unless SRAM element indices ``[lo, hi]`` lie in ``[0, depth)``."""
    if lo < 0 or hi >= depth:
        raise sram_range_error(insn, index, buffer, lo, hi, depth)


def _mark_written(state: MachineState, mt: MemType, rows: slice | np.ndarray) -> None:
    """Record that SRAM elements ``rows`` of buffer ``mt`` now hold defined values."""
    if mt in state.all_written:
        return
    if isinstance(rows, slice):  # LOADs rewrite the same few ranges: remember them, skip the array test
        key = (mt, rows.start, rows.stop)
        if key in state.marked_ranges:
            return
        state.marked_ranges.add(key)
    written = state.written[mt]
    if written[rows].all():  # the common steady state: reloading elements already written
        return
    written[rows] = True
    if written.all():
        state.all_written.add(mt)


def _first_unwritten(state: MachineState, mt: MemType, rows: slice | np.ndarray) -> int | None:
    """Position in ``rows`` (a slice or an index array) of the first element never written, or None."""
    if mt in state.all_written:
        return None
    ok = state.written[mt][rows]
    if ok.all():
        return None
    return int(np.argmin(ok))


def _uninitialized(insn: Insn, index: int, buffer: str, element: int, what: str) -> UninitializedReadError:
    return UninitializedReadError(
        f"instruction {index} ({describe(insn)}): {what} reads {buffer} SRAM element {element}, which no "
        f"instruction has written since the program started; SRAM starts with undefined contents on the "
        f"hardware, so LOAD it (or reset accumulators with a GEMM reset) before reading it"
    )


def _require_loop_written(
    state: MachineState, insn: GemmInsn | AluInsn, index: int, mt: MemType, operand: str, rows: np.ndarray
) -> None:
    """Raise unless every element in ``rows`` -- the distinct elements the loop's ``operand``
    (``"dst"``, ``"src"`` or ``"wgt"``) indices address -- was written."""
    if _first_unwritten(state, mt, rows) is None:
        return
    fields = state.uop_fields[operand][insn.uop_bgn : insn.uop_end]
    idx = _indices(insn, fields, getattr(insn, f"{operand}_factor_out"), getattr(insn, f"{operand}_factor_in"))
    at = int(np.argmin(state.written[mt][idx]))
    raise _uninitialized(insn, index, mt.name, int(idx[at]), f"loop iteration {at} (in i0/i1/uop order)")


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
        _mark_written(state, mt, slice(base, base + n))
        return InsnEffect(_LOAD, mt, rows=y, row_bytes=x * eb, sram_elems=n)
    sram_bytes = state.sram_bytes.get(mt)
    if sram_bytes is not None and n and state.repeated:
        replay = _load_replay(state, insn, mt, sram_bytes, raw, rows_y, cols_x)
        remember_replay(state, insn, -1, replay)
        _mark_written(state, mt, slice(base, base + n))
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
    _mark_written(state, mt, slice(base, base + n))
    return InsnEffect(_LOAD, mt, rows=y, row_bytes=x * eb, sram_elems=n, pad_elems=n - y * x)


def _load_replay(state: MachineState, insn: MemInsn, mt: MemType, sram_bytes: np.ndarray, raw: np.ndarray,
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
    _check_sram(insn, index, "ACC (stored as OUT)", insn.sram_base, insn.sram_base + n - 1, state.acc.shape[0])
    block = dram_block(state, insn, index, eb)
    missing = _first_unwritten(state, _ACC, slice(insn.sram_base, insn.sram_base + n))
    if missing is not None:
        raise _uninitialized(insn, index, "ACC", insn.sram_base + missing, f"tile {missing} of the STORE")
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
    _check_sram(insn, index, "ACC (the STORE's bias)", insn.bias_row, last, state.acc.shape[0])
    missing = _first_unwritten(state, _ACC, slice(insn.bias_row, last + 1))
    if missing is not None:
        raise _uninitialized(insn, index, "ACC", insn.bias_row + missing, "the bias of the STORE")
    return state.acc[rows].reshape(insn.y_size, -1)


# ---- GEMM / ALU --------------------------------------------------------------------------


def _loop_range(state: MachineState, insn: GemmInsn | AluInsn, index: int) -> tuple[int, int]:
    bgn, end = insn.uop_bgn, insn.uop_end
    if end < bgn:
        raise ProtocolError(f"instruction {index} ({describe(insn)}): uop_end {end} < uop_bgn {bgn}; the range is [bgn, end)")
    if end > state.uop_words.shape[0]:
        _check_sram(insn, index, "UOP", bgn, end - 1, state.uop_words.shape[0])
    return bgn, end


def _checked(state: MachineState, plan: _GemmPlan | _AluPlan) -> bool:
    """Whether a run of ``plan`` passed its written-ness checks (and recorded its writes) before.
    Written-ness only grows, so the elements it read and wrote then still are: skip the checks."""
    return id(plan) in state.checked_plans  # plans stay in state.plans for the whole run: ids are stable


def _require_uops_written(state: MachineState, insn: GemmInsn | AluInsn, index: int) -> None:
    missing = _first_unwritten(state, _UOP, slice(insn.uop_bgn, insn.uop_end))
    if missing is not None:
        raise _uninitialized(insn, index, "UOP", insn.uop_bgn + missing, "its micro-op range")


def _indices(insn: GemmInsn | AluInsn, fields: np.ndarray, factor_out: int, factor_in: int) -> np.ndarray:
    """Flattened element indices of every loop iteration in sequential (i0, i1, uop) order."""
    outer = np.arange(insn.iter_out, dtype=np.int64)[:, None, None] * factor_out
    inner = np.arange(insn.iter_in, dtype=np.int64)[None, :, None] * factor_in
    return (fields[None, None, :] + outer + inner).reshape(-1)


def loop_index_error(insn: Insn, index: int, buffer: str, at: int, total: int, element: int,
                     depth: int) -> MemoryAccessError:
    """The error of loop iteration ``at`` (of ``total``) addressing ``element`` past a ``depth``-element buffer."""
    return MemoryAccessError(
        f"instruction {index} ({describe(insn)}): loop iteration {at} (of {total}, in i0/i1/uop order) addresses "
        f"{buffer} SRAM element {element}; the {buffer} buffer holds elements [0, {depth - 1}]; fix the "
        f"micro-ops or the loop factors"
    )


def _check_loop(insn: Insn, index: int, operands: list[tuple[str, np.ndarray, int]]) -> None:
    """Raise for the first loop iteration (in i0/i1/uop order) with an operand past its buffer;
    within one iteration the operands count in the order given (destination, source, weight),
    as the hardware's loop check reports them."""
    first: tuple[int, int, str, int, int] | None = None
    for rank, (buffer, idx, depth) in enumerate(operands):
        if idx.size and idx.max() >= depth:
            at = int(np.flatnonzero(idx >= depth)[0])
            if first is None or (at, rank) < first[:2]:
                first = (at, rank, buffer, int(idx[at]), depth)
    if first is not None:
        at, _, buffer, element, depth = first
        raise loop_index_error(insn, index, buffer, at, operands[0][1].size, element, depth)


@dataclass(frozen=True)
class _GemmPlan:
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
class _AluPlan:
    """Bounds-checked ALU indices; ``src`` is None with an immediate operand. ``rows`` are the
    distinct accumulator elements read (destinations and sources), for the written-ness check."""

    dst: np.ndarray
    src: np.ndarray | None
    hazard_free: bool
    rows: np.ndarray


def _plan(state: MachineState, insn: GemmInsn | AluInsn, index: int, bgn: int, end: int) -> _GemmPlan | _AluPlan:
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
        build = _gemm_plan if isinstance(insn, GemmInsn) else _alu_plan
        plan = state.plans[key] = build(state, insn, index, bgn, end)  # type: ignore[arg-type]
    state.plans_by_id[(id(insn), words)] = (insn, plan)
    return plan


def _gemm_plan(state: MachineState, insn: GemmInsn, index: int, bgn: int, end: int) -> _GemmPlan:
    dst = _indices(insn, state.uop_fields["dst"][bgn:end], insn.dst_factor_out, insn.dst_factor_in)
    if insn.reset:
        _check_loop(insn, index, [("ACC", dst, state.acc.shape[0])])
        return _GemmPlan(dst)
    src = _indices(insn, state.uop_fields["src"][bgn:end], insn.src_factor_out, insn.src_factor_in)
    wgt = _indices(insn, state.uop_fields["wgt"][bgn:end], insn.wgt_factor_out, insn.wgt_factor_in)
    _check_loop(insn, index, [("ACC", dst, state.acc.shape[0]), ("INP", src, state.inp_sram.shape[0]),
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
        return _GemmPlan(dst, src[keep], wgt[keep], targets, np.arange(starts.size), np.unique(src),
                         np.unique(wgt), group=1 if chunk else 0, chunk=chunk, target_rows=_as_slice(targets))
    group = sorted_dst.size // starts.size
    uniform = sorted_dst.size == group * starts.size and np.array_equal(starts, np.arange(starts.size) * group)
    chunk = float_chunk(state.cfg, group) if uniform else 0
    targets = sorted_dst[starts]
    return _GemmPlan(dst, src[order], wgt[order], targets, starts, np.unique(src), np.unique(wgt),
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


def _gemm(state: MachineState, insn: GemmInsn, index: int) -> InsnEffect:
    bgn, end = _loop_range(state, insn, index)
    iters = insn.iter_out * insn.iter_in * (end - bgn)
    if iters == 0:
        return InsnEffect(_GEMM)
    plan = _plan(state, insn, index, bgn, end)
    if not _checked(state, plan):
        _require_uops_written(state, insn, index)
        if plan.src is None:
            _mark_written(state, _ACC, plan.dst)
        else:
            _require_loop_written(state, insn, index, _INP, "src", plan.src_rows)
            _require_loop_written(state, insn, index, _WGT, "wgt", plan.wgt_rows)
            if insn.overwrite:
                _mark_written(state, _ACC, plan.targets)
            else:
                _require_loop_written(state, insn, index, _ACC, "dst", plan.targets)
        state.checked_plans.add(id(plan))
    replay = _gemm_replay(state, insn, plan, iters)
    remember_replay(state, insn, state.uop_gen, replay)
    return replay()


def _gemm_replay(state: MachineState, insn: GemmInsn, plan: _GemmPlan, iters: int) -> Callable[[], InsnEffect]:
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


def _alu_apply(op: AluOp, a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """``op(a, b)`` wrapped to the accumulator type of ``a``."""
    if op == _MIN:
        return np.minimum(a, b)
    if op == _MAX:
        return np.maximum(a, b)
    if op == _ADD:
        return a + np.asarray(b, dtype=a.dtype)
    if op == _MUL:
        return a * np.asarray(b, dtype=a.dtype)
    if op == _MOV:
        return np.broadcast_to(np.asarray(b, dtype=a.dtype), a.shape)
    # SHR: arithmetic shift right by b, left by -b; amounts beyond the width saturate
    # (right: sign fill, left: zero), computed in int64 and narrowed by a wrapping cast.
    wide = a.astype(np.int64)
    if isinstance(b, int):  # an immediate: clamp in Python (np.clip on a scalar costs more than the shift)
        right, left = min(max(b, 0), 63), min(max(-b, 0), 63)
        return ((wide >> right) << left).astype(a.dtype)
    amount = np.asarray(b, dtype=np.int64)
    shifted = (wide >> np.clip(amount, 0, 63)) << np.clip(-amount, 0, 63)
    return shifted.astype(a.dtype)


def _alu_plan(state: MachineState, insn: AluInsn, index: int, bgn: int, end: int) -> _AluPlan:
    depth = state.acc.shape[0]
    dst = _indices(insn, state.uop_fields["dst"][bgn:end], insn.dst_factor_out, insn.dst_factor_in)
    src = None
    if not insn.use_imm:
        src = _indices(insn, state.uop_fields["src"][bgn:end], insn.src_factor_out, insn.src_factor_in)
    _check_loop(insn, index, [("ACC", dst, depth)] + ([] if src is None else [("ACC", src, depth)]))
    if insn.alu_op == _MOV:
        if src is not None:
            _check_copy_forwarding(insn, index, dst, src)
        # A copy never reads its destinations: only the sources must hold defined values.
        rows = np.unique(dst[:0] if src is None else src)
    else:
        rows = np.unique(dst if src is None else np.concatenate((dst, src)))
    return _AluPlan(dst, src, _alu_hazard_free(dst, src, depth), rows)


def copy_forwarding_hazard(dst: np.ndarray, src: np.ndarray) -> int | None:
    """The first iteration of a tensor-operand MOV (destinations ``dst``, sources ``src`` in loop
    order) that reads an accumulator an earlier iteration of it writes, or None.  A copy issues
    every cycle, before that write lands, and the hardware does not forward it: such a MOV is illegal."""
    first_write = np.full(int(max(dst.max(initial=0), src.max(initial=0))) + 1, dst.size, dtype=np.int64)
    np.minimum.at(first_write, dst, np.arange(dst.size, dtype=np.int64))
    late = np.flatnonzero(first_write[src] < np.arange(src.size))
    return int(late[0]) if late.size else None


def _check_copy_forwarding(insn: AluInsn, index: int, dst: np.ndarray, src: np.ndarray) -> None:
    """Raise unless the MOV ``insn`` is free of :func:`copy_forwarding_hazard`."""
    k = copy_forwarding_hazard(dst, src)
    if k is not None:
        writer = int(np.flatnonzero(dst == src[k])[0])
        raise ProtocolError(
            f"instruction {index} ({describe(insn)}): MOV iteration {k} reads ACC[{int(src[k])}], which iteration "
            f"{writer} of the same MOV writes; a copy issues every cycle and does not see that "
            f"write: copy from rows no earlier iteration writes, or split the MOV into two instructions"
        )


def _alu(state: MachineState, insn: AluInsn, index: int) -> InsnEffect:
    bgn, end = _loop_range(state, insn, index)
    iters = insn.iter_out * insn.iter_in * (end - bgn)
    if iters == 0:
        return InsnEffect(_ALU)
    plan = _plan(state, insn, index, bgn, end)
    dst, src = plan.dst, plan.src
    if not _checked(state, plan):
        _require_uops_written(state, insn, index)
        if _first_unwritten(state, _ACC, plan.rows) is not None:
            if insn.alu_op != _MOV:
                _require_loop_written(state, insn, index, _ACC, "dst", np.unique(dst))
            _require_loop_written(state, insn, index, _ACC, "src", plan.rows)
        if insn.alu_op == _MOV:
            _mark_written(state, _ACC, dst)
        state.checked_plans.add(id(plan))
    acc = state.acc
    if plan.hazard_free:
        replay = _alu_replay(state, insn, plan, InsnEffect(_ALU, uop_iters=iters, alu_copy=insn.alu_op == _MOV))
        remember_replay(state, insn, state.uop_gen, replay)
        return replay()
    else:
        # A micro-op reads or rewrites an accumulator an earlier micro-op of this
        # instruction wrote: keep the sequential order, one micro-op iteration at a time.
        for k in range(dst.size):
            operand = insn.imm if src is None else acc[src[k]]
            acc[dst[k]] = _alu_apply(insn.alu_op, acc[dst[k]], operand)
    return InsnEffect(_ALU, uop_iters=iters, alu_copy=insn.alu_op == _MOV)


_IN_PLACE = {_MIN: np.minimum, _MAX: np.maximum, _ADD: np.add, _MUL: np.multiply}


def _alu_replay(state: MachineState, insn: AluInsn, plan: _AluPlan, effect: InsnEffect) -> Callable[[], InsnEffect]:
    """The checked, hazard-free ALU ``insn``: one gather / compute / scatter, in place on a slice
    of the accumulators when its destinations are consecutive (each is written once)."""
    acc, op, src = state.acc, insn.alu_op, plan.src
    dst = _as_slice(plan.dst) if plan.dst.size and bool(np.all(np.diff(plan.dst) == 1)) else plan.dst
    ufunc = _IN_PLACE.get(op) if isinstance(dst, slice) else None
    # The operand as _alu_apply takes it: ADD and MUL convert an immediate to the accumulator type.
    imm = np.asarray(insn.imm, dtype=acc.dtype) if op in (_ADD, _MUL) else insn.imm
    if ufunc is not None:
        view = acc[dst]

        def in_place() -> InsnEffect:
            ufunc(view, imm if src is None else acc.take(src, axis=0), out=view)
            return effect

        return in_place

    def gathered() -> InsnEffect:
        acc[dst] = _alu_apply(op, acc[dst], insn.imm if src is None else acc.take(src, axis=0))
        return effect

    return gathered


def _alu_hazard_free(dst: np.ndarray, src: np.ndarray | None, depth: int) -> bool:
    """True when one gather/compute/scatter equals sequential execution: every destination is
    written once and no iteration reads a destination written by an earlier iteration."""
    position = np.full(depth, dst.size, dtype=np.int64)
    order = np.arange(dst.size, dtype=np.int64)
    position[dst] = order
    if not np.array_equal(position[dst], order):
        return False
    return src is None or not bool(np.any(position[src] < order))
