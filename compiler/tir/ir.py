"""The loop IR: immutable expression and statement nodes.

Every node is a frozen dataclass whose children are other nodes or tuples of them, so
passes rebuild trees instead of mutating them and structurally equal subtrees compare
equal. ``Var`` and ``Buffer`` are the exceptions: they compare by identity, because two
loop variables that happen to share a name are still different variables.

The dataclass constructors do no checking (passes build millions of nodes); user-facing
builders (operators on ``PrimExpr``, ``const``, the helpers below and in ``op.py``)
convert Python scalars and check dtypes.

This module is a stable interface for code generators: nodes are only ever added.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Union

from . import dtype as dt

# ---------------------------------------------------------------------------- base


class Node:
    """Base of all IR nodes; ``str(node)`` gives the readable listing."""

    __slots__ = ()

    def __str__(self) -> str:
        from .printer import to_text
        return to_text(self)


class PrimExpr(Node):
    """A scalar or vector value. Python operators build new expression nodes.

    ``a == b`` builds an ``EQ`` node (so ``te.compute(..., where=k % 2 == 0)`` works); its
    truth value is structural equality, so expressions still work as dict keys and in
    ``if a == b:`` tests. Hashing is structural too (Vars hash by identity).
    """

    __slots__ = ()
    dtype: str

    def __eq__(self, o: object) -> Any:  # type: ignore[override]
        if not isinstance(o, (PrimExpr, int, float, IterVar)):
            return NotImplemented
        try:
            return _arith(EQ, self, o)  # type: ignore[arg-type]
        except TypeError:
            return False

    def __ne__(self, o: object) -> Any:  # type: ignore[override]
        if not isinstance(o, (PrimExpr, int, float, IterVar)):
            return NotImplemented
        try:
            return _arith(NE, self, o)  # type: ignore[arg-type]
        except TypeError:
            return True

    def __hash__(self) -> int:
        return structural_hash(self)

    def __add__(self, o: ExprLike) -> PrimExpr: return _arith(Add, self, o)
    def __radd__(self, o: ExprLike) -> PrimExpr: return _arith(Add, o, self)
    def __sub__(self, o: ExprLike) -> PrimExpr: return _arith(Sub, self, o)
    def __rsub__(self, o: ExprLike) -> PrimExpr: return _arith(Sub, o, self)
    def __mul__(self, o: ExprLike) -> PrimExpr: return _arith(Mul, self, o)
    def __rmul__(self, o: ExprLike) -> PrimExpr: return _arith(Mul, o, self)
    def __truediv__(self, o: ExprLike) -> PrimExpr: return _arith(Div, self, o)
    def __rtruediv__(self, o: ExprLike) -> PrimExpr: return _arith(Div, o, self)
    def __floordiv__(self, o: ExprLike) -> PrimExpr: return _arith(FloorDiv, self, o)
    def __rfloordiv__(self, o: ExprLike) -> PrimExpr: return _arith(FloorDiv, o, self)
    def __mod__(self, o: ExprLike) -> PrimExpr: return _arith(FloorMod, self, o)
    def __rmod__(self, o: ExprLike) -> PrimExpr: return _arith(FloorMod, o, self)
    def __neg__(self) -> PrimExpr: return _arith(Sub, const(0, self.dtype), self)
    def __lt__(self, o: ExprLike) -> PrimExpr: return _arith(LT, self, o)
    def __le__(self, o: ExprLike) -> PrimExpr: return _arith(LE, self, o)
    def __gt__(self, o: ExprLike) -> PrimExpr: return _arith(GT, self, o)
    def __ge__(self, o: ExprLike) -> PrimExpr: return _arith(GE, self, o)
    def __and__(self, o: ExprLike) -> PrimExpr: return _arith(And, self, o)
    def __rand__(self, o: ExprLike) -> PrimExpr: return _arith(And, o, self)
    def __or__(self, o: ExprLike) -> PrimExpr: return _arith(Or, self, o)
    def __ror__(self, o: ExprLike) -> PrimExpr: return _arith(Or, o, self)
    def __invert__(self) -> PrimExpr: return Not(self)

    def astype(self, dtype: str) -> PrimExpr:
        """Cast to ``dtype`` (no node if the dtype already matches)."""
        return self if dtype == self.dtype else Cast(dtype, self)


class Stmt(Node):
    """A statement."""

    __slots__ = ()


ExprLike = Union[PrimExpr, int, float, bool]

# ---------------------------------------------------------------------------- leaves


@dataclass(frozen=True, slots=True, eq=False)
class Var(PrimExpr):
    """A variable (loop index, let binding, block iterator, buffer data handle).

    Compared by identity: the name is only a hint for printing.
    """

    name: str
    dtype: str = "int32"

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"Var({self.name}:{self.dtype}@{id(self) & 0xffff:x})"


@dataclass(frozen=True, slots=True, eq=False)
class IntImm(PrimExpr):
    """Integer (or bool) constant."""

    value: int
    dtype: str = "int32"


@dataclass(frozen=True, slots=True, eq=False)
class FloatImm(PrimExpr):
    """Floating-point constant."""

    value: float
    dtype: str = "float32"


@dataclass(frozen=True, slots=True, eq=False)
class StringImm(PrimExpr):
    """String constant, e.g. the name of a packed function."""

    value: str

    @property
    def dtype(self) -> str:
        return "handle"


# ---------------------------------------------------------------------------- operators


@dataclass(frozen=True, slots=True, eq=False)
class BinaryOp(PrimExpr):
    """Base of two-operand arithmetic; the result has the operands' dtype."""

    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


