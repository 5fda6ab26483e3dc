"""The model-based tuner: an XGBoost ranking model on loop-program features, explored by annealing.

The model (``rank:pairwise``) learns which of two configs of a task is faster from the features of
their scheduled programs (:mod:`vdla.compiler.autotune.features`), not from knob values, so what it
learns on one task carries to similar ones: records of other tasks of the same kind from earlier
logs join the training data as their own ranking groups (transfer learning), and guide the first
batch before anything of this task is measured.  Each batch: parallel simulated-annealing walkers
move through the space by one-knob steps under the model's score (a space of at most
``exhaustive`` legal configs is scored whole instead: cheaper than the walk and exact); the best
unvisited points are picked greedily with a penalty on similarity to those already picked
(diversity); an ε share of the batch is random, to keep exploring where the model is wrong.

A template with an analytic cost estimate among its features (``Template.prior_feature``: the VDLA
tiling model) gives the model its starting point: the estimate is every prediction's base margin,
the trees learn where the cycle model disagrees with it, and the first batch follows the estimate
before anything is measured.  Where the template computes that estimate without lowering a program
(``Template.prior_estimate``) and the space is too big to score whole, the estimate's best unvisited
configs join the walk's as candidates each batch: in a space mostly illegal (the conv's 1,904 legal
of 36,864) one-knob steps rarely reach what the estimate ranks first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..database import Record
from ..template import Template
from .base import Tuner


def _relevance(costs: np.ndarray) -> np.ndarray:
    """Ranking labels: best / cost in (0, 1], 0 for failures."""
    ok = np.isfinite(costs)
    out = np.zeros(len(costs), np.float32)
    if ok.any():
        out[ok] = costs[ok].min() / costs[ok]
    return out


class XGBTuner(Tuner):
    """See the module doc; ``transfer`` holds successful records of similar tasks."""

    name = "xgb"

    def __init__(self, template: Template, seed: int = 0, transfer: Sequence[Record] = (), walkers: int = 4,
                 sa_steps: int = 24, epsilon: float = 0.1, diversity: float = 0.5, rounds: int = 60,
                 exhaustive: int = 1024, prior_scan: int = 1 << 16) -> None:
        super().__init__(template, seed)
        self.prior_scan = prior_scan
        self._by_prior: list[int] | None = None
        self.walkers, self.sa_steps, self.epsilon, self.diversity, self.rounds = (walkers, sa_steps, epsilon,
                                                                                  diversity, rounds)
        self.exhaustive = exhaustive
        self._small: list[int] | None = None
        self._features: dict[int, np.ndarray] = {}
        self.costs: dict[int, float] = {}
        self.model = None
        self._transfer: list[tuple[np.ndarray, np.ndarray]] = []
        width = len(self.features(self.space.index_of(template.default())))
        groups: dict[str, list[Record]] = {}
        for r in transfer:
            if len(r.features) == width and r.ok:
                groups.setdefault(r.task.key, []).append(r)
        for recs in groups.values():
            if len(recs) >= 2:
                self._transfer.append((np.asarray([r.features for r in recs], np.float32),
                                       _relevance(np.asarray([r.cost for r in recs]))))
        if self._transfer:
            self._train()

    def features(self, index: int) -> np.ndarray:
        f = self._features.get(index)
        if f is None:
            f = self._features[index] = self.template.features(self.space.get(index))
        return f

    def update(self, indices: Sequence[int], costs: Sequence[float]) -> None:
        super().update(indices, costs)
        self.costs.update(zip(indices, costs))
        if sum(math.isfinite(c) for c in self.costs.values()) >= 2:
            self._train()

    def _train(self) -> None:
        import xgboost as xgb

        xs, ys, sizes = [], [], []
        own = list(self.costs)
        if own:
            xs.append(np.stack([self.features(i) for i in own]))
            ys.append(_relevance(np.asarray([self.costs[i] for i in own])))
            sizes.append(len(own))
        for x, y in self._transfer:
            xs.append(x)
            ys.append(y)
            sizes.append(len(y))
        x = np.concatenate(xs)
        dtrain = xgb.DMatrix(x, label=np.concatenate(ys))
        dtrain.set_group(sizes)
        margin = self._margin(x)
        if margin is not None:
            dtrain.set_base_margin(margin)
        params = {"objective": "rank:pairwise", "eta": 0.3, "max_depth": 6, "min_child_weight": 1,
                  "seed": self.rng.randrange(1 << 30), "nthread": 1, "verbosity": 0}
        self.model = xgb.train(params, dtrain, num_boost_round=self.rounds)

    def _margin(self, x: np.ndarray) -> np.ndarray | None:
        """The prior score of feature rows (higher is faster), or None without a prior."""
        col = self.template.prior_feature
        return None if col is None else -x[:, col].astype(np.float32)

    @property
    def ready(self) -> bool:
        """Whether configs can be scored: a trained model, or the template's prior alone."""
        return self.model is not None or self.template.prior_feature is not None

    def predict(self, indices: Sequence[int]) -> np.ndarray:
        """Scores of ``indices`` (higher is predicted faster)."""
        import xgboost as xgb

        x = np.stack([self.features(i) for i in indices])
        margin = self._margin(x)
        if self.model is None:
            return margin  # type: ignore[return-value]  # ready: the prior alone
        data = xgb.DMatrix(x)
        if margin is not None:
            data.set_base_margin(margin)
        return self.model.predict(data)

    def _anneal(self, keep: int) -> list[tuple[float, int]]:
        """Walk ``walkers`` annealing chains; the ``keep`` best-scored unvisited legal points they saw."""
        measured = sorted((i for i, c in self.costs.items() if math.isfinite(c)), key=lambda i: self.costs[i])
        starts = measured[: self.walkers // 2]
        starts += self.random_unvisited(self.walkers - len(starts), set(starts))
        if not starts:
            return []
        points = list(starts)
        scores = self.predict(points)
        seen: dict[int, float] = {}
        for p, s in zip(points, scores):
            if p not in self.visited:
                seen[p] = float(s)
        spread = float(np.std(scores)) or 1.0
        for step in range(self.sa_steps):
            temp = spread * (1.0 - step / self.sa_steps) + 1e-9
            moves = [self.space.neighbour(p, self.rng) for p in points]
            moves = [m if self.is_legal(m) else p for m, p in zip(moves, points)]
            new = self.predict(moves)
            for k, (m, s) in enumerate(zip(moves, new)):
                if m not in self.visited:
                    seen[m] = float(s)
                if s >= scores[k] or self.rng.random() < math.exp((s - scores[k]) / temp):
                    points[k], scores[k] = m, s
        prior = [i for i in self.by_prior() if i not in self.visited and i not in seen][:keep]
        if prior:
            seen.update(zip(prior, (float(s) for s in self.predict(prior))))
        return sorted(((s, i) for i, s in seen.items()), reverse=True)[:keep]

    def by_prior(self) -> list[int]:
        """Every legal index, best first by the template's cheap estimate (``Template.prior_estimate``);
        empty without one or when the space exceeds ``prior_scan`` configs (computed once)."""
        if self._by_prior is None:
            self._by_prior = []
            if self.template.prior_feature is not None and self.space.size <= self.prior_scan:
                scored = []
                for i in range(self.space.size):
                    if self.is_legal(i):
                        estimate = self.template.prior_estimate(self.space.get(i))
                        if estimate is None:
                            return self._by_prior
                        scored.append((estimate, i))
                self._by_prior = [i for _, i in sorted(scored)]
        return self._by_prior

    def small_space(self) -> list[int] | None:
        """Every legal index when there are at most ``exhaustive`` of them (the space is scored whole), else None."""
        if self._small is None:
            legal: list[int] = []
            if self.space.size <= 16 * self.exhaustive:
                legal = [i for i in range(self.space.size) if self.is_legal(i)]
            self._small = legal if 0 < len(legal) <= self.exhaustive else []
        return self._small or None

    def _scored(self, keep: int) -> list[tuple[float, int]]:
        """The ``keep`` best-scored unvisited points: of the whole space when it is small, else of the walk."""
        small = self.small_space()
        if small is None:
            return self._anneal(keep)
        rest = [i for i in small if i not in self.visited]
        if not rest:
            return []
        scores = self.predict(rest)
        return sorted(((float(s), i) for s, i in zip(scores, rest)), reverse=True)[:keep]

    def _similarity(self, a: int, b: int) -> float:
        da, db = self.space.digits(a), self.space.digits(b)
        return sum(x == y for x, y in zip(da, db)) / max(len(da), 1)

    def next_batch(self, n: int) -> list[int]:
        if not self.ready:
            return self.random_unvisited(n)
        explore = round(self.epsilon * n)
        candidates = self._scored(3 * n)
        picked: list[int] = []
        if candidates:
            top, low = candidates[0][0], candidates[-1][0]
            scale = (top - low) or 1.0
            pool = {i: (s - low) / scale for s, i in candidates}
            while pool and len(picked) < n - explore:
                best = max(pool, key=lambda i: pool[i] - self.diversity * max(
                    (self._similarity(i, p) for p in picked), default=0.0))
                picked.append(best)
                del pool[best]
        return picked + self.random_unvisited(n - len(picked), set(picked))
