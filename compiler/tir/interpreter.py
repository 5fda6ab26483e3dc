"""Reference interpreter: runs any PrimFunc (blocks or plain loops, N-D or flat buffers,
scalar or vector code) on NumPy arrays.

The function is translated to Python source once and executed, which is ~10x faster
than walking the tree per element and keeps the semantics easy to read:

* every buffer access is bounds-checked against its storage (a wrong index raises
  ``InterpreterError`` instead of wrapping around as NumPy negative indices would);
* new allocations are filled with NaN / a sentinel so reads of unwritten data show up;
* ``Select`` evaluates both values, ``if_then_else`` only the chosen one, as specified;
* float values keep their element type (float32 loads give NumPy float32 scalars);
  integer casts wrap to the target width; int32/int64 arithmetic does not wrap;
* parallel, vectorized, unrolled and virtual-thread loops run serially.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from . import dtype as dt
from .ir import (EQ, GE, GT, LE, LT, NE, Add, Allocate, And, AttrStmt, Block, BlockRealize,
                 Broadcast, Buffer, BufferHandle, BufferLoad, BufferStore, Call, Cast, Div,
                 Evaluate, FloatImm, FloorDiv, FloorMod, For, IfThenElse, IntImm, IterKind,
                 LetStmt, Max, Min, Mul, Not, Or, PrimExpr, PrimFunc, Ramp, Select, SeqStmt,
                 Stmt, StringImm, Sub, Var)
from .packed import get_packed


class InterpreterError(RuntimeError):
    """The program did something invalid at run time (e.g. an out-of-bounds access)."""


_INFIX = {Add: "+", Sub: "-", Mul: "*", FloorDiv: "//", FloorMod: "%", EQ: "==", NE: "!=",
          LT: "<", LE: "<=", GT: ">", GE: ">="}
# Python caps statically nested loops at 20; deeper nests continue in a nested function.
_MAX_NEST = 16


def _ck(i: Any, n: int, name: str) -> int:
    if 0 <= i < n:
        return int(i)
    raise InterpreterError(f"index {i} out of bounds of {name} (size {n})")


def _ckv(i: np.ndarray, n: int, name: str) -> np.ndarray:
    if i.size and (i.min() < 0 or i.max() >= n):
        raise InterpreterError(f"vector index {i.tolist()} out of bounds of {name} (size {n})")
    return i


def _wrap(x: Any, bits: int, signed: bool) -> int:
    v = int(x) & ((1 << bits) - 1)
    return v - (1 << bits) if signed and v >= 1 << (bits - 1) else v


def _tdiv(a: Any, b: Any) -> Any:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b))
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _sel(c: Any, t: Any, f: Any) -> Any:
    return t if c else f


def _alloc(size: int, dtype: str) -> np.ndarray:
    np_dtype = dt.to_numpy(dtype)
    if np_dtype.kind == "f":
        return np.full(size, np.nan, np_dtype)
    if np_dtype.kind == "b":
        return np.zeros(size, np_dtype)
    return np.full(size, np.iinfo(np_dtype).max // 3 + 7, np_dtype)


def _view(storage: np.ndarray, offset: int, shape: tuple[int, ...],
          strides: tuple[int, ...]) -> np.ndarray:
    item = storage.itemsize
    if shape and offset + sum((s - 1) * st for s, st in zip(shape, strides)) >= storage.size:
        raise InterpreterError("a buffer passed to a packed call exceeds its storage")
    return np.lib.stride_tricks.as_strided(storage[offset:], shape,
                                           tuple(st * item for st in strides))


def _erf(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return np.vectorize(math.erf, otypes=[x.dtype])(x)
    return type(x)(math.erf(x)) if isinstance(x, np.floating) else math.erf(x)


def _sigmoid(x: Any) -> Any:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


_MATH: dict[str, Callable[..., Any]] = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "tanh": np.tanh, "sigmoid": _sigmoid, "erf": _erf, "fabs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "round": np.rint, "pow": np.power,
}


class _Gen:
    """Translate one PrimFunc to the source of a Python function."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[Var, str] = {}
        self.env: dict[str, Any] = {
            "np": np, "_ck": _ck, "_ckv": _ckv, "_wrap": _wrap, "_tdiv": _tdiv, "_sel": _sel,
            "_alloc": _alloc, "_view": _view, "_packed": get_packed,
        }
        self.consts: dict[Any, str] = {}
        self.nfun = 0

    def ident(self, v: Var) -> str:
        if v not in self.names:
            safe = "".join(c if c.isalnum() else "_" for c in v.name)
            self.names[v] = f"v_{safe}_{len(self.names)}"
        return self.names[v]

    def const(self, value: Any) -> str:
        key = (type(value), repr(value))
        if key not in self.consts:
            self.consts[key] = f"_c{len(self.consts)}"
            self.env[self.consts[key]] = value
        return self.consts[key]

    # -- expressions
    def expr(self, e: PrimExpr) -> str:
        vec = dt.lanes(e.dtype) > 1
        if isinstance(e, Var):
            return self.ident(e)
        if isinstance(e, IntImm):
            return repr(bool(e.value)) if dt.is_bool(e.dtype) else repr(e.value)
        if isinstance(e, FloatImm):
            return self.const(dt.to_numpy(e.dtype).type(e.value))
        if isinstance(e, StringImm):
            return repr(e.value)
        if isinstance(e, Div):
            a, b = self.expr(e.a), self.expr(e.b)
            return f"({a} / {b})" if dt.is_float(e.dtype) else f"_tdiv({a}, {b})"
        if type(e) in _INFIX:
            text = f"({self.expr(e.a)} {_INFIX[type(e)]} {self.expr(e.b)})"
            return self.wrap_int(text, e.dtype) if not vec else text
        if isinstance(e, (Min, Max)):
            fn = ("np.minimum" if vec else "min") if isinstance(e, Min) else \
                ("np.maximum" if vec else "max")
            return f"{fn}({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, (And, Or)):
            op = ("&" if vec else "and") if isinstance(e, And) else ("|" if vec else "or")
            return f"({self.expr(e.a)} {op} {self.expr(e.b)})"
        if isinstance(e, Not):
            return f"(~{self.expr(e.a)})" if vec else f"(not {self.expr(e.a)})"
        if isinstance(e, Select):
            fn = "np.where" if vec else "_sel"
            return (f"{fn}({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})")
        if isinstance(e, Cast):
            return self.cast(e)
        if isinstance(e, Call):
            return self.call(e, vec)
        if isinstance(e, Ramp):
            return (f"({self.expr(e.base)} + {self.expr(e.stride)} * "
                    f"{self.const(np.arange(e.lanes))})")
        if isinstance(e, Broadcast):
            np_t = self.const(dt.to_numpy(e.value.dtype))
            return f"np.full({e.lanes}, {self.expr(e.value)}, {np_t})"
        if isinstance(e, BufferLoad):
            load = f"{self.access(e.buffer, e.indices)}"
            if not vec and dt.is_integer(e.dtype):
                return f"int({load})"
            if not vec and dt.is_bool(e.dtype):
                return f"bool({load})"
            return load
        if isinstance(e, BufferHandle):
            b = e.buffer
            shape = "(" + "".join(f"{self.expr(s)}, " for s in b.shape) + ")"
            strides = "(" + "".join(f"{self.expr(s)}, " for s in b.effective_strides()) + ")"
            return f"_view({self.storage(b)}, {self.expr(b.elem_offset)}, {shape}, {strides})"
        raise InterpreterError(f"the interpreter cannot evaluate {type(e).__name__}: {e}")

    def wrap_int(self, text: str, dtype: str) -> str:
        if dt.is_integer(dtype) and (dt.bits(dtype) < 32 or dt.is_uint(dtype)):
            return f"_wrap({text}, {dt.bits(dtype)}, {dt.is_int(dtype)})"
        return text

    def cast(self, e: Cast) -> str:
        src = self.expr(e.value)
        if dt.lanes(e.dtype) > 1:
            return f"np.asarray({src}).astype({self.const(dt.to_numpy(e.dtype))})"
        if dt.is_float(e.dtype):
            return f"{self.const(dt.to_numpy(e.dtype).type)}({src})"
        if dt.is_bool(e.dtype):
            return f"bool({src})"
        return f"_wrap({src}, {dt.bits(e.dtype)}, {dt.is_int(e.dtype)})"

    def call(self, e: Call, vec: bool) -> str:
        if e.op == "if_then_else":
            c, t, f = (self.expr(a) for a in e.args)
            lazy = dt.lanes(e.args[0].dtype) == 1
            return f"({t} if {c} else {f})" if lazy else f"np.where({c}, {t}, {f})"
        if e.op == "call_packed":
            args = ", ".join(self.expr(a) for a in e.args[1:])
            return f"_packed({self.expr(e.args[0])})({args})"
        fn = _MATH.get(e.op)
        if fn is None:
            raise InterpreterError(f"unknown intrinsic {e.op!r}")
        args = ", ".join(self.expr(a) for a in e.args)
        return f"{self.const(fn)}({args})"

    def storage(self, b: Buffer) -> str:
        return self.ident(b.data)

    def access(self, b: Buffer, indices: tuple[PrimExpr, ...]) -> str:
        idx = b.flat_index(indices)
        d = self.storage(b)
        chk = "_ckv" if dt.lanes(idx.dtype) > 1 else "_ck"
        return f"{d}[{chk}({self.expr(idx)}, {d}.shape[0], {b.name!r})]"

    # -- statements
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def stmt(self, s: Stmt | None, depth: int, nest: int) -> None:
        if s is None:
            return
        if isinstance(s, SeqStmt):
            if not s.stmts:
                self.emit(depth, "pass")
            for c in s.stmts:
                self.stmt(c, depth, nest)
        elif isinstance(s, For):
            if nest >= _MAX_NEST:
                fname = f"_nest{self.nfun}"
                self.nfun += 1
                self.emit(depth, f"def {fname}():")
                self.stmt(s, depth + 1, 0)
                self.emit(depth, f"{fname}()")
                return
            lo = self.expr(s.min)
            self.emit(depth, f"for {self.ident(s.loop_var)} in range({lo}, {lo} + "
                             f"{self.expr(s.extent)}):")
            self.stmt(s.body, depth + 1, nest + 1)
        elif isinstance(s, BufferStore):
            self.emit(depth, f"{self.access(s.buffer, s.indices)} = {self.expr(s.value)}")
        elif isinstance(s, Allocate):
            self.emit(depth, f"{self.storage(s.buffer)} = _alloc({self.expr(s.buffer.size())}, "
                             f"{s.buffer.dtype!r})")
            self.stmt(s.body, depth, nest)
        elif isinstance(s, IfThenElse):
            self.emit(depth, f"if {self.expr(s.condition)}:")
            self.stmt(s.then_case, depth + 1, nest)
            if s.else_case is not None:
                self.emit(depth, "else:")
                self.stmt(s.else_case, depth + 1, nest)
        elif isinstance(s, LetStmt):
            self.emit(depth, f"{self.ident(s.var)} = {self.expr(s.value)}")
            self.stmt(s.body, depth, nest)
        elif isinstance(s, Evaluate):
            self.emit(depth, self.expr(s.value))
        elif isinstance(s, AttrStmt):
            self.stmt(s.body, depth, nest)
        elif isinstance(s, BlockRealize):
            self.block(s, depth, nest)
        else:
            raise InterpreterError(f"the interpreter cannot run {type(s).__name__}")

    def block(self, r: BlockRealize, depth: int, nest: int) -> None:
        b: Block = r.block
        for iv, val in zip(b.iter_vars, r.iter_values):
            self.emit(depth, f"{self.ident(iv.var)} = {self.expr(val)}")
        if not (isinstance(r.predicate, IntImm) and r.predicate.value):
            self.emit(depth, f"if {self.expr(r.predicate)}:")
            depth += 1
        if b.init is not None:
            conds = [f"{self.ident(iv.var)} == {self.expr(iv.min)}" for iv in b.iter_vars
                     if iv.kind == IterKind.REDUCE]
            self.emit(depth, f"if {' and '.join(conds) or 'True'}:")
            self.stmt(b.init, depth + 1, nest)
        self.stmt(b.body, depth, nest)


