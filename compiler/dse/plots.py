"""Pareto plots of a sweep: end-to-end latency against LUTs, DSPs and block RAM, one panel each."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .evaluate import PointResult
from .pareto import pareto_front

if TYPE_CHECKING:
    from matplotlib.figure import Figure

AXES = (("luts", "LUTs (yosys xc7)"), ("dsps", "DSP slices"), ("bram36", "block RAM (36 Kbit units)"))


def resource(result: PointResult, name: str) -> float:
    assert result.hardware is not None
    return float(getattr(result.hardware, name))


def fronts(results: Sequence[PointResult]) -> dict[str, list[PointResult]]:
    """The Pareto front of latency against each resource of :data:`AXES` (measured points only)."""
    ok = [r for r in results if r.ok]
    return {name: [ok[i] for i in pareto_front([(resource(r, name), r.latency_ms) for r in ok])] for name, _ in AXES}


def short_labels(results: Sequence[PointResult]) -> dict[int, str]:
    """Each point's label without the ``name=value`` items every point shares (they only crowd a plot)."""
    swept = [set(r.values.items()) for r in results if r.values]  # a peer outside the sweep has no values
    shared = set.intersection(*swept) if swept else set()
    return {id(r): " ".join(f"{k}={v}" for k, v in r.values.items() if (k, v) not in shared) or r.label
            for r in results}


def plot_pareto(results: Sequence[PointResult], path: Path, title: str) -> Path:
    """Write :func:`pareto_figure` to ``path`` (PNG)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pareto_figure(results, title).savefig(path, dpi=110)
    return path


def pareto_figure(results: Sequence[PointResult], title: str) -> Figure:
    """The three panels (latency against each resource), the front of each drawn as a line and
    labelled, as a matplotlib figure (a notebook shows it)."""
    from matplotlib.figure import Figure  # no pyplot: notebooks keep their own backend

    ok = [r for r in results if r.ok]
    front = fronts(results)
    labels = short_labels(ok)
    fig = Figure(figsize=(6 * len(AXES), 4.8), constrained_layout=True)
    axes = fig.subplots(1, len(AXES))
    for ax, (name, label) in zip(axes, AXES):
        ax.scatter([resource(r, name) for r in ok], [r.latency_ms for r in ok], s=28, color="0.6", label="config")
        best = sorted(front[name], key=lambda r: resource(r, name))
        ax.plot([resource(r, name) for r in best], [r.latency_ms for r in best], "o-", color="tab:red", ms=6,
                drawstyle="steps-post", label="Pareto front")
        for r in best:
            ax.annotate(labels[id(r)], (resource(r, name), r.latency_ms), fontsize=7, xytext=(4, 4),
                        textcoords="offset points")
        ax.set_xlabel(label)
        ax.set_ylabel("latency (ms)")
        if max(r.latency_ms for r in ok) > 10 * min(r.latency_ms for r in ok):
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig
