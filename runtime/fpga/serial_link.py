"""The host's end of a LiteX UART bridge (UARTBone): 32-bit bus reads and writes over a serial port.

The wire protocol of LiteX's ``Stream2Wishbone``: a frame is a command byte (``0x01`` write, ``0x02``
read, incrementing address), a word count (1..255), the bus *word* address (byte address / 4) in
4 big-endian bytes, then -- for a write -- the words, each 4 big-endian bytes. A read answers with
the words. Writes are not acknowledged, so a burst of write frames streams at the line rate; reads
are not: the bridge drops bytes that arrive while it answers, so one read frame is in flight.

This module depends only on pyserial (and NumPy): it runs on a laptop without LiteX. The port may
be the board's USB serial port or the pseudo-terminal of the simulated SoC -- the same code drives
both.
"""

from __future__ import annotations

import contextlib
import errno
import time
from typing import Any

import numpy as np

from vdla_hw.errors import DeviceFaultError, ToolchainError, UsageError
from vdla_hw.progress import bar

CMD_WRITE = 0x01
CMD_READ = 0x02
MAX_WORDS = 255
"""Words per frame: the length field is one byte."""
PROGRESS_BYTES = 64 * 1024
"""Transfers at least this large show a progress bar."""
DEFAULT_TIMEOUT = 5.0


def _serial() -> Any:
    try:
        import serial  # type: ignore[import-untyped]
    except ImportError:
        raise ToolchainError("the ULX3S driver talks to the board over a serial port, and pyserial is not installed",
                             hint="pip install pyserial (or pip install 'vdla[ulx3s]')") from None
    return serial


