"""A stand-in for the ``pynq`` package whose board is the Verilated RTL.

The fpga backend's driver (:mod:`vdla.runtime.fpga.board`) is written against pynq's API:
``Overlay(bitfile, device=...)`` and its ``ip_dict``, ``allocate(shape, dtype, target=...)``
returning an ndarray with ``physical_address``, ``flush()``, ``invalidate()`` and
``freebuffer()``, and ``MMIO(base_addr, length, device=...)`` with ``read(offset)`` /
``write(offset, value)``. This module has the same names with the same semantics, so the same
driver code runs here unmodified. Why not pynq itself: pynq 4.0 (PyPI) pins ``numpy<2.0`` and
exact ``grpcio``/``grpcio-tools`` versions, so installing it would downgrade the NumPy every other
part of vdla is built on (docs/fpga.md, "The fpga backend").

:class:`EmulatedDevice` is the board:

* its physical memory is the harness's DRAM model (the AXI4 slave the design's master reads and
  writes); buffers are handed out from :data:`CMA_BASE` upwards, so their physical addresses are
  not 0, as on a board, and the driver's address relocation is exercised;
* a buffer's ndarray is the CPU's cached view: ``flush()`` copies it into the device memory and
  ``invalidate()`` copies the device memory back, so a driver that forgets either reads or runs
  on stale data here too;
* MMIO reaches the design's AXI-lite registers at the board's register base; every access (and
  every allocate / flush / invalidate / free, :class:`MemoryOp`) is recorded in
  :attr:`EmulatedDevice.trace`. While the accelerator runs, time passes between two host
  accesses: before each register read the design is clocked :attr:`EmulatedDevice.slice_cycles`
  cycles (less if it finishes), the way a board's accelerator runs while the CPU polls.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vdla_hw.errors import DeviceFaultError
from vdla_hw.fpga.boards import get_board
from vdla_hw.fpga.manifest import MANIFEST_NAME, manifest_config, read_manifest
from vdla_hw.harness import RtlSim, RunStatus
from vdla_hw.regmap import CONTROL_START
from vdla_hw.regmap import offset as reg_offset

IP_NAME = "vdla"
"""The accelerator's cell in the block design (fpga_scripts/vivado/build.tcl): its key in ``ip_dict``."""
REG_WINDOW = 4096
"""Bytes of the register window (IP integrator's smallest address segment)."""
CMA_BASE = 0x0010_0000
"""First physical address the emulated allocator hands out (a board's CMA pool is not at 0 either)."""
PAGE = 4096
SLICE_CYCLES = 1 << 16
"""Default cycles the design runs between two host register reads while it is busy."""


@dataclass(frozen=True)
class MmioAccess:
    """One register access seen on the emulated AXI-lite bus: ``op`` is ``"read"`` or ``"write"``."""

    op: str
    offset: int
    value: int


@dataclass(frozen=True)
class MemoryOp:
    """One memory operation of the host on the emulated board: ``op`` is ``"allocate"``, ``"flush"``,
    ``"invalidate"`` or ``"free"``, on ``nbytes`` bytes at physical ``address``."""

    op: str
    address: int
    nbytes: int


class Device:
    """pynq's device base class: ``Device.active_device`` is what ``target=None`` / ``device=None`` mean."""

    active_device: Device | None = None


