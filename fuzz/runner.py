"""Run one program on several backends and judge the runs.

The first backend is the reference; every other one must leave the whole DRAM
image bit-identical to it.  A backend that raises on a legal program is a crash
(legal programs must run everywhere).  When both ``cycle`` and ``rtl`` ran, the
cycle model's relative error against the RTL's cycle count is reported, and a
failure when it exceeds ``cycle_threshold``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from vdla_hw.asm import format_insn
from vdla_hw.isa import MemInsn, Opcode

from vdla.runtime.backends import Backend, check_options, get_backend
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult

DEFAULT_BACKENDS = ("fsim", "cycle", "rtl")
MAX_DIFF_LINES = 8


@dataclass(frozen=True)
class Failure:
    """Why a program failed: ``kind`` is ``mismatch``, ``crash`` or ``cycles``; ``backend`` is the culprit."""

    kind: str
    backend: str
    detail: str

    @property
    def signature(self) -> tuple[str, str]:
        """What a shrunk program must keep failing with."""
        return self.kind, self.backend


@dataclass(frozen=True)
class Outcome:
    """The verdict on one program."""

    cycles: Mapping[str, int | None]
    failure: Failure | None = None
    cycle_error: float | None = None
    """(cycle - rtl) / rtl, when both ran."""
    stats: Mapping[str, Any] = field(default_factory=dict)
    """The cycle model's statistics (for coverage), when it ran."""


class Runner:
    """Backends created once and reused for many programs.

    ``options`` maps a backend name to its ``run`` keywords (e.g. ``{"rtl": {"rtl_dir": ...}}``).
    """

    def __init__(self, backends: Sequence[str] = DEFAULT_BACKENDS, *, cycle_threshold: float = 0.25,
                 options: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        if not backends:
            raise ValueError("at least one backend is needed")
        self.names = tuple(backends)
        self.backends: dict[str, Backend] = {n: get_backend(n) for n in self.names}
        self.options = {n: dict((options or {}).get(n, {})) for n in self.names}
        for n, b in self.backends.items():
            check_options(b, self.options[n])
        self.cycle_threshold = cycle_threshold

    def run(self, program: Program) -> tuple[Outcome, dict[str, RunResult]]:
        """Run ``program`` everywhere; the outcome and the results of the backends that finished."""
        results: dict[str, RunResult] = {}
        crash: Failure | None = None
        for name, backend in self.backends.items():
            try:
                results[name] = backend.run(program, **self.options[name])
            except Exception as exc:  # noqa: BLE001 - any exception on a legal program is a finding to report
                crash = crash or Failure("crash", name, f"{type(exc).__name__}: {exc}")
        cycles = {n: r.cycles for n, r in results.items()}
        stats = results["cycle"].extra.get("stats", {}) if "cycle" in results else {}
        error = None
        if cycles.get("cycle") is not None and cycles.get("rtl"):
            error = (cycles["cycle"] - cycles["rtl"]) / cycles["rtl"]  # type: ignore[operator]
        failure = crash or self._compare(program, results)
        if failure is None and error is not None and abs(error) > self.cycle_threshold:
            failure = Failure("cycles", "cycle", f"cycle model {cycles['cycle']} vs RTL {cycles['rtl']} cycles "
                                                 f"({error:+.1%}, threshold {self.cycle_threshold:.0%})")
        return Outcome(cycles, failure, error, stats), results

    def _compare(self, program: Program, results: dict[str, RunResult]) -> Failure | None:
        ref = self.names[0]
        if ref not in results:
            return None
        for name in self.names[1:]:
            if name in results and not np.array_equal(results[name].dram, results[ref].dram):
                return Failure("mismatch", name, describe_diff(program, results[ref].dram, results[name].dram, ref, name))
        return None


def describe_diff(program: Program, want: np.ndarray, got: np.ndarray, want_name: str, got_name: str) -> str:
    """The first differing DRAM bytes, each with its buffer and the instruction that last wrote it."""
    diff = np.flatnonzero(want != got)
    lines = [f"{diff.size} DRAM byte(s) differ between {want_name} and {got_name}:"]
    for addr in diff[:MAX_DIFF_LINES]:
        buf, offset = buffer_at(program, int(addr))
        writer = last_writer(program, int(addr))
        who = f"last written by instruction {writer} ({format_insn(program.instructions[writer])})" if writer is not None \
            else "written by no instruction (initial data)"
        lines.append(f"  byte {int(addr)} ({buf}+{offset}): {want_name}={int(want[addr]):#04x} "
                     f"{got_name}={int(got[addr]):#04x}; {who}")
    return "\n".join(lines)


def buffer_at(program: Program, addr: int) -> tuple[str, int]:
    """The buffer holding DRAM byte ``addr`` and the byte's offset in it."""
    for name, spec in program.buffers.items():
        if spec.offset <= addr < spec.offset + spec.nbytes:
            return name, addr - spec.offset
    return "(no buffer)", addr


def last_writer(program: Program, addr: int) -> int | None:
    """Index of the last STORE whose DRAM rows cover byte ``addr`` (stores are the only DRAM writers)."""
    eb = program.config.out_elem_bytes
    for k in range(program.insn_count - 1, -1, -1):
        insn = program.instructions[k]
        if isinstance(insn, MemInsn) and insn.opcode == Opcode.STORE:
            elem = addr // eb
            row, col = divmod(elem - insn.dram_base, insn.x_stride) if insn.x_stride else (-1, -1)
            if elem >= insn.dram_base and 0 <= row < insn.y_size and col < insn.x_size:
                return k
    return None
