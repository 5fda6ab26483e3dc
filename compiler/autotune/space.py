"""Config spaces: the knobs of a schedule template as a product of named axes.

A :class:`ConfigSpace` is a list of :class:`Axis` (a knob name and its candidate values) plus a
legality check; its size is the product of the axes' lengths, and every point has an index
(mixed radix, first axis slowest).  A :class:`Config` is an immutable, JSON-serializable record
of one point: the template turns it into the schedule's knob dataclass, so applying the same
config twice builds the same program, and a config read back from a log replays exactly.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from vdla_hw.errors import BadConfigError

Value = int | str | bool


@dataclass(frozen=True)
class Axis:
    """One knob: its name and the values it may take (in a fixed order).

    ``absent``: for a knob added to a template after logs were written, the value those logs' configs
    meant (the schedule's behaviour before the knob existed), so they still replay; None for a knob
    every record must name."""

    name: str
    values: tuple[Value, ...]
    absent: Value | None = None

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"knob {self.name!r} has no candidate values")


@dataclass(frozen=True)
class Config:
    """One point of a space: ``values`` pairs every knob name with its value, in axis order."""

    values: tuple[tuple[str, Value], ...]

    def __getitem__(self, name: str) -> Value:
        for k, v in self.values:
            if k == name:
                return v
        raise KeyError(name)

    def to_dict(self) -> dict[str, Value]:
        return dict(self.values)

    @property
    def key(self) -> str:
        """A stable text key (what the log uses to recognize a measured config)."""
        return ",".join(f"{k}={v}" for k, v in self.values)


@dataclass(frozen=True)
class ConfigSpace:
    """The product of ``axes``, restricted by ``legal`` (which raises ValueError with the reason)."""

    axes: tuple[Axis, ...]
    legal: Callable[[Config], None] | None = field(default=None, compare=False)

    @property
    def size(self) -> int:
        return math.prod(len(a.values) for a in self.axes)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    def get(self, index: int) -> Config:
        """The config with this index (``0 <= index < size``)."""
        if not 0 <= index < self.size:
            raise IndexError(f"config index {index} is outside the space of {self.size}")
        picks = []
        for axis in reversed(self.axes):
            index, digit = divmod(index, len(axis.values))
            picks.append((axis.name, axis.values[digit]))
        return Config(tuple(reversed(picks)))

    def index_of(self, config: Config) -> int:
        """The index of ``config``; BadConfigError if a knob is missing or has a value outside the space."""
        got = config.to_dict()
        if set(got) != set(self.names):
            raise BadConfigError(f"config {config.key!r} has knobs {sorted(got)}, the space has {sorted(self.names)}",
                                 hint="the log was written for another template version; tune again")
        index = 0
        for axis in self.axes:
            if got[axis.name] not in axis.values:
                raise BadConfigError(f"knob {axis.name}={got[axis.name]!r} is not one of {axis.values}",
                                     hint="the log was written for another template version; tune again")
            index = index * len(axis.values) + axis.values.index(got[axis.name])
        return index

    def from_dict(self, values: dict[str, Any]) -> Config:
        """A config from its JSON form (checked against the space).

        Keys the space has no axis for are ignored, so a log written before a knob was removed from a
        template (the CPU templates' ``parallel``) still replays: the schedule then takes that knob's
        default.  A knob the space has but ``values`` lacks takes its axis's ``absent`` value (a knob
        added since the log was written), or is an error (BadConfigError)."""
        picks = tuple((a.name, values[a.name] if a.name in values else a.absent) for a in self.axes
                      if a.name in values or a.absent is not None)
        config = Config(picks)
        self.index_of(config)
        return config

    def why_illegal(self, config: Config) -> str | None:
        """None for a legal config, else the reason it cannot be built."""
        if self.legal is None:
            return None
        try:
            self.legal(config)
        except ValueError as exc:
            return str(exc)
        return None

    def __iter__(self) -> Iterator[Config]:
        return (self.get(i) for i in range(self.size))

    def legal_indices(self, limit: int = 200_000) -> list[int]:
        """Indices of every legal config (the space must not exceed ``limit``)."""
        if self.size > limit:
            raise ValueError(f"space of {self.size} configs is too large to enumerate")
        return [i for i in range(self.size) if self.why_illegal(self.get(i)) is None]

    def random_index(self, rng: random.Random) -> int:
        return rng.randrange(self.size)

    def neighbour(self, index: int, rng: random.Random) -> int:
        """A config differing from ``index`` in one knob, moved to an adjacent value (or any, for short axes)."""
        config = self.get(index)
        axes = [a for a in self.axes if len(a.values) > 1]
        if not axes:
            return index
        axis = rng.choice(axes)
        pos = axis.values.index(config[axis.name])
        if len(axis.values) <= 3:
            new = rng.choice([p for p in range(len(axis.values)) if p != pos])
        else:
            new = min(len(axis.values) - 1, max(0, pos + rng.choice((-1, 1))))
        values = tuple((k, axis.values[new] if k == axis.name else v) for k, v in config.values)
        return self.index_of(Config(values))

    def digits(self, index: int) -> list[int]:
        """The position of each knob's value on its axis."""
        config = self.get(index)
        return [a.values.index(config[a.name]) for a in self.axes]

    def from_digits(self, digits: Sequence[int]) -> int:
        index = 0
        for axis, d in zip(self.axes, digits):
            index = index * len(axis.values) + d
        return index


def divisors(n: int, at_most: int | None = None) -> tuple[int, ...]:
    """Divisors of ``n`` in increasing order (not above ``at_most``)."""
    top = n if at_most is None else min(n, at_most)
    return tuple(d for d in range(1, top + 1) if n % d == 0)
