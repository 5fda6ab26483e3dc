"""The accelerator's state while a program runs, and the work one instruction does.

:class:`MachineState` holds a private copy of DRAM and the four SRAM buffers, with the
bookkeeping the checks need (which SRAM elements were written) and the caches the fast paths
keep (checked GEMM/ALU plans, and the *replay registry*: per instruction, a closure that applies
it again exactly as its checked first run did; see :mod:`vdla.simulator.replay`).
:class:`InsnEffect` is what one instruction did (bytes, MACs, loop iterations): the functional
simulator sums these into counters and the cycle model turns them into time.  What an
instruction does to this state is :func:`vdla.simulator.semantics.execute`.
"""

from __future__ import annotations

import sys
from dataclasses import fields as dataclass_fields
from operator import attrgetter
from typing import Any, Callable, NamedTuple

import numpy as np

from vdla_hw.config import HwConfig
from vdla_hw.isa import AluInsn, GemmInsn, Insn, MemInsn, MemType, Opcode

from vdla.simulator import packing
from vdla.simulator.window import Window, resolve_window


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
    :class:`~vdla.simulator.errors.UninitializedReadError`. ``zeroed_sram=True`` instead treats SRAM as starting at
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
        self.replays: dict[type, dict[tuple, tuple[int, Callable[[], InsnEffect]]]] = {t: {} for t in REPLAY_KEYS}
        """By instruction class and :data:`REPLAY_KEYS` fields: ``(uop_gen or -1, replay)``, where
        ``replay()`` applies an equal instruction again exactly as its checked first run did (see
        :func:`~vdla.simulator.semantics.execute`)."""
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
        # Plans are typed Any: their classes live in vdla.simulator.replay, which builds on this module.
        self.plans: dict[tuple[Insn, bytes], Any] = {}
        """Checked loop indices of GEMM/ALU instructions by (instruction, micro-op words they read):
        programs repeat a few loop instructions over unchanged micro-ops thousands of times
        (:class:`~vdla.simulator.replay.GemmPlan` / :class:`~vdla.simulator.replay.AluPlan`)."""
        self.plans_by_id: dict[tuple[int, bytes], tuple[Insn, Any]] = {}
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


def _replay_key(kind: type) -> Callable[[Insn], tuple]:
    """The fields of an instruction class that decide what it does: all but its dependency flags."""
    return attrgetter(*(f.name for f in dataclass_fields(kind) if f.name != "deps"))


SEEN_ONCE = (-2, None)
"""The replay entry of an instruction met once: no replay yet."""

REPLAY_KEYS: dict[type, Callable[[Insn], tuple]] = {k: _replay_key(k) for k in (MemInsn, GemmInsn, AluInsn)}
"""Per instruction class, the key its replays are found by (a C-level tuple of fields: hashing
the frozen instruction itself, dependency flags and all, costs several times more)."""


def remember_replay(state: MachineState, insn: Insn, uop_gen: int, replay: Callable[[], InsnEffect]) -> None:
    """Keep ``replay`` for the instructions equal to ``insn`` (while ``state.uop_gen == uop_gen``,
    or for good with -1)."""
    kind = type(insn)
    state.replays[kind][REPLAY_KEYS[kind](insn)] = (uop_gen, replay)


def mark_written(state: MachineState, mt: MemType, rows: slice | np.ndarray) -> None:
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


def first_unwritten(state: MachineState, mt: MemType, rows: slice | np.ndarray) -> int | None:
    """Position in ``rows`` (a slice or an index array) of the first element never written, or None."""
    if mt in state.all_written:
        return None
    ok = state.written[mt][rows]
    if ok.all():
        return None
    return int(np.argmin(ok))
