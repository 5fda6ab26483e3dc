"""The ``fsim`` backend: the bit-exact functional simulator."""

from __future__ import annotations

from typing import ClassVar

from simulator.checks import check_opcodes
from simulator.fsim import DEFAULT_MAX_STEPS, run_fsim

from runtime.backends import BackendOption
from runtime.program import Program
from runtime.result import RunResult


class FsimBackend:
    """Runs a program on :func:`simulator.fsim.run_fsim`: no timing, checks the token protocol and bounds."""

    name: ClassVar[str] = "fsim"
    OPTIONS: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption("--max-steps", "max_steps", "watchdog: most instructions to execute", "int", DEFAULT_MAX_STEPS, "N"),
    )

    def run(self, program: Program, *, max_steps: int = DEFAULT_MAX_STEPS) -> RunResult:
        check_opcodes(program.dram, program.insn_addr, program.insn_count)
        result = run_fsim(program.config, program.instructions, program.dram, max_steps=max_steps)
        return RunResult(self.name, program, result.dram, result.counters, None, {"tokens_left": result.tokens_left})
