"""The harness's DRAM model (``axi_dram.h``) in Python, answering ``m_axi_*`` pins one cycle at a time.

For pin-level sessions (``vdla hw shell`` on pyverilator) where no C++ testbench is in the
loop: slow (a few Python calls per pin per cycle) but the same behaviour as the C++ model --
a flat byte image from address 0, INCR full-width bursts, up to 16 outstanding per
direction, read data in request order ``latency.read`` cycles after the AR handshake, one
beat per cycle, and the B response ``latency.write`` cycles after the last W beat.

Per cycle the caller calls :meth:`PinAxiDram.drive` (set this cycle's inputs), evaluates the
design with the clock low, calls :meth:`PinAxiDram.sample` (record the handshakes of the
coming rising edge) and raises the clock -- the order of ``Harness::tick`` in ``harness.cpp``.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

import numpy as np

from vdla_hw.errors import DeviceFaultError

MAX_OUTSTANDING = 16
"""Bursts accepted per direction before AR/AW ready drops (as ``DramTiming::max_outstanding``)."""


class Pins(Protocol):
    """Name-based access to a design's ports."""

    def peek(self, name: str) -> int: ...

    def poke(self, name: str, value: int) -> None: ...


class DramFaultError(DeviceFaultError):
    """The design accessed DRAM outside the image, or broke the AXI rules the model checks."""


class PinAxiDram:
    """An AXI4 slave over a byte image; ``prefix`` names the master's ports (``m_axi_``)."""

    def __init__(self, pins: Pins, bus_bytes: int, read_latency: int, write_latency: int,
                 prefix: str = "m_axi_") -> None:
        self.pins, self.bus, self.prefix = pins, bus_bytes, prefix
        self.read_latency, self.write_latency = max(1, read_latency), max(1, write_latency)
        self.mem = bytearray()
        self.reset()

    def reset(self) -> None:
        """Drop in-flight traffic (the design is being reset); memory is kept."""
        self.reads: deque[list[int]] = deque()  # [next beat address, beats left, first ready cycle]
        self.writes: deque[list[int]] = deque()  # [next beat address, beats left]
        self.responses: deque[int] = deque()  # cycle each B response becomes valid
        self.now = 0
        self._rvalid = self._bvalid = self._wready = False

    def load(self, image: np.ndarray) -> None:
        """Replace memory with ``image``, zero-extended to a whole number of bus beats."""
        data = np.ascontiguousarray(image, dtype=np.uint8).reshape(-1).tobytes()
        self.mem = bytearray(data) + bytes(-len(data) % self.bus)

    def image(self, nbytes: int | None = None) -> np.ndarray:
        """A copy of the first ``nbytes`` bytes of memory (default: all)."""
        return np.frombuffer(bytes(self.mem[: len(self.mem) if nbytes is None else nbytes]), dtype=np.uint8).copy()

    def _in(self, name: str) -> int:
        return self.pins.peek(self.prefix + name)

    def _out(self, name: str, value: int) -> None:
        self.pins.poke(self.prefix + name, value)

    def drive(self) -> None:
        """Set this cycle's slave outputs from the model's state."""
        self._out("arready", int(len(self.reads) < MAX_OUTSTANDING))
        self._out("awready", int(len(self.writes) < MAX_OUTSTANDING))
        self._wready = bool(self.writes)
        self._out("wready", int(self._wready))
        self._rvalid = bool(self.reads) and self.reads[0][2] <= self.now
        self._out("rvalid", int(self._rvalid))
        if self._rvalid:
            addr, left, _ = self.reads[0]
            if addr + self.bus > len(self.mem):
                raise DramFaultError(f"DRAM read of the beat at byte address {addr:#x} lies outside the "
                                     f"{len(self.mem)}-byte DRAM image")
            self._out("rdata", int.from_bytes(self.mem[addr: addr + self.bus], "little"))
            self._out("rresp", 0)
            self._out("rlast", int(left == 1))
        else:
            self._out("rlast", 0)
        self._bvalid = bool(self.responses) and self.responses[0] <= self.now
        self._out("bvalid", int(self._bvalid))
        if self._bvalid:
            self._out("bresp", 0)

    def sample(self) -> None:
        """Record the handshakes of the coming rising edge (the design was evaluated with the clock low)."""
        if len(self.reads) < MAX_OUTSTANDING and self._in("arvalid"):
            self.reads.append([self._check_burst("read", "ar"), self._in("arlen") + 1, self.now + self.read_latency])
        if self._rvalid and self._in("rready"):
            head = self.reads[0]
            head[0] += self.bus
            head[1] -= 1
            if not head[1]:
                self.reads.popleft()
        if len(self.writes) < MAX_OUTSTANDING and self._in("awvalid"):
            self.writes.append([self._check_burst("write", "aw"), self._in("awlen") + 1])
        if self._wready and self._in("wvalid"):
            self._write_beat()
        if self._bvalid and self._in("bready"):
            self.responses.popleft()
        self.now += 1

    def busy(self) -> bool:
        """Whether any burst or write response is in flight."""
        return bool(self.reads or self.writes or self.responses)

    def _check_burst(self, direction: str, channel: str) -> int:
        addr = self._in(f"{channel}addr")
        size, burst = self._in(f"{channel}size"), self._in(f"{channel}burst")
        if (1 << size) != self.bus or burst != 1 or addr % self.bus:
            raise DramFaultError(f"AXI protocol: {direction} burst to {addr:#x} (size {size}, burst {burst}) must be "
                                 f"INCR, full bus width and bus-aligned")
        return addr

    def _write_beat(self) -> None:
        head = self.writes[0]
        addr = head[0]
        if addr + self.bus > len(self.mem):
            raise DramFaultError(f"DRAM write of the beat at byte address {addr:#x} lies outside the "
                                 f"{len(self.mem)}-byte DRAM image")
        data = self._in("wdata").to_bytes(self.bus, "little")
        strobe = self._in("wstrb")
        for k in range(self.bus):
            if strobe >> k & 1:
                self.mem[addr + k] = data[k]
        last = head[1] == 1
        if bool(self._in("wlast")) != last:
            raise DramFaultError(f"AXI protocol: WLAST {'missing on' if last else 'set before'} the last beat of "
                                 f"the write burst to {addr:#x}")
        head[0] += self.bus
        head[1] -= 1
        if not head[1]:
            self.writes.popleft()
            self.responses.append(self.now + self.write_latency)
