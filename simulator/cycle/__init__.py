"""The cycle-level model of VDLA: timing, utilization, stalls and timelines.

It runs on a small discrete-event kernel (``kernel.py``) with SimPy's scheduling order.

One module per hardware unit (``fetch``, ``load``, ``compute``, ``store``) plus
the ``dma`` engines, the shared ``dram`` channels and the ``queues``; :func:`run_cycle`
assembles and runs them.  The timing mirrors the RTL's structure (``docs/rtl.md``,
"Instruction timing" and "Calibration").  Memory effects come from :mod:`vdla.simulator.semantics`, so the result
is always the same as the functional simulator's.
"""

from vdla.simulator.cycle.machine import CycleResult, Watchdog, run_cycle
from vdla.simulator.cycle.stats import CycleStats, UnitStats, format_stats
from vdla.simulator.cycle.trace import Timeline, chrome_trace, write_chrome_trace

__all__ = [
    "CycleResult",
    "CycleStats",
    "Timeline",
    "UnitStats",
    "Watchdog",
    "chrome_trace",
    "format_stats",
    "run_cycle",
    "write_chrome_trace",
]
