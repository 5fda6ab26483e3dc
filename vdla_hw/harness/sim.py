"""Python side of the Verilator harness: load DRAM, start, run in C++, read back.

:class:`RtlSim` wraps one harness instance (one Verilated ``vdla_top`` with its DRAM
model).  The clock loop runs in C++ (:meth:`RtlSim.run`); Python only crosses the
ctypes boundary a handful of times per program.  Pin-level access (:meth:`peek`,
:meth:`poke`, :meth:`eval_clock`) exists for the per-cycle Python baseline of
``bench/rtl_speed.py`` and for debugging.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import numpy as np

from vdla_hw import regmap
from vdla_hw.config import HwConfig, load_config
from vdla_hw.harness.build import harness_library
from vdla_hw.errors import DeviceFaultError

_LIBS: dict[Path, ctypes.CDLL] = {}

DEBUG_PREFIX = "dbg_"
"""Outputs of ``vdla_top`` whose name starts with this are reported by :meth:`RtlSim.debug`."""


class RunStatus(IntEnum):
    """What :meth:`RtlSim.run` stopped on."""

    DONE = 0
    CYCLE_LIMIT = 1
    ERROR = 2


class HarnessError(DeviceFaultError):
    """The harness reported a problem: a DRAM access outside the image, an AXI protocol
    violation, or a control register that did not answer."""


_ASSERTION_RE = re.compile(r"Assertion failed in (?P<path>\S+?)\.(?P<label>a_\w+): (?P<module>\w+) (?P=label): (?P<text>.*)")
_CYCLE_RE = re.compile(r"^RTL assertion failed at cycle (\d+)")


class RtlAssertionError(HarnessError):
    """An assertion of the RTL (docs/rtl.md, "Assertions") failed during the simulation.

    ``assertion`` is its label (e.g. ``a_fifo_overflow``), ``module`` the module that
    declares it and ``instance`` the hierarchical path of the instance that fired.
    """

    def __init__(self, message: str) -> None:
        match = _ASSERTION_RE.search(message)
        cycle = _CYCLE_RE.match(message)
        self.assertion = match["label"] if match else None
        self.module = match["module"] if match else None
        # Verilator names the model before the top module ("vdla_top.vdla_top.u_load"): drop the first.
        self.instance = match["path"].split(".", 1)[-1] if match else None
        if match:
            at = f" at cycle {cycle[1]}" if cycle else ""
            message = (f"RTL assertion {self.assertion} of {self.module} failed in {self.instance}{at}: "
                       f"{match['text'].strip()}")
        super().__init__(
            message.strip(),
            hint="the RTL broke an invariant it relies on (a design bug, or a program outside what the design "
                 "supports); rerun with --fst OUT.fst and look at the cycle named above (docs/rtl.md, \"Assertions\")",
        )


@dataclass(frozen=True)
class DramLatency:
    """Cycles of the harness's DRAM model: AR handshake -> first read beat, last write beat -> B."""

    read: int
    write: int

    @staticmethod
    def of(cfg: HwConfig) -> "DramLatency":
        """The cycle model's ``timing.dram_latency`` for both directions (at least one cycle)."""
        lat = max(1, cfg.timing.dram_latency)
        return DramLatency(lat, lat)


def _load(path: Path) -> ctypes.CDLL:
    lib = _LIBS.get(path)
    if lib is not None:
        return lib
    lib = ctypes.CDLL(str(path))
    vp, u8p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8)
    u32, u64, i32 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int
    sigs = {
        "vh_create": ([u32, u32, u32, ctypes.c_char_p], vp),
        "vh_destroy": ([vp], None),
        "vh_trace_window": ([vp, u64, u64], None),
        "vh_dram_load": ([vp, u8p, u64, u64], None),
        "vh_dram_read": ([vp, u8p, u64, u64], i32),
        "vh_dram_resize": ([vp, u64], None),
        "vh_dram_write": ([vp, u8p, u64, u64], i32),
        "vh_reg_write": ([vp, u32, u32], i32),
        "vh_reg_read": ([vp, u32], ctypes.c_int64),
        "vh_run": ([vp, u64], i32),
        "vh_cycle": ([vp], u64),
        "vh_error": ([vp], ctypes.c_char_p),
        "vh_dram_bytes": ([vp, i32], u64),
        "vh_port_count": ([vp], i32),
        "vh_port_name": ([vp, i32], ctypes.c_char_p),
        "vh_peek": ([vp, i32], u64),
        "vh_poke": ([vp, i32, u64], None),
        "vh_poke_bytes": ([vp, i32, u8p, u32], None),
        "vh_peek_bytes": ([vp, i32, u8p, u32], None),
        "vh_eval_clock": ([vp, ctypes.c_uint8], None),
        "vh_coverage_write": ([vp, ctypes.c_char_p], i32),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    _LIBS[path] = lib
    return lib


def _u8ptr(a: np.ndarray) -> "ctypes._Pointer[ctypes.c_uint8]":
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))


