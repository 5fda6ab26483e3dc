"""Waveforms of RTL runs: the cycle window to record, and the expected size of the FST file.

An FST of a whole ResNet-18 layer on the default preset is hundreds of MB (C10: ~250 k cycles of
~1,800 traced signals gave 270 MB). Before a run writes a waveform, :func:`check_waveform`
estimates its size from the cycles the program needs at least and the number of signals the
traced model records, and warns (:class:`WaveformSizeWarning`) above :data:`WARN_BYTES`,
suggesting ``--fst-window START:END``, which records only those cycles of the run.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.config import HwConfig
from vdla_hw.errors import UsageError
from vdla_hw.isa import AluInsn, AluOp, GemmInsn, MemInsn, MemType, Opcode

from vdla.runtime.program import Program

BYTES_PER_SIGNAL_CYCLE = 0.6
"""FST bytes per traced signal per cycle, measured on C10 of ResNet-18 (default preset)."""
WARN_BYTES = 100_000_000
"""Waveforms expected above this size are announced before the run."""
_TRACE_CODE = re.compile(r"\bc\+(\d+)\b")


class WaveformSizeWarning(UserWarning):
    """The waveform about to be written is expected to be large."""


@dataclass(frozen=True)
class Window:
    """Cycles ``start <= c < end`` of a run (counted from the start of the program)."""

    start: int
    end: int

    @classmethod
    def parse(cls, text: str) -> "Window":
        """``"START:END"`` (END may be empty: to the end of the run)."""
        start, sep, end = text.partition(":")
        try:
            window = cls(int(start or 0), int(end) if end else 1 << 62)
        except ValueError:
            window = None
        if not sep or window is None or not 0 <= window.start < window.end:
            raise UsageError(f"--fst-window {text!r} is not START:END with 0 <= START < END",
                             hint="e.g. --fst-window 0:20000 records the first 20,000 cycles")
        return window


def min_cycles(program: Program) -> int:
    """A lower bound of the cycles ``program`` takes: its busiest unit's work, without stalls."""
    cfg: HwConfig = program.config
    compute = load = store = 0
    for insn in program.instructions:
        if isinstance(insn, GemmInsn):
            compute += (insn.uop_end - insn.uop_bgn) * insn.iter_out * insn.iter_in
        elif isinstance(insn, AluInsn):
            ii = cfg.timing.alu_op_ii(reads_dst=insn.alu_op != AluOp.MOV)
            compute += (insn.uop_end - insn.uop_bgn) * insn.iter_out * insn.iter_in * ii
        elif isinstance(insn, MemInsn):
            elems = (insn.y_size + insn.y_pad0 + insn.y_pad1) * (insn.x_size + insn.x_pad0 + insn.x_pad1)
            beats = -(-elems * _elem_bytes(cfg, insn.mem_type) // cfg.bus_bytes)
            if insn.opcode == Opcode.STORE:
                store += beats
            elif insn.mem_type in (MemType.INP, MemType.WGT):
                load += beats
            else:
                compute += beats
    return max(compute, load, store, program.insn_count)


def _elem_bytes(cfg: HwConfig, mem_type: MemType) -> int:
    return {MemType.UOP: cfg.uop_elem_bytes, MemType.WGT: cfg.wgt_elem_bytes, MemType.INP: cfg.inp_elem_bytes,
            MemType.ACC: cfg.acc_elem_bytes, MemType.OUT: cfg.out_elem_bytes}[mem_type]


def traced_signals(library: Path) -> int | None:
    """Signals the traced harness records (Verilator's trace codes), read from its build folder."""
    decls = sorted((library.parent / "obj").glob("*__Trace__0__Slow.cpp"))
    codes = [int(c) for f in decls for c in _TRACE_CODE.findall(f.read_text())]
    return max(codes) + 1 if codes else None


def check_waveform(program: Program, library: Path, window: Window | None, path: str | Path) -> int | None:
    """Estimate the FST size of running ``program``; warn above :data:`WARN_BYTES`. Returns the estimate."""
    signals = traced_signals(library)
    if signals is None:
        return None
    cycles = min_cycles(program)
    if window is not None:
        cycles = max(0, min(cycles, window.end) - window.start)
    size = int(cycles * signals * BYTES_PER_SIGNAL_CYCLE)
    if size > WARN_BYTES:
        warnings.warn(f"the waveform {path} will take about {size / 1e6:,.0f} MB or more ({cycles:,} cycles or more x "
                      f"{signals:,} signals); record part of the run with --fst-window START:END",
                      WaveformSizeWarning, stacklevel=2)
    return size
