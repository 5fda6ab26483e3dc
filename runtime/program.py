"""Program bundles and the program builder.

A :class:`Program` is everything a backend needs to run: the hardware config,
the DRAM image (data buffers, micro-op lists and the encoded instruction
stream at ``insn_addr``, exactly as fetch reads it) and the named buffers to
read results back.

File format (``Program.save``, described in ``docs/file_formats.md``): one NumPy
``.npz`` archive with two arrays, ``dram`` (uint8, the whole image) and ``meta``
(a 0-d string holding JSON: ``{"format": "vdla-program", "version": 4,
"config": {...HwConfig...}, "config_digest": str, "insn_addr": bytes,
"insn_count": n, "buffers": [{name, kind, offset, shape, dtype, nbytes,
elem_bytes}, ...], "sha256": hex}``).  ``sha256`` covers the image and the rest
of ``meta``.  Instructions are decoded from the image on load, so the file
cannot disagree with what the hardware would fetch.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

import numpy as np

from vdla_hw.config import HwConfig, from_dict
from vdla_hw.isa import (
    INSN_BYTES,
    AluInsn,
    AluOp,
    DepFlags,
    FinishInsn,
    GemmInsn,
    Insn,
    IsaError,
    MemInsn,
    MemType,
    Opcode,
    Uop,
)

from vdla.runtime.file_checks import open_zip, read_bytes, read_member, sha256_hex, wrong_kind
from vdla.runtime.memory import BufferSpec, DramImage, read_buffer
from vdla_hw.errors import BadFileError

FORMAT = "vdla-program"
VERSION = 4
"""3: the GEMM ``overwrite`` bit and the STORE bias fields (the instruction layouts moved)."""
_WHAT = "a VDLA program bundle (.vdlaprog)"
_HINT = "write bundles with Program.save or `vdla demo --save`; run a raw .bin from `vdla asm` with --uops/--dram"


def _content_digest(dram: np.ndarray, meta: dict) -> str:
    """SHA-256 of the image and of ``meta`` without its own ``sha256`` entry, canonically serialised."""
    rest = {k: v for k, v in meta.items() if k != "sha256"}
    return sha256_hex(np.ascontiguousarray(dram, np.uint8).tobytes()
                      + json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())


def _unpickle_program(config: HwConfig, distinct: tuple[Insn, ...], index: np.ndarray, dram: np.ndarray,
                      insn_addr: int, buffers: dict[str, BufferSpec]) -> "Program":
    """The inverse of :meth:`Program.__reduce__`."""
    return Program(config, tuple(distinct[i] for i in index.tolist()), dram, insn_addr, buffers)


def check_config(found: HwConfig, expected: HwConfig | None, origin: str) -> None:
    """Refuse ``origin`` (made for config ``found``) when the hardware is ``expected``, naming both."""
    if expected is not None and found.digest != expected.digest:
        raise BadFileError(f"{origin} was compiled for hardware config {found.label()}, but the hardware is "
                           f"{expected.label()}",
                           hint=f"recompile it for config {expected.name!r}")


@dataclass(frozen=True)
class Program:
    """An immutable, runnable VDLA program (see the module docstring for the file format)."""

    config: HwConfig
    instructions: tuple[Insn, ...]
    dram: np.ndarray
    insn_addr: int
    buffers: Mapping[str, BufferSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        image = np.array(self.dram, dtype=np.uint8, copy=True).reshape(-1)
        image.setflags(write=False)
        object.__setattr__(self, "dram", image)
        object.__setattr__(self, "instructions", tuple(self.instructions))
        object.__setattr__(self, "buffers", MappingProxyType(dict(self.buffers)))
        end = self.insn_addr + self.insn_count * INSN_BYTES
        if self.insn_addr % INSN_BYTES or end > image.size:
            raise ValueError(
                f"instruction block [{self.insn_addr}, {end}) must be {INSN_BYTES}-byte aligned and inside the "
                f"{image.size}-byte DRAM image"
            )

    @property
    def insn_count(self) -> int:
        return len(self.instructions)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Programs cross process boundaries (pool jobs, tuner workers) and most instructions
        # repeat (a 256x256x256 GEMM: 31,747 instructions, 1,692 distinct): pickling each
        # distinct one once makes that ~15x cheaper than pickling the tuple.
        table: dict[Insn, int] = {}
        index = np.fromiter((table.setdefault(i, len(table)) for i in self.instructions), dtype=np.int32,
                            count=len(self.instructions))
        return _unpickle_program, (self.config, tuple(table), index, self.dram, self.insn_addr, dict(self.buffers))

    def read(self, name: str, image: np.ndarray | None = None) -> np.ndarray:
        """Named buffer ``name`` from ``image`` (default: this program's initial DRAM)."""
        try:
            spec = self.buffers[name]
        except KeyError:
            raise KeyError(f"program has no buffer named {name!r}; buffers: {sorted(self.buffers)}") from None
        return read_buffer(self.config, spec, self.dram if image is None else image)

    @classmethod
    def from_image(cls, cfg: HwConfig, dram: np.ndarray, insn_addr: int, insn_count: int,
                   buffers: Mapping[str, BufferSpec] | None = None) -> "Program":
        """A program whose instructions are decoded from ``dram`` at ``insn_addr``, as fetch would."""
        end = insn_addr + insn_count * INSN_BYTES
        image = np.asarray(dram, dtype=np.uint8).reshape(-1)
        if insn_addr < 0 or end > image.size:
            raise ValueError(f"instruction block [{insn_addr}, {end}) lies outside the {image.size}-byte DRAM image")
        insns = cfg.isa.decode_program(image[insn_addr:end])
        return cls(cfg, tuple(insns), image, insn_addr, buffers or {})

    def save(self, path: str | Path) -> Path:
        """Write the program to one ``.npz`` file (any suffix; ``.vdlaprog`` by convention)."""
        meta = {
            "format": FORMAT, "version": VERSION, "config": self.config.to_dict(),
            "config_digest": self.config.digest,
            "insn_addr": self.insn_addr, "insn_count": self.insn_count,
            "buffers": [spec.to_json() for spec in self.buffers.values()],
        }
        meta["sha256"] = _content_digest(self.dram, meta)
        path = Path(path)
        with path.open("wb") as f:  # a file object keeps np.savez from appending ".npz"
            np.savez_compressed(f, dram=self.dram, meta=np.array(json.dumps(meta)))
        return path

    @classmethod
    def load(cls, path: str | Path, config: HwConfig | None = None) -> "Program":
        """Read a program written by :meth:`save`; with ``config``, refuse one compiled for another config."""
        return cls.from_bytes(read_bytes(path, _WHAT), str(path), config)

    @classmethod
    def from_bytes(cls, data: bytes, origin: str, config: HwConfig | None = None) -> "Program":
        """A program from the bytes of a bundle file; ``origin`` names it in errors (see :meth:`load`)."""
        with open_zip(origin, data, _WHAT, _HINT) as zf:
            names = set(zf.namelist())
            if not {"dram.npy", "meta.npy"} <= names:
                hint = "run a module with `vdla run`" if "graph.json" in names else _HINT
                raise wrong_kind(origin, data, _WHAT, hint)
            try:
                dram = np.load(io.BytesIO(read_member(zf, "dram.npy", origin)), allow_pickle=False)
                meta = json.loads(str(np.load(io.BytesIO(read_member(zf, "meta.npy", origin)), allow_pickle=False)))
            except (ValueError, EOFError) as exc:
                raise BadFileError(f"{origin}: damaged program bundle ({exc})", hint=_HINT) from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise BadFileError(f"{origin} is not {_WHAT} (its meta names no format {FORMAT!r})", hint=_HINT)
        if meta.get("version") != VERSION:
            older = isinstance(meta.get("version"), int) and meta["version"] < VERSION
            why = (" (its instructions use an older instruction layout: version 4 added the LOAD element stride, "
                   "version 3 the GEMM overwrite bit and the STORE bias)" if older else "")
            raise BadFileError(f"{origin} is a {FORMAT} file of version {meta.get('version')}; this vdla reads "
                               f"version {VERSION}{why}",
                               hint="recompile the program (or model) with this vdla and save it again")
        if meta.get("sha256") != _content_digest(dram, meta):
            raise BadFileError(f"{origin} fails its SHA-256 check: its content was changed or damaged after "
                               f"it was written", hint="write the bundle again")
        program_config = from_dict(meta["config"])
        check_config(program_config, config, origin)
        buffers = {b["name"]: BufferSpec.from_json(b) for b in meta["buffers"]}
        try:
            return cls.from_image(program_config, dram, meta["insn_addr"], meta["insn_count"], buffers)
        except IsaError as exc:
            raise BadFileError(f"{origin}: {exc}") from exc


def _deps(pop_prev: bool, pop_next: bool, push_prev: bool, push_next: bool) -> DepFlags:
    return DepFlags(pop_prev, pop_next, push_prev, push_next)


class ProgramBuilder:
    """Builds a :class:`Program`: allocates DRAM buffers, places micro-ops, emits instructions.

    Dependency flags are keyword arguments (``pop_prev``, ``pop_next``,
    ``push_prev``, ``push_next``) relative to the module that runs the
    instruction.  Pass an existing :class:`DramImage` (e.g. a device's memory)
    to build over buffers that already exist.
    """

    def __init__(self, cfg: HwConfig, memory: DramImage | None = None) -> None:
        self.cfg = cfg
        self.memory = memory if memory is not None else DramImage(cfg)
        self.instructions: list[Insn] = []
        self._uop_lists = 0

    # ---- data ---------------------------------------------------------------------------
    def alloc(self, name: str, kind: str, shape: tuple[int, ...] | int, data: np.ndarray | None = None,
              dtype: str | None = None) -> BufferSpec:
        """A named DRAM buffer (``kind`` in inp/wgt/acc/out/raw), optionally initialised with ``data``."""
        spec = self.memory.alloc(name, kind, shape, dtype)
        if data is not None:
            self.memory.write(spec, data)
        return spec

    def write(self, buf: str | BufferSpec, data: np.ndarray) -> None:
        """Write host ``data`` into a buffer in its packed DRAM layout."""
        self.memory.write(buf, data)

    def uops(self, uops: Sequence[Uop], name: str | None = None) -> BufferSpec:
        """Place a micro-op list in DRAM; ``.addr`` of the result is the element address for LOAD UOP."""
        if not uops:
            raise ValueError("a micro-op list needs at least one micro-op")
        name = name or f"uops{self._uop_lists}"
        self._uop_lists += 1
        spec = self.memory.alloc(name, "uop", len(uops))
        self.memory.write(spec, self.cfg.isa.encode_uops(uops))
        return spec

    # ---- instructions -----------------------------------------------------------------------
    def emit(self, insn: Insn) -> int:
        """Append an instruction; returns its index."""
        self.instructions.append(insn)
        return len(self.instructions) - 1

    def load(self, mem_type: MemType, sram_base: int, dram_base: int, y_size: int, x_size: int, x_stride: int, *,
             pad: tuple[int, int, int, int] = (0, 0, 0, 0), pop_prev: bool = False, pop_next: bool = False,
             push_prev: bool = False, push_next: bool = False, elem_stride: int = 1) -> int:
        """LOAD ``y_size x x_size`` elements (row stride ``x_stride``, element stride ``elem_stride``) to SRAM;
        ``pad`` = (top, bottom, left, right)."""
        y0, y1, x0, x1 = pad
        return self.emit(MemInsn(Opcode.LOAD, MemType(mem_type), sram_base, dram_base, y_size, x_size, x_stride,
                                 y0, y1, x0, x1, _deps(pop_prev, pop_next, push_prev, push_next),
                                 elem_stride=elem_stride))

    def load_uops(self, uops: BufferSpec, sram_base: int = 0, **deps: bool) -> int:
        """LOAD UOP of a whole micro-op list placed with :meth:`uops`."""
        n = uops.shape[0]
        return self.load(MemType.UOP, sram_base, uops.addr, 1, n, n, **deps)

    def store(self, sram_base: int, dram_base: int, y_size: int, x_size: int, x_stride: int, *,
              pop_prev: bool = False, pop_next: bool = False, push_prev: bool = False, push_next: bool = False,
              shift: int = 0, clip: bool = False, relu: bool = False,
              bias: tuple[int, int] | None = None) -> int:
        """STORE accumulators ``[sram_base, +y*x)`` requantized to OUT (``>> shift``, optional ReLU and
        saturation, then narrowed) at DRAM ``dram_base`` (row stride ``x_stride``); ``bias = (row, step)``
        first adds ``acc[row + y * step]`` to every element of DRAM row ``y``."""
        bias_row, bias_step = bias if bias is not None else (0, 0)
        return self.emit(MemInsn(Opcode.STORE, MemType.OUT, sram_base, dram_base, y_size, x_size, x_stride,
                                 deps=_deps(pop_prev, pop_next, push_prev, push_next), shift=shift, clip=clip,
                                 relu=relu, bias=bias is not None, bias_row=bias_row, bias_step=bias_step))

    def gemm(self, uop_bgn: int, uop_end: int, *, iter_out: int = 1, iter_in: int = 1,
             dst_factor: tuple[int, int] = (0, 0), src_factor: tuple[int, int] = (0, 0),
             wgt_factor: tuple[int, int] = (0, 0), reset: bool = False, overwrite: bool = False,
             pop_prev: bool = False, pop_next: bool = False, push_prev: bool = False, push_next: bool = False) -> int:
        """GEMM over micro-ops ``[uop_bgn, uop_end)``; factors are (outer, inner) loop index factors;
        ``overwrite`` writes the products instead of accumulating them."""
        return self.emit(GemmInsn(reset, uop_bgn, uop_end, iter_out, iter_in, dst_factor[0], dst_factor[1],
                                  src_factor[0], src_factor[1], wgt_factor[0], wgt_factor[1],
                                  _deps(pop_prev, pop_next, push_prev, push_next), overwrite))

    def alu(self, op: AluOp, uop_bgn: int, uop_end: int, *, imm: int | None = None, iter_out: int = 1,
            iter_in: int = 1, dst_factor: tuple[int, int] = (0, 0), src_factor: tuple[int, int] = (0, 0),
            pop_prev: bool = False, pop_next: bool = False, push_prev: bool = False, push_next: bool = False) -> int:
        """ALU ``op`` with immediate ``imm``, or with the accumulator operand ``src`` when ``imm`` is None."""
        return self.emit(AluInsn(AluOp(op), imm is not None, imm or 0, uop_bgn, uop_end, iter_out, iter_in,
                                 dst_factor[0], dst_factor[1], src_factor[0], src_factor[1],
                                 _deps(pop_prev, pop_next, push_prev, push_next)))

    def finish(self, *, pop_prev: bool = False, pop_next: bool = False, push_prev: bool = False,
               push_next: bool = False) -> int:
        return self.emit(FinishInsn(_deps(pop_prev, pop_next, push_prev, push_next)))

    # ---- result -----------------------------------------------------------------------------
    def build(self) -> Program:
        """Encode the instructions into DRAM and return the :class:`Program`."""
        isa = self.cfg.isa
        words = bytearray()
        for k, insn in enumerate(self.instructions):
            try:
                words += isa.encode(insn).to_bytes(INSN_BYTES, "little")
            except IsaError as exc:
                raise IsaError(f"instruction {k}: {exc}") from None
        name = "insns"
        n = 0
        while name in self.memory.buffers:  # a device memory may already hold earlier programs
            n += 1
            name = f"insns{n}"
        spec = self.memory.alloc(name, "raw", len(words), dtype="uint8")
        self.memory.write(spec, np.frombuffer(bytes(words), dtype=np.uint8))
        buffers = {k: v for k, v in self.memory.buffers.items()}
        return Program(self.cfg, tuple(self.instructions), self.memory.data, spec.offset, buffers)