class EmulatedDevice(Device):
    """A Zynq board whose programmable logic is the Verilated ``vdla_top`` (see the module docstring)."""

    def __init__(self, name: str = "emulated", *, slice_cycles: int = SLICE_CYCLES) -> None:
        self.name = name
        self.slice_cycles = slice_cycles
        self.trace: list[MmioAccess | MemoryOp] = []
        """Every register access and memory operation of the host, in order."""
        self.sim: RtlSim | None = None
        self.reg_base = 0
        self._top = CMA_BASE
        self._live: dict[int, int] = {}  # physical address -> bytes of the live buffers
        self._running = False

    # ---- the bitstream ----------------------------------------------------------------------
    def download(self, bitfile: str | Path) -> dict[str, dict[str, Any]]:
        """"Program the FPGA" with the bitstream folder of ``bitfile``; returns the overlay's ip_dict.

        The folder's ``bitstream.json`` names the config and the build id: the design is the
        Verilated ``vdla_top`` of that config with that BUILD_ID parameter.
        """
        path = Path(bitfile)
        folder = path if path.is_dir() else path.parent
        if not (folder / MANIFEST_NAME).is_file() and (folder.parent / MANIFEST_NAME).is_file():
            folder = folder.parent  # a Vivado folder keeps its bitstream in out/
        manifest = read_manifest(folder)
        cfg = manifest_config(folder, manifest)
        board = get_board(manifest.board)
        self.close()
        self.sim = RtlSim(cfg, build_id=manifest.build_id)
        self.sim.load_dram(np.zeros(0, dtype=np.uint8), CMA_BASE)
        self.reg_base = board.ps.reg_base if board.ps is not None else 0x4000_0000
        self._top, self._live, self._running = CMA_BASE, {}, False
        self.trace.clear()
        return {IP_NAME: {"phys_addr": self.reg_base, "addr_range": REG_WINDOW, "type": "vdla:user:vdla_zynq_top:1.0",
                          "fullpath": IP_NAME, "state": None}}

    def _design(self) -> RtlSim:
        if self.sim is None:
            raise DeviceFaultError("the emulated FPGA holds no bitstream", hint="load one with Overlay(bitfile) first")
        return self.sim

    def close(self) -> None:
        """Free the simulated design."""
        if self.sim is not None:
            self.sim.close()
            self.sim = None

    # ---- memory -----------------------------------------------------------------------------
    def allocate(self, shape: int | tuple[int, ...], dtype: Any = "u4", **kwargs: Any) -> PynqBuffer:
        """A physically contiguous, page-aligned buffer in the device memory (``pynq.allocate``)."""
        sim = self._design()
        host = np.zeros(shape, dtype=dtype)
        nbytes = -(-max(host.nbytes, 1) // PAGE) * PAGE
        addr = self._top
        self._top += nbytes
        if self._top > sim.dram_size:
            sim.resize_dram(self._top)
        sim.write_dram(addr, np.zeros(nbytes, dtype=np.uint8))  # a reused region starts cleared
        self._live[addr] = nbytes
        self.trace.append(MemoryOp("allocate", addr, host.nbytes))
        return PynqBuffer._wrap(host, self, addr)

    def free(self, address: int) -> None:
        self.trace.append(MemoryOp("free", address, self._live.pop(address, 0)))
        # Regions at the top are handed out again (one buffer per run: the memory does not grow).
        self._top = max((a + n for a, n in self._live.items()), default=CMA_BASE)

    def flush(self, address: int, data: np.ndarray) -> None:
        raw = data.view(np.uint8).reshape(-1)
        self.trace.append(MemoryOp("flush", address, raw.size))
        self._design().write_dram(address, raw)

    def invalidate(self, address: int, out: np.ndarray) -> None:
        raw = out.view(np.uint8).reshape(-1)
        self.trace.append(MemoryOp("invalidate", address, raw.size))
        raw[:] = self._design().read_dram(address, raw.size)

    # ---- registers --------------------------------------------------------------------------
    def reg_read(self, address: int) -> int:
        sim = self._design()
        if self._running:
            status = sim.run(self.slice_cycles)
            self._running = status != RunStatus.DONE
        offset = self._offset(address)
        value = sim.read_reg_at(offset)
        self.trace.append(MmioAccess("read", offset, value))
        return value

    def reg_write(self, address: int, value: int) -> None:
        sim = self._design()
        offset = self._offset(address)
        self.trace.append(MmioAccess("write", offset, value))
        sim.write_reg_at(offset, value)
        if offset == reg_offset("CONTROL") and value & CONTROL_START:
            self._running = True

    def _offset(self, address: int) -> int:
        offset = address - self.reg_base
        if not 0 <= offset < REG_WINDOW or offset % 4:
            raise DeviceFaultError(f"MMIO access at {address:#x} is outside the accelerator's register window "
                                   f"[{self.reg_base:#x}, {self.reg_base + REG_WINDOW:#x}) or unaligned")
        return offset


class PynqBuffer(np.ndarray):
    """``pynq.buffer.PynqBuffer``: the CPU's view of a contiguous device buffer."""

    # pynq keeps its device in ``.device``, which NumPy 2 reserves (the array API's device): ``_owner`` here.
    _owner: EmulatedDevice | None
    device_address: int
    coherent: bool

    @classmethod
    def _wrap(cls, host: np.ndarray, device: EmulatedDevice, address: int) -> PynqBuffer:
        buf = host.view(cls)
        buf._owner, buf.device_address, buf.coherent = device, address, False
        return buf

    def __array_finalize__(self, obj: Any) -> None:
        # A view (buf[a:b]) lies at its own offset inside its parent's device memory.
        parent = obj if isinstance(obj, PynqBuffer) else None
        self._owner = getattr(parent, "_owner", None)
        self.coherent = getattr(parent, "coherent", False)
        if parent is not None and parent._owner is not None:
            shift = self.__array_interface__["data"][0] - parent.__array_interface__["data"][0]
            self.device_address = parent.device_address + shift
        else:
            self.device_address = 0

    @property
    def physical_address(self) -> int:
        return self.device_address

    def flush(self) -> None:
        """Write the CPU's view back to device memory (a cache clean on a board)."""
        self._device().flush(self.device_address, np.ascontiguousarray(self))

    def invalidate(self) -> None:
        """Reload the CPU's view from device memory (a cache invalidate on a board)."""
        if not self.flags.c_contiguous:
            raise ValueError("invalidate() needs a contiguous buffer view")
        self._device().invalidate(self.device_address, self)

    def freebuffer(self) -> None:
        """Return the memory to the device's allocator."""
        if self._owner is not None:
            self._owner.free(self.device_address)
            self._owner = None

    def _device(self) -> EmulatedDevice:
        if self._owner is None:
            raise ValueError("this buffer was freed (or is not a device buffer)")
        return self._owner

    def __enter__(self) -> PynqBuffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.freebuffer()


def allocate(shape: int | tuple[int, ...], dtype: Any = "u4", target: EmulatedDevice | None = None,
             **kwargs: Any) -> PynqBuffer:
    """``pynq.allocate``: a contiguous buffer on ``target`` (default: the active device)."""
    device = target or Device.active_device
    if not isinstance(device, EmulatedDevice):
        raise RuntimeError("No Devices Found")
    return device.allocate(shape, dtype, **kwargs)


class MMIO:
    """``pynq.MMIO``: 32-bit register access in a window of the device's address space."""

    def __init__(self, base_addr: int, length: int = 4, device: EmulatedDevice | None = None, **kwargs: Any) -> None:
        self.device = device or Device.active_device
        if not isinstance(self.device, EmulatedDevice):
            raise RuntimeError("No Devices Found")
        if base_addr < 0 or length < 0:
            raise ValueError("Base address or length cannot be negative.")
        self.base_addr, self.length = base_addr, length

    def read(self, offset: int = 0, length: int = 4, word_order: str = "little") -> int:
        if length != 4:
            raise ValueError("the accelerator's registers are 32 bits: read them with length=4")
        self._check(offset)
        return self.device.reg_read(self.base_addr + offset)

    def write(self, offset: int, data: int | bytes) -> None:
        value = int.from_bytes(data, "little") if isinstance(data, (bytes, bytearray)) else int(data)
        self._check(offset)
        self.device.reg_write(self.base_addr + offset, value & 0xFFFF_FFFF)

    def _check(self, offset: int) -> None:
        if offset < 0 or offset % 4:
            raise MemoryError("Unaligned read: offset must be multiple of 4.")
        if offset + 4 > self.length:
            raise ValueError(f"offset {offset:#x} is outside this {self.length}-byte MMIO window")


class Overlay:
    """``pynq.Overlay``: loads a bitstream onto the device and describes its IP in ``ip_dict``."""

    def __init__(self, bitfile_name: str, dtbo: str | None = None, download: bool = True,
                 ignore_version: bool = False, device: EmulatedDevice | None = None) -> None:
        self.device = device or Device.active_device
        if not isinstance(self.device, EmulatedDevice):
            raise RuntimeError("No Devices Found")
        self.bitfile_name = str(bitfile_name)
        self.ip_dict: dict[str, dict[str, Any]] = {}
        if download:
            self.download()

    def download(self) -> None:
        self.ip_dict = self.device.download(self.bitfile_name)

    def free(self) -> None:
        self.device.close()
