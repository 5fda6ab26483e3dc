"""Structural operators: graph inputs, constants and fused groups.

``input`` and ``constant`` are leaves the executor binds directly.  ``fused`` holds a
sub-graph (attribute ``body``) that ``fuse_ops`` built from one fusion group; its pattern
(attribute ``pattern``) is that of its anchor.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vdla.compiler.graph.errors import GraphError, TypeInferenceError
from vdla.compiler.graph.ir import Attrs, ConstValue, Graph, TensorType
from vdla.compiler.graph.ops.registry import REQUIRED, OpDef, OpPattern, register_op


def _input_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    return TensorType(tuple(attrs["shape"]), attrs["dtype"])


def _leaf_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    raise GraphError("input and constant nodes are bound by the executor, not evaluated")


def _constant_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    value = attrs["value"]
    if not isinstance(value, ConstValue):
        raise TypeInferenceError("constant: attribute 'value' must be a ConstValue")
    return value.type


register_op(OpDef("input", OpPattern.OPAQUE, _input_relation, _leaf_reference, (0, 0),
                  {"shape": REQUIRED, "dtype": REQUIRED}, "a graph input, bound at run time"))
register_op(OpDef("constant", OpPattern.OPAQUE, _constant_relation, _leaf_reference, (0, 0),
                  {"value": REQUIRED}, "a constant tensor (parameter or folded value)"))


def _fused_relation(types: Sequence[TensorType], attrs: Attrs) -> TensorType:
    body: Graph = attrs["body"]
    params = body.input_nodes
    if [p.type for p in params] != list(types):
        raise TypeInferenceError(
            f"fused: inputs {[str(t) for t in types]} do not match the body's parameters {[str(p.type) for p in params]}"
        )
    if len(body.outputs) != 1:
        raise TypeInferenceError("fused: a fused group has exactly one output")
    return body.output_types[0]


def _fused_reference(xs: Sequence[np.ndarray], attrs: Attrs) -> np.ndarray:
    from vdla.compiler.graph.executor import run_graph

    body: Graph = attrs["body"]
    return run_graph(body, {p.name: x for p, x in zip(body.input_nodes, xs)})[0]


register_op(OpDef("fused", OpPattern.OPAQUE, _fused_relation, _fused_reference, (0, 1 << 16),
                  {"body": REQUIRED, "pattern": REQUIRED, "target": None, "reason": None},
                  "a fusion group: its body graph runs as one kernel; pattern names its anchor's category, "
                  "target (set by partition) the device that runs it and reason why a conv2d/dense stays on the CPU"))
