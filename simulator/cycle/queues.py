"""The command queues and the four dependency-token FIFOs.

Fetch puts instruction indices into the command queue of the module that runs
them (``cmd_queue_depth`` entries each); a dependency token names the
instruction that pushed it (``dep_queue_depth`` per FIFO), so a deadlock report
can say who produced what is still queued.

Timing, as the RTL's ``vdla_fifo`` (a memory with a registered output): an entry
pushed in cycle t can be popped from cycle ``t + queue_latency`` on, and a pop in
cycle q frees its slot for a push from cycle ``q + 1``.  Units compute the cycles
of their pushes and pops ahead of the simulation clock (an instruction's pops
happen when its tokens are there, which may be later than the moment its process
takes them), so an entry carries the cycle it becomes visible, and a consumer
reports the cycle its pop frees the slot (:meth:`Fifo.release`).  Put number m
needs the slot of take number ``m - capacity``: it happens at the later of the
asked cycle and that slot's release, and waits (as a kernel event) only while that
take has not happened at all.

A transfer that does not block costs no event: only a blocked side waits on one.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from vdla.simulator.cycle.kernel import Environment, Event
from vdla.simulator.tokens import DEP_QUEUES
from vdla_hw.config import HwConfig
from vdla_hw.isa import Module

CMD_QUEUE_NAMES: dict[Module, str] = {m: f"cmd_{m.name.lower()}" for m in Module}


class Fifo:
    """A FIFO of at most ``capacity`` entries ``(payload, visible_cycle)``, one consumer."""

    __slots__ = ("env", "name", "capacity", "latency", "items", "_getters", "_putters", "_puts", "_released")

    def __init__(self, env: Environment, name: str, capacity: int, latency: int) -> None:
        self.env = env
        self.name = name
        self.capacity = capacity
        self.latency = latency
        self.items: deque[tuple[Any, int]] = deque()
        self._getters: deque[Event] = deque()
        self._putters: deque[tuple[Event, Any, int]] = deque()
        self._puts = 0
        # Release cycles of takes whose slot no put has reused yet, oldest first.
        self._released: deque[int] = deque()

    def __len__(self) -> int:
        return len(self.items)

    # ---- consumer side -------------------------------------------------------------------
    def try_get(self) -> tuple[Any, int] | None:
        """Take the oldest entry ``(payload, visible_cycle)`` if there is one.

        The caller must then call :meth:`release` with the cycle its pop frees the slot.
        """
        return self.items.popleft() if self.items else None

    def get(self) -> Event:
        """An event that succeeds with the next entry (use after :meth:`try_get` found none)."""
        event = self.env.event()
        self._getters.append(event)
        return event

    def release(self, cycle: int) -> None:
        """The last entry taken was popped in cycle ``cycle - 1``: its slot is free from ``cycle``."""
        if self._putters:
            event, payload, asked = self._putters.popleft()
            event.succeed(self._insert(payload, max(asked, cycle)))
        else:
            self._released.append(cycle)

    # ---- producer side -------------------------------------------------------------------
    def try_put(self, payload: Any, cycle: int) -> int | None:
        """Push ``payload`` in cycle ``cycle`` or as soon after as its slot is free.

        Returns the cycle of the push, or None when the slot's entry has not even been
        taken yet (then wait on :meth:`put`).
        """
        if self._puts >= self.capacity:
            if not self._released:
                return None
            free = self._released.popleft()
            if free > cycle:
                cycle = free
        self._puts += 1
        if self._getters:
            self._getters.popleft().succeed((payload, cycle + self.latency))
        else:
            self.items.append((payload, cycle + self.latency))
        return cycle

    def put(self, payload: Any, cycle: int) -> Event:
        """An event that succeeds with the push cycle once a slot is free (after :meth:`try_put` failed)."""
        event = self.env.event()
        self._putters.append((event, payload, cycle))
        return event

    def _insert(self, payload: Any, cycle: int) -> int:
        self._puts += 1
        entry = (payload, cycle + self.latency)
        if self._getters:
            self._getters.popleft().succeed(entry)
        else:
            self.items.append(entry)
        return cycle


class Queues:
    """All queues of one machine: ``cmd[Module]`` and ``dep["l2c" | "c2l" | "c2s" | "s2c"]``."""

    def __init__(self, env: Environment, cfg: HwConfig) -> None:
        latency = cfg.timing.queue_latency
        self.cmd: dict[Module, Fifo] = {
            m: Fifo(env, CMD_QUEUE_NAMES[m], cfg.cmd_queue_depth, latency) for m in Module
        }
        self.dep: dict[str, Fifo] = {q: Fifo(env, q, cfg.dep_queue_depth, latency) for q in DEP_QUEUES}

    def occupancy(self) -> dict[str, int]:
        """Entries currently held by every queue."""
        return {f.name: len(f) for f in (*self.cmd.values(), *self.dep.values())}

    def snapshot(self) -> dict[str, Any]:
        """Every queue's contents for an error report: instruction indices, oldest first."""
        out: dict[str, Any] = {}
        for f in self.cmd.values():
            out[f.name] = {"depth": f.capacity, "instructions": [index for index, _ in f.items]}
        for f in self.dep.values():
            out[f.name] = {"depth": f.capacity, "tokens_from": [token.insn for token, _ in f.items]}
        return out
