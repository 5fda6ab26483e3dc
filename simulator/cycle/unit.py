"""What load, compute and store have in common: the decoupled instruction loop.

Each of the three modules runs the same process (kernel.py), timed as the RTL's
dependency-token gate (``vdla_dep_gate``) around the module's executor:

* cycle ``a``: take the instruction from the command queue (the earliest cycle
  the entry is visible and the gate is free);
* cycle ``a + 1``: pop the tokens the flags ask for, each as soon as it is visible;
  the executor starts (cycle ``s``) when all are popped;
* cycle ``s + E``: the executor is done (``E`` from the subclass's :meth:`Unit.execute`);
  its memory effects are applied through ``vdla.simulator.semantics.execute``;
* cycle ``s + E + 1``: push the tokens the flags ask for, each as soon as its queue
  has room; the gate takes the next instruction ``insn_overhead - 2`` cycles after
  its last push (the cycle after, with the RTL's 3).

Every wait is booked to the counter that names its cause and, when a timeline is
recorded, drawn as a ``wait`` slice.  Tokens carry vector clocks so FINISH can
check, as fsim does, that the program orders every load and store before it.

The process computes these cycles ahead of the simulation clock: queue entries
carry the cycle they become visible and report the cycle their slot frees (see
queues.py), so a unit runs on through its instructions and waits (as a kernel
event) only for an entry or a slot that does not exist yet -- and, after booking
DRAM reads, until the instruction's push cycle, because until then another
engine's request can still delay them.  Memory effects are applied in each
unit's program order and after the tokens that order them, which is all a
program whose tokens order every conflicting access can observe.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, NamedTuple

from vdla.simulator.counters import Counters
from vdla.simulator.cycle.dma import ReadRows, RowGeometry
from vdla.simulator.cycle.dram import Dram
from vdla.simulator.cycle.kernel import Environment, Event, Process
from vdla.simulator.cycle.queues import Queues
from vdla.simulator.cycle.stats import UnitCounters
from vdla.simulator.cycle.trace import Timeline
from vdla.simulator.semantics import execute
from vdla.simulator.state import MachineState
from vdla.simulator.tokens import TokenOps, describe
from vdla_hw.config import HwConfig
from vdla_hw.isa import DepFlags, Insn, MemInsn, Module, opcode_of

@dataclass
class Context:
    """The state every unit of one machine shares."""

    env: Environment
    cfg: HwConfig
    insns: Sequence[Insn]
    ops: Sequence[TokenOps]
    queues: Queues
    dram: Dram
    state: MachineState
    counters: Counters
    timeline: Timeline | None
    finished: Event
    """Succeeds (with the cycle) when FINISH retires: the end of the program."""


class Blocked(Enum):
    """What a unit's process is blocked on (for the deadlock report)."""

    EMPTY = "its command queue is empty"
    POP = "waits to pop a dependency token from"
    PUSH = "waits for room to push a dependency token into"
    DONE = "finished"


class Token(NamedTuple):  # built per push with ``new_token`` (tuple.__new__, no Python-level __new__)
    """A dependency token: the instruction that pushed it and its module's vector clock then.

    The clock counts, per module, the instructions known to have retired before the
    push (directly or through earlier tokens); FINISH uses it to prove that every
    load and store is ordered before it, exactly as fsim does.
    """

    insn: int
    clock: tuple[int, int, int]


