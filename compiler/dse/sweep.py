"""Sweep specifications: ``block=8,16,32 bus=64,128 acc_depth=1024,2048`` -> the points of the sweep.

A sweep is the Cartesian product of one value list per parameter, applied to a base config
(a preset or a JSON file).  Parameters are short names for the fields people sweep (values in
natural units: ``block=16`` is ``log_block_in = log_block_out = 4``, ``bus=128`` is
``log_bus_width = 7``, ``acc_depth=2048`` sizes the accumulator buffer to 2048 of its elements),
or any config field by its own name (``log_wgt_buff_size=17``, ``timing.alu_ii=3``).

A point whose config breaks a validation rule is kept, with the :class:`ConfigError` as its
reason: the sweep reports it and goes on.  A malformed specification is a :class:`UsageError`.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from vdla_hw.config import ConfigError, HwConfig, TimingConfig, from_dict
from vdla_hw.errors import UsageError


@dataclass(frozen=True)
class Param:
    """A sweep parameter: the config fields it sets and how a value maps onto them."""

    fields: tuple[str, ...]
    unit: str
    """``log2``: the value is a power of two stored as its log2; ``depth``: elements of a buffer
    (stored as the log2 of its size in bytes); ``int`` / ``float``: stored as given."""
    help: str


PARAMS: dict[str, Param] = {
    "block": Param(("log_block_in", "log_block_out"), "log2", "BLOCK_IN = BLOCK_OUT of the GEMM core"),
    "block_in": Param(("log_block_in",), "log2", "BLOCK_IN, the GEMM core's reduction width"),
    "block_out": Param(("log_block_out",), "log2", "BLOCK_OUT, the GEMM core's output channels"),
    "batch": Param(("log_batch",), "log2", "BATCH, rows of the GEMM core's input"),
    "bus": Param(("log_bus_width",), "log2", "DRAM bus width in bits"),
    "inp_depth": Param(("log_inp_buff_size",), "depth", "input buffer depth in elements"),
    "wgt_depth": Param(("log_wgt_buff_size",), "depth", "weight buffer depth in elements"),
    "acc_depth": Param(("log_acc_buff_size",), "depth", "accumulator buffer depth in elements"),
    "uop_depth": Param(("log_uop_buff_size",), "depth", "micro-op buffer depth"),
    "clock": Param(("clock_mhz",), "float", "clock in MHz (the latency's clock unless --fmax measures one)"),
    "lut_macs": Param(("gemm_lut_macs",), "int", "GEMM multipliers built from LUTs instead of DSPs"),
    "alu_ii": Param(("timing.alu_ii",), "int", "ALU initiation interval"),
}
_FIELDS = [f.name for f in dataclasses.fields(HwConfig) if f.name not in ("name", "timing")]
_TIMING_FIELDS = [f"timing.{f.name}" for f in dataclasses.fields(TimingConfig)]


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep: its parameter values and its config (or why there is none)."""

    values: tuple[tuple[str, str], ...]
    """``(parameter, value as written)`` in the order the sweep names them."""
    config: HwConfig | None
    error: str | None = None
    """The validation rule the point breaks (``config`` is then None)."""

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.values) or "base"


def _param(name: str) -> Param:
    if name in PARAMS:
        return PARAMS[name]
    if name in _FIELDS:
        return Param((name,), "float" if name == "clock_mhz" else "int", name)
    if name in _TIMING_FIELDS:
        return Param((name,), "int", name)
    raise UsageError(f"unknown sweep parameter {name!r}",
                     hint=f"use one of {', '.join(PARAMS)}, or a config field such as log_acc_buff_size or timing.alu_ii")


def _number(name: str, text: str, unit: str) -> float:
    try:
        value = float(text) if unit == "float" else int(text, 0)
    except ValueError:
        raise UsageError(f"sweep value {name}={text!r} is not {'a number' if unit == 'float' else 'an integer'}",
                         hint=f"write e.g. {name}=8,16,32") from None
    if unit in ("log2", "depth") and (value < 1 or int(value) & (int(value) - 1)):
        raise UsageError(f"sweep value {name}={text} is not a power of two (it sets a log2 field)",
                         hint=f"write powers of two, e.g. {name}=8,16,32")
    return value


def parse_sweep(specs: Sequence[str]) -> list[tuple[str, list[str]]]:
    """``["block=8,16", "bus=64"]`` -> ``[("block", ["8", "16"]), ("bus", ["64"])]``, checked."""
    out: list[tuple[str, list[str]]] = []
    for spec in specs:
        name, eq, values = spec.partition("=")
        name = name.strip()
        if not eq or not name:
            raise UsageError(f"sweep item {spec!r} is not NAME=V1,V2,...", hint="e.g. --sweep block=8,16,32 bus=64,128")
        param = _param(name)
        items = [v.strip() for v in values.split(",")]
        if not values.strip() or any(not v for v in items):
            raise UsageError(f"sweep item {spec!r} has an empty value", hint=f"e.g. {name}=8,16")
        if any(name == seen for seen, _ in out):
            raise UsageError(f"sweep parameter {name!r} is given twice", hint="give each parameter one list of values")
        for v in items:
            _number(name, v, param.unit)
        if len(set(items)) != len(items):
            raise UsageError(f"sweep item {spec!r} repeats a value")
        out.append((name, items))
    if not out:
        raise UsageError("the sweep is empty", hint="e.g. --sweep block=8,16,32 bus=64,128")
    clash = _shared_fields(out)
    if clash:
        raise UsageError(f"sweep parameters {clash[0]} and {clash[1]} set the same config field",
                         hint="sweep one of them")
    return out


def _shared_fields(params: list[tuple[str, list[str]]]) -> tuple[str, str] | None:
    for (a, _), (b, _) in itertools.combinations(params, 2):
        if set(_param(a).fields) & set(_param(b).fields):
            return a, b
    return None


def _element_bytes(fields: dict[str, Any], buffer: str) -> int:
    """Bytes of one element of ``buffer`` for config ``fields``, before the config is validated.

    The sizes of the other buffers are not final yet (an intermediate config could break a rule the
    final one keeps), so the size is read from HwConfig's own derivation on an unvalidated instance.
    """
    probe = object.__new__(HwConfig)
    for name, value in fields.items():
        object.__setattr__(probe, name, value)
    return int(getattr(probe, f"{buffer}_elem_bytes"))


def _apply(base: HwConfig, values: tuple[tuple[str, str], ...], name: str) -> HwConfig:
    """The config of one point.  A depth becomes a buffer size once the block, batch and widths
    the other parameters set are known (they size the buffer's element)."""
    data = base.to_dict()
    data["name"] = name
    depths = []
    for pname, text in values:
        param = _param(pname)
        value = _number(pname, text, param.unit)
        if param.unit == "depth":
            depths.append((param.fields[0], int(value)))
            continue
        stored = int(value).bit_length() - 1 if param.unit == "log2" else value
        for f in param.fields:
            if f.startswith("timing."):
                data["timing"][f[len("timing."):]] = stored
            else:
                data[f] = stored
    for f, depth in depths:
        elem = _element_bytes(data, f.replace("log_", "").replace("_buff_size", ""))
        data[f] = (depth * elem).bit_length() - 1
    return from_dict(data)


def sweep_points(base: HwConfig, params: list[tuple[str, list[str]]]) -> list[SweepPoint]:
    """Every point of the product of ``params`` on ``base``; invalid configs carry their error."""
    names = [n for n, _ in params]
    points = []
    for combo in itertools.product(*(vals for _, vals in params)):
        values = tuple(zip(names, combo))
        name = "dse_" + "_".join(f"{k.replace('.', '_')}{v}".replace(".", "p") for k, v in values)
        try:
            cfg = _apply(base, values, name)
            # A point that is the base hardware keeps its name: its lint and synthesis caches are the base's.
            points.append(SweepPoint(values, cfg.replace(name=base.name) if cfg.digest == base.digest else cfg))
        except ConfigError as exc:
            points.append(SweepPoint(values, None, str(exc)))
    return points


def describe_params() -> str:
    """One line per named parameter (for ``vdla dse --help``)."""
    return "; ".join(f"{n}: {p.help}" for n, p in PARAMS.items())


__all__ = ["PARAMS", "Param", "SweepPoint", "describe_params", "parse_sweep", "sweep_points"]
