"""The ``cycle`` backend: the cycle-level model (its own discrete-event kernel) (timing, utilization, stalls, timeline)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from vdla.simulator.checks import check_opcodes
from vdla.simulator.window import Window, check_fetch_window, parse_window, resolve_window
from vdla.simulator.cycle import CycleStats, Watchdog, format_stats, run_cycle, write_chrome_trace
from vdla.simulator.cycle.plot import plot_gantt

from vdla.runtime.backends import WINDOW_OPTION, BackendOption
from vdla.runtime.program import Program
from vdla.runtime.result import RunResult

_DEFAULTS = Watchdog()


class CycleBackend:
    """Runs a program on :func:`vdla.simulator.cycle.run_cycle`.

    The memory result and counters are those of ``fsim``; ``cycles`` is the
    simulated cycle count and ``extra["stats"]`` the full
    :class:`~vdla.simulator.cycle.CycleStats` (per-unit busy/stall cycles, GEMM
    utilization, DRAM bandwidth, roofline).  ``trace`` writes a Chrome-trace JSON
    (open it in Perfetto), ``plot`` a Gantt-chart PNG.
    """

    name: ClassVar[str] = "cycle"
    OPTIONS: ClassVar[tuple[BackendOption, ...]] = (
        BackendOption(
            "--trace", "trace", "write a Chrome-trace JSON timeline (open in ui.perfetto.dev)", "str", None, "OUT.json"
        ),
        BackendOption("--plot", "plot", "write a Gantt chart of load/compute/store as a PNG", "str", None, "OUT.png"),
        BackendOption(
            "--max-cycles", "max_cycles", "watchdog: most simulated cycles", "int", _DEFAULTS.max_cycles, "N"
        ),
        BackendOption(
            "--max-seconds", "max_seconds", "watchdog: most wall-clock seconds", "float", _DEFAULTS.max_seconds, "S"
        ),
        WINDOW_OPTION,
    )

    def run(
        self,
        program: Program,
        *,
        trace: str | Path | None = None,
        plot: str | Path | None = None,
        max_cycles: int = _DEFAULTS.max_cycles,
        max_seconds: float = _DEFAULTS.max_seconds,
        window: str | Window | None = None,
    ) -> RunResult:
        watchdog = Watchdog(max_cycles=max_cycles, max_seconds=max_seconds)
        win = resolve_window(parse_window(window) if isinstance(window, str) else window, program.dram.size)
        check_fetch_window(program.insn_addr, program.insn_count, win)
        check_opcodes(program.dram, program.insn_addr, program.insn_count)
        result = run_cycle(
            program.config,
            program.instructions,
            program.dram,
            insn_addr=program.insn_addr,
            timeline=trace is not None or plot is not None,
            watchdog=watchdog,
            window=win,
        )
        stats = result.stats.to_dict()
        extra: dict[str, Any] = {"stats": stats, "tokens_left": result.tokens_left}
        if result.timeline is not None:
            if trace is not None:
                extra["trace"] = str(write_chrome_trace(result.timeline, trace, stats))
            if plot is not None:
                s = result.stats
                title = f"{program.config.name}: {s.cycles:,} cycles, GEMM utilization {s.gemm_utilization:.1%}"
                extra["plot"] = str(plot_gantt([(title, result.timeline)], plot))
        return RunResult(self.name, program, result.dram, result.counters, result.stats.cycles, extra)

    @staticmethod
    def describe_extra(result: RunResult) -> str:
        """The human-readable report ``vdla sim`` prints: where the cycles went, and the output files."""
        lines = [format_stats(CycleStats.from_dict(result.extra["stats"]))]
        lines += [f"{key}: {result.extra[key]}" for key in ("trace", "plot") if key in result.extra]
        lines.append("tokens left: " + " ".join(f"{q}={n}" for q, n in result.extra["tokens_left"].items()))
        return "\n".join(lines)
