"""Pareto fronts of a sweep: the points no other point beats on both of two costs."""

from __future__ import annotations

from collections.abc import Sequence


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated by another (both coordinates are costs: lower is better).

    A point is dominated when another is no worse in both coordinates and better in one; of
    equal points every copy is kept.  Indices come back sorted by the first coordinate.
    """
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front: list[int] = []
    best_y = float("inf")
    last: tuple[float, float] | None = None
    for i in order:
        x, y = points[i]
        if y < best_y or (last is not None and (x, y) == last):
            front.append(i)
            best_y = min(best_y, y)
            last = (x, y)
    return front
