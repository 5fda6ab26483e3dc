"""Per-layer quantization error: the SQNR of every quantized layer's dequantized int8 output against
the float graph's value it replaces, over sample inputs.

``SQNR = 10 log10(sum(f**2) / sum((f - q * scale)**2))`` in dB, summed over all samples: about
6 dB per bit of precision kept, so a layer near 40 dB keeps ~6.6 bits, one near 10 dB is mostly
noise.  Both graphs run in the NumPy executor; the quantized graph computes the integers the VDLA
computes (bit-exact), so the error is the deployed one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vdla.compiler.graph.executor import run_all
from vdla.compiler.graph.passes.quantize import QuantizedModel


@dataclass(frozen=True)
class LayerSqnr:
    """One quantized layer's error: the float value's name, the layer's op, SQNR (dB), the scale."""

    name: str
    op: str
    sqnr_db: float
    scale: float
    multiplier_bits: int

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "op": self.op, "sqnr_db": round(self.sqnr_db, 2), "scale": self.scale,
                "multiplier_bits": self.multiplier_bits}


def layer_sqnr(model: QuantizedModel, samples: Sequence[Mapping[str, np.ndarray]]) -> list[LayerSqnr]:
    """The SQNR of every quantized layer of ``model`` over ``samples``, worst (lowest) first."""
    signal = {layer.name: 0.0 for layer in model.layers}
    noise = dict(signal)
    for sample in samples:
        ref, got = run_all(model.source, sample), run_all(model.graph, sample)
        for layer in model.layers:
            f = ref[layer.name].astype(np.float64)
            q = got[layer.value].astype(np.float64) * layer.scale
            signal[layer.name] += float(np.sum(f * f))
            noise[layer.name] += float(np.sum((f - q) ** 2))
    out = [LayerSqnr(layer.name, layer.op, _db(signal[layer.name], noise[layer.name]), layer.scale,
                     layer.multiplier_bits) for layer in model.layers]
    return sorted(out, key=lambda r: r.sqnr_db)


def _db(signal: float, noise: float) -> float:
    if noise == 0:
        return math.inf
    return 10.0 * math.log10(signal / noise) if signal > 0 else -math.inf


def format_sqnr(rows: Sequence[LayerSqnr], limit: int | None = None) -> str:
    """A table of the layers' SQNR, worst first (the ``limit`` worst when given)."""
    shown = list(rows)[:limit] if limit else list(rows)
    width = max([len(r.name) for r in shown] + [5])
    lines = [f"{'layer':<{width}}  {'op':<7} {'SQNR dB':>8}  {'m bits':>6}"]
    lines += [f"{r.name:<{width}}  {r.op:<7} {r.sqnr_db:>8.2f}  {r.multiplier_bits or '-':>6}" for r in shown]
    if limit and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more layers, all above {shown[-1].sqnr_db:.2f} dB")
    return "\n".join(lines)


__all__ = ["LayerSqnr", "format_sqnr", "layer_sqnr"]
