"""Device kinds: what a pool worker offers, as Dask resources.

A job names one *device kind*; the worker side advertises the kinds it really has as Dask
resources, so the stock Dask scheduler places jobs (nothing project-specific runs there):

- ``cpu`` -- any CPU; ``cpu-<f1>+<f2>...`` -- a CPU with all LLVM features ``f1``, ``f2``
  (``cpu-avx2+fma``, ``cpu-avx512f``).  A worker advertises ``cpu`` and one resource
  ``cpu-<feature>`` per feature its CPU has, so a job needing several features asks for
  each of them and lands only on a host that has them all.
- ``vdla-fsim``, ``vdla-cycle`` -- the functional and cycle models (pure Python).
- ``vdla-rtl-<digest>`` -- the Verilated RTL of the config whose
  :attr:`~vdla_hw.config.HwConfig.digest` is ``<digest>``.
- ``fpga-<board>-<digest>`` -- a board loaded with that config's bitstream. A board worker
  (:mod:`vdla.runtime.pool.board`) advertises it once ``vdla fpga deploy`` has loaded and checked a
  bitstream; it is not a ``--device``.

On the command line a worker's device is written ``KIND[=N]`` (N concurrent jobs);
``vdla-rtl`` takes a config as ``@CONFIG`` (a preset name or a JSON path; default: the
``default`` preset), e.g. ``vdla-rtl@tiny=2``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vdla_hw.config import HwConfig, load_config, preset_names
from vdla_hw.errors import UsageError

SIM_KINDS = ("vdla-fsim", "vdla-cycle")
_BACKEND_OF = {"vdla-fsim": "fsim", "vdla-cycle": "cycle"}
_DIGEST = re.compile(r"[0-9a-f]{12}")
_FEATURE = re.compile(r"[a-z0-9][a-z0-9._-]*")
# The tuner names a CPU by its ISA (``cpu-avx512``, see vdla.compiler.autotune.task.HostInfo); where an
# ISA name is not itself an LLVM feature, it stands for the feature that defines it.
_ISA_FEATURE = {"avx512": "avx512f"}


class KindError(UsageError):
    """A device kind or device spec that cannot be parsed."""


def cpu_resources(kind: str) -> dict[str, float]:
    """The Dask resources a ``cpu``/``cpu-<features>`` job asks for (one unit of each)."""
    if kind == "cpu":
        return {"cpu": 1}
    features = kind[len("cpu-"):].split("+")
    bad = [f for f in features if not _FEATURE.fullmatch(f)]
    if bad or not features:
        raise KindError(f"bad CPU kind {kind!r}: write cpu-<feature>[+<feature>...] with LLVM feature names, "
                        "e.g. cpu-avx2+fma")
    return {"cpu": 1, **{f"cpu-{_ISA_FEATURE.get(f, f)}": 1 for f in features}}


def resources_for(kind: str) -> dict[str, float]:
    """The Dask resources (name -> amount) a job of device kind ``kind`` needs."""
    if kind == "cpu" or kind.startswith("cpu-"):
        return cpu_resources(kind)
    if kind in SIM_KINDS:
        return {kind: 1}
    m = re.fullmatch(r"vdla-rtl-([0-9a-f]+)|fpga-([a-z0-9_]+)-([0-9a-f]+)", kind)
    if m and _DIGEST.fullmatch(m.group(1) or m.group(3)):
        return {kind: 1}
    raise KindError(f"unknown device kind {kind!r}; kinds are cpu, cpu-<features>, vdla-fsim, vdla-cycle, "
                    "vdla-rtl-<config digest>, fpga-<board>-<config digest>")


def rtl_kind(cfg: HwConfig) -> str:
    """The device kind of the Verilated RTL of ``cfg``."""
    return f"vdla-rtl-{cfg.digest}"


def fpga_kind(board: str, cfg: HwConfig) -> str:
    """The device kind of board ``board`` loaded with ``cfg``'s bitstream."""
    return f"fpga-{board}-{cfg.digest}"


