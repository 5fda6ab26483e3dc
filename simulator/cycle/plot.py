"""Gantt chart of a cycle-model timeline: fetch, load, compute and store over time."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from vdla.simulator.cycle.trace import UNITS, Timeline

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# One colour per kind of work, so overlap of load and GEMM (latency hiding) stands out.
_COLOURS = {
    "LOAD": "#4c72b0",
    "STORE": "#55a868",
    "GEMM": "#c44e52",
    "ALU": "#dd8452",
    "FINISH": "#333333",
    "fetch": "#8172b3",
    "wait": "#d9d9d9",
}


def _kind(name: str, category: str) -> str:
    if category in ("wait", "fetch"):
        return category
    return name.split("#", 1)[0].split(".", 1)[0]


def plot_gantt(
    timelines: Sequence[tuple[str, Timeline]],
    path: str | Path,
    *,
    units: Sequence[str] = UNITS,
    max_slices: int = 200_000,
) -> Path:
    """Draw :func:`gantt_figure` and save it as a PNG."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    gantt_figure(timelines, units=units, max_slices=max_slices).savefig(path, dpi=110)
    return path


def gantt_figure(
    timelines: Sequence[tuple[str, Timeline]],
    *,
    units: Sequence[str] = UNITS,
    max_slices: int = 200_000,
) -> Figure:
    """One Gantt panel per (title, timeline), as a matplotlib figure (a notebook shows it).

    Several timelines (e.g. one and two virtual threads) share the x axis so
    their lengths compare at a glance.  Stalls are drawn as thin grey bars
    under the work.  Beyond ``max_slices`` per panel, slices shorter than the
    chart's resolution are merged so huge runs still plot in seconds.
    """
    # A bare Figure (no pyplot): no global backend switch, so notebooks keep their own.
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    end = max((max((s.end for s in t.slices), default=1) for _, t in timelines), default=1)
    height = 1.2 + 1.1 * len(units) * len(timelines)
    fig = Figure(figsize=(12, height))
    axes = fig.subplots(len(timelines), 1, sharex=True, squeeze=False)
    used: set[str] = set()
    for ax, (title, timeline) in zip(axes[:, 0], timelines):
        for row, unit in enumerate(units):
            bars: dict[str, list[tuple[int, int]]] = {}
            slices = timeline.of_unit(unit)
            min_width = end / 4000 if len(slices) > max_slices else 0
            for s in slices:
                kind = _kind(s.name, s.category)
                spans = bars.setdefault(kind, [])
                if min_width and spans and s.start - (spans[-1][0] + spans[-1][1]) < min_width:
                    spans[-1] = (spans[-1][0], s.end - spans[-1][0])
                else:
                    spans.append((s.start, s.end - s.start))
            y = len(units) - 1 - row
            for kind, spans in bars.items():
                thin = kind == "wait"
                ax.broken_barh(
                    spans,
                    (y - (0.15 if thin else 0.38), 0.3 if thin else 0.76),
                    facecolors=_COLOURS.get(kind, "#999999"),
                    # Hairline borders separate back-to-back instructions while bars are wide enough.
                    edgecolors="white",
                    linewidth=0 if thin or len(slices) > 400 else 0.4,
                )
                used.add(kind)
        ax.set_yticks(range(len(units)))
        ax.set_yticklabels(list(reversed(units)))
        ax.set_ylim(-0.6, len(units) - 0.4)
        ax.set_title(title, fontsize=10, loc="left")
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlim(0, end)
    axes[-1, 0].set_xlabel("cycle")
    order = [k for k in _COLOURS if k in used]
    fig.legend(
        handles=[Patch(facecolor=_COLOURS[k], label=k if k != "wait" else "stall") for k in order],
        loc="upper right",
        ncol=len(order),
        fontsize=8,
        frameon=False,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig
