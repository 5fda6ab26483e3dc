"""Device DRAM: named buffers and the accelerator's packed tile layout.

A matrix lives in DRAM as a row-major grid of tiles (the SRAM elements of its
memory type): an ``inp`` matrix (rows, k) as tiles of BATCH x BLOCK_IN, a
``wgt`` matrix (n, k) -- one row per output channel -- as tiles of BLOCK_OUT x
BLOCK_IN, ``acc``/``out`` matrices (rows, n) as tiles of BATCH x BLOCK_OUT.
Tile (r, c) is DRAM element ``addr + r * tile_cols + c``, so a LOAD/STORE of a
block of tiles uses ``x_stride = tile_cols``.  Matrices are zero-padded to
whole tiles; :func:`unpack_matrix` crops the padding again.  ``uop`` buffers
hold micro-op words, ``raw`` buffers plain little-endian arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from vdla_hw.config import HwConfig

from vdla.simulator import packing

TILE_KINDS = ("inp", "wgt", "acc", "out")
KINDS = TILE_KINDS + ("uop", "raw")


@dataclass(frozen=True)
class BufferSpec:
    """A named DRAM buffer: ``kind`` (see :data:`KINDS`), byte ``offset``, logical ``shape``.

    ``dtype`` is the NumPy dtype of the logical values (a matrix of ``kind``
    tiles reads back as this dtype).
    """

    name: str
    kind: str
    offset: int
    shape: tuple[int, ...]
    dtype: str
    nbytes: int
    elem_bytes: int

    @property
    def addr(self) -> int:
        """Element address for LOAD/STORE ``dram_base`` (counts elements of this buffer's memory type)."""
        return self.offset // self.elem_bytes

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "kind": self.kind, "offset": self.offset, "shape": list(self.shape),
                "dtype": self.dtype, "nbytes": self.nbytes, "elem_bytes": self.elem_bytes}

    @staticmethod
    def from_json(d: dict[str, object]) -> "BufferSpec":
        return BufferSpec(str(d["name"]), str(d["kind"]), int(d["offset"]), tuple(int(x) for x in d["shape"]),  # type: ignore[union-attr]
                          str(d["dtype"]), int(d["nbytes"]), int(d["elem_bytes"]))  # type: ignore[arg-type]


def tile_shape(cfg: HwConfig, kind: str) -> tuple[int, int]:
    """(rows, cols) of one tile of ``kind``."""
    return {"inp": (cfg.batch, cfg.block_in), "wgt": (cfg.block_out, cfg.block_in),
            "acc": (cfg.batch, cfg.block_out), "out": (cfg.batch, cfg.block_out)}[kind]


def tile_width(cfg: HwConfig, kind: str) -> int:
    """Bits per value of ``kind``."""
    return {"inp": cfg.inp_width, "wgt": cfg.wgt_width, "acc": cfg.acc_width, "out": cfg.out_width}[kind]


def elem_bytes(cfg: HwConfig, kind: str) -> int:
    """Bytes of one DRAM element of ``kind`` (a tile, a micro-op word, or 1 for raw bytes)."""
    return {"inp": cfg.inp_elem_bytes, "wgt": cfg.wgt_elem_bytes, "acc": cfg.acc_elem_bytes,
            "out": cfg.out_elem_bytes, "uop": cfg.uop_elem_bytes, "raw": 1}[kind]