class Add(BinaryOp): __slots__ = ()
class Sub(BinaryOp): __slots__ = ()
class Mul(BinaryOp): __slots__ = ()


class Div(BinaryOp):
    """True division; for integers it truncates toward zero (C semantics)."""

    __slots__ = ()


class FloorDiv(BinaryOp):
    """Integer division rounding toward negative infinity."""

    __slots__ = ()


class FloorMod(BinaryOp):
    """Remainder of :class:`FloorDiv`; has the sign of the divisor."""

    __slots__ = ()


class Min(BinaryOp): __slots__ = ()
class Max(BinaryOp): __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class CmpOp(PrimExpr):
    """Base of comparisons; the result is bool with the operands' lane count."""

    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return dt.with_lanes("bool", dt.lanes(self.a.dtype))

    def __bool__(self) -> bool:
        # Catches `if a < b:` and builtin min/max on symbolic values.
        raise TypeError(f"the truth value of the symbolic comparison {self} is unknown")


class EQ(CmpOp):
    __slots__ = ()

    def __bool__(self) -> bool:
        return structural_equal(self.a, self.b)


class NE(CmpOp):
    __slots__ = ()

    def __bool__(self) -> bool:
        return not structural_equal(self.a, self.b)
class LT(CmpOp): __slots__ = ()
class LE(CmpOp): __slots__ = ()
class GT(CmpOp): __slots__ = ()
class GE(CmpOp): __slots__ = ()


@dataclass(frozen=True, slots=True, eq=False)
class And(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@dataclass(frozen=True, slots=True, eq=False)
class Or(PrimExpr):
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@dataclass(frozen=True, slots=True, eq=False)
class Not(PrimExpr):
    a: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@dataclass(frozen=True, slots=True, eq=False)
class Select(PrimExpr):
    """``condition ? true_value : false_value``. Both values are evaluated (they must be
    safe to evaluate); use the ``if_then_else`` intrinsic for a lazy choice."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


@dataclass(frozen=True, slots=True, eq=False)
class Cast(PrimExpr):
    """Conversion to ``dtype``; float->int truncates, int->narrower int wraps."""

    dtype: str
    value: PrimExpr


@dataclass(frozen=True, slots=True, eq=False)
class Call(PrimExpr):
    """An intrinsic call by name.

    Math intrinsics: exp, log, sqrt, rsqrt, tanh, sigmoid, erf, fabs, pow, floor, ceil,
    round. ``if_then_else(c, t, f)`` evaluates only the chosen branch. ``call_packed``
    takes the function name as a StringImm first argument and calls an external function
    (see ``packed.py``).
    """

    dtype: str
    op: str
    args: tuple[PrimExpr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class Ramp(PrimExpr):
    """The integer vector ``base, base+stride, ..., base+(lanes-1)*stride``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.base.dtype, self.lanes)


@dataclass(frozen=True, slots=True, eq=False)
class Broadcast(PrimExpr):
    """A scalar replicated into ``lanes`` lanes."""

    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.value.dtype, self.lanes)


# ---------------------------------------------------------------------------- buffers


