"""The typed, immutable graph IR.

A :class:`Graph` is a tuple of :class:`Node` s in topological order plus the names of its
outputs.  Every value is produced by exactly one node: graph inputs are ``input`` nodes,
parameters and folded values are ``constant`` nodes holding a read-only array.  A node
names its operator, its input values (by node name), its frozen attributes and its
output :class:`TensorType`, which the operator's type relation computed when the node
was built.  Passes never mutate a graph; they build a new one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from vdla.compiler.graph.errors import GraphError

#: Element types a graph value may have (NumPy names).
DTYPES = frozenset({
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
})


@dataclass(frozen=True)
class TensorType:
    """Static shape and element type of a value."""

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise GraphError(f"unknown dtype {self.dtype!r}; use one of {sorted(DTYPES)}")
        if any(not isinstance(d, (int, np.integer)) or d < 0 for d in self.shape):
            raise GraphError(f"shape {self.shape} must be a tuple of non-negative integers (static shapes only)")
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


class ConstValue:
    """A read-only array held in a node's attributes; hashable and compared by content."""

    __slots__ = ("array", "_digest")

    def __init__(self, array: np.ndarray | Any) -> None:
        arr = np.array(array, copy=True)
        if arr.dtype.name not in DTYPES:
            raise GraphError(f"constant of dtype {arr.dtype} is not supported; use one of {sorted(DTYPES)}")
        arr.setflags(write=False)
        object.__setattr__(self, "array", arr)
        digest = hashlib.blake2b(arr.tobytes(), digest_size=16)
        digest.update(repr((arr.shape, arr.dtype.str)).encode())
        object.__setattr__(self, "_digest", digest.digest())

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ConstValue is immutable")

    @property
    def type(self) -> TensorType:
        return TensorType(self.array.shape, self.array.dtype.name)

    def __hash__(self) -> int:
        return hash(self._digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ConstValue) and self._digest == other._digest

    def __repr__(self) -> str:
        return f"ConstValue({self.type})"


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        raise GraphError("arrays are not attributes; hold them in a constant node or a ConstValue")
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, dict):
        raise GraphError("nested dictionaries are not attributes; flatten them into named attributes")
    return value


class Attrs(Mapping[str, Any]):
    """Frozen, hashable operator attributes; lists become tuples on construction."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, Any] | None = None, /, **kwargs: Any) -> None:
        merged = {**(items or {}), **kwargs}
        object.__setattr__(self, "_items", tuple(sorted((k, _freeze(v)) for k, v in merged.items())))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Attrs are immutable; use .replace(...)")

    def __getitem__(self, key: str) -> Any:
        for k, v in self._items:
            if k == key:
                return v
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (k for k, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(self._items)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Attrs) and self._items == other._items

    def replace(self, **changes: Any) -> Attrs:
        """A copy with ``changes`` applied; a value of ``None`` removes the attribute."""
        merged = dict(self._items)
        merged.update(changes)
        return Attrs({k: v for k, v in merged.items() if v is not None})

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}={_short(v)}" for k, v in self._items) + "}"


def _short(v: Any) -> str:
    if isinstance(v, Graph):
        return f"<graph of {len(v.nodes)} nodes>"
    return repr(v)


@dataclass(frozen=True)
class Node:
    """One operator application producing one value named ``name``."""

    name: str
    op: str
    inputs: tuple[str, ...]
    attrs: Attrs
    type: TensorType

    @property
    def value(self) -> np.ndarray:
        """The array of a ``constant`` node."""
        if self.op != "constant":
            raise GraphError(f"node {self.name!r} is a {self.op!r}, not a constant")
        return self.attrs["value"].array


@dataclass(frozen=True)
class Graph:
    """Nodes in topological order and the names of the output values."""

    nodes: tuple[Node, ...]
    outputs: tuple[str, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for n in self.nodes:
            if n.name in seen:
                raise GraphError(f"duplicate node name {n.name!r}; every value needs a unique name")
            missing = [i for i in n.inputs if i not in seen]
            if missing:
                raise GraphError(
                    f"node {n.name!r} ({n.op}) reads {missing} which no earlier node produces; "
                    "nodes must be in topological order and inputs must exist"
                )
            seen.add(n.name)
        if not self.outputs:
            raise GraphError("a graph needs at least one output")
        bad = [o for o in self.outputs if o not in seen]
        if bad:
            raise GraphError(f"graph outputs {bad} are not produced by any node")

    @cached_property
    def by_name(self) -> Mapping[str, Node]:
        return {n.name: n for n in self.nodes}

    def node(self, name: str) -> Node:
        try:
            return self.by_name[name]
        except KeyError:
            raise GraphError(f"no node named {name!r} in the graph") from None

    @property
    def input_nodes(self) -> tuple[Node, ...]:
        return tuple(n for n in self.nodes if n.op == "input")

    @property
    def output_types(self) -> tuple[TensorType, ...]:
        return tuple(self.by_name[o].type for o in self.outputs)

    @cached_property
    def consumers(self) -> Mapping[str, tuple[str, ...]]:
        """For each value, the names of the nodes that read it (a node reading twice counts once)."""
        users: dict[str, list[str]] = {n.name: [] for n in self.nodes}
        for n in self.nodes:
            for i in dict.fromkeys(n.inputs):
                users[i].append(n.name)
        return {k: tuple(v) for k, v in users.items()}

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def __str__(self) -> str:
        from vdla.compiler.graph.printer import format_graph

        return format_graph(self)
