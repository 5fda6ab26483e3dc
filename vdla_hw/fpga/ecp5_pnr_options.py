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

    def args(self) -> list[str]:
        """The options on nextpnr-ecp5's command line (empty for nextpnr's defaults)."""
        out: list[str] = []
        if self.timing_weight is not None:
            out += ["--placer-heap-timingweight", str(self.timing_weight)]
        if self.critexp is not None:
            out += ["--placer-heap-critexp", str(self.critexp)]
        if self.tmg_ripup:
            out.append("--tmg-ripup")
        return out

    def spec(self) -> str:
        """The text :func:`parse_pnr_options` reads back into these options (``""`` for the defaults)."""
        parts = []
        if self.timing_weight is not None:
            parts.append(f"timing-weight={self.timing_weight}")
        if self.critexp is not None:
            parts.append(f"critexp={self.critexp}")
        if self.tmg_ripup:
            parts.append("tmg-ripup")
        return ",".join(parts)

    def tag(self) -> str:
        """A file-name suffix for these options: ``""`` for the defaults, else e.g. ``-tw20-ce4-rip``."""
        parts = []
        if self.timing_weight is not None:
            parts.append(f"tw{self.timing_weight}")
        if self.critexp is not None:
            parts.append(f"ce{self.critexp}")
        if self.tmg_ripup:
            parts.append("rip")
        return "".join(f"-{p}" for p in parts)


def parse_pnr_options(text: str | None) -> PnrOptions:
    """The options of a ``--pnr-options`` text: comma-separated ``timing-weight=N``, ``critexp=N``,
    ``tmg-ripup``; empty or ``None`` for nextpnr's defaults. A bad part is refused by name."""
    fields: dict[str, object] = {}
    names = {"timing-weight": "timing_weight", "critexp": "critexp"}
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
