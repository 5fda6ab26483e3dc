"""What load, compute and store have in common: the decoupled instruction loop.

Each of the three modules runs the same SimPy process: take the next
instruction from its command queue, pop the dependency tokens it asks for, run
the instruction (its duration computed by the subclass, its memory effects
applied through ``simulator.semantics.execute`` when it completes), then push
its tokens.  Every wait is booked to the counter that names its cause and, when
a timeline is recorded, drawn as a ``wait`` slice.  Tokens carry vector clocks
so FINISH can check, as fsim does, that the program orders every load and store
before it.  Queue transfers that do not
block cost no SimPy event, so a typical instruction costs one timeout.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Generator, Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, NamedTuple

import simpy

from simulator.counters import Counters
from simulator.cycle.dram import Dram
from simulator.cycle.queues import Queues
from simulator.cycle.stats import UnitCounters
from simulator.cycle.trace import Timeline
from simulator.semantics import MachineState, execute
from simulator.tokens import TokenOps, describe
from vdla_hw.config import HwConfig
from vdla_hw.isa import DepFlags, Insn, MemInsn, Module, opcode_of

Process = Generator[simpy.Event, Any, None]
"""A SimPy process body."""


@dataclass
class Context:
    """The state every unit of one machine shares."""

    env: simpy.Environment
    cfg: HwConfig
    insns: Sequence[Insn]
    ops: Sequence[TokenOps]
    queues: Queues
    dram: Dram
    state: MachineState
    counters: Counters
    timeline: Timeline | None
    finished: simpy.Event
    """Succeeds (with the cycle) when FINISH retires: the end of the program."""


class Blocked(Enum):
    """What a unit's process is blocked on (for the deadlock report)."""

    EMPTY = "its command queue is empty"
    POP = "waits to pop a dependency token from"
    PUSH = "waits for room to push a dependency token into"
    DONE = "finished"


class Token(NamedTuple):
    """A dependency token: the instruction that pushed it and its module's vector clock then.

    The clock counts, per module, the instructions known to have retired before the
    push (directly or through earlier tokens); FINISH uses it to prove that every
    load and store is ordered before it, exactly as fsim does.
    """

    insn: int
    clock: tuple[int, int, int]


def slice_name(insn: Insn, index: int) -> str:
    """``OPCODE#index``, with the memory type for LOAD/STORE (``LOAD.INP#3``)."""
    op = opcode_of(insn).name
    if isinstance(insn, MemInsn):
        return f"{op}.{insn.mem_type.name}#{index}"
    return f"{op}#{index}"


def insn_args(insn: Insn) -> dict[str, Any]:
    """The instruction's fields as JSON-ready trace arguments (enums by name)."""
    out: dict[str, Any] = {"opcode": opcode_of(insn).name}
    for f in fields(insn):
        value = getattr(insn, f.name)
        if isinstance(value, DepFlags):
            value = str(value) or "-"
        elif isinstance(value, Enum):
            value = value.name
        out[f.name] = value
    return out


class Unit(ABC):
    """Base of the load, compute and store units; subclasses implement :meth:`execute`."""

    name: str = ""
    module: Module

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.env = ctx.env
        self.counters = UnitCounters()
        self.cmd = ctx.queues.cmd[self.module]
        self.blocked: tuple[Blocked, int | None, str | None] = (Blocked.EMPTY, None, None)
        self.blocked_at = 0
        """The cycle the unit last blocked (for the deadlock report)."""
        self.clock = [0, 0, 0]
        """Vector clock: instructions of each module known to have retired (own count, or via tokens)."""

    def run(self) -> Process:
        """The unit's SimPy process; it returns after FINISH (compute) or runs until the simulation stops."""
        env, ctx, c = self.env, self.ctx, self.counters
        timeline = ctx.timeline
        dep = ctx.queues.dep
        cmd = self.cmd
        clock, module = self.clock, self.module
        finish = len(ctx.insns) - 1
        while True:
            ok, item = cmd.try_get()
            if not ok:
                self.blocked_at = env.now
                self.blocked = (Blocked.EMPTY, None, None)
                t = env.now
                item = yield cmd.get()
                c.wait_queue_empty += env.now - t
            index, dispatched = item
            if dispatched > env.now:
                # Fetch queued it ahead of its decode (see fetch.py): it becomes visible then.
                t = env.now
                yield env.timeout(dispatched - t)
                c.wait_queue_empty += env.now - t
            insn = ctx.insns[index]
            ops = ctx.ops[index]
            for queue in ops.pops:
                ok, token = dep[queue].try_get()
                if not ok:
                    self.blocked_at = env.now
                    self.blocked = (Blocked.POP, index, queue)
                    t = env.now
                    token = yield dep[queue].get()
                    c.wait_token += env.now - t
                    if timeline is not None:
                        timeline.add(self.name, f"wait {queue}", t, env.now, "wait", {"queue": queue, "insn": index})
                for m, count in enumerate(token.clock):
                    if count > clock[m]:
                        clock[m] = count
            start = env.now
            waits_before = c.wait_dram
            duration = self.execute(index, insn)
            if duration:
                yield env.timeout(duration)
            ctx.counters.add(execute(ctx.state, insn, index))
            c.busy += env.now - start - (c.wait_dram - waits_before)
            if timeline is not None:
                timeline.add(self.name, slice_name(insn, index), start, env.now, "insn", insn_args(insn))
            clock[module] += 1
            if ops.pushes:
                token = Token(index, tuple(clock))
            for queue in ops.pushes:
                if not dep[queue].try_put(token):
                    self.blocked_at = env.now
                    self.blocked = (Blocked.PUSH, index, queue)
                    t = env.now
                    yield dep[queue].put(token)
                    c.wait_queue_full += env.now - t
                    if timeline is not None:
                        timeline.add(self.name, f"full {queue}", t, env.now, "wait", {"queue": queue, "insn": index})
            c.instructions += 1
            if index == finish:
                # FINISH is the program's last instruction (checked statically): the run ends here.
                self.blocked = (Blocked.DONE, None, None)
                ctx.finished.succeed(env.now)
                return

    @abstractmethod
    def execute(self, index: int, insn: Insn) -> int:
        """Start the instruction: return its duration in cycles (from now until it completes).

        The loop applies its memory effects (``simulator.semantics.execute``) when that
        duration has passed, i.e. at the simulated cycle the instruction completes.
        """

    def book_rows(self, insn: MemInsn, first_request: int, write: bool) -> int:
        """Book the DRAM rows of a LOAD/STORE from cycle ``first_request``; the cycle they complete.

        Latency and arbitration delays are counted as this unit waiting on DRAM.
        """
        eb = self.ctx.state.elem_bytes[insn.mem_type]
        booking = self.ctx.dram.book(
            self.name, first_request, insn.dram_base * eb, insn.x_size * eb, insn.y_size, insn.x_stride * eb, write
        )
        self.counters.wait_dram += booking.wait
        return booking.end

    def describe_blocked(self) -> str:
        """One line saying what this unit waits for, naming its instruction."""
        kind, index, queue = self.blocked
        if index is None:
            return kind.value
        where = f" {queue}" if queue else ""
        return f"instruction {index} ({describe(self.ctx.insns[index])}) {kind.value}{where}"