class RtlSim:
    """One Verilated ``vdla_top`` with its DRAM model, built for ``cfg`` (cached).

    ``fst`` writes a waveform of the whole session to that path (the traced variant
    of the harness is built on first use).  ``latency`` defaults to the config's
    ``timing.dram_latency``.  ``coverage`` selects the variant with Verilator line and
    toggle coverage (see :meth:`write_coverage`); ``rtl_dir`` simulates the RTL module
    files of another folder (a modified copy of ``vdla_hw/rtl``); ``build_id`` is the
    ``vdla_top`` parameter BUILD_ID (what a bitstream's BUILD_ID register reads).
    """

    def __init__(self, cfg: HwConfig | str, *, fst: str | Path | None = None, latency: DramLatency | None = None,
                 coverage: bool = False, rtl_dir: str | Path | None = None, build_id: int = 0) -> None:
        self._h = None
        self.cfg = load_config(cfg)
        self.latency = latency or DramLatency.of(self.cfg)
        self.coverage = coverage
        self.library = harness_library(self.cfg, trace=fst is not None, coverage=coverage, rtl_dir=rtl_dir,
                                       build_id=build_id)
        """The shared library of this model (its build folder holds the Verilated sources)."""
        self._lib = _load(self.library)
        path = str(Path(fst).resolve()).encode() if fst is not None else None
        if fst is not None:
            Path(fst).resolve().parent.mkdir(parents=True, exist_ok=True)
        self._h = self._lib.vh_create(self.cfg.bus_bytes, self.latency.read, self.latency.write, path)
        self._check()
        self.ports = {self._lib.vh_port_name(self._h, k).decode(): k for k in range(self._lib.vh_port_count(self._h))}
        self.dram_size = 0

    def write_coverage(self, path: str | Path) -> Path:
        """Write the coverage points hit so far (Verilator's ``coverage.dat`` format) to ``path``."""
        if not self.coverage:
            raise ValueError("this simulation was built without coverage; create it with coverage=True")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self._lib.vh_coverage_write(self._h, str(path).encode()) != 0:
            raise HarnessError(f"the harness library was built without coverage support; cannot write {path}")
        return path

    # ---- lifetime -----------------------------------------------------------------------
    def close(self) -> None:
        """Free the model (and close the waveform, if any)."""
        if getattr(self, "_h", None):
            self._lib.vh_destroy(self._h)
            self._h = None

    def __enter__(self) -> "RtlSim":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # ---- DRAM ---------------------------------------------------------------------------
    def load_dram(self, image: np.ndarray, size: int | None = None) -> None:
        """Replace DRAM with ``image`` zero-extended to ``size`` bytes (default: a whole
        number of bus beats, so the last row's final beat is inside DRAM)."""
        data = np.ascontiguousarray(image, dtype=np.uint8).reshape(-1)
        beat = self.cfg.bus_bytes
        size = size if size is not None else -(-data.size // beat) * beat
        if size < data.size:
            raise ValueError(f"DRAM size {size} is smaller than the {data.size}-byte image")
        self._lib.vh_dram_load(self._h, _u8ptr(data), data.size, size)
        self.dram_size = size

    def read_dram(self, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """A copy of ``nbytes`` DRAM bytes from ``offset`` (default: to the end)."""
        n = self.dram_size - offset if nbytes is None else nbytes
        out = np.empty(n, dtype=np.uint8)
        if self._lib.vh_dram_read(self._h, _u8ptr(out), offset, n):
            raise ValueError(f"DRAM bytes [{offset}, {offset + n}) lie outside the {self.dram_size}-byte DRAM")
        return out

    def resize_dram(self, size: int) -> None:
        """Grow (or shrink) DRAM to ``size`` bytes, keeping its contents (new bytes are zero)."""
        self._lib.vh_dram_resize(self._h, size)
        self.dram_size = size

    def write_dram(self, offset: int, data: np.ndarray) -> None:
        """Write ``data`` (bytes) into DRAM at ``offset``, as a host does through its cache."""
        buf = np.ascontiguousarray(data, dtype=np.uint8).reshape(-1)
        if self._lib.vh_dram_write(self._h, _u8ptr(buf), offset, buf.size):
            raise ValueError(f"DRAM bytes [{offset}, {offset + buf.size}) lie outside the {self.dram_size}-byte DRAM")

    @property
    def axi_bytes(self) -> tuple[int, int]:
        """Bytes the DRAM model has served on the bus: (read, written)."""
        return self._lib.vh_dram_bytes(self._h, 0), self._lib.vh_dram_bytes(self._h, 1)

    # ---- control registers --------------------------------------------------------------
    def write_reg(self, name: str, value: int) -> None:
        self.write_reg_at(regmap.offset(name), value)

    def read_reg(self, name: str) -> int:
        return self.read_reg_at(regmap.offset(name))

    def write_reg_at(self, offset: int, value: int) -> None:
        """One AXI-lite write of the 32-bit ``value`` to register byte ``offset``."""
        self._lib.vh_reg_write(self._h, offset, value)
        self._check()

    def read_reg_at(self, offset: int) -> int:
        """One AXI-lite read of the register at byte ``offset``."""
        value = self._lib.vh_reg_read(self._h, offset)
        if value < 0:
            self._check()
        return int(value)

    def check_config(self, cfg: HwConfig) -> None:
        """Read CONFIG_ID, as a driver does after reset, and raise a DeviceFaultError naming
        both configs unless the design was generated for ``cfg`` (a program's config)."""
        regmap.check_config_id(self.read_reg("CONFIG_ID"), cfg)

    def start(self, insn_addr: int, insn_count: int, window: tuple[int, int] | None = None) -> None:
        """Write the DRAM address window (default: the whole DRAM), the instruction address
        and count, then the start bit."""
        base, limit = window if window is not None else (0, self.dram_size)
        self.write_reg("WINDOW_BASE", base)
        self.write_reg("WINDOW_LIMIT", limit)
        self.write_reg("INSN_ADDR", insn_addr)
        self.write_reg("INSN_COUNT", insn_count)
        self.write_reg("CONTROL", regmap.CONTROL_START)

    def rtl_cycles(self) -> int:
        """The design's cycle counter (start to done), read over AXI-lite."""
        lo = self.read_reg("CYCLES_LO")
        return (self.read_reg("CYCLES_HI") << 32) | lo

    # ---- running ------------------------------------------------------------------------
    def run(self, max_cycles: int) -> RunStatus:
        """Clock the design in C++ until done, ``max_cycles`` cycles, or a DRAM/AXI error."""
        status = RunStatus(self._lib.vh_run(self._h, max_cycles))
        if status == RunStatus.ERROR:
            self._check()
        return status

    @property
    def cycle(self) -> int:
        """Cycles clocked since the harness was created (reset and register accesses included)."""
        return int(self._lib.vh_cycle(self._h))

    def trace_window(self, start: int, end: int) -> None:
        """Write only cycles ``start <= cycle < end`` (counted like :attr:`cycle`) to the waveform."""
        if not 0 <= start < end:
            raise ValueError(f"waveform window [{start}, {end}) must be non-empty and non-negative")
        self._lib.vh_trace_window(self._h, start, end)

    def debug(self) -> dict[str, int]:
        """Current values of the design's ``dbg_*`` outputs (up to 64 bits each)."""
        return {name[len(DEBUG_PREFIX):]: int(self._lib.vh_peek(self._h, k))
                for name, k in self.ports.items() if name.startswith(DEBUG_PREFIX)}

    # ---- pin-level access (per-cycle Python path) -----------------------------------------
    def port(self, name: str) -> int:
        try:
            return self.ports[name]
        except KeyError:
            raise KeyError(f"vdla_top has no port {name!r}; ports: {sorted(self.ports)}") from None

    def peek(self, port: int) -> int:
        return self._lib.vh_peek(self._h, port)

    def poke(self, port: int, value: int) -> None:
        self._lib.vh_poke(self._h, port, value)

    def poke_bytes(self, port: int, data: bytes) -> None:
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        self._lib.vh_poke_bytes(self._h, port, buf, len(data))

    def peek_bytes(self, port: int, nbytes: int) -> bytes:
        buf = (ctypes.c_uint8 * nbytes)()
        self._lib.vh_peek_bytes(self._h, port, buf, nbytes)
        return bytes(buf)

    def eval_clock(self, clk: int) -> None:
        """Set the clock and evaluate the model (no DRAM model involved)."""
        self._lib.vh_eval_clock(self._h, clk)

    def _check(self) -> None:
        if not self._h:
            raise HarnessError("the harness could not be created")
        msg = self._lib.vh_error(self._h).decode()
        if msg.startswith("RTL assertion failed"):
            raise RtlAssertionError(msg)
        if msg:
            raise HarnessError(msg)
