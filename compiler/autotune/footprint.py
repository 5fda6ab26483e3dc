"""What passes through the caches between two runs of a model's node: the model's weight bytes, which size
the flush before each timed call of a CPU task (:func:`~vdla.compiler.autotune.measure.model_flush_bytes`)."""

from __future__ import annotations

from typing import Any

import numpy as np


def model_weight_bytes(graph: Any, cpu_target: str = "llvm") -> int:
    """The bytes of every weight of ``graph`` (a :class:`vdla.compiler.graph.Graph`) as the llvm target's
    pipeline lays them out (``optimize_for_cpu``: batch norms folded, weights blocked), i.e. what a CPU
    run of the model reads from its parameters once per inference."""
    from vdla.compiler.codegen.llvm import parse_target, using_target
    from vdla.compiler.graph.passes import optimize_for_cpu

    with using_target(parse_target(cpu_target)):
        g = optimize_for_cpu(graph)
    return int(sum(np.asarray(n.value).nbytes for n in g.nodes if n.op == "constant"))
