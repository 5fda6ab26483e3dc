"""The hardware cost of a config: its RTL linted, its resources, the boards it fits, its Fmax.

One call, :func:`hardware_cost`, answers for one config what ``vdla dse`` needs from the hardware
side, using only ``vdla_hw`` (so a device-pool worker, which never imports the compiler, can run
it): the generated RTL package and the whole design through ``verilator --lint-only -Wall``,
yosys ``synth_xilinx`` resources (:mod:`vdla_hw.synth`), which boards of
:data:`vdla_hw.fpga.boards.BOARDS` they fit, and, when asked, the Fmax nextpnr reaches on the
ECP5-85F (:mod:`vdla_hw.fpga.ecp5_flow`) for a design that fits it.  Without a measured Fmax the
config's own ``clock_mhz`` stands, labelled as such.
"""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass, field
from typing import Any

from vdla_hw.config import HwConfig, from_dict
from vdla_hw.errors import ToolchainError, UnsupportedError
from vdla_hw.fpga.boards import BOARDS, XC7_ESTIMATE_FAMILIES
from vdla_hw.rtl_build import lint_command, tool_env
from vdla_hw.synth import synthesize

FMAX_BOARD = "ulx3s-selftest"
"""The board whose open flow (yosys, nextpnr-ecp5) measures Fmax."""
LINT_TIMEOUT_S = 300


@dataclass(frozen=True)
class HardwareCost:
    """Resources (yosys xc7 estimate), board fit and clock of one config."""

    luts: int
    ffs: int
    dsps: int
    bram36: float
    boards: dict[str, str] = field(default_factory=dict)
    """Board name -> ``yes``, ``no`` (with what is short) or ``?`` (not decided without ``--fmax``)."""
    fmax_mhz: float = 0.0
    """The clock the latency is reported at: nextpnr's Fmax when measured, else the config's clock."""
    fmax_source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def lint(cfg: HwConfig) -> None:
    """Generate the config's package and lint the whole design; raise :class:`ToolchainError` on a finding."""
    cmd = lint_command(cfg)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=tool_env(), timeout=LINT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"verilator --lint-only did not finish in {LINT_TIMEOUT_S} s for {cfg.label()}") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("%")]
        raise ToolchainError(f"the RTL of {cfg.label()} fails verilator --lint-only -Wall: "
                             + ("; ".join(lines[:3]) or f"exit {proc.returncode}"),
                             hint="run `vdla hw test --config <the config .json>` to see the full report")


def _board_fit(need: dict[str, float]) -> dict[str, str]:
    out = {}
    for name, board in BOARDS.items():
        res = board.resources
        if res is None:
            continue
        short = res.shortfall(need)
        if res.family in XC7_ESTIMATE_FAMILIES:
            out[name] = "no: " + ", ".join(short) if short else "yes"
        else:
            # A LUT6 design never needs fewer LUT4s, nor its memory fewer block-RAM bits: an xc7
            # estimate over the ECP5's capacity rules it out; anything else needs the ECP5 flow.
            gross = res.shortfall({"luts": need["luts"], "bram36": need["bram36"]})
            out[name] = "no: " + ", ".join(gross) if gross else "?"
    return out


def _fmax(cfg: HwConfig, boards: dict[str, str]) -> tuple[float, str]:
    from vdla_hw.fpga.ecp5_flow import build_ecp5

    if boards.get(FMAX_BOARD, "no").startswith("no"):
        return cfg.clock_mhz, f"config clock_mhz (does not fit the {FMAX_BOARD} ECP5-85F)"
    try:
        result = build_ecp5(cfg, progress=False, board=FMAX_BOARD)
    except UnsupportedError as exc:  # the ECP5 synthesis needs more cells than the 85F has
        boards[FMAX_BOARD] = f"no: {exc}"
        return cfg.clock_mhz, f"config clock_mhz (does not fit the {FMAX_BOARD} ECP5-85F)"
    boards[FMAX_BOARD] = "yes"
    return result.fmax_mhz, f"nextpnr Fmax on the {FMAX_BOARD} ECP5-85F"


def hardware_cost(config: HwConfig | dict[str, Any], fmax: bool = False) -> HardwareCost:
    """Lint, synthesize and fit ``config`` (a config or its dict, as pool jobs pass it); with ``fmax``,
    place and route it on the ECP5-85F when it fits there.  Tool failures raise :class:`ToolchainError`."""
    cfg = config if isinstance(config, HwConfig) else from_dict(config)
    lint(cfg)
    synth = synthesize(cfg)
    need = {"luts": synth.luts, "ffs": synth.ffs, "dsps": synth.dsps, "bram36": synth.bram36}
    boards = _board_fit(need)
    clock, source = _fmax(cfg, boards) if fmax else (cfg.clock_mhz, "config clock_mhz")
    return HardwareCost(synth.luts, synth.ffs, synth.dsps, synth.bram36, boards, clock, source)
