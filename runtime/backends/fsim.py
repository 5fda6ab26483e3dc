"""The ``fsim`` backend: the bit-exact functional simulator."""

from __future__ import annotations

from typing import ClassVar

from simulator.checks import check_opcodes
from simulator.fsim import DEFAULT_MAX_STEPS, run_fsim
from simulator.window import Window, check_fetch_window, parse_window, resolve_window

from runtime.backends import WINDOW_OPTION, BackendOption
from runtime.program import Program
from runtime.result import RunResult


class FsimBackend:
    """Runs a program on :func:`simulator.fsim.run_fsim`: no timing, checks the token protocol and bounds."""

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
