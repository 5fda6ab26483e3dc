"""Statement nodes of the loop IR (re-exported by ``ir``), plus blocks and PrimFunc."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from .ir import Buffer, FloatImm, IntImm, Node, PrimExpr, Stmt, Var


class ForKind(str, Enum):
    SERIAL = "serial"
    PARALLEL = "parallel"
    VECTORIZED = "vectorized"
    UNROLLED = "unrolled"
    VIRTUAL_THREAD = "virtual_thread"


@dataclass(frozen=True, slots=True)
class For(Stmt):
    """``for loop_var in [min, min + extent)``; ``annotations`` holds pragmas as
    ``(key, value)`` pairs."""

    loop_var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: ForKind
    body: Stmt
    annotations: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class BufferStore(Stmt):
    """``buffer[indices] = value``."""

    buffer: Buffer
    value: PrimExpr
    indices: tuple[PrimExpr, ...]


@dataclass(frozen=True, slots=True)
class Allocate(Stmt):
    """Storage for ``buffer.data`` (``buffer.size()`` elements in ``buffer.scope``),
    live during ``body``."""

    buffer: Buffer
    body: Stmt

    @property
    def scope(self) -> str:
        return self.buffer.scope


@dataclass(frozen=True, slots=True)
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True)
class IfThenElse(Stmt):
    condition: PrimExpr
    then_case: Stmt
    else_case: Stmt | None = None


@dataclass(frozen=True, slots=True)
class LetStmt(Stmt):
    """Bind ``var`` to ``value`` within ``body``."""

    var: Var
    value: PrimExpr
    body: Stmt


@dataclass(frozen=True, slots=True)
class Evaluate(Stmt):
    """Evaluate an expression for its side effect (e.g. a packed call)."""

    value: PrimExpr


@dataclass(frozen=True, slots=True)
class AttrStmt(Stmt):
    """A hint attached to ``node`` (a Buffer, Var or str) for ``body``.

    Keys used here: ``"storage_align"`` (value ``(axis, factor, offset)``) and
    ``"double_buffer_scope"`` on the Allocate of a buffer.
    """

    node: Any
    key: str
    value: Any
    body: Stmt


class IterKind(str, Enum):
    SPATIAL = "spatial"
    REDUCE = "reduce"
    # A recurrence axis (scan time): iterations depend on earlier ones.
    ORDERED = "ordered"


@dataclass(frozen=True, slots=True)
class IterVar(Node):
    """A block iterator ranging over ``[min, min + extent)``. In expressions it stands
    for its variable (``k + 1`` works for a reduce axis ``k``)."""

    var: Var
    min: PrimExpr
    extent: PrimExpr
    kind: IterKind = IterKind.SPATIAL


def _forward_to_var(name: str) -> Any:
    def method(self: IterVar, *args: Any) -> Any:
        return getattr(self.var, name)(*args)
    method.__name__ = name
    return method


for _op in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__floordiv__",
            "__rfloordiv__", "__mod__", "__rmod__", "__neg__", "__lt__", "__le__", "__gt__",
            "__ge__", "astype"):
    setattr(IterVar, _op, _forward_to_var(_op))


@dataclass(frozen=True, slots=True)
class Block(Stmt):
    """One computation of a schedule stage, with its own iterators.

    ``init`` (reductions) runs when every REDUCE iterator is at its minimum, before
    ``body``. A block with no iterators is opaque (e.g. an extern stage). Blocks exist
    while scheduling; ``lower_blocks`` replaces them by plain statements.
    """

    name: str
    iter_vars: tuple[IterVar, ...]
    body: Stmt
    init: Stmt | None = None
    annotations: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class BlockRealize(Stmt):
    """Run ``block`` with its iterators bound to ``iter_values`` if ``predicate`` holds."""

    iter_values: tuple[PrimExpr, ...]
    predicate: PrimExpr
    block: Block


@dataclass(frozen=True, slots=True)
class PrimFunc(Node):
    """A function over buffers. ``params`` keep their declared (N-D) shapes even after
    flattening: the body then uses 1-D buffers sharing the params' ``data`` vars."""

    name: str
    params: tuple[Buffer, ...]
    body: Stmt
    attrs: tuple[tuple[str, Any], ...] = ()

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.name, self.params, body, self.attrs)


def seq(*stmts: Stmt | None) -> Stmt:
    """A statement sequence with nested sequences flattened and ``None`` dropped."""
    flat: list[Stmt] = []
    for s in stmts:
        if isinstance(s, SeqStmt):
            flat.extend(s.stmts)
        elif s is not None:
            flat.append(s)
    if len(flat) == 1:
        return flat[0]
    return SeqStmt(tuple(flat))


def is_no_op(stmt: Stmt | None) -> bool:
    """True for statements that do nothing (empty sequences, constant evaluations)."""
    if stmt is None:
        return True
    if isinstance(stmt, SeqStmt):
        return all(is_no_op(s) for s in stmt.stmts)
    return isinstance(stmt, Evaluate) and isinstance(stmt.value, (IntImm, FloatImm))


NOP: Stmt = Evaluate(IntImm(0))