def backend_kind(backend: str, cfg: HwConfig, board: str | None = None) -> str:
    """The device kind that runs a program for ``cfg`` on runtime backend ``backend``."""
    if backend in ("fsim", "cycle"):
        return f"vdla-{backend}"
    if backend == "rtl":
        return rtl_kind(cfg)
    if backend == "fpga":
        if not board:
            raise KindError("a pool run on the fpga backend needs the board name (e.g. pynq_z2)")
        return fpga_kind(board, cfg)
    raise KindError(f"backend {backend!r} cannot run on the pool; pool backends: fsim, cycle, rtl, fpga")


def backend_of(kind: str) -> str:
    """The runtime backend name that serves device kind ``kind`` (``vdla-rtl-...`` -> ``rtl``)."""
    if kind in _BACKEND_OF:
        return _BACKEND_OF[kind]
    if kind.startswith("vdla-rtl-"):
        return "rtl"
    if kind.startswith("fpga-"):
        return "fpga"
    raise KindError(f"device kind {kind!r} is not a VDLA backend")


@dataclass(frozen=True)
class DeviceSpec:
    """One ``--device KIND[=N]`` of a worker: the kind, its concurrency and (rtl) its config."""

    kind: str
    slots: int
    config: HwConfig | None = None


def _config_for(kind: str, named: str | None) -> HwConfig:
    """The config a ``vdla-rtl`` spec names: ``@CONFIG``, or a digest matched against the presets."""
    if named is not None:
        return load_config(named)
    m = re.search(r"-([0-9a-f]{12})$", kind)
    if m is None:
        return load_config("default")
    for name in preset_names():
        cfg = load_config(name)
        if cfg.digest == m.group(1):
            return cfg
    raise KindError(f"no preset has config digest {m.group(1)} (kind {kind!r}); name the config instead: "
                    f"--device {kind[: m.start()]}@CONFIG.json")


def parse_device(spec: str, default_slots: int) -> DeviceSpec:
    """Parse a worker's ``KIND[@CONFIG][=N]`` device spec (see the module docstring)."""
    text, _, count = spec.partition("=")
    try:
        slots = int(count) if count else default_slots
    except ValueError:
        raise KindError(f"bad device {spec!r}: N in KIND=N must be an integer, e.g. vdla-cycle=2") from None
    if slots < 1:
        raise KindError(f"bad device {spec!r}: N must be at least 1")
    kind, at, config = text.partition("@")
    if kind == "cpu" or kind in SIM_KINDS:
        if at:
            raise KindError(f"device {kind!r} takes no @CONFIG")
        return DeviceSpec(kind, slots)
    if kind == "vdla-rtl" or kind.startswith("vdla-rtl-"):
        cfg = _config_for(kind, config if at else None)
        return DeviceSpec(rtl_kind(cfg), slots, cfg)
    if kind.startswith("fpga"):
        raise KindError(f"device {spec!r}: a board is offered by a board worker once a bitstream is deployed and "
                        "checked, not by --device", hint="vdla pool worker ADDR --board B, then vdla fpga deploy "
                        "--board B --bitstream DIR --pool ADDR")
    raise KindError(f"unknown device {spec!r}; use cpu, vdla-fsim, vdla-cycle or vdla-rtl[@CONFIG], each optionally "
                    "=N (boards: vdla pool worker --board B)")


def worker_resources(devices: list[DeviceSpec], cpu_features: frozenset[str]) -> dict[str, float]:
    """The Dask resources a worker with ``devices`` advertises (``cpu`` expands to its features)."""
    out: dict[str, float] = {}
    for d in devices:
        out[d.kind] = out.get(d.kind, 0) + d.slots
        if d.kind == "cpu":
            for f in cpu_features:
                if _FEATURE.fullmatch(f):
                    out[f"cpu-{f}"] = out["cpu"]
    return out


def kinds_of(resources: dict[str, float]) -> list[str]:
    """The device kinds a worker's resources stand for, ``cpu-<feature>`` folded into ``cpu``.

    A kind at 0 was withdrawn (a board worker replacing its bitstream; Dask cannot drop a resource).
    """
    return sorted(k for k, v in resources.items() if not k.startswith("cpu-") and v > 0)


def satisfies(resources: dict[str, float], need: dict[str, float]) -> bool:
    """Whether a worker advertising ``resources`` can ever run a job needing ``need``."""
    return all(resources.get(k, 0) >= v for k, v in need.items())
