"""Tensors and the operations producing them: placeholder, compute, scan, extern.

A tensor owns the Buffer it will live in, and indexing a tensor builds a ``BufferLoad``
of that buffer, so a compute body is already loop-IR: lowering to TIR only wraps it in
loops and a block.
"""
from __future__ import annotations

import inspect
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..tir import dtype as dt
from ..tir.functor import collect
from ..tir.ir import (Buffer, BufferHandle, BufferLoad, ExprLike, IterKind, IterVar, PrimExpr,
                      Stmt, Var, convert, decl_buffer)
from .reduce import Reduce
from vdla_hw.errors import UsageError


class TensorError(UsageError):
    """A tensor expression is malformed (wrong arity, nested reduction, bad shape...)."""


@dataclass(eq=False)
class Tensor:
    """The ``value_index``-th output of ``op``; ``t[i, j]`` reads it in an expression."""

    op: Operation
    buffer: Buffer
    value_index: int = 0

    @property
    def shape(self) -> tuple[PrimExpr, ...]:
        return self.buffer.shape

    @property
    def dtype(self) -> str:
        return self.buffer.dtype

    @property
    def name(self) -> str:
        return self.buffer.name

    @property
    def ndim(self) -> int:
        return len(self.buffer.shape)

    def __getitem__(self, indices: Any) -> BufferLoad:
        idx = indices if isinstance(indices, tuple) else (indices,)
        if len(idx) != self.ndim:
            raise TensorError(f"{self.name} has {self.ndim} dimensions, indexed with {len(idx)}")
        conv = tuple(i.var if isinstance(i, IterVar) else convert(i) for i in idx)
        for i in conv:
            if not dt.is_integer(i.dtype):
                raise TensorError(f"index {i} of {self.name} must be an integer, got {i.dtype}")
        return BufferLoad(self.buffer, conv)

    def __repr__(self) -> str:
        return f"Tensor({self.name}: {self.dtype}{[str(s) for s in self.shape]})"


class Operation:
    """Base of the operations; ``outputs`` are the tensors it defines."""

    name: str
    outputs: list[Tensor]

    def input_tensors(self) -> list[Tensor]:
        """The tensors this operation reads."""
        raise NotImplementedError

    def output(self, i: int = 0) -> Tensor:
        return self.outputs[i]


class PlaceholderOp(Operation):
    """An input supplied by the caller."""

    def __init__(self, name: str, buffer: Buffer):
        self.name = name
        self.outputs = [Tensor(self, buffer)]

    def input_tensors(self) -> list[Tensor]:
        return []


class ComputeOp(Operation):
    """``out[axis] = body`` for every point of ``axis``; ``body`` may be a Reduce."""

    def __init__(self, name: str, axis: tuple[IterVar, ...], body: PrimExpr, buffer: Buffer,
                 inputs: list[Tensor], tag: str = "", attrs: dict[str, Any] | None = None):
        self.name = name
        self.axis = axis
        self.body = body
        self.reduce_axis: tuple[IterVar, ...] = body.axis if isinstance(body, Reduce) else ()
        self.tag = tag
        self.attrs = dict(attrs or {})
        self._inputs = inputs
        self.outputs = [Tensor(self, buffer)]

    def input_tensors(self) -> list[Tensor]:
        return list(self._inputs)


class ScanOp(Operation):
    """A recurrence over the first axis: ``init`` fills the first steps, then ``update``
    (a compute reading ``state`` at earlier steps) fills the rest in order."""

    def __init__(self, name: str, init: Tensor, update: Tensor, state: Tensor, buffer: Buffer,
                 inputs: list[Tensor]):
        self.name = name
        self.init = init
        self.update = update
        self.state = state
        self._inputs = inputs
        self.outputs = [Tensor(self, buffer)]

    def input_tensors(self) -> list[Tensor]:
        return list(self._inputs)


class ExternOp(Operation):
    """An opaque stage whose TIR body is produced by a callback (e.g. a packed call)."""

    def __init__(self, name: str, inputs: list[Tensor], out_buffers: list[Buffer], body: Stmt):
        self.name = name
        self._inputs = inputs
        self.body = body
        self.outputs = [Tensor(self, b, i) for i, b in enumerate(out_buffers)]

    def input_tensors(self) -> list[Tensor]:
        return list(self._inputs)


