"""Data layouts as strings, TVM style: ``"NCHW"``, ``"NCHW1n16c"``, ``"OIHW16o16i"``, ``"NC1n16c"``.

Upper-case letters are the primal axes in memory order; a number followed by a lower-case
letter splits that primal axis into an outer part (where the upper-case letter stands) and
an inner block of that size (where the lower-case letter stands).  ``NCHW1n16c`` is the
VDLA activation layout: ``(N/1, C/16, H, W, 1, 16)``, so the innermost ``1 x 16`` block is
one input tile (BATCH x BLOCK_IN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from vdla.compiler.graph.errors import GraphError

_TOKEN = re.compile(r"(\d*)([A-Za-z])")


@dataclass(frozen=True)
class Layout:
    """A parsed layout: its axes in memory order and the block size of each split axis."""

    name: str
    axes: tuple[str, ...]
    """Axis letters in memory order (upper = primal/outer, lower = inner block)."""
    factors: tuple[tuple[str, int], ...]
    """(primal letter, block size) for each split axis."""

    @property
    def primal(self) -> str:
        """The unsplit layout with the primal axes in memory order, e.g. ``NCHW``."""
        return "".join(a for a in self.axes if a.isupper())

    @property
    def is_primal(self) -> bool:
        return not self.factors

    def factor(self, letter: str) -> int:
        return dict(self.factors).get(letter.upper(), 1)

    def shape(self, primal_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The packed shape of a tensor whose primal (unsplit) shape is ``primal_shape``."""
        dims = self._primal_dims(primal_shape)
        out = []
        for a in self.axes:
            f = self.factor(a)
            out.append(dims[a] // f if a.isupper() else f)
        return tuple(out)

    def primal_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The unsplit shape of a tensor stored in this layout."""
        if len(shape) != len(self.axes):
            raise GraphError(f"layout {self.name} has {len(self.axes)} axes but the shape {shape} has {len(shape)}")
        return tuple(shape[self.axes.index(a)] * self.factor(a) for a in self.primal)

    def _primal_dims(self, primal_shape: tuple[int, ...]) -> dict[str, int]:
        if len(primal_shape) != len(self.primal):
            raise GraphError(f"layout {self.name} needs a rank-{len(self.primal)} tensor, got shape {primal_shape}")
        dims = dict(zip(self.primal, primal_shape))
        for letter, f in self.factors:
            if dims[letter] % f:
                raise GraphError(
                    f"axis {letter}={dims[letter]} is not a multiple of the block size {f} of layout {self.name}; "
                    "pad the tensor or keep it in the unpacked layout"
                )
        return dims


@lru_cache(maxsize=None)
def parse_layout(name: str) -> Layout:
    """Parse a layout string; raises GraphError for a malformed one."""
    tokens = _TOKEN.findall(name)
    if "".join(n + a for n, a in tokens) != name or not tokens:
        raise GraphError(f"malformed layout {name!r}; expected e.g. 'NCHW' or 'NCHW1n16c'")
    axes, factors = [], []
    for num, letter in tokens:
        if letter.isupper():
            if num:
                raise GraphError(f"layout {name!r}: a block size goes before a lower-case letter, not {num}{letter}")
        else:
            if not num or int(num) < 1:
                raise GraphError(f"layout {name!r}: the inner axis {letter!r} needs a positive block size")
            factors.append((letter.upper(), int(num)))
        axes.append(letter)
    primal = [a for a in axes if a.isupper()]
    inner = [a for a in axes if a.islower()]
    if len(set(primal)) != len(primal) or len(set(inner)) != len(inner):
        raise GraphError(f"layout {name!r} repeats an axis")
    if any(a.upper() not in primal for a in inner):
        raise GraphError(f"layout {name!r} splits an axis it does not have")
    return Layout(name, tuple(axes), tuple(factors))


def pack(array: np.ndarray, layout: str) -> np.ndarray:
    """Rearrange an array from the primal layout of ``layout`` into ``layout``."""
    lay = parse_layout(layout)
    dims = lay._primal_dims(array.shape)
    split_shape, split_axes = [], []
    for a in lay.primal:
        f = lay.factor(a)
        if f > 1 or a.lower() in lay.axes:
            split_shape += [dims[a] // f, f]
            split_axes += [a, a.lower()]
        else:
            split_shape.append(dims[a])
            split_axes.append(a)
    order = [split_axes.index(a) for a in lay.axes]
    return np.ascontiguousarray(array.reshape(split_shape).transpose(order))


def unpack(array: np.ndarray, layout: str) -> np.ndarray:
    """Rearrange an array stored in ``layout`` back into its primal layout."""
    lay = parse_layout(layout)
    primal_shape = lay.primal_shape(array.shape)
    order = []
    for a in lay.primal:
        order.append(lay.axes.index(a))
        if a.lower() in lay.axes:
            order.append(lay.axes.index(a.lower()))
    return np.ascontiguousarray(array.transpose(order).reshape(primal_shape))


def transform(array: np.ndarray, src: str, dst: str) -> np.ndarray:
    """Convert between two layouts of the same primal layout."""
    if parse_layout(src).primal != parse_layout(dst).primal:
        raise GraphError(f"cannot transform layout {src} into {dst}: their primal axes differ")
    return pack(unpack(array, src), dst)


def vdla_data_layout(batch: int, block: int) -> str:
    """The packed activation layout for a VDLA config: ``NCHW{batch}n{block}c``."""
    return f"NCHW{batch}n{block}c"


def vdla_kernel_layout(block_out: int, block_in: int) -> str:
    """The packed conv-weight layout: ``OIHW{block_out}o{block_in}i`` (one weight tile innermost)."""
    return f"OIHW{block_out}o{block_in}i"