def tile_grid(cfg: HwConfig, kind: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """(tile rows, tile cols) a matrix of ``shape`` occupies, padded to whole tiles."""
    if len(shape) != 2:
        raise ValueError(f"a {kind} buffer holds a 2-D matrix, got shape {shape}")
    tr, tc = tile_shape(cfg, kind)
    return -(-shape[0] // tr), -(-shape[1] // tc)


def _check_range(name: str, values: np.ndarray, width: int) -> None:
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if values.size and (int(values.min()) < lo or int(values.max()) > hi):
        raise ValueError(
            f"buffer {name!r}: values in [{int(values.min())}, {int(values.max())}] do not fit {width}-bit signed "
            f"elements [{lo}, {hi}]; quantize or clip them first"
        )


def pack_matrix(cfg: HwConfig, kind: str, matrix: np.ndarray, name: str = "?") -> np.ndarray:
    """The DRAM bytes of ``matrix`` in ``kind``'s tile layout (zero-padded to whole tiles)."""
    m = np.asarray(matrix)
    if not np.issubdtype(m.dtype, np.integer):
        raise ValueError(f"buffer {name!r}: {kind} data must be integers, got {m.dtype}")
    width = tile_width(cfg, kind)
    _check_range(name, m, width)
    rows, cols = tile_grid(cfg, kind, m.shape)
    tr, tc = tile_shape(cfg, kind)
    padded = np.zeros((rows * tr, cols * tc), dtype=np.int64)
    padded[: m.shape[0], : m.shape[1]] = m
    tiles = padded.reshape(rows, tr, cols, tc).transpose(0, 2, 1, 3).reshape(rows, cols, tr * tc)
    return packing.encode(tiles, width).reshape(-1)


def unpack_matrix(cfg: HwConfig, kind: str, raw: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Inverse of :func:`pack_matrix`: the ``shape`` matrix stored in ``raw`` bytes."""
    rows, cols = tile_grid(cfg, kind, shape)
    tr, tc = tile_shape(cfg, kind)
    width = tile_width(cfg, kind)
    tiles = packing.decode(np.asarray(raw, dtype=np.uint8).reshape(rows, cols, -1), width)
    full = tiles.reshape(rows, cols, tr, tc).transpose(0, 2, 1, 3).reshape(rows * tr, cols * tc)
    return np.ascontiguousarray(full[: shape[0], : shape[1]])


class DramImage:
    """A growable DRAM image with named, aligned buffers.

    Every buffer starts at a multiple of ``alignment`` (the largest element size
    and bus width of the config), so its element address is exact for its
    memory type and DMA rows start on a bus beat.
    """

    def __init__(self, cfg: HwConfig) -> None:
        self.cfg = cfg
        self.alignment = max(cfg.bus_bytes, 16, *(elem_bytes(cfg, k) for k in ("inp", "wgt", "acc", "out", "uop")))
        self._data = np.zeros(0, dtype=np.uint8)
        self.size = 0
        self.buffers: dict[str, BufferSpec] = {}

    @property
    def data(self) -> np.ndarray:
        """The image's bytes (a view; length = allocated size)."""
        return self._data[: self.size]

    def alloc(self, name: str, kind: str, shape: tuple[int, ...] | int, dtype: str | None = None) -> BufferSpec:
        """Reserve a zero-filled buffer ``name`` of ``kind`` holding a ``shape`` array."""
        if name in self.buffers:
            raise ValueError(f"a DRAM buffer named {name!r} already exists; buffer names must be unique")
        if kind not in KINDS:
            raise ValueError(f"unknown buffer kind {kind!r}; kinds: {KINDS}")
        shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
        if kind in TILE_KINDS:
            rows, cols = tile_grid(self.cfg, kind, shape)
            nbytes = rows * cols * elem_bytes(self.cfg, kind)
            dtype = np.dtype(packing.dtype_for(tile_width(self.cfg, kind))).name
        elif kind == "uop":
            nbytes, dtype = int(np.prod(shape)) * self.cfg.uop_elem_bytes, "uint32"
        else:
            if dtype is None:
                raise ValueError(f"raw buffer {name!r} needs a dtype")
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        offset = -(-self.size // self.alignment) * self.alignment
        self._reserve(offset + nbytes)
        spec = BufferSpec(name, kind, offset, shape, str(dtype), nbytes, elem_bytes(self.cfg, kind))
        self.buffers[name] = spec
        return spec

    def _reserve(self, end: int) -> None:
        if end > self._data.size:
            grown = np.zeros(max(end, 2 * self._data.size), dtype=np.uint8)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self.size = max(self.size, end)

    def spec(self, buf: str | BufferSpec) -> BufferSpec:
        name = buf.name if isinstance(buf, BufferSpec) else buf
        try:
            return self.buffers[name]
        except KeyError:
            raise KeyError(f"no DRAM buffer named {name!r}; buffers: {sorted(self.buffers)}") from None

    def write(self, buf: str | BufferSpec, values: np.ndarray) -> None:
        """Copy host ``values`` into buffer ``buf`` in its DRAM layout."""
        spec = self.spec(buf)
        self._data[spec.offset : spec.offset + spec.nbytes] = to_bytes(self.cfg, spec, values)

    def read(self, buf: str | BufferSpec, image: np.ndarray | None = None) -> np.ndarray:
        """Buffer ``buf`` as a host array, from this image or from ``image`` (e.g. a run's final DRAM)."""
        return read_buffer(self.cfg, self.spec(buf), self.data if image is None else image)

    def __iter__(self) -> Iterator[BufferSpec]:
        return iter(self.buffers.values())


def to_bytes(cfg: HwConfig, spec: BufferSpec, values: np.ndarray) -> np.ndarray:
    """The DRAM bytes of host ``values`` for buffer ``spec``."""
    v = np.asarray(values)
    if v.shape != spec.shape:
        raise ValueError(f"buffer {spec.name!r} holds shape {spec.shape}, got data of shape {v.shape}")
    if spec.kind in TILE_KINDS:
        return pack_matrix(cfg, spec.kind, v, spec.name)
    return np.ascontiguousarray(v.astype(np.dtype(spec.dtype).newbyteorder("<"))).view(np.uint8).reshape(-1)


def read_buffer(cfg: HwConfig, spec: BufferSpec, image: np.ndarray) -> np.ndarray:
    """Buffer ``spec`` decoded from the DRAM bytes ``image``."""
    raw = np.asarray(image, dtype=np.uint8)[spec.offset : spec.offset + spec.nbytes]
    if raw.size != spec.nbytes:
        raise ValueError(f"buffer {spec.name!r} ends at byte {spec.offset + spec.nbytes}, beyond the {image.size}-byte image")
    if spec.kind in TILE_KINDS:
        return unpack_matrix(cfg, spec.kind, raw, spec.shape)  # type: ignore[arg-type]
    return raw.view(np.dtype(spec.dtype).newbyteorder("<")).astype(spec.dtype).reshape(spec.shape)
