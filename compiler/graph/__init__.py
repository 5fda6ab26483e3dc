"""The graph level: a typed immutable graph IR, the operator registry, the reference
executor and the graph passes (see ``docs/graph.md``)."""

from vdla.compiler.graph.builder import GraphBuilder, make_node, prune
from vdla.compiler.graph.errors import (
    GraphError, NotLoweredError, TypeInferenceError, UnknownOperatorError, UnsupportedModelError,
)
from vdla.compiler.graph.executor import run_all, run_graph
from vdla.compiler.graph.ir import Attrs, ConstValue, Graph, Node, TensorType
from vdla.compiler.graph.ops import OpPattern, get_lowering, get_op, lower, register_lowering, registered_ops

__all__ = [
    "Attrs", "ConstValue", "Graph", "GraphBuilder", "GraphError", "Node", "NotLoweredError", "OpPattern",
    "TensorType", "TypeInferenceError", "UnknownOperatorError", "UnsupportedModelError", "get_lowering", "get_op",
    "lower", "make_node", "prune", "register_lowering", "registered_ops", "run_all", "run_graph",
]
