"""Black-box tuners: random search, grid search and a genetic algorithm."""

from __future__ import annotations

from collections.abc import Sequence

from ..template import Template
from .base import Tuner


class RandomTuner(Tuner):
    """Uniformly random legal configs, without repeats."""

    name = "random"

    def next_batch(self, n: int) -> list[int]:
        return self.random_unvisited(n)


class GridTuner(Tuner):
    """Legal configs in index order."""

    name = "grid"

    def __init__(self, template: Template, seed: int = 0) -> None:
        super().__init__(template, seed)
        self._next = 0

    def next_batch(self, n: int) -> list[int]:
        out: list[int] = []
        while len(out) < n and self._next < self.space.size:
            i = self._next
            self._next += 1
            if i not in self.visited and self.is_legal(i):
                out.append(i)
        return out


class GATuner(Tuner):
    """A genetic algorithm over the knob digits: elitist selection, uniform crossover, per-knob mutation."""

    name = "ga"

    def __init__(self, template: Template, seed: int = 0, population: int = 16, elite: int = 4,
                 mutation: float = 0.15) -> None:
        super().__init__(template, seed)
        self.population, self.elite, self.mutation = population, elite, mutation
        self.scores: dict[int, float] = {}

    def update(self, indices: Sequence[int], costs: Sequence[float]) -> None:
        super().update(indices, costs)
        for i, c in zip(indices, costs):
            self.scores[i] = 0.0 if c == float("inf") else 1.0 / c

    def _child(self, parents: list[int], weights: list[float]) -> int:
        a, b = self.rng.choices(parents, weights=weights, k=2)
        da, db = self.space.digits(a), self.space.digits(b)
        digits = [x if self.rng.random() < 0.5 else y for x, y in zip(da, db)]
        for k, axis in enumerate(self.space.axes):
            if self.rng.random() < self.mutation:
                digits[k] = self.rng.randrange(len(axis.values))
        return self.space.from_digits(digits)

    def next_batch(self, n: int) -> list[int]:
        ranked = sorted((i for i in self.scores if self.scores[i] > 0), key=lambda i: -self.scores[i])
        parents = ranked[: self.population]
        if len(parents) < 2:
            return self.random_unvisited(n)
        weights = [self.scores[p] for p in parents]
        out: list[int] = []
        tries = 0
        while len(out) < n and tries < 200 * n:
            tries += 1
            child = self._child(parents, weights)
            if child not in self.visited and child not in out and self.is_legal(child):
                out.append(child)
        return out + self.random_unvisited(n - len(out), set(out))
