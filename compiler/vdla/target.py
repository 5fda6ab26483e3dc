"""The ``vdla`` compilation target: on-chip memory scopes derived from a hardware config.

Each SRAM buffer of the accelerator is a TIR memory *scope*.  A buffer allocated in a
scope holds whole tiles (the SRAM elements of that buffer, e.g. BATCH x BLOCK_IN int8
for ``vdla.inp``); its capacity is the buffer depth of the config.  Everything here is
derived from :class:`~vdla_hw.config.HwConfig`, so a changed config changes the scopes,
the intrinsics (``intrin.py``) and the generated code together.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Mapping

from vdla_hw.config import HwConfig, load_config
from vdla_hw.isa import MemType
from vdla_hw.errors import UnsupportedError


SCOPE_INP = "vdla.inp"
SCOPE_WGT = "vdla.wgt"
SCOPE_ACC = "vdla.acc"
SCOPE_UOP = "vdla.uop"
SCOPES = (SCOPE_INP, SCOPE_WGT, SCOPE_ACC, SCOPE_UOP)


class CapacityError(UnsupportedError):
    """A schedule needs more of an on-chip buffer than the config provides."""



@dataclass(frozen=True)
class MemScope:
    """One on-chip buffer: ``depth`` elements (tiles) of ``tile`` values of ``dtype``."""

    name: str
    mem_type: MemType
    depth: int
    elem_bytes: int
    tile: tuple[int, ...]
    dtype: str

    @property
    def tile_elems(self) -> int:
        n = 1
        for d in self.tile:
            n *= d
        return n

    @property
    def field(self) -> str:
        """The config field that sizes this buffer (``log_<buffer>_buff_size``)."""
        return f"log_{self.name.split('.', 1)[1]}_buff_size"

    def log_size_for(self, tiles: int) -> int:
        """The smallest ``log2`` byte size of this buffer that holds ``tiles`` elements."""
        return max(1, tiles * self.elem_bytes - 1).bit_length()

    def overflow(self, tiles: int, what: str) -> str | None:
        """Why ``tiles`` elements do not fit this buffer (naming the overflow), or None when they do."""
        if tiles <= self.depth:
            return None
        over = tiles - self.depth
        return (f"{what} needs {tiles} {self.name} tiles but the buffer holds {self.depth} "
                f"({self.depth * self.elem_bytes} B): {over} tiles ({over * self.elem_bytes} B) too many")

    def check_fits(self, tiles: int, what: str) -> None:
        """Raise :class:`CapacityError` naming this buffer, the overflow and the config field to enlarge."""
        reason = self.overflow(tiles, what)
        if reason is not None:
            raise CapacityError(f"{reason}; use smaller tiles or fewer virtual threads",
                                hint=f"or enlarge {self.field} to {self.log_size_for(tiles)} (the config has "
                                     f"{(self.depth * self.elem_bytes).bit_length() - 1})")


@dataclass(frozen=True)
class VdlaTarget:
    """The accelerator as a compilation target."""

    config: HwConfig

    @staticmethod
    def from_config(config: str | HwConfig = "default") -> "VdlaTarget":
        return VdlaTarget(load_config(config))

    @cached_property
    def scopes(self) -> Mapping[str, MemScope]:
        c = self.config
        return MappingProxyType({
            SCOPE_INP: MemScope(SCOPE_INP, MemType.INP, c.inp_buff_depth, c.inp_elem_bytes,
                                (c.batch, c.block_in), f"int{c.inp_width}"),
            SCOPE_WGT: MemScope(SCOPE_WGT, MemType.WGT, c.wgt_buff_depth, c.wgt_elem_bytes,
                                (c.block_out, c.block_in), f"int{c.wgt_width}"),
            SCOPE_ACC: MemScope(SCOPE_ACC, MemType.ACC, c.acc_buff_depth, c.acc_elem_bytes,
                                (c.batch, c.block_out), f"int{c.acc_width}"),
            SCOPE_UOP: MemScope(SCOPE_UOP, MemType.UOP, c.uop_buff_depth, c.uop_elem_bytes, (1,), "uint32"),
        })

    def scope(self, name: str) -> MemScope:
        try:
            return self.scopes[name]
        except KeyError:
            raise ValueError(f"{name!r} is not a VDLA memory scope; scopes: {', '.join(SCOPES)}") from None

    @property
    def out_dtype(self) -> str:
        return f"int{self.config.out_width}"
