"""Counters of the cycle model and the summary derived from them.

Units bump :class:`UnitCounters` while the simulation runs; :func:`summarize`
turns them, the DRAM counters and the work counters of the semantics
(:class:`vdla.simulator.counters.Counters`, the same ones fsim reports) into a frozen
:class:`CycleStats` once the program finished.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from vdla_hw.config import HwConfig
from vdla_hw.isa import Opcode


@dataclass
class UnitCounters:
    """Where one unit's cycles went; whatever is not booked here was idle time."""

    instructions: int = 0
    busy: int = 0
    """Cycles doing work: decoding, moving data beats, GEMM/ALU iterations, SRAM padding writes."""
    wait_token: int = 0
    """Cycles blocked popping a dependency token that was not there yet."""
    wait_queue_empty: int = 0
    """Cycles starved: the unit's command queue was empty."""
    wait_queue_full: int = 0
    """Cycles blocked pushing into a full queue (a dependency FIFO, or a command queue for fetch)."""
    wait_dram: int = 0
    """Cycles waiting for DRAM: latency plus arbitration behind other units' bursts."""


@dataclass(frozen=True)
class UnitStats:
    instructions: int
    busy: int
    wait_token: int
    wait_queue_empty: int
    wait_queue_full: int
    wait_dram: int
    idle: int

    def fraction(self, name: str, cycles: int) -> float:
        return getattr(self, name) / cycles if cycles else 0.0


@dataclass(frozen=True)
class CycleStats:
    """Timing summary of one run of the cycle model (all durations in accelerator cycles)."""

    cycles: int
    clock_mhz: float
    seconds: float
    instructions: int
    by_opcode: dict[str, int]
    units: dict[str, UnitStats]
    macs: int
    macs_per_cycle: int
    gemm_utilization: float
    """MACs / (cycles x peak MACs per cycle)."""
    dram_bytes_read: int
    dram_bytes_written: int
    dram_bytes_by_unit: dict[str, int]
    dram_bytes_per_cycle: float
    dram_gbytes_per_s: float
    dram_bus_utilization: float
    """Fraction of cycles the busier DRAM data channel (read or write) carried a beat."""
    compute_bound_cycles: int
    """Cycles the compute core needs at its peak rate: GEMM iterations + ALU iterations x II."""
    memory_bound_cycles: int
    """Bus-width cycles of the busier direction (bytes read or bytes written / bus bytes per cycle,
    rounded up): AXI reads and writes have separate data channels."""
    roofline_cycles: int
    """max(compute_bound_cycles, memory_bound_cycles): no schedule of this program is faster."""
    roofline_fraction: float
    """roofline_cycles / cycles: how close the run came to its bound."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CycleStats":
        """Inverse of :meth:`to_dict`."""
        units = {name: UnitStats(**u) for name, u in data["units"].items()}
        return cls(**{**data, "units": units})


def summarize(
    cfg: HwConfig,
    cycles: int,
    units: dict[str, UnitCounters],
    work: dict[str, int],
    dram_bytes_read: int,
    dram_bytes_written: int,
    dram_bytes_by_unit: dict[str, int],
    dram_busy_cycles: int,
) -> CycleStats:
    """Freeze the counters of a finished run into :class:`CycleStats`."""
    unit_stats = {
        name: UnitStats(
            instructions=c.instructions,
            busy=c.busy,
            wait_token=c.wait_token,
            wait_queue_empty=c.wait_queue_empty,
            wait_queue_full=c.wait_queue_full,
            wait_dram=c.wait_dram,
            idle=max(0, cycles - c.busy - c.wait_token - c.wait_queue_empty - c.wait_queue_full - c.wait_dram),
        )
        for name, c in units.items()
    }
    dram_bytes = dram_bytes_read + dram_bytes_written
    macs = work["macs"]
    copies = work["uop_iters.alu_copy"]
    compute_bound = (work["uop_iters.gemm"] + (work["uop_iters.alu"] - copies) * cfg.timing.alu_ii
                     + copies * cfg.timing.alu_copy_ii)
    memory_bound = -(-max(dram_bytes_read, dram_bytes_written) // cfg.bus_bytes)
    roofline = max(compute_bound, memory_bound)
    seconds = cycles / (cfg.clock_mhz * 1e6)
    return CycleStats(
        cycles=cycles,
        clock_mhz=cfg.clock_mhz,
        seconds=seconds,
        instructions=work["instructions"],
        by_opcode={op.name: work[f"insn.{op.name}"] for op in Opcode},
        units=unit_stats,
        macs=macs,
        macs_per_cycle=cfg.macs_per_cycle,
        gemm_utilization=macs / (cycles * cfg.macs_per_cycle) if cycles else 0.0,
        dram_bytes_read=dram_bytes_read,
        dram_bytes_written=dram_bytes_written,
        dram_bytes_by_unit=dict(dram_bytes_by_unit),
        dram_bytes_per_cycle=dram_bytes / cycles if cycles else 0.0,
        dram_gbytes_per_s=dram_bytes / seconds / 1e9 if cycles else 0.0,
        dram_bus_utilization=dram_busy_cycles / cycles if cycles else 0.0,
        compute_bound_cycles=compute_bound,
        memory_bound_cycles=memory_bound,
        roofline_cycles=roofline,
        roofline_fraction=roofline / cycles if cycles else 0.0,
    )


_COLUMNS = ("busy", "wait_token", "wait_queue_empty", "wait_queue_full", "wait_dram", "idle")


def format_stats(stats: CycleStats) -> str:
    """A human-readable report of a run, as printed by ``vdla sim --backend cycle``."""
    lines = [
        f"cycles            {stats.cycles:,}  ({stats.seconds * 1e6:,.2f} us at {stats.clock_mhz:g} MHz)",
        f"instructions      {stats.instructions:,}  "
        + " ".join(f"{k}={v}" for k, v in sorted(stats.by_opcode.items())),
        f"GEMM utilization  {stats.gemm_utilization:.1%}  ({stats.macs:,} MACs, peak {stats.macs_per_cycle}/cycle)",
        f"DRAM              {stats.dram_bytes_read:,} B read, {stats.dram_bytes_written:,} B written, "
        f"{stats.dram_bytes_per_cycle:.2f} B/cycle ({stats.dram_gbytes_per_s:.3f} GB/s), "
        f"bus busy {stats.dram_bus_utilization:.1%}",
        f"roofline          {stats.roofline_cycles:,} cycles (compute {stats.compute_bound_cycles:,}, "
        f"memory {stats.memory_bound_cycles:,}); achieved {stats.roofline_fraction:.1%} of the bound",
        "",
        f"{'unit':<8} {'insns':>7} {'busy':>8} {'token':>8} {'q-empty':>8} {'q-full':>8} {'dram':>8} {'idle':>8}",
    ]
    for name, u in stats.units.items():
        pct = " ".join(f"{u.fraction(k, stats.cycles):>8.1%}" for k in _COLUMNS)
        lines.append(f"{name:<8} {u.instructions:>7} {pct}")
    return "\n".join(lines)