def _shape(shape: Any) -> tuple[PrimExpr, ...]:
    dims = shape if isinstance(shape, (tuple, list)) else (shape,)
    out = tuple(convert(s) for s in dims)
    for s in out:
        if not dt.is_integer(s.dtype):
            raise TensorError(f"shape entries must be integers, got {s}")
    return out


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor."""
    return _register(PlaceholderOp(name, decl_buffer(_shape(shape), dtype, name)).output())


def _tensors_read(expr: Any) -> list[Tensor]:
    seen: dict[Buffer, None] = {}
    for n in collect(expr, lambda n: isinstance(n, (BufferLoad, BufferHandle))):
        seen.setdefault(n.buffer, None)  # type: ignore[attr-defined]
    out = []
    for b in seen:
        t = _BUFFER_TENSOR.get(id(b))
        if t is None:
            raise TensorError(f"{b.name} is read but is not a tensor of this graph")
        out.append(t)
    return out


# Each buffer belongs to exactly one tensor; this maps loads back to tensors when a graph
# is built. Keyed by id: a live tensor keeps its buffer (and so the id) alive.
_BUFFER_TENSOR: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()


def _register(t: Tensor) -> Tensor:
    _BUFFER_TENSOR[id(t.buffer)] = t
    return t


def compute(shape: Any, fcompute: Callable[..., ExprLike], name: str = "compute", tag: str = "",
            attrs: dict[str, Any] | None = None) -> Tensor:
    """A tensor whose element at index ``(i, j, ...)`` is ``fcompute(i, j, ...)``.

    Axis variables are named after ``fcompute``'s parameters. The body may be a reduction
    (``te.sum(..., axis=k)``) at its top level only.
    """
    shp = _shape(shape)
    params = list(inspect.signature(fcompute).parameters.values())
    if params and params[0].kind == inspect.Parameter.VAR_POSITIONAL:
        names = [f"i{k}" for k in range(len(shp))]
    else:
        names = [p.name for p in params]
    if len(names) != len(shp):
        raise TensorError(f"compute {name!r}: fcompute takes {len(names)} indices but the shape "
                          f"has {len(shp)} dimensions")
    axis = tuple(IterVar(Var(n), convert(0), s, IterKind.SPATIAL) for n, s in zip(names, shp))
    body = convert(fcompute(*(iv.var for iv in axis)))
    nested = collect(body.source if isinstance(body, Reduce) else body,
                     lambda n: isinstance(n, Reduce))
    if nested:
        raise TensorError(f"compute {name!r}: a reduction must be the whole body, not nested "
                          f"in another expression; split it into two computes")
    buf = decl_buffer(shp, body.dtype, name)
    op = ComputeOp(name, axis, body, buf, _tensors_read(body), tag, attrs)
    return _register(op.output())


def scan(init: Tensor, update: Tensor, state_placeholder: Tensor, inputs: Sequence[Tensor] = (),
         name: str = "scan") -> Tensor:
    """A recurrence along axis 0.

    ``state_placeholder`` stands for the result; ``init`` (shape ``(t0, ...)``) gives its
    first ``t0`` steps and ``update`` (a compute of the full result shape that may read
    ``state_placeholder`` at earlier steps) gives each later step.
    """
    if not isinstance(update.op, ComputeOp):
        raise TensorError("scan: update must be a te.compute")
    if len(update.shape) != len(state_placeholder.shape) or \
            len(init.shape) != len(state_placeholder.shape):
        raise TensorError("scan: init, update and state must have the same number of dimensions")
    if update.dtype != state_placeholder.dtype or init.dtype != state_placeholder.dtype:
        raise TensorError("scan: init, update and state must have the same dtype")
    buf = decl_buffer(state_placeholder.shape, state_placeholder.dtype, name)
    reads = [t for t in update.op.input_tensors() if t is not state_placeholder]
    deps = [init] + [t for t in reads if t is not init]
    deps += [t for t in inputs if t not in deps]
    op = ScanOp(name, init, update, state_placeholder, buf, deps)
    return _register(op.output())


def extern(shape: Any, inputs: Sequence[Tensor],
           fcompute: Callable[[list[Buffer], list[Buffer]], Stmt], name: str = "extern",
           dtype: str | Sequence[str] = "float32") -> Tensor | list[Tensor]:
    """An opaque stage: ``fcompute(input_buffers, output_buffers)`` returns its TIR body,
    typically ``tir.call_packed("my.func", *ins, *outs)``.

    ``shape`` is one shape, or a list of shapes for several outputs (then a list of
    tensors is returned).
    """
    multi = isinstance(shape, list) and shape and isinstance(shape[0], (tuple, list))
    shapes = shape if multi else [shape]
    dtypes = [dtype] * len(shapes) if isinstance(dtype, str) else list(dtype)
    outs = [decl_buffer(_shape(s), d, name if len(shapes) == 1 else f"{name}_{k}")
            for k, (s, d) in enumerate(zip(shapes, dtypes))]
    body = fcompute([t.buffer for t in inputs], outs)
    if not isinstance(body, Stmt):
        raise TensorError(f"extern {name!r}: fcompute must return a TIR statement, got "
                          f"{type(body).__name__}")
    op = ExternOp(name, list(inputs), outs, body)
    tensors = [_register(t) for t in op.outputs]
    return tensors if multi else tensors[0]
