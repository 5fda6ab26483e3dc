"""The cycle model's discrete-event kernel: SimPy's scheduling order at a fraction of its cost.

The units are generator processes that ``yield`` an event to wait for it (a queue entry,
a free slot, a point in simulated time).  This kernel runs them exactly as SimPy 4 does --
the same event order, so the same cycle counts -- with only what the model uses:

* an event is scheduled under the key ``(time, priority, serial)``: a process's first step
  is ``URGENT`` (0), everything else ``NORMAL`` (1); equal keys run in scheduling order;
* processing an event calls its callbacks in order (a waiting process resumes there);
* a process that yields an event already processed goes on at once with its value;
* a process that raises schedules its failure like any event; the run raises the
  exception when that event comes up (so an end reached first still wins, as in SimPy);
* :meth:`Environment.run` stops one scheduling step after the first of its ``until``
  events is processed (SimPy's ``AnyOf`` condition takes that step).

The SimPy version cost ~15% of a run in its own bookkeeping (property reads, checks, and a
class per event kind); here an event is a slotted object and the loop is one function.
"""

from __future__ import annotations

from collections.abc import Generator
from heapq import heappop, heappush
from itertools import count
from typing import Any, Callable

URGENT = 0
NORMAL = 1


class Event:
    """Something a process can wait for; :meth:`succeed` schedules it with a value."""

    __slots__ = ("env", "callbacks", "value", "triggered")

    def __init__(self, env: "Environment") -> None:
        self.env = env
        self.callbacks: list[Callable[[Event], None]] | None = []
        """Called with the event when it is processed; None once it has been."""
        self.value: Any = None
        self.triggered = False

    def succeed(self, value: Any = None) -> "Event":
        """Schedule the event now, carrying ``value`` to whoever waits for it."""
        if self.triggered:
            raise RuntimeError(f"{self!r} has already been triggered")
        self.triggered = True
        self.value = value
        env = self.env
        heappush(env.queue, (env.now, NORMAL, next(env.serial), self))
        return self


Process = Generator[Event, Any, None]
"""A process body: yields the events it waits for."""


class _Failure(Event):
    """A process's exception, raised by the run when this event is processed."""

    __slots__ = ("error",)


class Environment:
    """Simulated time (``now``, in cycles) and the schedule of pending events."""

    __slots__ = ("now", "queue", "serial")

    def __init__(self) -> None:
        self.now = 0
        self.queue: list[tuple[int, int, int, Event]] = []
        self.serial = count()

    def event(self) -> Event:
        """A pending event, to be triggered with :meth:`Event.succeed`."""
        return Event(self)

    def timeout(self, delay: int) -> Event:
        """An event processed ``delay`` cycles from now."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        event = Event(self)
        event.triggered = True
        heappush(self.queue, (self.now + delay, NORMAL, next(self.serial), event))
        return event

    def process(self, body: Process) -> None:
        """Start ``body``: its first step runs when the kernel reaches it (URGENT, at ``now``)."""
        start = Event(self)
        start.triggered = True
        start.callbacks.append(_Runner(self, body).resume)  # type: ignore[union-attr]
        heappush(self.queue, (self.now, URGENT, next(self.serial), start))

    def peek(self) -> float:
        """The time of the next scheduled event (infinity when there is none)."""
        return self.queue[0][0] if self.queue else float("inf")

    def run(self, *until: Event) -> None:
        """Process events until one step after the first of ``until`` has been processed."""
        stop = Event(self)
        stop.triggered = True

        def arm(_: Event) -> None:
            if stop.callbacks is not None and not stop.value:
                stop.value = True
                heappush(self.queue, (self.now, NORMAL, next(self.serial), stop))

        for event in until:
            if event.callbacks is None:
                arm(event)
            else:
                event.callbacks.append(arm)
        queue = self.queue
        while queue:
            self.now, _, _, event = heappop(queue)
            if event is stop:
                return
            callbacks, event.callbacks = event.callbacks, None
            if type(event) is _Failure:
                raise event.error  # type: ignore[attr-defined]
            for callback in callbacks:  # type: ignore[union-attr]
                callback(event)
        raise RuntimeError("no scheduled events left, but the run's end was not reached")


class _Runner:
    """Steps one process: resumes its generator with each event's value."""

    __slots__ = ("env", "body")

    def __init__(self, env: Environment, body: Process) -> None:
        self.env = env
        self.body = body

    def resume(self, event: Event) -> None:
        send = self.body.send
        value = event.value
        while True:
            try:
                event = send(value)
            except StopIteration:
                # SimPy schedules the process's end as an event (nobody waits for it here, but a
                # deadlock check that peeks at the schedule sees it): so does this kernel.
                env = self.env
                end = Event(env)
                end.triggered = True
                heappush(env.queue, (env.now, NORMAL, next(env.serial), end))
                return
            except BaseException as exc:  # noqa: BLE001 - handed to the run, as SimPy does
                env = self.env
                failure = _Failure(env)
                failure.triggered = True
                failure.error = exc
                heappush(env.queue, (env.now, NORMAL, next(env.serial), failure))
                return
            callbacks = event.callbacks
            if callbacks is not None:
                callbacks.append(self.resume)
                return
            value = event.value
