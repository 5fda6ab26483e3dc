"""The one mapping from graph names (any ONNX string) to C identifiers for generated code.

ONNX allows any string as a value or node name: the TorchScript exporter writes
``/layer1/layer1.0/relu/Relu_output_0``, other tools use ``input:0``, spaces, non-ASCII
letters or names that start with a digit.  Generated code needs linkable, ASCII C
identifiers, and two different graph names must never share one.  ``c_identifier``
spells a single name; :class:`SymbolTable` hands out unique symbols for a set of names
and remembers which graph name each one stands for, so the module, profiles and error
messages keep showing the original names.
"""

from __future__ import annotations

import hashlib
import re

#: Longest identifier we emit; longer names keep a readable prefix plus a hash of the whole name
#: (some linkers and debuggers handle very long symbols badly, and the exporter's names grow with depth).
MAX_LENGTH = 96

_NOT_IDENT = re.compile(r"[^A-Za-z0-9_]+")


def _digest(name: str) -> str:
    return hashlib.sha1(name.encode("utf-8")).hexdigest()[:10]


def c_identifier(name: str) -> str:
    """``name`` spelled as an ASCII C identifier: runs of other characters become ``_``.

    Deterministic but not injective (``a.b`` and ``a/b`` both give ``a_b``); use a
    :class:`SymbolTable` where distinct names need distinct symbols.
    """
    out = _NOT_IDENT.sub("_", name)
    if not out or out[0].isdigit():
        out = f"v_{out}"
    if len(out) > MAX_LENGTH:
        out = f"{out[:MAX_LENGTH - 11]}_{_digest(name)}"
    return out


class SymbolTable:
    """Unique C identifiers for graph names; the same name always gets the same symbol."""

    def __init__(self, reserved: tuple[str, ...] = ()) -> None:
        self._symbol: dict[str, str] = {}
        self._name: dict[str, str] = {}
        self._taken: set[str] = set(reserved)

    def symbol(self, name: str) -> str:
        """The symbol of ``name``, created on first use (collisions after spelling get a suffix)."""
        sym = self._symbol.get(name)
        if sym is not None:
            return sym
        base = c_identifier(name)
        sym, k = base, 1
        while sym in self._taken:
            sym = f"{base}_{k}"
            k += 1
        self._symbol[name], self._name[sym] = sym, name
        self._taken.add(sym)
        return sym

    def name_of(self, symbol: str) -> str:
        """The graph name ``symbol`` stands for (the symbol itself when it was never handed out)."""
        return self._name.get(symbol, symbol)

    def items(self) -> dict[str, str]:
        """symbol -> original graph name, for every symbol handed out."""
        return dict(self._name)


__all__ = ["MAX_LENGTH", "SymbolTable", "c_identifier"]
