"""The operator registry: one :class:`OpDef` per operator, plus per-target lowering hooks.

An operator's definition gathers everything the graph level needs to know about it:
its type relation (input types + attributes -> output type), its fusion pattern, its
NumPy reference, and its attribute schema.  Targets register lowerings separately
(:func:`register_lowering`) because they live with the target's code generator; asking
for a lowering that does not exist raises :class:`NotLoweredError` naming the operator,
the target and the operators that are lowered for it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vdla.compiler.graph.errors import NotLoweredError, TypeInferenceError, UnknownOperatorError
from vdla.compiler.graph.ir import Attrs, Node, TensorType

#: Code-generation targets a lowering can be registered for.
TARGETS = ("llvm", "vdla")


class OpPattern(enum.IntEnum):
    """Fusion categories of the TVM paper, ordered from most to least fusable."""

    INJECTIVE = 0
    """Each output element depends on one input element (elementwise, broadcast, reshape, transpose)."""
    REDUCTION = 1
    """Output elements reduce over input elements (pooling, sums); injective inputs fuse into it."""
    COMPLEX_OUT_FUSABLE = 2
    """Complex ops (conv2d, dense) whose output can absorb elementwise ops."""
    OPAQUE = 3
    """Not fusable (softmax, sort)."""


Relation = Callable[[Sequence[TensorType], Attrs], TensorType]
Reference = Callable[[Sequence[np.ndarray], Attrs], np.ndarray]
Lowering = Callable[[Node, Sequence[Any]], Any]


@dataclass(frozen=True)
class OpDef:
    """The single definition of a graph operator."""

    name: str
    pattern: OpPattern
    relation: Relation
    reference: Reference
    num_inputs: tuple[int, int]
    """Minimum and maximum number of inputs."""
    attrs: Mapping[str, Any] = field(default_factory=dict)
    """Accepted attributes and their defaults; ``REQUIRED`` marks attributes without one."""
    doc: str = ""

    def make_attrs(self, given: Mapping[str, Any]) -> Attrs:
        """Attributes with defaults filled in; unknown or missing ones raise TypeInferenceError."""
        unknown = sorted(set(given) - set(self.attrs))
        if unknown:
            raise TypeInferenceError(f"operator {self.name!r} has no attribute(s) {unknown}; it accepts {sorted(self.attrs)}")
        merged = {**self.attrs, **given}
        missing = sorted(k for k, v in merged.items() if v is REQUIRED)
        if missing:
            raise TypeInferenceError(f"operator {self.name!r} needs attribute(s) {missing}")
        return Attrs({k: v for k, v in merged.items() if v is not None})

    def infer(self, input_types: Sequence[TensorType], attrs: Attrs) -> TensorType:
        lo, hi = self.num_inputs
        if not lo <= len(input_types) <= hi:
            want = str(lo) if lo == hi else f"{lo} to {hi}"
            raise TypeInferenceError(f"operator {self.name!r} takes {want} inputs, got {len(input_types)}")
        return self.relation(input_types, attrs)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

_OPS: dict[str, OpDef] = {}
_LOWERINGS: dict[tuple[str, str], Lowering] = {}


def register_op(op: OpDef) -> OpDef:
    """Add an operator definition; a second definition of the same name is a bug."""
    if op.name in _OPS:
        raise ValueError(f"operator {op.name!r} is already registered")
    _OPS[op.name] = op
    return op


def get_op(name: str) -> OpDef:
    try:
        return _OPS[name]
    except KeyError:
        raise UnknownOperatorError(f"unknown graph operator {name!r}; registered: {sorted(_OPS)}") from None


def registered_ops() -> tuple[str, ...]:
    return tuple(sorted(_OPS))


def register_lowering(op: str, target: str) -> Callable[[Lowering], Lowering]:
    """Decorator registering ``fn(node, inputs) -> output`` as the lowering of ``op`` for ``target``.

    ``inputs`` and the result are the target's tensor objects (``te`` tensors for ``llvm``,
    VDLA kernel descriptions for ``vdla``).
    """
    get_op(op)
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; use one of {TARGETS}")

    def deco(fn: Lowering) -> Lowering:
        if (op, target) in _LOWERINGS:
            raise ValueError(f"operator {op!r} already has a lowering for target {target!r}")
        _LOWERINGS[(op, target)] = fn
        return fn

    return deco


def get_lowering(op: str, target: str) -> Lowering:
    """The lowering of ``op`` for ``target``; raises NotLoweredError when there is none."""
    get_op(op)
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; use one of {TARGETS}")
    try:
        return _LOWERINGS[(op, target)]
    except KeyError:
        lowered = sorted(o for o, t in _LOWERINGS if t == target)
        raise NotLoweredError(
            f"operator {op!r} is not yet lowered for target {target!r}; "
            f"operators lowered for {target!r}: {lowered or 'none yet'}"
        ) from None


def lower(node: Node, target: str, inputs: Sequence[Any]) -> Any:
    """Lower one node for ``target`` with the registered lowering."""
    return get_lowering(node.op, target)(node, inputs)
