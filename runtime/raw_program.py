"""Raw programs: an instruction image from ``vdla asm`` plus DRAM contents given piece by piece.

``vdla asm prog.s -o prog.bin --uops-out prog.uops`` writes bare instruction and micro-op words;
the program's LOAD and STORE instructions name DRAM by element addresses of their memory type.
:func:`build_raw_program` lays out a DRAM image for them: the micro-op words at ``uops_addr``
(micro-op elements), each :class:`DramInput` matrix packed in its kind's tile layout at its element
address, room for every :class:`DramDump`, and the instructions after all of it. The result is an
ordinary :class:`~vdla.runtime.program.Program` whose buffers are named after the options that placed
them, so any backend runs it and ``result.read(dump.name)`` reads a dump back.

Command-line forms (parsed here so that the API and the CLI agree):

- ``KIND@ADDR=FILE.npy``: a 2-D integer matrix written at element ``ADDR`` of ``KIND``;
- ``KIND@ADDR:ROWSxCOLS=FILE.npy``: a ROWS x COLS matrix of ``KIND`` read back after the run.

``KIND`` is one of ``inp``, ``wgt``, ``acc``, ``out``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vdla.runtime.file_checks import ELF_MAGIC, NPY_MAGIC, ZIP_MAGIC, describe, load_npy, read_bytes, wrong_kind
from vdla.runtime.memory import TILE_KINDS, BufferSpec, elem_bytes, pack_matrix, tile_grid, tile_width
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla.simulator import packing
from vdla_hw.config import HwConfig
from vdla_hw.errors import BadFileError, UsageError
from vdla_hw.isa import INSN_BYTES, UOP_BYTES

INPUT_FORM = "KIND@ADDR=FILE.npy"
DUMP_FORM = "KIND@ADDR:ROWSxCOLS=FILE.npy"
_INPUT_RE = re.compile(r"^(?P<kind>\w+)@(?P<addr>\w+)=(?P<file>.+)$")
_DUMP_RE = re.compile(r"^(?P<kind>\w+)@(?P<addr>\w+):(?P<rows>\d+)x(?P<cols>\d+)=(?P<file>.+)$")
_WHAT = "an instruction image (.bin from `vdla asm`)"


@dataclass(frozen=True)
class DramInput:
    """A matrix placed in DRAM before the run (``--dram``)."""

    name: str
    kind: str
    addr: int
    data: np.ndarray


@dataclass(frozen=True)
class DramDump:
    """A ``rows x cols`` matrix of ``kind`` read from DRAM after the run into ``file`` (``--dump``)."""

    name: str
    kind: str
    addr: int
    shape: tuple[int, int]
    file: Path


def _kind_addr(option: str, text: str, form: str, kind: str, addr: str) -> tuple[str, int]:
    if kind.lower() not in TILE_KINDS:
        raise UsageError(f"{option} {text!r}: unknown kind {kind!r}; use {form} with KIND one of "
                         f"{', '.join(TILE_KINDS)}")
    try:
        value = int(addr, 0)
    except ValueError:
        raise UsageError(f"{option} {text!r}: address {addr!r} is not an integer; use {form}") from None
    return kind.lower(), value


def parse_input(text: str, option: str = "--dram") -> DramInput:
    """A ``KIND@ADDR=FILE.npy`` option: the matrix is loaded (and checked) from ``FILE.npy``."""
    m = _INPUT_RE.match(text)
    if not m:
        raise UsageError(f"{option} {text!r} is malformed; use {INPUT_FORM}, e.g. inp@0=x.npy")
    kind, addr = _kind_addr(option, text, INPUT_FORM, m["kind"], m["addr"])
    data = load_npy(m["file"], f"a matrix (.npy) for {option} {text}")
    if data.ndim != 2 or not np.issubdtype(data.dtype, np.integer):
        raise BadFileError(f"{m['file']} holds {data.dtype}{list(data.shape)}; {option} needs a 2-D integer matrix")
    return DramInput(text, kind, addr, data)


def parse_dump(text: str, option: str = "--dump") -> DramDump:
    """A ``KIND@ADDR:ROWSxCOLS=FILE.npy`` option."""
    m = _DUMP_RE.match(text)
    if not m:
        raise UsageError(f"{option} {text!r} is malformed; use {DUMP_FORM}, e.g. out@0:4x16=y.npy")
    kind, addr = _kind_addr(option, text, DUMP_FORM, m["kind"], m["addr"])
    rows, cols = int(m["rows"]), int(m["cols"])
    if rows < 1 or cols < 1:
        raise UsageError(f"{option} {text!r}: the shape {rows}x{cols} is empty")
    return DramDump(text, kind, addr, (rows, cols), Path(m["file"]))


def is_raw_image(data: bytes) -> bool:
    """Whether file content ``data`` is a bare instruction image rather than a known file kind."""
    return describe(data) == "binary data of an unknown kind"


def _tile_spec(cfg: HwConfig, name: str, kind: str, addr: int, shape: tuple[int, int]) -> BufferSpec:
    if addr < 0:
        raise UsageError(f"{name!r}: a DRAM element address must be >= 0, got {addr}")
    rows, cols = tile_grid(cfg, kind, shape)
    eb = elem_bytes(cfg, kind)
    dtype = np.dtype(packing.dtype_for(tile_width(cfg, kind))).name
    return BufferSpec(name, kind, addr * eb, shape, dtype, rows * cols * eb, eb)


def _check_values(cfg: HwConfig, item: DramInput) -> None:
    width = tile_width(cfg, item.kind)
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if item.data.size and (int(item.data.min()) < lo or int(item.data.max()) > hi):
        raise UsageError(f"--dram {item.name}: values in [{int(item.data.min())}, {int(item.data.max())}] do not "
                         f"fit the {width}-bit {item.kind} elements of config {cfg.name!r} [{lo}, {hi}]")


def read_instruction_image(path: str | Path, what: str = _WHAT) -> bytes:
    """The bytes of an instruction image, checked: of no other known kind, a whole number of words."""
    data = read_bytes(path, what)
    if not is_raw_image(data):
        raise wrong_kind(path, data, what,
                         hint="assemble a .s file with `vdla asm prog.s -o prog.bin --uops-out prog.uops`")
    if len(data) % INSN_BYTES:
        raise BadFileError(f"{path}: {len(data)} bytes is not a multiple of {INSN_BYTES} (the instruction size): "
                           f"truncated, or not written by `vdla asm`")
    return data


def read_uop_image(path: str | Path, cfg: HwConfig) -> bytes:
    """The bytes of a micro-op image, checked: a whole number of words that each decode for ``cfg``."""
    what = "a micro-op image (.uops from `vdla asm --uops-out`)"
    data = read_bytes(path, what)
    # A few micro-op words may look like text; only files of a known structured kind are refused.
    if data.startswith((NPY_MAGIC, ZIP_MAGIC, ELF_MAGIC)):
        raise wrong_kind(path, data, what)
    if len(data) % UOP_BYTES:
        raise BadFileError(f"{path}: {len(data)} bytes is not a multiple of the {UOP_BYTES}-byte micro-op: "
                           f"truncated, or not written by `vdla asm --uops-out`")
    for k, w in enumerate(np.frombuffer(data, "<u4")):
        try:
            cfg.isa.decode_uop(int(w))
        except BadFileError as exc:
            raise BadFileError(f"{path}: micro-op {k}: {exc}",
                               hint=f"was it assembled for config {cfg.name!r}?") from None
    return data


RAW_DRAM_BYTES = 256 << 20
"""The DRAM a raw program may fill (256 MiB): every --dram/--dump/--uops placement and the
instruction stream after them must end inside it. A placement past it is a typo far more often
than a wish for a multi-GiB image, which the simulators would allocate in full."""


def _check_fits(what: str, start: int, end: int) -> None:
    if end > RAW_DRAM_BYTES:
        raise UsageError(f"{what} ends at DRAM byte {end:,}, past the {RAW_DRAM_BYTES:,}-byte "
                         f"({RAW_DRAM_BYTES >> 20} MiB) DRAM of a raw program (it starts at byte {start:,})",
                         hint="use a smaller element address (addresses count elements of their kind, not bytes)")


def build_raw_program(cfg: HwConfig, insn_path: str | Path, uops_path: str | Path | None = None,
                      uops_addr: int = 0, inputs: tuple[DramInput, ...] = (),
                      dumps: tuple[DramDump, ...] = ()) -> Program:
    """A runnable program from an instruction image, micro-op words and DRAM contents (module docstring)."""
    insns = read_instruction_image(insn_path, f"a VDLA program bundle (.vdlaprog) or {_WHAT}")
    placed: list[tuple[str, int, int]] = []  # (what, first byte, end byte) of everything written before the run
    buffers: dict[str, BufferSpec] = {}
    writes: list[tuple[int, np.ndarray]] = []
    if uops_path is not None:
        words = read_uop_image(uops_path, cfg)
        if uops_addr < 0:
            raise UsageError(f"--uops-addr must be >= 0, got {uops_addr}")
        start = uops_addr * cfg.uop_elem_bytes
        placed.append((f"the micro-ops of {uops_path}", start, start + len(words)))
        writes.append((start, np.frombuffer(words, np.uint8)))
    for item in inputs:
        _check_values(cfg, item)
        spec = _tile_spec(cfg, item.name, item.kind, item.addr, item.data.shape)  # type: ignore[arg-type]
        placed.append((f"--dram {item.name}", spec.offset, spec.offset + spec.nbytes))
        writes.append((spec.offset, pack_matrix(cfg, item.kind, item.data, item.name)))
        buffers[item.name] = spec
    for dump in dumps:
        buffers[dump.name] = _tile_spec(cfg, dump.name, dump.kind, dump.addr, dump.shape)
    for what, start, stop in placed:
        _check_fits(what, start, stop)
    for name, spec in buffers.items():
        _check_fits(f"--dump {name}" if name not in {i.name for i in inputs} else f"--dram {name}",
                    spec.offset, spec.offset + spec.nbytes)
    ordered = sorted(placed, key=lambda p: p[1])
    for (a, _, a_end), (b, b_start, _) in zip(ordered, ordered[1:]):
        if b_start < a_end:
            raise UsageError(f"{a} and {b} overlap in DRAM (bytes {b_start}..{a_end - 1}); give them disjoint "
                             f"addresses (an element address counts elements of its kind)")
    end = max([e for _, _, e in placed] + [s.offset + s.nbytes for s in buffers.values()] + [0])
    align = max(INSN_BYTES, cfg.bus_bytes)
    insn_addr = -(-end // align) * align
    _check_fits(f"the instruction stream of {insn_path}", insn_addr, insn_addr + len(insns))
    dram = np.zeros(insn_addr + len(insns), np.uint8)
    for offset, data in writes:
        dram[offset: offset + data.size] = data
    dram[insn_addr:] = np.frombuffer(insns, np.uint8)
    try:
        return Program.from_image(cfg, dram, insn_addr, len(insns) // INSN_BYTES, buffers)
    except BadFileError as exc:
        raise BadFileError(f"{insn_path}: {exc}", hint=f"was it assembled for config {cfg.name!r}? pass the same "
                                                       f"--config to `vdla asm` and `vdla sim`") from None


def save_dumps(result: RunResult, dumps: tuple[DramDump, ...]) -> None:
    """Write each dump's matrix, read from the run's final DRAM, to its ``.npy`` file."""
    for dump in dumps:
        np.save(dump.file, result.read(dump.name))


__all__ = ["DUMP_FORM", "INPUT_FORM", "DramDump", "DramInput", "build_raw_program", "is_raw_image", "parse_dump",
           "parse_input", "read_instruction_image", "read_uop_image", "save_dumps"]
