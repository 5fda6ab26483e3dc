"""Tuners: random, grid, genetic, and the XGBoost model explored by simulated annealing."""

from __future__ import annotations

from collections.abc import Sequence

from vdla_hw.errors import UsageError

from ..database import Record
from ..template import Template
from .base import Progress, Tuner, tune_task
from .simple import GATuner, GridTuner, RandomTuner
from .xgb import XGBTuner

TUNERS = ("xgb", "ga", "random", "grid")


def make_tuner(name: str, template: Template, seed: int = 0, transfer: Sequence[Record] = ()) -> Tuner:
    """A tuner by name (``xgb`` learns from ``transfer`` records of similar tasks too)."""
    if name == "xgb":
        return XGBTuner(template, seed, transfer)
    if name == "ga":
        return GATuner(template, seed)
    if name == "random":
        return RandomTuner(template, seed)
    if name == "grid":
        return GridTuner(template, seed)
    raise UsageError(f"unknown tuner {name!r}; use one of {TUNERS}")


__all__ = [
    "TUNERS",
    "GATuner",
    "GridTuner",
    "Progress",
    "RandomTuner",
    "Tuner",
    "XGBTuner",
    "make_tuner",
    "tune_task",
]