@dataclass(frozen=True, slots=True, eq=False)
class Buffer(Node):
    """A typed, shaped view of the memory behind ``data``.

    Element ``(i0, .., in)`` lives at flat position ``elem_offset + sum(ik * strides[k])``
    of ``data``. Empty ``strides`` means compact row-major. Several buffers may share
    one ``data`` (e.g. a multi-dimensional buffer and its flattened 1-D form, or a
    tensorize region viewing part of a larger buffer). ``scope`` names the memory
    ("global", "local", or a scope added by a backend). Compared by identity.
    """

    data: Var
    name: str
    shape: tuple[PrimExpr, ...]
    dtype: str
    strides: tuple[PrimExpr, ...] = ()
    elem_offset: PrimExpr = IntImm(0)
    scope: str = "global"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, indices: Any) -> BufferLoad:
        idx = indices if isinstance(indices, tuple) else (indices,)
        return BufferLoad(self, tuple(convert(i) for i in idx))

    def __repr__(self) -> str:
        return f"Buffer({self.name}:{self.dtype}{list(self.shape)}@{self.scope})"

    def effective_strides(self) -> tuple[PrimExpr, ...]:
        """The strides, computing the compact row-major ones when none are given."""
        if self.strides:
            return self.strides
        out: list[PrimExpr] = []
        acc: PrimExpr = IntImm(1)
        for extent in reversed(self.shape):
            out.append(acc)
            acc = _fold_mul(acc, extent)
        return tuple(reversed(out))

    def flat_index(self, indices: tuple[PrimExpr, ...]) -> PrimExpr:
        """The position of ``indices`` in ``data`` (unsimplified)."""
        total: PrimExpr = self.elem_offset
        for idx, stride in zip(indices, self.effective_strides()):
            term = idx if _is_const(stride, 1) else _arith(Mul, idx, _match_lanes(stride, idx))
            total = term if _is_const(total, 0) else _arith(Add, _match_lanes(total, term), term)
        return total

    def size(self) -> PrimExpr:
        """Number of elements the memory behind this view must hold."""
        if not self.strides:
            acc: PrimExpr = IntImm(1)
            for extent in self.shape:
                acc = _fold_mul(acc, extent)
            return _fold_add(self.elem_offset, acc)
        last = self.elem_offset
        for extent, stride in zip(self.shape, self.strides):
            last = _fold_add(last, _fold_mul(_fold_add(extent, IntImm(-1)), stride))
        return _fold_add(last, IntImm(1))