new_token = tuple.__new__


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
        self.shapes: dict[tuple[int, ...], RowGeometry] = {}
        """DMA block geometries by (element bytes, offsets in a burst, sizes): a per-run cache."""
        # Read per LOAD; attributes of the unit, not properties of the config, on that path.
        self.bus_bytes = ctx.cfg.bus_bytes
        self.burst_bytes = ctx.cfg.timing.dram_burst_bytes
        self.write_cycles = ctx.cfg.timing.sram_write_cycles

    def run(self) -> Process:
        """The unit's process; it returns after FINISH (compute) or runs until the simulation stops."""
        env, ctx, c = self.env, self.ctx, self.counters
        timeline = ctx.timeline
        dep = ctx.queues.dep
        cmd = self.cmd
        clock, module = self.clock, self.module
        finish = len(ctx.insns) - 1
        after_push = ctx.cfg.timing.insn_overhead - 2
        insns, all_ops, state, work = ctx.insns, ctx.ops, ctx.state, ctx.counters
        run_executor = self.execute
        free = 0  # the first cycle the gate can take an instruction
        while True:
            entry = cmd.try_get()
            if entry is None:
                self.blocked_at = free
                self.blocked = (Blocked.EMPTY, None, None)
                entry = yield cmd.get()
            index, visible = entry
            accept = visible if visible > free else free
            cmd.release(accept + 1)
            c.wait_queue_empty += accept - free
            insn = insns[index]
            ops = all_ops[index]
            start = accept + 1
            for queue in ops.pops:
                fifo = dep[queue]
                entry = fifo.try_get()
                if entry is None:
                    self.blocked_at = accept + 1
                    self.blocked = (Blocked.POP, index, queue)
                    entry = yield fifo.get()
                token, visible = entry
                popped = visible if visible > accept + 1 else accept + 1
                fifo.release(popped + 1)
                if popped > start:
                    if timeline is not None:
                        timeline.add(self.name, f"wait {queue}", start, popped, "wait", {"queue": queue, "insn": index})
                    start = popped
                seen = token[1]  # the token's vector clock: take the later count per module
                if seen[0] > clock[0]:
                    clock[0] = seen[0]
                if seen[1] > clock[1]:
                    clock[1] = seen[1]
                if seen[2] > clock[2]:
                    clock[2] = seen[2]
            c.wait_token += start - accept - 1
            cycles, dram_wait, rows = run_executor(index, insn, start)
            push = start + cycles + 1
            while rows is not None:
                # Until its push cycle another engine may still request a burst that DRAM serves
                # before some of these (see dram.py); then time the instruction again.
                if push > env.now:
                    yield env.timeout(push - env.now)
                if not rows.dirty:
                    break
                rows.dirty = False
                cycles, dram_wait = rows.timing()
                push = start + cycles + 1
            done = push - 1
            work.add(execute(state, insn, index))
            c.busy += 2 + cycles - dram_wait
            c.wait_dram += dram_wait
            if timeline is not None:
                timeline.add(self.name, slice_name(insn, index), start, done + 1, "insn", insn_args(insn))
            clock[module] += 1
            last_push = push
            if ops.pushes:
                token = new_token(Token, (index, (clock[0], clock[1], clock[2])))
                for queue in ops.pushes:
                    fifo = dep[queue]
                    pushed = fifo.try_put(token, push)
                    if pushed is None:
                        self.blocked_at = push
                        self.blocked = (Blocked.PUSH, index, queue)
                        pushed = yield fifo.put(token, push)
                    if pushed > push:
                        c.wait_queue_full += pushed - max(push, last_push)
                        if timeline is not None:
                            timeline.add(self.name, f"full {queue}", push, pushed, "wait", {"queue": queue, "insn": index})
                    last_push = max(last_push, pushed)
            c.instructions += 1
            if index == finish:
                # FINISH is the program's last instruction (checked statically): the run ends in the
                # cycle it is done; the cycle count includes that cycle.
                self.blocked = (Blocked.DONE, None, None)
                ctx.finished.succeed(done + 1)
                return
            c.busy += after_push
            free = last_push + after_push

    @abstractmethod
    def execute(self, index: int, insn: Insn, start: int) -> tuple[int, int, ReadRows | None]:
        """Start the instruction's executor in cycle ``start`` (booking any DRAM traffic).

        Returns ``(E, dram_wait, rows)``: the executor is done in cycle ``start + E``,
        ``dram_wait`` of those cycles are spent waiting for DRAM, and ``rows`` are the
        reads it booked (None if none), whose ``timing()`` gives the first two again
        if the DRAM moves them.  The loop applies the memory effects (``vdla.simulator.semantics.execute``)
        the cycle after the executor is done.
        """

    def describe_blocked(self) -> str:
        """One line saying what this unit waits for, naming its instruction."""
        kind, index, queue = self.blocked
        if index is None:
            return kind.value
        where = f" {queue}" if queue else ""
        return f"instruction {index} ({describe(self.ctx.insns[index])}) {kind.value}{where}"
