"""One sweep point end to end: hardware cost, compiled latency per layer, and the cached record.

:func:`evaluate_point` never raises for a point that fails in a way the user can act on: a
validation rule, a layer no tiling fits, a tool error (a :class:`~vdla_hw.errors.VdlaError`)
becomes a :class:`PointResult` with ``failure`` and ``reason``, and the sweep goes on.  Anything
else is a bug and propagates.

Results are cached as JSON under ``<cache>/dse/`` (:func:`vdla_hw.cache.cache_dir`), keyed by the
config digest, what is measured, whether Fmax was measured, and a hash of the code that produces
the numbers (RTL, simulators, VDLA compiler), so a change to any of them re-measures.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vdla_hw.cache import cache_dir
from vdla_hw.config import ConfigError, HwConfig
from vdla_hw.errors import DeviceFaultError, ToolchainError, UnsupportedError, VdlaError
from vdla_hw.hw_cost import HardwareCost, hardware_cost

from .sweep import SweepPoint
from .workloads import LayerTime, Workloads, layer_programs, layer_times

if TYPE_CHECKING:
    from vdla.runtime.pool.executor import JobExecutor

HW_TIMEOUT_S = 4 * 3600.0
"""A pool job's bound on lint + synthesis (+ place and route): a large config takes tens of minutes."""
RUN_TIMEOUT_S = 3600.0
REPO = Path(__file__).resolve().parents[2]
# The code whose change changes a result: the RTL, the hardware model, the simulators, the VDLA
# compiler and the runtime that runs its programs.
CODE_GLOBS = ("vdla_hw/*.py", "vdla_hw/fpga/*.py", "vdla_hw/rtl/*.sv", "simulator/**/*.py", "runtime/*.py",
              "runtime/backends/*.py", "compiler/vdla/**/*.py", "compiler/graph/**/*.py", "compiler/dse/workloads.py")


@dataclass(frozen=True)
class PointResult:
    """Everything the sweep reports for one point."""

    label: str
    config: str
    digest: str | None
    values: dict[str, str]
    failure: str | None = None
    """None for a measured point, else ``validation``, ``fit`` (a layer no tiling fits, or one the
    config cannot map), ``tool`` (lint, synthesis or place-and-route failed), ``device`` (the pool
    could not run a job) or ``program`` (a run faulted or differed from NumPy)."""
    reason: str | None = None
    hardware: HardwareCost | None = None
    layers: tuple[LayerTime, ...] = ()
    clock_mhz: float = 0.0
    seconds: float = 0.0
    cached: bool = False
    config_json: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def cycles(self) -> int:
        return sum(layer.cycles for layer in self.layers)

    @property
    def vdla_ms(self) -> float:
        """The VDLA kernels' time at the reported clock (Fmax when measured)."""
        assert self.hardware is not None
        return self.cycles / (self.hardware.fmax_mhz * 1e3)

    @property
    def host_ms(self) -> float:
        """The modeled time of a model's kernels left on the host (with their transfers); 0 for conv layers."""
        return sum(layer.host_ms for layer in self.layers)

    @property
    def latency_ms(self) -> float:
        """End-to-end latency: the VDLA's time plus the host's (a model's whole graph, modeled)."""
        return self.vdla_ms + self.host_ms

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        if self.ok:
            data.update(cycles=self.cycles, latency_ms=self.latency_ms, vdla_ms=self.vdla_ms, host_ms=self.host_ms,
                        layer_ns={lt.name: lt.cycles * 1e3 / self.hardware.fmax_mhz for lt in self.layers})  # type: ignore[union-attr]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PointResult:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        hw = known.get("hardware")
        known["hardware"] = HardwareCost(**hw) if hw else None
        known["layers"] = tuple(LayerTime(**lt) for lt in known.get("layers", ()))
        return cls(**known)


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of the sources that produce a result (see :data:`CODE_GLOBS`)."""
    h = hashlib.sha256()
    for pattern in CODE_GLOBS:
        for path in sorted(REPO.glob(pattern)):
            h.update(str(path.relative_to(REPO)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


def cache_path(cfg: HwConfig, workloads: Workloads, fmax: bool) -> Path:
    key = hashlib.sha256(f"{cfg.digest}|{workloads.key}|fmax={fmax}|{code_digest()}".encode()).hexdigest()[:20]
    return cache_dir() / "dse" / f"{key}.json"


def _failure_kind(exc: VdlaError) -> str:
    if isinstance(exc, ConfigError):
        return "validation"
    if isinstance(exc, UnsupportedError):  # a CapacityError (no tiling fits) or a layer the config cannot map
        return "fit"
    if isinstance(exc, ToolchainError):
        return "tool"
    if isinstance(exc, DeviceFaultError):  # the pool lost a worker, a job timed out
        return "device"
    return "program"


def _measure(cfg: HwConfig, workloads: Workloads, fmax: bool,
             executor: JobExecutor | None) -> tuple[HardwareCost, tuple[LayerTime, ...]]:
    """The hardware cost and the layer times, here or on the device pool: there the hardware job
    (``vdla_hw`` only) goes to a CPU worker and each compiled layer to a cycle-model worker."""
    if executor is None:
        # Layers first: one that fits no tiling fails the point in seconds, before any synthesis.
        layers = tuple(layer_times(workloads, cfg))
        return hardware_cost(cfg, fmax), layers
    from vdla.runtime.pool.tasks import submit_program

    hw = executor.submit(hardware_cost, cfg.to_dict(), fmax, device_kind="cpu", timeout_s=HW_TIMEOUT_S)
    try:
        runs = [(lp, None if lp.program is None else submit_program(executor, lp.program, "cycle",
                                                                    timeout_s=RUN_TIMEOUT_S))
                for lp in layer_programs(workloads, cfg)]
        layers = tuple(lp.timed(None if future is None else future.result(), cfg) for lp, future in runs)
    except BaseException:
        hw.cancel()
        raise
    return hw.result(), layers


def evaluate_point(point: SweepPoint, workloads: Workloads, fmax: bool = False, use_cache: bool = True,
                   executor: JobExecutor | None = None) -> PointResult:
    """Measure one point (or read its cached result); a user-actionable failure is returned, not raised.
    With ``executor`` (a device pool's) the tools and simulations run on its workers."""
    values = dict(point.values)
    if point.config is None:
        return PointResult(point.label, "-", None, values, "validation", point.error)
    cfg = point.config
    path = cache_path(cfg, workloads, fmax)
    if use_cache and path.exists():
        hit = PointResult.from_dict(json.loads(path.read_text()))
        return replace(hit, label=point.label, values=values, config=cfg.name, cached=True)
    t0 = time.perf_counter()
    base = PointResult(point.label, cfg.name, cfg.digest, values, clock_mhz=cfg.clock_mhz, config_json=cfg.to_dict())
    try:
        hw, layers = _measure(cfg, workloads, fmax, executor)
    except VdlaError as exc:
        result = replace(base, failure=_failure_kind(exc), reason=f"{exc}" + (f" (hint: {exc.hint})" if exc.hint else ""),
                         seconds=round(time.perf_counter() - t0, 1))
        if result.failure in ("tool", "device"):  # a missing tool, a lost worker may work next time: not cached
            return result
    else:
        result = replace(base, hardware=hw, layers=layers, seconds=round(time.perf_counter() - t0, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{time.time_ns()}.tmp")
    tmp.write_text(json.dumps(result.to_dict(), indent=1))
    tmp.replace(path)
    return result