def decl_buffer(shape: Any, dtype: str = "float32", name: str = "buf", scope: str = "global",
                strides: Any = (), elem_offset: ExprLike = 0, data: Var | None = None) -> Buffer:
    """Declare a buffer; ``shape`` may be an int, an expression or a sequence of them."""
    dt.split(dtype)
    shp = tuple(convert(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    return Buffer(data if data is not None else Var(name, "handle"), name, shp, dtype,
                  tuple(convert(s) for s in strides), convert(elem_offset), scope)


@dataclass(frozen=True, slots=True, eq=False)
class BufferLoad(PrimExpr):
    """Read ``buffer[indices]``; a vector index (e.g. a Ramp) reads a vector."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> str:
        n = max((dt.lanes(i.dtype) for i in self.indices), default=1)
        return dt.with_lanes(self.buffer.dtype, n)


@dataclass(frozen=True, slots=True, eq=False)
class BufferHandle(PrimExpr):
    """A buffer passed whole to an opaque call (``call_packed``)."""

    buffer: Buffer

    @property
    def dtype(self) -> str:
        return "handle"


# ---------------------------------------------------------------------------- equality

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def structural_equal(a: Any, b: Any) -> bool:
    """Same node types with equal fields; Vars and Buffers must be the same objects."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, (Var, Buffer)):
        return False
    if isinstance(a, Node):
        return all(structural_equal(getattr(a, n), getattr(b, n)) for n in _field_names(type(a)))
    if isinstance(a, tuple):
        return len(a) == len(b) and all(structural_equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def structural_hash(a: Any) -> int:
    """A hash consistent with :func:`structural_equal`."""
    if isinstance(a, (Var, Buffer)):
        return id(a)
    if isinstance(a, Node):
        return hash((type(a).__name__,) + tuple(structural_hash(getattr(a, n))
                                                 for n in _field_names(type(a))))
    if isinstance(a, tuple):
        return hash(tuple(structural_hash(x) for x in a))
    return hash(a)


# ---------------------------------------------------------------------------- builders


def const(value: int | float | bool, dtype: str | None = None) -> PrimExpr:
    """A constant of ``dtype`` (inferred from the Python type when omitted)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) \
            else "float32"
    if dt.lanes(dtype) > 1:
        return Broadcast(const(value, dt.element(dtype)), dt.lanes(dtype))
    if dt.is_float(dtype):
        return FloatImm(float(value), dtype)
    if dt.is_bool(dtype):
        return IntImm(int(bool(value)), dtype)
    return IntImm(int(value), dtype)


def convert(value: ExprLike, like: str | None = None) -> PrimExpr:
    """Turn a Python scalar into a constant (of dtype ``like`` when given)."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, (bool, int, float)):
        if like is not None and not (isinstance(value, float) and dt.is_integer(like)):
            return const(value, like)
        return const(value)
    raise TypeError(f"cannot convert {value!r} of type {type(value).__name__} to an expression")


def _arith(cls: type, a: ExprLike, b: ExprLike) -> PrimExpr:
    if not isinstance(a, PrimExpr):
        b = convert(b)
        a = convert(a, b.dtype)
    elif not isinstance(b, PrimExpr):
        b = convert(b, a.dtype)
    if a.dtype != b.dtype:
        raise TypeError(f"{cls.__name__} of mismatched dtypes {a.dtype} and {b.dtype}: "
                        f"cast one operand with .astype()")
    if cls in (And, Or) and not dt.is_bool(a.dtype):
        raise TypeError(f"{cls.__name__} needs bool operands, got {a.dtype}")
    return cls(a, b)


def _is_const(e: PrimExpr, value: int) -> bool:
    return isinstance(e, IntImm) and e.value == value


def _fold_mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.value * b.value, a.dtype)
    return b if _is_const(a, 1) else a if _is_const(b, 1) else _arith(Mul, a, b)


def _fold_add(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.value + b.value, a.dtype)
    return b if _is_const(a, 0) else a if _is_const(b, 0) else _arith(Add, a, b)


def _match_lanes(scalar: PrimExpr, like: PrimExpr) -> PrimExpr:
    n = dt.lanes(like.dtype)
    return scalar if dt.lanes(scalar.dtype) == n else Broadcast(scalar, n)


def add(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(Add, a, b)
def sub(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(Sub, a, b)
def mul(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(Mul, a, b)
def div(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(Div, a, b)
def floordiv(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(FloorDiv, a, b)
def floormod(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(FloorMod, a, b)
def min_(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(Min, a, b)
def max_(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(Max, a, b)
def eq(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(EQ, a, b)
def ne(a: ExprLike, b: ExprLike) -> PrimExpr: return _arith(NE, a, b)
def all_of(*conds: PrimExpr) -> PrimExpr:
    """Conjunction of ``conds`` (true when empty)."""
    out: PrimExpr = const(True)
    for c in conds:
        out = c if _is_const(out, 1) else And(out, c)
    return out


# Statements live in stmt.py (kept apart for size); they are part of this module's API.
from .stmt import (NOP, Allocate, AttrStmt, Block, BlockRealize, BufferStore,  # noqa: E402
                   Evaluate, For, ForKind, IfThenElse, IterKind, IterVar, LetStmt, PrimFunc,
                   SeqStmt, is_no_op, seq)

__all__ = [
    "Node", "PrimExpr", "Stmt", "ExprLike", "Var", "IntImm", "FloatImm", "StringImm", "BinaryOp",
    "Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "Min", "Max", "CmpOp", "EQ", "NE", "LT",
    "LE", "GT", "GE", "And", "Or", "Not", "Select", "Cast", "Call", "Ramp", "Broadcast",
    "Buffer", "decl_buffer", "BufferLoad", "BufferHandle", "structural_equal",
    "structural_hash", "const", "convert", "add", "sub", "mul", "div", "floordiv", "floormod",
    "min_", "max_", "eq", "ne", "all_of", "NOP", "Allocate", "AttrStmt", "Block",
    "BlockRealize", "BufferStore", "Evaluate", "For", "ForKind", "IfThenElse", "IterKind",
    "IterVar", "LetStmt", "PrimFunc", "SeqStmt", "is_no_op", "seq",
]
