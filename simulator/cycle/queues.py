"""The command queues and the four dependency-token FIFOs.

Fetch puts instruction indices into the command queue of the module that runs
them (``cmd_queue_depth`` entries each); a dependency token names the
instruction that pushed it (``dep_queue_depth`` per FIFO), so a deadlock report
can say who produced what is still queued.

:class:`Fifo` is a bounded FIFO on SimPy events rather than a ``simpy.Store``:
a get from a non-empty FIFO or a put into a non-full one completes on the spot
(:meth:`Fifo.try_get` / :meth:`Fifo.try_put`) and only a blocked side waits on
an event.  A Store spends a scheduled event on every transfer, which would be
most of the model's events; the blocking behaviour is the same.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import simpy

from simulator.tokens import DEP_QUEUES
from vdla_hw.config import HwConfig
from vdla_hw.isa import Module

CMD_QUEUE_NAMES: dict[Module, str] = {m: f"cmd_{m.name.lower()}" for m in Module}


class Fifo:
    """A FIFO of at most ``capacity`` items; blocked getters and putters are served in order."""

    __slots__ = ("env", "name", "capacity", "items", "_getters", "_putters")

    def __init__(self, env: simpy.Environment, name: str, capacity: int) -> None:
        self.env = env
        self.name = name
        self.capacity = capacity
        self.items: deque[Any] = deque()
        self._getters: deque[simpy.Event] = deque()
        self._putters: deque[tuple[simpy.Event, Any]] = deque()

    def __len__(self) -> int:
        return len(self.items)

    def try_get(self) -> tuple[bool, Any]:
        """Take the oldest item now if there is one: ``(True, item)``, else ``(False, None)``."""
        if not self.items:
            return False, None
        item = self.items.popleft()
        if self._putters:
            event, waiting = self._putters.popleft()
            self.items.append(waiting)
            event.succeed()
        return True, item

    def get(self) -> simpy.Event:
        """An event that succeeds with the next item (use after :meth:`try_get` failed)."""
        event = self.env.event()
        self._getters.append(event)
        return event

    def try_put(self, item: Any) -> bool:
        """Add ``item`` now if there is room (handing it straight to a waiting getter)."""
        if len(self.items) >= self.capacity:
            return False
        if self._getters:
            self._getters.popleft().succeed(item)
        else:
            self.items.append(item)
        return True

    def put(self, item: Any) -> simpy.Event:
        """An event that succeeds once ``item`` is in the FIFO (use after :meth:`try_put` failed)."""
        event = self.env.event()
        self._putters.append((event, item))
        return event


class Queues:
    """All queues of one machine: ``cmd[Module]`` and ``dep["l2c" | "c2l" | "c2s" | "s2c"]``."""

    def __init__(self, env: simpy.Environment, cfg: HwConfig) -> None:
        self.cmd: dict[Module, Fifo] = {m: Fifo(env, CMD_QUEUE_NAMES[m], cfg.cmd_queue_depth) for m in Module}
        self.dep: dict[str, Fifo] = {q: Fifo(env, q, cfg.dep_queue_depth) for q in DEP_QUEUES}

    def occupancy(self) -> dict[str, int]:
        """Entries currently held by every queue."""
        return {f.name: len(f) for f in (*self.cmd.values(), *self.dep.values())}

    def snapshot(self) -> dict[str, Any]:
        """Every queue's contents for an error report: instruction indices, oldest first."""
        out: dict[str, Any] = {}
        for f in self.cmd.values():
            out[f.name] = {"depth": f.capacity, "instructions": [_index(item) for item in f.items]}
        for f in self.dep.values():
            out[f.name] = {"depth": f.capacity, "tokens_from": [token.insn for token in f.items]}
        return out


def _index(item: Any) -> int:
    # Command-queue entries are (instruction index, cycle it is dispatched).
    return item[0] if isinstance(item, tuple) else item
