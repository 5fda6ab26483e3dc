"""The tuning log: JSON lines, append-only, one flushed and fsync'ed record per measured config.

Each record names its task (kind, workload, target, host), the config (knob values and key), the
status and costs of the measurement, the cost unit, the measuring host, the tuner, and the
feature vector of the config's program (so later runs on similar tasks can learn from it).  A
run killed mid-write leaves at most a truncated last line, which loading skips; any other
unreadable line is an error naming the file and line.  :class:`ApplyBest` answers the lowerings'
queries with the best measured config per task and records which tasks fell back to the default.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vdla.runtime.file_checks import describe, wrong_kind
from vdla_hw.config import HwConfig, load_config
from vdla_hw.errors import BadFileError

from .measure import config_cost
from .space import Config
from .task import VDLA_KINDS, HostInfo, Task, make_task

LOG_FORMAT = "vdla-tuning-log"
LOG_VERSION = 1

#: The ``tuner`` field of a record written by the leaders' re-timing (``tuner/retime.py``); its ``detail``
#: names the round ("round 3"), so the latest round's comparison decides.
RETIMED = "retime"


@dataclass(frozen=True)
class Record:
    """One measured config of one task."""

    task: Task
    config: dict[str, Any]
    config_key: str
    status: str
    costs: tuple[float, ...]
    unit: str
    detail: str = ""
    tuner: str = ""
    measured_on: str = ""
    timestamp: float = 0.0
    features: tuple[float, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status == "ok" and bool(self.costs)

    @property
    def cost(self) -> float:
        return config_cost(self.costs) if self.ok else float("inf")

    def to_json(self) -> dict[str, Any]:
        return {"format": LOG_FORMAT, "version": LOG_VERSION, "task": self.task.to_json(), "task_key": self.task.key,
                "config": self.config, "config_key": self.config_key, "status": self.status,
                "costs": list(self.costs), "unit": self.unit, "detail": self.detail, "tuner": self.tuner,
                "measured_on": self.measured_on, "timestamp": self.timestamp,
                "features": [round(float(f), 4) for f in self.features]}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> Record:
        if d.get("format") != LOG_FORMAT or d.get("version") != LOG_VERSION:
            raise ValueError(f"not a {LOG_FORMAT} v{LOG_VERSION} record")
        return Record(Task.from_json(d["task"]), dict(d["config"]), d["config_key"], d["status"],
                      tuple(float(c) for c in d["costs"]), d["unit"], d.get("detail", ""), d.get("tuner", ""),
                      d.get("measured_on", ""), float(d.get("timestamp", 0.0)),
                      tuple(float(f) for f in d.get("features", ())))

    @staticmethod
    def make(task: Task, config: Config, status: str, costs: Iterable[float], unit: str, detail: str = "",
             tuner: str = "", features: Iterable[float] = ()) -> Record:
        return Record(task, config.to_dict(), config.key, status, tuple(costs), unit, detail, tuner,
                      HostInfo.detect().key, time.time(), tuple(features))


def ranked(records: Iterable[Record]) -> dict[str, Record]:
    """The record that stands for each config when configs are compared: per config key, the fastest of its
    records; but once a task's leaders were re-timed, only the latest re-timing round counts, each config by
    the upper median of its passes, the slower of two (a lucky first sample must not win: the round timed the
    leaders and the default side by side, which is the fair comparison; with more passes the median, so one
    slow pass of a loaded moment does not sink a config either)."""
    ok = [r for r in records if r.ok]
    retimed = [r for r in ok if r.tuner == RETIMED]
    if not retimed:
        out: dict[str, Record] = {}
        for r in ok:
            prev = out.get(r.config_key)
            out[r.config_key] = r if prev is None or r.cost < prev.cost else prev
        return out
    last = max(retimed, key=lambda r: r.timestamp).detail
    passes: dict[str, list[Record]] = {}
    for r in retimed:
        if r.detail == last:
            passes.setdefault(r.config_key, []).append(r)
    return {key: sorted(rs, key=lambda q: q.cost)[len(rs) // 2] for key, rs in passes.items()}


def best_record(records: Iterable[Record]) -> Record | None:
    """The best config's standing record among one task's records (:func:`ranked`), or None."""
    standing = ranked(records)
    return min(standing.values(), key=lambda r: r.cost) if standing else None


def records_by_task(records: Iterable[Record]) -> dict[str, list[Record]]:
    """``records`` grouped by task name, each group in log order."""
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r.task.name, []).append(r)
    return out


def read_log(path: str | os.PathLike[str]) -> list[Record]:
    """Every record of a log; a truncated last line (a killed writer) is skipped."""
    p = Path(path)
    if not p.exists():
        return []
    data = p.read_bytes()
    if data and describe(data) != "a JSON text":
        raise wrong_kind(p, data, "a tuning log (JSON lines written by `vdla tune`)",
                         hint="pass a log written by `vdla tune`, or start a new log")
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise BadFileError(f"{p} is damaged: not UTF-8 text ({exc})", hint="start a new log") from None
    records = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(Record.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError) as exc:
            if no == len(lines) and not line.endswith("}"):
                break  # the last write was cut short
            raise BadFileError(f"{p}:{no}: not a tuning-log record ({exc})",
                               hint="pass a log written by `vdla tune`, or start a new log") from None
    return records


class Database:
    """An append-only tuning log, read once and then appended to record by record."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.records: list[Record] = read_log(self.path)
        self._by_task: dict[str, list[Record]] = {}
        for r in self.records:
            self._by_task.setdefault(r.task.key, []).append(r)
        self._repair_tail()

    def _repair_tail(self) -> None:
        # A killed writer may have left a partial last line (never acknowledged): cut it off so the
        # next record starts on a line of its own.
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.path.open("r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, record: Record) -> None:
        """Write one record and make it durable before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(record.to_json()) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.records.append(record)
        self._by_task.setdefault(record.task.key, []).append(record)

    def of_task(self, task: Task) -> list[Record]:
        return list(self._by_task.get(task.key, ()))

    def measured_keys(self, task: Task) -> set[str]:
        return {r.config_key for r in self.of_task(task)}

    def best(self, task: Task) -> Record | None:
        return best_record(self.of_task(task))

    def similar(self, task: Task) -> list[Record]:
        """Successful records of other tasks of the same kind (for transfer learning)."""
        return [r for r in self.records if r.ok and r.task.kind == task.kind and r.task.key != task.key
                and r.features]


@dataclass
class ApplyBest:
    """A dispatcher giving the lowerings the best logged config of each task of ``target``.

    ``applied`` maps a task name to the config key used; ``fallbacks`` maps a task name to why the
    default was used (not in the log, no successful measurement, or the lowering declined the logged config for
    every operator of the task: ``dispatch.declined``).
    """

    records: list[Record]
    target: str = "llvm"
    cpu_target: str = "llvm"
    config: str | HwConfig = "default"
    applied: dict[str, str] = field(default_factory=dict)
    fallbacks: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._hw = load_config(self.config) if isinstance(self.config, str) else self.config
        by_task: dict[str, list[Record]] = {}
        for r in self.records:
            by_task.setdefault(r.task.key, []).append(r)
        self._best: dict[str, Record] = {}
        self._uses: dict[str, int] = {}  # per task name: operators that took the logged config and did not decline it
        for key, records in by_task.items():
            best = best_record(records)
            if best is not None:
                self._best[key] = best

    def query(self, kind: str, workload: Mapping[str, int]) -> Any | None:
        from .template import template_for

        vdla_kind = kind in VDLA_KINDS
        if vdla_kind != (self.target == "vdla"):
            return None  # e.g. the float first conv of a VDLA model: not a task of this tuning
        task = make_task(kind, workload, self.cpu_target, self._hw)
        best = self._best.get(task.key)
        if best is None:
            tried = any(r.task.key == task.key for r in self.records)
            self.fallbacks[task.name] = ("no successful measurement in the log" if tried else
                                         "not in the log (for this target and host)")
            return None
        template = template_for(task, self._hw.to_dict() if vdla_kind else None)
        config = template.space.from_dict(best.config)
        why = template.space.why_illegal(config)
        if why is not None:  # the schedule's legality changed since the log was written
            self.fallbacks[task.name] = f"the logged best config is no longer legal ({why}); tune again"
            return None
        self.applied[task.name] = config.key
        self._uses[task.name] = self._uses.get(task.name, 0) + 1
        return template.knobs(config)

    def decline(self, kind: str, workload: Mapping[str, int], reason: str) -> None:
        """The lowering did not compile the config :meth:`query` returned for this operator (``dispatch.declined``):
        once no operator of the task uses it, the task leaves ``applied`` and ``fallbacks`` says why."""
        name = make_task(kind, workload, self.cpu_target, self._hw).name
        self._uses[name] = self._uses.get(name, 1) - 1
        if self._uses[name] <= 0:
            self.applied.pop(name, None)
            self.fallbacks[name] = f"the logged best config was not compiled: {reason}"
