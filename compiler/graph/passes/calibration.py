"""Calibration: the clipping threshold of every float value of a graph, from sample inputs.

Three methods (:func:`parse_calibration` reads the ``--calibration`` spelling):

* ``max``: the largest magnitude seen -- nothing clips on the samples, but one outlier stretches
  the scale of every other value;
* ``percentile[:P]``: the P-th percentile of the magnitudes (default 99.99), read from a
  2048-bin histogram of ``|v|`` over ``[0, max]``;
* ``kl``: the entropy calibration of TensorRT -- of the thresholds at every 8th bin edge 128..2048 of
  that histogram, the one whose 128-level quantized distribution (outliers folded into the last
  bin) has the least Kullback-Leibler divergence from the clipped reference distribution.

Histogram methods run the graph twice over the samples: once for the ranges, once to fill the
histograms over those ranges.  The graph's outputs and the outputs of bounded activations (``clip``
with an upper bound, e.g. ReLU6) always keep their largest magnitude (clipping the largest logits
would change the prediction; a bounded activation's values pile up at its bound); exact zeros (ReLU outputs) are left out of the
histograms, as they quantize exactly at every scale and their spike would pull KL's threshold down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from vdla_hw.errors import UsageError

from vdla.compiler.graph.errors import GraphError
from vdla.compiler.graph.executor import run_all
from vdla.compiler.graph.ir import Graph

BINS = 2048
LEVELS = 128  # int8 magnitudes: the quantized distribution KL compares against
KL_STEP = 8  # candidate thresholds every 8 bins (0.4% of the range): 1/8 of the search, same optimum in practice
DEFAULT_PERCENTILE = 99.99
METHODS = ("max", "percentile[:P]", "kl")


@dataclass(frozen=True)
class Calibration:
    """A calibration method: ``max``, ``percentile`` (with ``percentile`` P in (0, 100]) or ``kl``."""

    method: str = "max"
    percentile: float = DEFAULT_PERCENTILE

    def __str__(self) -> str:
        return f"percentile:{self.percentile:g}" if self.method == "percentile" else self.method


def parse_calibration(spec: str | Calibration) -> Calibration:
    """``max``, ``percentile``, ``percentile:99.9`` or ``kl`` as a :class:`Calibration`; UsageError otherwise."""
    if isinstance(spec, Calibration):
        return spec
    method, sep, arg = str(spec).strip().lower().partition(":")
    allowed = f"use one of {', '.join(METHODS)} (e.g. percentile:99.99)"
    if method in ("max", "kl") and not sep:
        return Calibration(method)
    if method == "percentile":
        try:
            p = float(arg) if sep else DEFAULT_PERCENTILE
        except ValueError:
            raise UsageError(f"bad calibration {spec!r}: {arg!r} is not a number", hint=allowed) from None
        if not 0 < p <= 100:
            raise UsageError(f"bad calibration {spec!r}: the percentile must be in (0, 100]", hint=allowed)
        return Calibration("percentile", p)
    raise UsageError(f"unknown calibration {spec!r}", hint=allowed)


def _float_values(graph: Graph, sample: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: v for k, v in run_all(graph, sample).items() if np.issubdtype(v.dtype, np.floating)}


def calibrate(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]],
              method: str | Calibration = "max") -> dict[str, float]:
    """The clipping threshold (a magnitude) of every float value of ``graph`` over ``samples``."""
    cal = parse_calibration(method)
    if not samples:
        raise GraphError("calibration needs at least one sample input")
    ranges: dict[str, float] = {}
    for sample in samples:
        for name, v in _float_values(graph, sample).items():
            ranges[name] = max(ranges.get(name, 0.0), float(np.max(np.abs(v))) if v.size else 0.0)
    if cal.method == "max":
        return ranges
    # The graph's outputs keep their full range: clipping the largest logits would change the argmax;
    # so do bounded activations (ReLU6 and the like), whose range is their bound and whose values
    # pile up at it: clipping below it would flatten every saturated value.
    keep = set(graph.outputs) | {n.name for n in graph.nodes if n.op == "clip" and n.attrs.get("a_max") is not None}
    hists = {name: np.zeros(BINS, np.int64) for name, r in ranges.items() if r > 0 and name not in keep}
    for sample in samples:
        for name, v in _float_values(graph, sample).items():
            if name in hists:
                mag = np.abs(v[v != 0])  # exact zeros (ReLU's) quantize exactly at any scale: leave them out
                hists[name] += np.histogram(mag, BINS, (0.0, ranges[name]))[0]
    out = dict(ranges)
    for name, hist in hists.items():
        width = ranges[name] / BINS
        edge = _percentile_edge(hist, cal.percentile) if cal.method == "percentile" else _kl_edge(hist)
        out[name] = edge * width
    return out


def _percentile_edge(hist: np.ndarray, p: float) -> int:
    """The number of bins below the ``p``-th percentile (rounded up to a bin edge)."""
    cdf = np.cumsum(hist)
    return int(np.searchsorted(cdf, cdf[-1] * p / 100.0) + 1)


def _kl_edge(hist: np.ndarray) -> int:
    """TensorRT's entropy calibration: the bin edge (>= 128 bins) minimizing KL(P || Q)."""
    best, best_kl = len(hist), np.inf
    for i in range(LEVELS, len(hist) + 1, KL_STEP):
        p = hist[:i].astype(np.float64)
        p[-1] += hist[i:].sum()  # outliers clip to the threshold
        if p.sum() == 0:
            continue
        q = _expand(_merge(hist[:i].astype(np.float64), LEVELS), hist[:i] > 0)
        kl = _kl(p, q)
        if kl < best_kl:
            best, best_kl = i, kl
    return best


def _merge(h: np.ndarray, levels: int) -> np.ndarray:
    """``h`` summed into ``levels`` groups of (nearly) equal numbers of bins."""
    edges = np.linspace(0, len(h), levels + 1).astype(int)
    return np.add.reduceat(h, edges[:-1])


def _expand(q: np.ndarray, nonzero: np.ndarray) -> np.ndarray:
    """Each group's count spread evenly over its non-empty bins (empty bins stay empty)."""
    edges = np.linspace(0, len(nonzero), len(q) + 1).astype(int)
    group = np.searchsorted(edges, np.arange(len(nonzero)), side="right") - 1
    filled = np.add.reduceat(nonzero.astype(np.float64), edges[:-1])
    share = np.divide(q, filled, out=np.zeros_like(q), where=filled > 0)
    return np.where(nonzero, share[group], 0.0)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    p = p / p.sum()
    q = q / q.sum() if q.sum() else q
    mask = p > 0
    if np.any(q[mask] == 0):
        return np.inf
    return float(np.sum(p[mask] * np.log(p[mask] / q[mask])))


__all__ = ["Calibration", "METHODS", "calibrate", "parse_calibration"]
