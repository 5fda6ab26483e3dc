"""Batch normalization for inference: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

The per-channel ``scale = gamma / sqrt(var + eps)`` and ``shift = beta - mean * scale`` are
computed once (small stages), so the element-wise pass is one FMA per element.
"""
from __future__ import annotations

from .. import te
from ..codegen.llvm import Target
from ..schedule import Schedule, create_schedule
from ..te import Tensor
from .utils import TopiError, const_shape, schedule_elementwise, vector_lanes


def batch_norm_inference(x: Tensor, gamma: Tensor, beta: Tensor, mean: Tensor, var: Tensor,
                         eps: float = 1e-5, axis: int = 1,
                         name: str = "batch_norm") -> Tensor:
    """Normalize ``x`` along ``axis`` with the running statistics (all 1-D, size C)."""
    shape = const_shape(x)
    axis = axis % len(shape)
    c = shape[axis]
    for t in (gamma, beta, mean, var):
        if const_shape(t) != (c,):
            raise TopiError(f"{t.name} has shape {const_shape(t)}, expected ({c},) for axis "
                            f"{axis} of {x.name}")
    scale = te.compute((c,), lambda i: gamma[i] / te.sqrt(var[i] + te.const(eps, x.dtype)),
                       name=f"{name}_scale")
    shift = te.compute((c,), lambda i: beta[i] - mean[i] * scale[i], name=f"{name}_shift")
    return te.compute(shape, lambda *i: x[i] * scale[i[axis]] + shift[i[axis]], name=name)


def schedule_batch_norm(out: Tensor, s: Schedule | None = None,
                        target: Target | None = None) -> Schedule:
    """Per-channel stages as plain loops; the output as one fused vectorized loop."""
    s = s or create_schedule(out)
    schedule_elementwise(s, out, vector_lanes(target))
    return s
