"""Registry of external ("packed") functions called by ``call_packed``.

The interpreter calls the registered Python implementation with NumPy views of the
buffers (and Python scalars for other arguments); a code generator maps the same name to
native code.
"""
from __future__ import annotations

from typing import Any, Callable

_REGISTRY: dict[str, Callable[..., Any]] = {}


def register_packed(name: str, fn: Callable[..., Any] | None = None, override: bool = False) -> Any:
    """Register ``fn`` under ``name``; usable as ``@register_packed("my.op")``."""

    def do(f: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY and not override and _REGISTRY[name] is not f:
            raise ValueError(f"packed function {name!r} is already registered; "
                             f"pass override=True to replace it")
        _REGISTRY[name] = f
        return f

    return do(fn) if fn is not None else do


def get_packed(name: str) -> Callable[..., Any]:
    """The implementation registered as ``name``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no packed function {name!r} is registered; register a Python "
                       f"implementation with vdla.compiler.tir.register_packed({name!r})") from None