class SerialLink:
    """A UARTBone link on ``port`` at ``baud``; ``timeout`` is the seconds a read may wait for the board."""

    def __init__(self, port: str, baud: int, *, timeout: float = DEFAULT_TIMEOUT, progress: bool = True) -> None:
        serial = _serial()
        self.port = port
        self.baud = baud
        self.timeout = timeout
        self.progress = progress
        self.bytes_sent = 0
        self.bytes_received = 0
        try:
            # exclusive: a second program on the port (litex_server, a terminal) would interleave frames
            self._ser = serial.Serial(port, baud, timeout=timeout, write_timeout=max(timeout, 30.0), exclusive=True)
        except serial.SerialException as exc:
            raise _port_error(port, exc) from None
        except ValueError as exc:
            raise UsageError(f"cannot open serial port {port} at {baud} baud: {exc}",
                             hint="give a baud the port supports (the bitstream's soc.json names the SoC's)") from None

    def close(self) -> None:
        """Close the port."""
        self._ser.close()

    def __enter__(self) -> SerialLink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drain(self, seconds: float = 0.15) -> None:
        """Wait out the bridge's 100 ms idle timeout (which resets a half-received frame of an
        earlier session) and drop whatever bytes arrived meanwhile."""
        time.sleep(seconds)
        self._ser.reset_input_buffer()

    # ---- words ---------------------------------------------------------------------------------
    def write_words(self, addr: int, words: np.ndarray, *, desc: str = "") -> None:
        """Write 32-bit ``words`` to the bus from byte address ``addr`` (4-aligned)."""
        words = np.ascontiguousarray(words, dtype=np.uint32)
        _check_addr(addr)
        with self._bar(words.size * 4, desc or "upload") as pbar:
            for start in range(0, words.size, MAX_WORDS):
                chunk = words[start:start + MAX_WORDS]
                frame = _header(CMD_WRITE, chunk.size, addr + 4 * start) + chunk.astype(">u4").tobytes()
                self._write(frame)
                pbar.update(chunk.size * 4)
        self._ser.flush()

    def read_words(self, addr: int, count: int, *, desc: str = "") -> np.ndarray:
        """Read ``count`` 32-bit words from byte address ``addr`` (4-aligned)."""
        _check_addr(addr)
        out = np.empty(count, dtype=np.uint32)
        # One frame in flight: the bridge's receiver has no FIFO and drops bytes that arrive while
        # it is answering, so the next read frame may only be sent once the previous answer is in.
        window = 1
        starts = list(range(0, count, MAX_WORDS))
        with self._bar(count * 4, desc or "download") as pbar:
            for i in range(0, len(starts), window):
                group = starts[i:i + window]
                self._write(b"".join(_header(CMD_READ, min(MAX_WORDS, count - s), addr + 4 * s) for s in group))
                for s in group:
                    n = min(MAX_WORDS, count - s)
                    out[s:s + n] = np.frombuffer(self._read(4 * n, addr + 4 * s), dtype=">u4")
                    pbar.update(4 * n)
        return out

    def write32(self, addr: int, value: int) -> None:
        """Write one 32-bit word."""
        self.write_words(addr, np.array([value & 0xFFFF_FFFF], dtype=np.uint32))

    def read32(self, addr: int) -> int:
        """Read one 32-bit word."""
        return int(self.read_words(addr, 1)[0])

    # ---- bytes ---------------------------------------------------------------------------------
    def write_bytes(self, addr: int, data: np.ndarray | bytes, *, desc: str = "") -> None:
        """Write ``data`` (a multiple of 4 bytes) at ``addr``; the bus is little-endian."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, bytes) else np.asarray(data, np.uint8)
        if raw.size % 4:
            raise ValueError(f"the bridge moves 32-bit words: {raw.size} bytes is not a multiple of 4")
        self.write_words(addr, raw.view("<u4"), desc=desc)

    def read_bytes(self, addr: int, nbytes: int, *, desc: str = "") -> np.ndarray:
        """Read ``nbytes`` (a multiple of 4) from ``addr``."""
        if nbytes % 4:
            raise ValueError(f"the bridge moves 32-bit words: {nbytes} bytes is not a multiple of 4")
        return self.read_words(addr, nbytes // 4, desc=desc).astype("<u4").view(np.uint8)

    # ---- plumbing ------------------------------------------------------------------------------
    def _bar(self, nbytes: int, desc: str) -> Any:
        return transfer_bar(nbytes, desc, self.progress)

    def _write(self, frame: bytes) -> None:
        serial = _serial()
        try:
            self._ser.write(frame)
        except serial.SerialTimeoutException:
            raise DeviceFaultError(f"the serial port {self.port} did not take data for {self._ser.write_timeout:g} s",
                                   hint="check the USB cable; unplug and replug the board") from None
        except serial.SerialException as exc:
            raise DeviceFaultError(f"writing to {self.port} failed: {exc}", hint="is the board still plugged in?") from None
        self.bytes_sent += len(frame)

    def _read(self, nbytes: int, addr: int) -> bytes:
        serial = _serial()
        try:
            data = self._ser.read(nbytes)
        except serial.SerialException as exc:
            raise DeviceFaultError(f"reading from {self.port} failed: {exc}", hint="is the board still plugged in?") from None
        self.bytes_received += len(data)
        if len(data) != nbytes:
            raise BoardNotAnsweringError(
                f"the board on {self.port} did not answer a read of {nbytes} bytes at {addr:#010x} within "
                f"{self.timeout:g} s (got {len(data)} bytes at {self.baud} baud)",
                hint="is the VDLA bitstream loaded (vdla fpga program --board ulx3s --bitstream DIR)? is this the "
                     "board's port (the FTDI's, e.g. /dev/ttyUSB0) and the bitstream's baud (soc.json)?")
        return data


def transfer_bar(nbytes: int, desc: str, enabled: bool = True) -> Any:
    """A progress bar (a context manager with ``update(n)``) over ``nbytes``; silent below
    :data:`PROGRESS_BYTES` or when not ``enabled``."""
    if not (enabled and nbytes >= PROGRESS_BYTES):
        return contextlib.nullcontext(_NoBar())
    return bar(total=nbytes, desc=desc, unit="B", unit_scale=True)


class _NoBar:
    """A bar that shows nothing (small transfers)."""

    def update(self, n: int) -> None:
        pass


class BoardNotAnsweringError(DeviceFaultError):
    """The serial port opened, but no UART bridge answered on it."""


def _header(cmd: int, count: int, addr: int) -> bytes:
    return bytes([cmd, count]) + (addr >> 2).to_bytes(4, "big")


def _check_addr(addr: int) -> None:
    if addr % 4 or not 0 <= addr < 1 << 34:
        raise ValueError(f"bus address {addr:#x} is not a 4-aligned 34-bit byte address")


def _port_error(port: str, exc: Exception) -> DeviceFaultError:
    """A clear error for a port that would not open: missing, busy or not permitted."""
    code = getattr(exc, "errno", None)
    text = str(exc)
    if code == errno.ENOENT or "No such file" in text:
        return DeviceFaultError(f"no serial port {port}: the ULX3S is not plugged in, or it is another port",
                                hint="plug the board's US1 port (the FTDI) in and look for it: ls /dev/ttyUSB* "
                                     "/dev/serial/by-id/ (macOS: /dev/cu.usbserial-*)")
    if code in (errno.EBUSY, errno.EAGAIN, errno.EWOULDBLOCK) or "exclusively lock" in text or "busy" in text.lower():
        return DeviceFaultError(f"the serial port {port} is busy: another program has it open",
                                hint="close it (a terminal, litex_server, another vdla) and try again")
    if code == errno.EACCES or "ermission" in text:
        return DeviceFaultError(f"no permission to open the serial port {port}",
                                hint="add yourself to its group (Linux: sudo usermod -aG dialout $USER, then log in "
                                     "again) or install the board's udev rule")
    return DeviceFaultError(f"cannot open the serial port {port}: {exc}", hint="check the port name and the cable")

