"""Placing a program's DRAM image at a physical address.

A program's image is laid out from address 0: LOAD/STORE ``dram_base`` fields and INSN_ADDR
count from the image's first byte. On a board the image lives in a contiguous buffer at some
physical address ``base``; the accelerator's AXI master sees physical addresses, so every
``dram_base`` is moved by ``base`` (in elements of its memory type) before the image is copied
to the buffer. ``base`` is a multiple of :func:`alignment`, so every element and every 4 KiB
burst boundary falls where it fell at address 0: the device moves the same bursts.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from vdla.runtime.program import Program
from vdla_hw.config import HwConfig
from vdla_hw.errors import DeviceFaultError
from vdla_hw.isa import INSN_BYTES, MemInsn, MemType, Opcode

AXI_BOUNDARY = 4096
"""AXI bursts do not cross 4 KiB boundaries: the DMA engines split there."""
_DRAM_BASE_LIMIT = 1 << 32


def element_bytes(cfg: HwConfig, mem_type: MemType) -> int:
    """Bytes of one DRAM element of ``mem_type`` (what ``dram_base`` counts)."""
    return getattr(cfg, f"{mem_type.name.lower()}_elem_bytes")


def alignment(cfg: HwConfig) -> int:
    """The physical alignment of an image: every element size and the AXI 4 KiB boundary divide it."""
    return math.lcm(AXI_BOUNDARY, cfg.bus_bytes, *(element_bytes(cfg, t) for t in MemType))


def relocate_instructions(program: Program, base: int) -> np.ndarray:
    """The program's instruction block (bytes) with every LOAD/STORE moved to physical ``base``;
    the other instructions keep their bytes."""
    cfg = program.config
    if base % alignment(cfg):
        raise ValueError(f"physical base {base:#x} is not a multiple of {alignment(cfg)}")
    block = np.array(program.dram[program.insn_addr: program.insn_addr + program.insn_count * INSN_BYTES])
    moved: dict[MemInsn, np.ndarray] = {}
    for k, insn in enumerate(program.instructions):
        if not isinstance(insn, MemInsn):
            continue
        word = moved.get(insn)
        if word is None:
            dram_base = insn.dram_base + base // element_bytes(cfg, insn.mem_type)
            if dram_base >= _DRAM_BASE_LIMIT:
                raise DeviceFaultError(
                    f"the buffer at physical address {base:#x} is beyond what the 32-bit dram_base field of "
                    f"{insn.mem_type.name} accesses reaches",
                    hint="free memory on the board (the contiguous-memory pool should sit in the low 4 GiB)")
            encoded = cfg.isa.encode(dataclasses.replace(insn, dram_base=dram_base)).to_bytes(INSN_BYTES, "little")
            word = moved[insn] = np.frombuffer(encoded, dtype=np.uint8)
        block[k * INSN_BYTES: (k + 1) * INSN_BYTES] = word
    return block


def place_image(program: Program, base: int) -> np.ndarray:
    """The DRAM image to copy to physical ``base``: the program's image with relocated instructions."""
    image = np.array(program.dram, dtype=np.uint8)
    start = program.insn_addr
    image[start: start + program.insn_count * INSN_BYTES] = relocate_instructions(program, base)
    return image


def restore_image(program: Program, placed: np.ndarray, final: np.ndarray) -> np.ndarray:
    """The final image as the program sees it: instruction bytes the device did not overwrite are
    given back their unrelocated values, so the result compares with the other backends'."""
    out = np.array(final, dtype=np.uint8)
    block = slice(program.insn_addr, program.insn_addr + program.insn_count * INSN_BYTES)
    untouched = out[block] == placed[block]
    out[block] = np.where(untouched, program.dram[block], out[block])
    return out


def store_ranges(program: Program, word: int = 4) -> list[tuple[int, int]]:
    """The byte ranges ``[start, end)`` of the image the program's STOREs may write, merged and widened
    to ``word``-aligned bounds (program addresses, before relocation).

    The accelerator writes DRAM only through STORE (its store unit is the AXI master's only writer),
    so a driver whose link is slow reads back exactly these bytes; the rest of the image is what it
    wrote before the run.
    """
    cfg = program.config
    spans = []
    for insn in program.instructions:
        if isinstance(insn, MemInsn) and insn.opcode is Opcode.STORE and insn.y_size and insn.x_size:
            eb = element_bytes(cfg, insn.mem_type)
            start = insn.dram_base * eb
            end = (insn.dram_base + (insn.y_size - 1) * insn.x_stride + insn.x_size) * eb
            spans.append((start // word * word, -(-end // word) * word))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
