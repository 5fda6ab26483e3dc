"""TIR dtypes as LLVM types, and the errors of the LLVM code generator."""
from __future__ import annotations

import llvmlite.ir as ir

from ...tir import dtype as dt


class CodegenError(ValueError):
    """The program cannot be translated to LLVM IR (unlowered blocks, symbolic shapes,
    an operation the CPU backend does not implement)."""


I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

_FLOATS = {"float16": ir.HalfType(), "float32": ir.FloatType(), "float64": ir.DoubleType()}


def scalar_type(dtype: str) -> ir.Type:
    """The register type of one element (bool is ``i1``)."""
    elem = dt.element(dtype)
    if elem == "handle":
        return PTR
    if elem in _FLOATS:
        return _FLOATS[elem]
    return ir.IntType(dt.bits(elem))


def value_type(dtype: str) -> ir.Type:
    """The register type of a (possibly vector) value."""
    n = dt.lanes(dtype)
    t = scalar_type(dtype)
    return t if n == 1 else ir.VectorType(t, n)


def memory_type(dtype: str) -> ir.Type:
    """The in-memory type of one element: bool is a byte, as in NumPy."""
    return I8 if dt.is_bool(dtype) else scalar_type(dtype)


def elem_bytes(dtype: str) -> int:
    return 1 if dt.is_bool(dtype) else max(1, dt.bits(dtype) // 8)


def type_suffix(dtype: str) -> str:
    """The overload suffix of an LLVM intrinsic: ``f32``, ``v16f32``, ``i64``..."""
    elem = dt.element(dtype)
    base = {"float16": "f16", "float32": "f32", "float64": "f64"}.get(elem) \
        or f"i{dt.bits(elem)}"
    n = dt.lanes(dtype)
    return base if n == 1 else f"v{n}{base}"


def opaque_alloca(b: ir.IRBuilder, ty: ir.Type, name: str = "", align: int | None = None
                  ) -> ir.Value:
    """An ``alloca`` whose result is an opaque ``ptr``: LLVM 22 parses only opaque
    pointers, and llvmlite would otherwise print a typed pointer for it."""
    slot = b.alloca(ty, name=name)
    slot.type = PTR
    slot.align = align
    return slot
