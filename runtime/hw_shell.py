"""``vdla hw shell``: the Verilated accelerator (or any RTL module) at signal level, from Python.

:class:`HwShell` holds a pyverilator model of a design (built through
:mod:`vdla_hw.pyverilator_adapter`, cached) and drives its clock from Python: peek and poke
any port or internal signal by its dotted hierarchical name (``done``,
``u_load.u_gate.state``, ``u_probe.dbg_tok_l2c``), step N cycles, and -- on ``vdla_top`` --
serve its AXI master from a Python DRAM model (:class:`vdla_hw.harness.py_dram.PinAxiDram`),
write the control registers over AXI-lite pin by pin (:mod:`vdla_hw.regmap`), load a
:class:`vdla.runtime.program.Program`, run it to FINISH under a watchdog and print what every
module and queue is doing (:mod:`vdla_hw.harness.hang`).

It is for interactive debugging: every cycle crosses into Python several dozen times
(~thousands of cycles per second).  The ``rtl`` backend (a C++ clock loop) runs programs.
"""

from __future__ import annotations

import difflib
import time
from pathlib import Path

import numpy as np

from vdla.runtime.backends.rtl import RtlTimeoutError
from vdla.runtime.program import Program
from vdla.simulator.errors import DeadlockError
from vdla_hw import regmap
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import UsageError
from vdla_hw.harness.build import PROBE_SOURCES, TOP
from vdla_hw.harness.hang import describe_machine, describe_modules
from vdla_hw.harness.py_dram import PinAxiDram
from vdla_hw.harness.sim import DramLatency
from vdla_hw import pyverilator_adapter
from vdla_hw.pyverilator_adapter import build
from vdla_hw.rtl_build import RTL_MODULES, build_dir, module_path, rtl_sources

PROBE = "u_probe"
"""Instance name of the debug probe bound into ``vdla_top`` (vdla_debug_bind.sv)."""
AXIL_TIMEOUT = 1000
"""Cycles an AXI-lite transfer may take (as the C++ harness)."""
STALL_CHECK = 256
"""Cycles between two looks of :meth:`HwShell.run`'s stall detector."""
STALL_CYCLES = 4096
"""Cycles without any movement after which :meth:`HwShell.run` reports a deadlock."""
EXECUTING = 2
"""``dbg_<module>_state`` of a module whose executor runs."""


