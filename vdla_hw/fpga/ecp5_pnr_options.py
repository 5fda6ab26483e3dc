"""The nextpnr-ecp5 placer and router options the ECP5 flow may pass beside the seed and target.

nextpnr's timing-driven analytic placer (``heap``, its default) weighs a net by its timing
criticality; two knobs set how hard: ``--placer-heap-timingweight`` (how much a critical net
counts against wire length, default 10) and ``--placer-heap-critexp`` (the exponent on the
criticality, default 2: a higher one concentrates the weight on the worst paths). ``--tmg-ripup``
lets the router rip up and reroute nets on failing paths. On tiny the routed Fmax is decided by
the placement (docs/fpga_ecp5.md, "The placement's share"), so these are the levers left besides
the target frequency.

An option set is written as text, ``timing-weight=20,critexp=4,tmg-ripup`` (``--pnr-options``);
:func:`parse_pnr_options` checks it and names a bad part. :meth:`PnrOptions.tag` names a
placement's cache files, empty for nextpnr's defaults so those keep their names.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.errors import UsageError

TIMING_WEIGHT_RANGE = (1, 1000)
"""``--placer-heap-timingweight``: 0 would make the placer ignore timing (``--no-tmdriv`` does that)."""
CRITEXP_RANGE = (1, 16)
"""``--placer-heap-critexp``: criticality is in [0, 1], so beyond ~16 every path but the worst weighs nothing."""

SPEC_EXAMPLE = "timing-weight=20,critexp=4,tmg-ripup"


@dataclass(frozen=True)
class PnrOption:
    """One option, named once for every place it appears: the :class:`PnrOptions` field, its name in a
    ``--pnr-options`` text, nextpnr's flag and the cache-file tag."""

    field: str
    spec: str
    flag: str
    tag: str


OPTIONS = (PnrOption("timing_weight", "timing-weight", "--placer-heap-timingweight", "tw"),
           PnrOption("critexp", "critexp", "--placer-heap-critexp", "ce"),
           PnrOption("tmg_ripup", "tmg-ripup", "--tmg-ripup", "rip"))
"""The options in the order they go on the command line, in a spec and in a tag; ``tmg-ripup`` is a flag."""


@dataclass(frozen=True)
class PnrOptions:
    """nextpnr-ecp5 options beyond the seed and target; ``None``/``False`` leaves nextpnr's default."""

    timing_weight: int | None = None
    """``--placer-heap-timingweight`` (nextpnr's default 10)."""
    critexp: int | None = None
    """``--placer-heap-critexp`` (nextpnr's default 2)."""
    tmg_ripup: bool = False
    """``--tmg-ripup``: the router's timing-driven rip-up."""

    def __post_init__(self) -> None:
        for name, value, (lo, hi) in (("timing-weight", self.timing_weight, TIMING_WEIGHT_RANGE),
                                      ("critexp", self.critexp, CRITEXP_RANGE)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise UsageError(f"the nextpnr option {name}={value!r} is not an integer in {lo}..{hi}",
                                 hint=f"e.g. --pnr-options {SPEC_EXAMPLE}")
        if not isinstance(self.tmg_ripup, bool):
            raise UsageError(f"tmg-ripup is a flag, not {self.tmg_ripup!r}", hint=f"e.g. --pnr-options {SPEC_EXAMPLE}")

    def given(self) -> list[tuple[PnrOption, int | bool]]:
        """The options set away from nextpnr's default, in :data:`OPTIONS`' order, with their values."""
        given = [(o, getattr(self, o.field)) for o in OPTIONS]
        return [(o, v) for o, v in given if v is not None and v is not False]

    def args(self) -> list[str]:
        """The options on nextpnr-ecp5's command line (empty for nextpnr's defaults)."""
        return [a for o, v in self.given() for a in ([o.flag] if v is True else [o.flag, str(v)])]

    def spec(self) -> str:
        """The text :func:`parse_pnr_options` reads back into these options (``""`` for the defaults)."""
        return ",".join(o.spec if v is True else f"{o.spec}={v}" for o, v in self.given())

    def tag(self) -> str:
        """A file-name suffix for these options: ``""`` for the defaults, else e.g. ``-tw20-ce4-rip``."""
        return "".join(f"-{o.tag}" if v is True else f"-{o.tag}{v}" for o, v in self.given())


def parse_pnr_options(text: str | None) -> PnrOptions:
    """The options of a ``--pnr-options`` text: comma-separated ``timing-weight=N``, ``critexp=N``,
    ``tmg-ripup``; empty or ``None`` for nextpnr's defaults. A bad part is refused by name."""
    fields: dict[str, object] = {}
    names = {o.spec: o.field for o in OPTIONS if o.field != "tmg_ripup"}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if key == "tmg-ripup" and not sep:
            field_name, parsed = "tmg_ripup", True
        elif key in names and sep:
            try:
                parsed = int(value)
            except ValueError:
                raise UsageError(f"the nextpnr option {part!r} does not give an integer",
                                 hint=f"e.g. --pnr-options {SPEC_EXAMPLE}") from None
            field_name = names[key]
        else:
            raise UsageError(f"unknown nextpnr option {part!r}; the flow takes timing-weight=N, critexp=N, tmg-ripup",
                             hint=f"e.g. --pnr-options {SPEC_EXAMPLE}")
        if field_name in fields:
            raise UsageError(f"the nextpnr option {key!r} is given twice in {text!r}",
                             hint=f"give each option once, e.g. --pnr-options {SPEC_EXAMPLE}")
        fields[field_name] = parsed
    return PnrOptions(**fields)  # type: ignore[arg-type]
