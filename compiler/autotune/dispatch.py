"""How a tuned config reaches the lowerings: a context-local dispatcher they query.

The graph lowerings (``vdla.compiler.graph.lower_llvm_nn``, ``lower_vdla``) call :func:`query` with the
kind and workload of every tunable operator they schedule.  With no dispatcher installed (the
default) it returns None and the lowering uses its default knobs; ``ApplyBest`` (``database.py``)
answers with the best measured knobs, and task extraction (``task.py``) records the queries.
This module imports nothing from the compiler so that the lowerings can import it freely.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol


class Dispatcher(Protocol):
    """Answers a lowering's query with knobs (the schedule's knob dataclass) or None for the default."""

    def query(self, kind: str, workload: Mapping[str, int]) -> Any | None: ...


@dataclass
class ApplyFixed:
    """Answers every query of one kind whose workload ``where`` accepts with the same ``knobs`` (TVM's
    ``ApplyFixedConfig``): forces one schedule, e.g. a Winograd tile, as a tuning log would.

    ``answered`` counts the queries it answered, so a caller can check the lowering asked."""

    kind: str
    knobs: Any
    where: Callable[[Mapping[str, int]], bool] = lambda workload: True
    answered: int = field(default=0, init=False)

    def query(self, kind: str, workload: Mapping[str, int]) -> Any | None:
        if kind != self.kind or not self.where(workload):
            return None
        self.answered += 1
        return self.knobs


_CURRENT: ContextVar[Dispatcher | None] = ContextVar("vdla_autotune_dispatcher", default=None)


def query(kind: str, workload: Mapping[str, int]) -> Any | None:
    """The knobs the active dispatcher chose for this operator, or None (use the default)."""
    dispatcher = _CURRENT.get()
    return None if dispatcher is None else dispatcher.query(kind, dict(workload))


def declined(kind: str, workload: Mapping[str, int], reason: str) -> None:
    """Tell the active dispatcher that the lowering did not compile the knobs :func:`query` gave for this operator
    (e.g. a logged resident conv setting whose epilogue the template cannot take) and why, so that a dispatcher which
    reports what it applied (``ApplyBest.applied`` / ``fallbacks``) stays true.  Dispatchers without a ``decline``
    method ignore it."""
    decline = getattr(_CURRENT.get(), "decline", None)
    if decline is not None:
        decline(kind, dict(workload), reason)


@contextmanager
def dispatching(dispatcher: Dispatcher) -> Iterator[Dispatcher]:
    """Install ``dispatcher`` for the lowerings run inside the ``with`` block."""
    token = _CURRENT.set(dispatcher)
    try:
        yield dispatcher
    finally:
        _CURRENT.reset(token)
