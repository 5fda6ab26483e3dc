"""The ``fsim`` backend: the bit-exact functional simulator."""

from __future__ import annotations

from typing import ClassVar

from vdla.simulator.checks import check_opcodes
from vdla.simulator.fsim import DEFAULT_MAX_STEPS, run_fsim
from vdla.simulator.window import Window, check_fetch_window, parse_window, resolve_window

from vdla.runtime.backends import WINDOW_OPTION, BackendOption
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult


class FsimBackend:
    """Runs a program on :func:`vdla.simulator.fsim.run_fsim`: no timing, checks the token protocol and bounds."""

    name: ClassVar[str] = "fsim"
    OPTIONS: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("--max-steps", "max_steps", "watchdog: most instructions to execute", "int", DEFAULT_MAX_STEPS, "N"),
        WINDOW_OPTION,
    )

    def run(self, program: Program, *, max_steps: int = DEFAULT_MAX_STEPS,
            window: str | Window | None = None) -> RunResult:
        win = resolve_window(parse_window(window) if isinstance(window, str) else window, program.dram.size)
        check_fetch_window(program.insn_addr, program.insn_count, win)
        check_opcodes(program.dram, program.insn_addr, program.insn_count)
        result = run_fsim(program.config, program.instructions, program.dram, max_steps=max_steps, window=win)
        return RunResult(self.name, program, result.dram, result.counters, None, {"tokens_left": result.tokens_left})