class HwShell:
    """One design under pyverilator, clocked from Python.  ``top`` is a module of :data:`RTL_MODULES`."""

    def __init__(self, cfg: HwConfig | str = "tiny", top: str = TOP) -> None:
        if top not in RTL_MODULES:
            raise UsageError(f"no RTL module {top!r}", hint=f"choose one of: {', '.join(RTL_MODULES)}")
        self.cfg = load_config(cfg)
        self.top = top
        sources = rtl_sources(self.cfg)
        extra = list(PROBE_SOURCES) if top == TOP else []  # the probe binds into vdla_top only
        others = [s for s in sources if s != module_path(top)] + extra
        # The adapter generates the wrapper: a change to it must rebuild.
        folder = build_dir(self.cfg, f"pyverilator-{top}", sources + extra + [Path(pyverilator_adapter.__file__)])
        self.model = build(module_path(top), others, folder)
        self.model.auto_eval = False  # the clock is ours: evaluate once per half cycle, not per poke
        self._signals = self._index_signals()
        self.cycle = 0
        self.program: Program | None = None
        self.dram: PinAxiDram | None = None
        if top == TOP:
            lat = DramLatency.of(self.cfg)
            self.dram = PinAxiDram(self, self.cfg.bus_bytes, lat.read, lat.write)
        if "rst_n" in self._signals:  # combinational modules (vdla_lut_mul) have no reset
            self.reset()

    # ---- signals ----------------------------------------------------------------------------
    def _index_signals(self) -> dict[str, object]:
        """Dotted name -> pyverilator Signal; ports win over the internal copies Verilator keeps of them."""
        import pyverilator.pyverilator as pv  # type: ignore[import-untyped]

        found: dict[str, object] = {}
        for name, width in self.model.inputs:
            found[name] = pv.Input(self.model, name, width)
        for name, width in self.model.outputs:
            found[name] = pv.Output(self.model, name, width)
        for member, width in self.model.internal_signals:
            sig = pv.InternalSignal(self.model, member, width)
            found.setdefault(".".join(sig.modular_name), sig)
        return found

    def signals(self, pattern: str = "") -> list[str]:
        """Names of every signal containing ``pattern`` (all by default), sorted."""
        return sorted(n for n in self._signals if pattern in n)

    def _signal(self, name: str):  # type: ignore[no-untyped-def]
        sig = self._signals.get(name)
        if sig is None:
            last = name.rsplit(".", 1)[-1]
            near = difflib.get_close_matches(name, self._signals, n=6, cutoff=0.6)
            near += [n for n in sorted(self._signals) if n.rsplit(".", 1)[-1] == last and n not in near][:6]
            names = sorted(self._signals)
            listed = (f"similar names: {', '.join(near)}" if near else
                      f"none is similar; its {len(names)} signals include: {', '.join(names[:12])}")
            raise UsageError(f"{self.top} has no signal {name!r}; {listed}",
                             hint="list names with signals('part of a name'); hierarchy levels are separated by '.'")
        return sig

    def peek(self, name: str) -> int:
        """The current value of signal ``name`` (a port or a dotted internal name)."""
        return int(self._signal(name).value)

    def poke(self, name: str, value: int) -> None:
        """Set signal ``name``; it takes effect at the next evaluation (:meth:`step`, :meth:`eval`).

        An internal register poked here keeps the value until the design next writes it.
        """
        sig = self._signal(name)
        if value < 0 or value >> sig.width:
            raise UsageError(f"{value} does not fit the {sig.width}-bit signal {name!r}",
                             hint=f"give a value in [0, {(1 << sig.width) - 1}]")
        if sig.width > 64:
            self.model._write_words(sig.verilator_name, (sig.width + 31) // 32, value)
        elif sig.width > 32:
            self.model._write_64(sig.verilator_name, value)
        else:
            self.model._write_32(sig.verilator_name, value)

    def eval(self) -> None:
        """Evaluate the design with the current inputs (no clock edge)."""
        self.model.eval()

    # ---- clock ------------------------------------------------------------------------------
    def step(self, cycles: int = 1) -> int:
        """Clock ``cycles`` cycles (the DRAM model answers on ``vdla_top``); returns the cycle count."""
        if "clk" not in self._signals:
            raise UsageError(f"{self.top} has no clk input to step", hint="poke its inputs and call eval()")
        for _ in range(cycles):
            self._settle()
            if self.dram is not None:
                self.dram.sample()
            self.poke("clk", 1)
            self.model.eval()
            self.cycle += 1
        return self.cycle

    def _settle(self) -> None:
        """This cycle's DRAM outputs, then evaluate with the clock low (ready/valid are current)."""
        if self.dram is not None:
            self.dram.drive()
        self.poke("clk", 0)
        self.model.eval()

    def reset(self, cycles: int = 8) -> None:
        """Hold ``rst_n`` low for ``cycles`` cycles (DRAM contents are kept)."""
        if "rst_n" not in self._signals:
            raise UsageError(f"{self.top} has no rst_n input to reset")
        if self.top == TOP:
            self._idle_axil()
        self.poke("rst_n", 0)
        dram, self.dram = self.dram, None  # the DRAM model stays out of reset cycles
        self.step(cycles)
        self.dram = dram
        self.poke("rst_n", 1)
        if self.dram is not None:
            self.dram.reset()

    # ---- vdla_top: registers, DRAM, programs ------------------------------------------------
    def _need_top(self, what: str) -> PinAxiDram:
        if self.dram is None:
            raise UsageError(f"{what} needs the accelerator; this shell holds {self.top}",
                             hint=f"start the shell with --top {TOP}")
        return self.dram

    def _idle_axil(self) -> None:
        for name, value in (("awvalid", 0), ("wvalid", 0), ("bready", 1), ("arvalid", 0), ("rready", 1)):
            self.poke(f"s_axil_{name}", value)

    def _wait(self, condition: str, what: str) -> None:
        """Clock until ``condition`` (a port) is high in the settled cycle, then through that edge."""
        for _ in range(AXIL_TIMEOUT):
            self._settle()
            if self.peek(condition):
                self.step()
                return
            self.step()
        raise RtlTimeoutError(f"{what} got no {condition} in {AXIL_TIMEOUT} cycles")

    def write_reg(self, name: str, value: int) -> None:
        """An AXI-lite write of register ``name`` (:mod:`vdla_hw.regmap`), pin by pin."""
        self._need_top("write_reg")
        self.poke("s_axil_awaddr", regmap.offset(name))
        self.poke("s_axil_wdata", value)
        self.poke("s_axil_wstrb", 0xF)
        self.poke("s_axil_bready", 0)
        # The address and data channels may complete in different cycles.
        pending = {"aw": True, "w": True}
        self.poke("s_axil_awvalid", 1)
        self.poke("s_axil_wvalid", 1)
        for _ in range(AXIL_TIMEOUT):
            self._settle()
            fired = [ch for ch in pending if self.peek(f"s_axil_{ch}ready")]
            self.step()
            for ch in fired:
                del pending[ch]
                self.poke(f"s_axil_{ch}valid", 0)
            if not pending:
                break
        else:
            raise RtlTimeoutError(f"AXI-lite write of {name} was not accepted in {AXIL_TIMEOUT} cycles")
        self.poke("s_axil_bready", 1)
        self._wait("s_axil_bvalid", f"AXI-lite write of {name}")
        self._idle_axil()

    def read_reg(self, name: str) -> int:
        """An AXI-lite read of register ``name``, pin by pin."""
        self._need_top("read_reg")
        self.poke("s_axil_araddr", regmap.offset(name))
        self.poke("s_axil_arvalid", 1)
        self.poke("s_axil_rready", 0)
        self._wait("s_axil_arready", f"AXI-lite read of {name}")
        self.poke("s_axil_arvalid", 0)
        self.poke("s_axil_rready", 1)
        for _ in range(AXIL_TIMEOUT):
            self._settle()
            if self.peek("s_axil_rvalid"):
                value = self.peek("s_axil_rdata")
                self.step()
                self._idle_axil()
                return value
            self.step()
        raise RtlTimeoutError(f"AXI-lite read of {name} got no data in {AXIL_TIMEOUT} cycles")

    def load(self, program: Program | str | Path) -> Program:
        """Put ``program`` (a Program or a saved ``.vdla`` program file) into DRAM; :meth:`start` runs it."""
        dram = self._need_top("load")
        if not isinstance(program, Program):
            program = Program.load(program, self.cfg)
        elif program.config != self.cfg:
            raise UsageError(f"the program is for config {program.config.name!r}, this shell holds {self.cfg.name!r}",
                             hint=f"start the shell with --config {program.config.name}")
        dram.load(program.dram)
        self.program = program
        return program

    def start(self) -> None:
        """Write the DRAM window (the program's image), INSN_ADDR, INSN_COUNT and CONTROL.start for the
        loaded program (as the board driver)."""
        if self.program is None:
            raise UsageError("no program is loaded", hint="call load(program) first")
        self.write_reg("WINDOW_BASE", 0)
        self.write_reg("WINDOW_LIMIT", self.program.dram.size)
        self.write_reg("INSN_ADDR", self.program.insn_addr)
        self.write_reg("INSN_COUNT", self.program.insn_count)
        self.write_reg("CONTROL", regmap.CONTROL_START)

    def run(self, max_cycles: int = 200_000, max_seconds: float = 600.0) -> int:
        """Clock until ``done`` (FINISH retired); returns the design's CYCLES register.

        Watchdog: :class:`RtlTimeoutError` after ``max_cycles`` cycles or ``max_seconds``
        seconds, :class:`DeadlockError` when for :data:`STALL_CYCLES` cycles no module executed,
        no debug signal changed and DRAM was idle; both carry the :meth:`state` report.
        """
        dram = self._need_top("run")
        begin, deadline = self.cycle, time.monotonic() + max_seconds
        last, still = None, 0
        while not self.peek("done"):
            ran = self.cycle - begin
            if ran >= max_cycles or time.monotonic() > deadline:
                limit = f"{max_cycles:,} cycles" if ran >= max_cycles else f"{max_seconds:g} s"
                raise RtlTimeoutError(f"watchdog: done did not rise within {limit} (cycle {self.cycle:,})\n"
                                      f"{self.state()}")
            if ran and ran % STALL_CHECK == 0:
                debug = self.debug()
                executing = any(v == EXECUTING for k, v in debug.items() if k.endswith("_state"))
                moving = executing or dram.busy() or debug != last
                still, last = (0 if moving else still + STALL_CHECK), debug
                if still >= STALL_CYCLES:
                    insns = self.program.instructions if self.program is not None else ()
                    raise DeadlockError(f"the design stopped moving: for {STALL_CYCLES:,} cycles no module executed, "
                                        f"no token or command moved and DRAM was idle (cycle {self.cycle:,})\n"
                                        f"{self.state()}", describe_modules(insns, debug), debug)
            self.step()
        return (self.read_reg("CYCLES_HI") << 32) | self.read_reg("CYCLES_LO")

    def read_dram(self, offset: int = 0, nbytes: int | None = None) -> np.ndarray:
        """A copy of DRAM bytes from ``offset`` (default: to the end)."""
        dram = self._need_top("read_dram")
        end = len(dram.mem) if nbytes is None else offset + nbytes
        return np.frombuffer(bytes(dram.mem[offset:end]), dtype=np.uint8).copy()

    def read(self, buffer: str) -> np.ndarray:
        """Named buffer of the loaded program, read from the design's DRAM."""
        if self.program is None:
            raise UsageError("no program is loaded", hint="call load(program) first")
        return self.program.read(buffer, self.read_dram(0, self.program.dram.size))

    def debug(self) -> dict[str, int]:
        """The debug probe's ``dbg_*`` signals (without the prefix)."""
        prefix = f"{PROBE}.dbg_"
        return {n[len(prefix):]: self.peek(n) for n in self._signals if n.startswith(prefix)}

    def state(self) -> str:
        """What fetch, load, compute and store are doing and what every queue holds."""
        self._need_top("state")
        insns = self.program.instructions if self.program is not None else ()
        head = f"cycle {self.cycle:,}; done={self.peek('done')}"
        return head + "\n" + describe_machine(insns, self.debug(), self.cfg.cmd_queue_depth, self.cfg.dep_queue_depth)