def to_python(func: PrimFunc) -> tuple[str, Callable[..., None]]:
    """The generated Python source and the compiled function (taking flat arrays)."""
    g = _Gen()
    args = ", ".join(g.storage(p) for p in func.params)
    g.emit(0, f"def _kernel({args}):")
    g.stmt(func.body, 1, 0)
    g.emit(1, "return None")
    src = "\n".join(g.lines)
    scope = dict(g.env)
    exec(compile(src, f"<tir:{func.name}>", "exec"), scope)  # noqa: S102 - our own code
    return src, scope["_kernel"]


def run(func: PrimFunc, *arrays: np.ndarray) -> None:
    """Run ``func`` on NumPy arrays (one per parameter, in order); outputs are written in
    place. Arrays must be C-contiguous with the parameters' shapes and dtypes."""
    if len(arrays) != len(func.params):
        raise ValueError(f"{func.name} takes {len(func.params)} arrays, got {len(arrays)}")
    flat = []
    for p, a in zip(func.params, arrays):
        want = tuple(int(s.value) for s in p.shape if isinstance(s, IntImm))
        if len(want) != len(p.shape) or tuple(a.shape) != want:
            raise ValueError(f"argument {p.name} has shape {tuple(a.shape)}, expected "
                             f"{tuple(str(s) for s in p.shape)}")
        if a.dtype != dt.to_numpy(p.dtype):
            raise ValueError(f"argument {p.name} has dtype {a.dtype}, expected {p.dtype}")
        if not a.flags.c_contiguous:
            raise ValueError(f"argument {p.name} must be C-contiguous (np.ascontiguousarray)")
        flat.append(a.reshape(-1))
    _, kernel = to_python(func)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        kernel(*flat)
