"""Data types are plain strings: ``"float32"``, ``"int8"``, ``"bool"``, ``"handle"``.

A vector type appends the lane count: ``"float32x8"`` is eight float32 lanes.
Strings keep IR nodes hashable and printable without a type registry.
"""
from __future__ import annotations

import re

import numpy as np

_VECTOR = re.compile(r"^([a-z]+[0-9]*)x([0-9]+)$")
_SCALARS = {
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "handle",
}


def split(dtype: str) -> tuple[str, int]:
    """Return ``(element type, lanes)``; raises ``ValueError`` for an unknown type."""
    m = _VECTOR.match(dtype)
    elem, n = (m.group(1), int(m.group(2))) if m else (dtype, 1)
    if elem not in _SCALARS or n < 1:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(_SCALARS)} "
                         f"optionally followed by x<lanes>")
    return elem, n


def element(dtype: str) -> str:
    """Element type of a (possibly vector) dtype."""
    return split(dtype)[0]


def lanes(dtype: str) -> int:
    """Number of lanes (1 for a scalar)."""
    return split(dtype)[1]


def with_lanes(dtype: str, n: int) -> str:
    """The dtype with the element type of ``dtype`` and ``n`` lanes."""
    elem = element(dtype)
    return elem if n == 1 else f"{elem}x{n}"


def is_float(dtype: str) -> bool:
    return element(dtype).startswith("float")


def is_int(dtype: str) -> bool:
    """Signed integer."""
    return element(dtype).startswith("int")


def is_uint(dtype: str) -> bool:
    return element(dtype).startswith("uint")


def is_integer(dtype: str) -> bool:
    """Signed or unsigned integer (not bool)."""
    return is_int(dtype) or is_uint(dtype)


def is_bool(dtype: str) -> bool:
    return element(dtype) == "bool"


def bits(dtype: str) -> int:
    """Bit width of one element."""
    elem = element(dtype)
    if elem == "bool":
        return 1
    if elem == "handle":
        return 64
    return int(re.sub(r"[a-z]+", "", elem))


def to_numpy(dtype: str) -> np.dtype:
    """NumPy dtype of one element."""
    elem = element(dtype)
    if elem == "handle":
        raise ValueError("a handle has no NumPy dtype")
    return np.dtype(elem)


def from_numpy(dtype: np.dtype) -> str:
    """The dtype string of a NumPy dtype."""
    name = np.dtype(dtype).name
    split(name)
    return name
