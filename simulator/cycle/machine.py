"""The cycle-level machine: fetch, load, compute and store on shared queues and DRAM.

:func:`run_cycle` is the cycle model's counterpart of
:func:`vdla.simulator.fsim.run_fsim`: same arguments, same static checks, same memory
result (the semantics are shared), plus timing statistics and optionally a
timeline.  Nothing can hang it: a watchdog process wakes every
``_CHUNK_CYCLES`` simulated cycles, and if no other event is scheduled then,
every unit is blocked for good -- a deadlock, reported with each unit's blocked
instruction and every queue's contents; it also enforces the simulated-cycle
and wall-clock limits of a :class:`Watchdog`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from vdla.simulator.checks import check_program
from vdla.simulator.window import Window
from vdla.simulator.counters import Counters
from vdla.simulator.cycle.compute import ComputeUnit
from vdla.simulator.cycle.dram import Dram
from vdla.simulator.cycle.fetch import FetchUnit
from vdla.simulator.cycle.kernel import Environment, Event
from vdla.simulator.cycle.load import LoadUnit
from vdla.simulator.cycle.queues import Queues
from vdla.simulator.cycle.stats import CycleStats, summarize
from vdla.simulator.cycle.store import StoreUnit
from vdla.simulator.cycle.trace import UNITS, Timeline
from vdla.simulator.cycle.unit import Context, Process
from vdla.simulator.errors import DeadlockError, SimTimeoutError, SimulationError
from vdla.simulator.state import MachineState
from vdla.simulator.tokens import DEP_QUEUES, TokenOps
from vdla_hw.config import HwConfig
from vdla_hw.isa import Insn

_CHUNK_CYCLES = 1 << 14
"""Simulated cycles between two deadlock / watchdog checks."""


@dataclass(frozen=True)
class Watchdog:
    """Limits that bound any run; exceeding one raises :class:`SimTimeoutError`."""

    max_cycles: int = 1 << 40
    """Simulated accelerator cycles (a run that finishes later, or is still running a
    ``_CHUNK_CYCLES`` check after passing it, raises)."""
    max_seconds: float = 3600.0
    """Wall-clock seconds."""

    def __post_init__(self) -> None:
        if self.max_cycles < 1 or not self.max_seconds > 0:
            raise ValueError(f"watchdog limits must be positive, got {self}")


@dataclass(frozen=True)
class CycleResult:
    """The outcome of a cycle-model run.

    ``dram`` and ``counters`` equal what :func:`~vdla.simulator.fsim.run_fsim` returns for
    the same program; ``stats`` says where the cycles went; ``timeline`` holds the
    per-instruction slices when one was requested.
    """

    dram: np.ndarray
    counters: dict[str, int]
    tokens_left: dict[str, int]
    stats: CycleStats
    timeline: Timeline | None


def run_cycle(
    cfg: HwConfig,
    insns: Iterable[Insn],
    dram: np.ndarray,
    *,
    insn_addr: int = 0,
    timeline: bool = False,
    watchdog: Watchdog = Watchdog(),
    zeroed_sram: bool = False,
    window: Window | None = None,
) -> CycleResult:
    """Run a program on the cycle model, on a copy of ``dram``.

    ``insn_addr`` is the DRAM byte address fetch reads the instruction stream from
    (it only affects burst alignment).  Raises the same errors as fsim for a bad
    program, :class:`DeadlockError` when the machine stops before FINISH, and
    :class:`SimTimeoutError` when a :class:`Watchdog` limit is reached. ``zeroed_sram`` treats SRAM as
    starting at zero instead of rejecting reads of never-written elements, as fsim does. ``window``
    is the DRAM address window, as for fsim.
    """
    program = tuple(insns)
    ops = check_program(cfg, program)
    return _Machine(cfg, program, ops, MachineState(cfg, dram, zeroed_sram=zeroed_sram, window=window), insn_addr, timeline).run(watchdog)


class _Machine:
    def __init__(
        self,
        cfg: HwConfig,
        insns: tuple[Insn, ...],
        ops: list[TokenOps],
        state: MachineState,
        insn_addr: int,
        timeline: bool,
    ) -> None:
        env = Environment()
        self.env = env
        self.cfg = cfg
        self.queues = Queues(env, cfg)
        self.dram = Dram(env, cfg, UNITS)
        self.ctx = Context(
            env=env,
            cfg=cfg,
            insns=insns,
            ops=ops,
            queues=self.queues,
            dram=self.dram,
            state=state,
            counters=Counters(),
            timeline=Timeline(cfg.clock_mhz) if timeline else None,
            finished=env.event(),
        )
        self.fetch = FetchUnit(self.ctx, insn_addr)
        self.load = LoadUnit(self.ctx)
        self.compute = ComputeUnit(self.ctx)
        self.store = StoreUnit(self.ctx)
        for unit in (self.fetch, self.load, self.compute, self.store):
            env.process(unit.run())

    # ---- the event loop with deadlock detection and watchdog ------------------------------
    def run(self, watchdog: Watchdog) -> CycleResult:
        env = self.env
        finished = self.ctx.finished
        halted = env.event()
        env.process(self._watch(watchdog, halted))
        try:
            env.run(finished, halted)
        except SimulationError as exc:
            raise exc from None
        if not finished.triggered:
            raise halted.value
        cycles = int(finished.value)
        if cycles > watchdog.max_cycles:
            # Units compute ahead of the simulation clock, so a run can finish past the limit
            # before the clock reaches it.
            raise self._timeout(
                f"{watchdog.max_cycles:,} simulated cycles", "max_cycles",
                f"FINISH, instruction {len(self.ctx.insns) - 1}, retired only at cycle {cycles:,}",
            )
        return self._result(cycles)

    def _watch(self, watchdog: Watchdog, halted: Event) -> Process:
        """Every ``_CHUNK_CYCLES`` simulated cycles: stop a deadlocked or overlong run.

        When this process wakes and no other event is scheduled, every unit is blocked
        on a queue for good: FINISH can never retire.  The error is handed over through
        ``halted`` (the run raises it; the watchdog process itself must end normally).
        """
        env = self.env
        deadline = time.perf_counter() + watchdog.max_seconds
        while True:
            yield env.timeout(_CHUNK_CYCLES)
            if env.peek() == math.inf:
                halted.succeed(self._deadlock())
            elif env.now > watchdog.max_cycles:
                halted.succeed(self._timeout(f"{watchdog.max_cycles:,} simulated cycles", "max_cycles"))
            elif time.perf_counter() > deadline:
                halted.succeed(self._timeout(f"{watchdog.max_seconds:g} s of wall-clock time", "max_seconds"))
            else:
                continue
            return

    def _result(self, cycles: int) -> CycleResult:
        ports = self.dram.ports
        counters = self.ctx.counters.as_dict()
        stats = summarize(
            self.cfg,
            cycles,
            {u.name: u.counters for u in (self.fetch, self.load, self.compute, self.store)},
            counters,
            dram_bytes_read=self.dram.bytes_read,
            dram_bytes_written=self.dram.bytes_written,
            dram_bytes_by_unit={name: p.bytes_read + p.bytes_written for name, p in ports.items()},
            dram_busy_cycles=max(self.dram.read_beats, self.dram.write_beats),
        )
        tokens_left = {q: len(self.queues.dep[q].items) for q in DEP_QUEUES}
        return CycleResult(self.ctx.state.dram, counters, tokens_left, stats, self.ctx.timeline)

    def _blocked(self) -> dict[str, str]:
        return {u.name: u.describe_blocked() for u in (self.fetch, self.load, self.compute, self.store)}

    def _deadlock(self) -> DeadlockError:
        blocked = self._blocked()
        occupancy = self.queues.occupancy()
        lines = [
            f"deadlock at cycle {self._stopped_at():,}: every unit is blocked and FINISH "
            f"(instruction {len(self.ctx.insns) - 1}) has not retired"
        ]
        lines += [f"  {name}: {text}" for name, text in blocked.items()]
        snapshot = self.queues.snapshot()
        dep = self.cfg.dep_queue_depth
        lines.append(
            "  dependency queues: "
            + " ".join(f"{q}={occupancy[q]}/{dep} (from {_short(snapshot[q]['tokens_from'])})" for q in DEP_QUEUES)
        )
        cmd_names = [k for k in occupancy if k.startswith("cmd_")]
        lines.append(
            "  command queues: "
            + " ".join(
                f"{k}={occupancy[k]}/{self.cfg.cmd_queue_depth} {_short(snapshot[k]['instructions'])}" for k in cmd_names
            )
        )
        lines.append(
            "  fix: every pop needs a matching push earlier in the producing module's program order, and "
            "queues must not fill with tokens nobody pops"
        )
        return DeadlockError("\n".join(lines), blocked, snapshot)

    def _stopped_at(self) -> int:
        """The cycle the last unit blocked: when the machine stopped."""
        return int(max(u.blocked_at for u in (self.fetch, self.load, self.compute, self.store)))

    def _timeout(self, what: str, option: str, where: str | None = None) -> SimTimeoutError:
        where = where or "; ".join(f"{k}: {v}" for k, v in self._blocked().items())
        return SimTimeoutError(
            f"watchdog: the cycle model ran {what} without FINISH retiring "
            f"(at cycle {int(self.env.now):,}; {where}); "
            f"raise the watchdog's {option} if the program is that long"
        )


def _short(items: list[int], keep: int = 6) -> str:
    """A queue's contents for one line of a report: the oldest few entries."""
    if not items:
        return "[]"
    head = ", ".join(str(i) for i in items[:keep])
    return f"[{head}{', ...' if len(items) > keep else ''}]"
