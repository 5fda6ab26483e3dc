"""The operator registry and the definitions of every graph operator.

Importing this package registers all operators; see :mod:`vdla.compiler.graph.ops.registry`.
"""

from vdla.compiler.graph.ops import (  # noqa: F401  (registration)
    elemwise, indexing, math, nn, pool, qnn, quant, structural, transform,
)
from vdla.compiler.graph.ops.registry import (
    REQUIRED, TARGETS, OpDef, OpPattern, get_lowering, get_op, lower, register_lowering, register_op, registered_ops,
)

__all__ = [
    "REQUIRED", "TARGETS", "OpDef", "OpPattern", "get_lowering", "get_op", "lower", "register_lowering",
    "register_op", "registered_ops",
]
