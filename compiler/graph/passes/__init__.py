"""Graph passes, each a pure function ``Graph -> Graph`` (plan_memory returns a MemoryPlan).

The CPU pipeline is :func:`optimize_for_cpu`: fold_batch_norm, fold_constant, cpu_layout,
fuse_ops.  The VDLA pipeline is :func:`optimize_for_vdla`: fold_batch_norm, fold_constant,
quantize, alter_layout, fold_constant, fuse_ops, partition, fuse_residual_add (a VDLA residual add into
the epilogue of the VDLA conv producing it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from vdla_hw.config import HwConfig

from vdla.compiler.codegen.llvm import current_target
from vdla.compiler.graph.cost import HostModel
from vdla.compiler.graph.ir import Graph
from vdla.compiler.graph.kernel_cache import KernelCache
from vdla.compiler.graph.passes.alter_layout import LayoutRewriter, alter_layout
from vdla.compiler.graph.passes.cpu_layout import cpu_layout
from vdla.compiler.graph.passes.fold_batch_norm import fold_batch_norm
from vdla.compiler.graph.passes.fold_constant import fold_constant
from vdla.compiler.graph.passes.fuse_ops import fuse_ops, fusion_groups
from vdla.compiler.graph.passes.fuse_residual import fuse_residual_add
from vdla.compiler.graph.passes.linear_matmul import rewrite_linear_matmul
from vdla.compiler.graph.passes.partition import partition, placement
from vdla.compiler.graph.passes.plan_memory import MemoryPlan, plan_memory, run_planned
from vdla.compiler.graph.passes.calibration import Calibration, calibrate, parse_calibration
from vdla.compiler.graph.passes.quantize import QuantizedModel, quantize, quantize_model


def optimize_for_cpu(graph: Graph, block: int | None = None) -> Graph:
    """The float pipeline for the llvm target: fold batch norms and constants, keep activations
    between convs blocked by ``block`` channels (default: one vector register of fp32 on the target
    being compiled for, :func:`~vdla.compiler.codegen.llvm.current_target`), then fuse."""
    if block is None:
        block = current_target().vector_lanes(32)
    return fuse_ops(cpu_layout(fold_constant(fold_batch_norm(graph)), block))


def optimize_for_vdla(graph: Graph, cfg: HwConfig, samples: Sequence[Mapping[str, np.ndarray]],
                      *, skip_first_conv: bool = True, calibration: str | Calibration = "max",
                      per_channel: bool = True, host: HostModel | None = None) -> Graph:
    """The int8 pipeline: quantize with ``samples``, pack for ``cfg``, fuse and partition (``host``: the cost
    rule's host, which :func:`fuse_residual_add` weighs a fused add against)."""
    return lower_quantized_for_vdla(quantize_for_vdla(graph, samples, skip_first_conv=skip_first_conv,
                                                      calibration=calibration, per_channel=per_channel).graph, cfg,
                                    host)


def quantize_for_vdla(graph: Graph, samples: Sequence[Mapping[str, np.ndarray]], *, skip_first_conv: bool = True,
                      calibration: str | Calibration = "max", per_channel: bool = True) -> QuantizedModel:
    """The first half of :func:`optimize_for_vdla`: fold batch norms, turn linear matmuls into dense, fold
    constants, quantize."""
    return quantize_model(fold_constant(rewrite_linear_matmul(fold_batch_norm(graph))), samples, skip_first_conv=skip_first_conv,
                          calibration=calibration, per_channel=per_channel)


def lower_quantized_for_vdla(g: Graph, cfg: HwConfig, host: HostModel | None = None,
                             kernels: KernelCache | None = None) -> Graph:
    """The second half of :func:`optimize_for_vdla`: pack a quantized graph for ``cfg``, fuse, partition, and
    fuse the residual adds placed on the VDLA into their producer convs' epilogues (``kernels``: the build's
    cache of compiled VDLA kernels, which that decision fills)."""
    g = fold_constant(alter_layout(g, cfg))
    return fuse_residual_add(partition(fuse_ops(g), cfg), cfg, host, kernels)


__all__ = [
    "Calibration", "LayoutRewriter", "MemoryPlan", "QuantizedModel", "alter_layout", "cpu_layout", "calibrate", "fold_batch_norm", "fold_constant", "fuse_ops", "fuse_residual_add", "fusion_groups",
    "lower_quantized_for_vdla", "optimize_for_cpu", "optimize_for_vdla", "parse_calibration", "partition", "placement",
    "plan_memory", "quantize", "quantize_for_vdla", "quantize_model", "rewrite_linear_matmul", "run_planned",
]
