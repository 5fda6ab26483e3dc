"""Tensor expressions: describe what to compute; schedules decide how.

>>> A = placeholder((n, k), name="A"); B = placeholder((k, m), name="B")
>>> r = reduce_axis(k, "r")
>>> C = compute((n, m), lambda i, j: sum(A[i, r] * B[r, j], axis=r), name="C")
"""
from ..tir.ir import const
from ..tir.op import (abs, call_packed, cast, ceil, erf, exp, fabs, floor, if_then_else, log,
                      max_value, min_value, power, round, rsqrt, sigmoid, sqrt, tanh)
from .lower import lower_to_func, topo_ops
from .reduce import CommReducer, Reduce, Reducer, comm_reducer, max, min, reduce_axis, sum
from .tensor import (ComputeOp, ExternOp, Operation, PlaceholderOp, ScanOp, Tensor, TensorError,
                     compute, extern, placeholder, scan)

__all__ = [
    "const", "abs", "cast", "ceil", "erf", "exp", "fabs", "floor", "if_then_else", "log",
    "max_value", "min_value", "power", "round", "rsqrt", "sigmoid", "sqrt", "tanh",
    "lower_to_func", "topo_ops", "CommReducer", "Reduce", "Reducer", "comm_reducer", "max",
    "min", "reduce_axis", "sum", "ComputeOp", "ExternOp", "Operation", "PlaceholderOp",
    "ScanOp", "Tensor", "TensorError", "compute", "extern", "placeholder", "scan",
    "call_packed",
]
