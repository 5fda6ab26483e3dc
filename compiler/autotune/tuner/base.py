"""The tuner interface and the loop that drives one task: propose, measure, log, learn.

A tuner proposes batches of unvisited legal config indices and learns from measured results.
:func:`tune_task` measures the default config first (so the log's best is never worse than the
default), skips every config the log already holds for the task (resume), and appends each
result to the log as soon as its batch is measured.
"""

from __future__ import annotations

import random
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..database import RETIMED, Database, Record
from ..measure import Measurer, MeasureResult, Status
from ..space import Config
from ..template import Template
from .retime import retime_leaders


class Tuner(ABC):
    """Proposes configs of one template's space."""

    name = "tuner"

    def __init__(self, template: Template, seed: int = 0) -> None:
        self.template = template
        self.space = template.space
        self.rng = random.Random(seed)
        self.visited: set[int] = set()
        self._legal: dict[int, bool] = {}

    def is_legal(self, index: int) -> bool:
        ok = self._legal.get(index)
        if ok is None:
            ok = self._legal[index] = self.space.why_illegal(self.space.get(index)) is None
        return ok

    def random_unvisited(self, n: int, exclude: set[int] = frozenset()) -> list[int]:  # type: ignore[assignment]
        """Up to ``n`` random legal configs not visited nor in ``exclude``."""
        out: list[int] = []
        tries = 0
        while len(out) < n and tries < 50 * n + 1000:
            tries += 1
            i = self.space.random_index(self.rng)
            if i in self.visited or i in exclude or i in out or not self.is_legal(i):
                continue
            out.append(i)
        if len(out) < n and self.space.size <= 200_000:  # a sparse space: enumerate what is left
            rest = [i for i in range(self.space.size) if i not in self.visited and i not in exclude
                    and i not in out and self.is_legal(i)]
            self.rng.shuffle(rest)
            out += rest[: n - len(out)]
        return out

    @abstractmethod
    def next_batch(self, n: int) -> list[int]:
        """Up to ``n`` unvisited legal indices to measure next (fewer when the space is exhausted)."""

    def update(self, indices: Sequence[int], costs: Sequence[float]) -> None:
        """Learn from measured configs (``inf`` for failures); marks them visited."""
        self.visited.update(indices)


@dataclass(frozen=True)
class Progress:
    """What :func:`tune_task` reports after each measured config."""

    trial: int
    result: MeasureResult
    best: float


def tune_task(tuner: Tuner, measurer: Measurer, db: Database, trials: int, batch: int = 8,
              on_result: Callable[[Progress], None] | None = None, deadline: float | None = None,
              retime: int = 3, retime_passes: int = 2, retime_again: bool = False) -> Record | None:
    """Measure up to ``trials`` configs of the task in total (counting those already in the log); no new
    batch starts after ``deadline`` (a ``time.monotonic()`` value), though the default is always measured.

    A timed task's ``retime`` best configs and the default are then measured again side by side and that
    round decides the best (:func:`~.retime.retime_leaders`, ``retime_passes`` passes); ``retime=0`` keeps the
    search's first samples.  A round runs when the search measured something new or the task has none yet,
    and with ``retime_again`` in any case (a new round of a finished log)."""
    task, template = measurer.task, measurer.template
    space = template.space
    done: dict[int, float] = {}
    for r in db.of_task(task):
        # Records of a removed knob's values (an old log's parallel=False / True) are one config now.
        i = space.index_of(space.from_dict(r.config))
        done[i] = min(done.get(i, float("inf")), r.cost)
    if done:
        tuner.update(list(done), list(done.values()))
    best = min(done.values(), default=float("inf"))
    measured_before = len(tuner.visited)
    default_index = space.index_of(template.default())
    while len(tuner.visited) < trials:
        if deadline is not None and default_index in tuner.visited and time.monotonic() >= deadline:
            break
        want = min(batch, trials - len(tuner.visited))
        if default_index not in tuner.visited:
            indices = [default_index] + [i for i in tuner.next_batch(want) if i != default_index][: want - 1]
        else:
            indices = tuner.next_batch(want)
        if not indices:
            break  # the space is exhausted
        configs: list[Config] = [space.get(i) for i in indices]
        results = measurer.measure(configs)
        costs = []
        for i, res in zip(indices, results):
            features = template.features(res.config) if res.status != Status.INVALID else ()
            db.append(Record.make(task, res.config, res.status.value, res.costs, template.unit, res.detail,
                                  tuner.name, features))
            costs.append(res.cost)
            best = min(best, res.cost)
            if on_result is not None:
                on_result(Progress(len(tuner.visited) + len(costs), res, best))
        tuner.update(indices, costs)
    retimed = any(r.tuner == RETIMED for r in db.of_task(task))
    if retime and (len(tuner.visited) > measured_before or not retimed or retime_again):
        return retime_leaders(db, measurer, retime, retime_passes)
    return db.best(task)
