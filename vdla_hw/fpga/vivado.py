"""The Vivado flow for the Zynq boards: write a self-contained project folder, run it when Vivado is here.

The folder holds everything ``vivado -mode batch -source build.tcl`` needs, with paths relative to
itself so it can be copied to a machine that has Vivado:

* ``build.tcl``  — ``fpga_scripts/vivado/build.tcl``, the same for every Zynq board;
* ``board.tcl``  — the board's part and processing system, from :data:`vdla_hw.fpga.boards.BOARDS`
  (the committed ``fpga_scripts/<board>/board.tcl`` is the same text);
* ``params.tcl`` — the config: sources, clock, bus and HP-port width, and the register map of
  :mod:`vdla_hw.regmap` (offsets, the AXI-lite window);
* ``src/``       — the RTL of :func:`vdla_hw.rtl_build.rtl_sources` (the config's ``vdla_pkg`` first)
  and the Verilog wrapper of :mod:`vdla_hw.fpga.wrapper`;
* ``config.json`` — the hardware config, so the bitstream's folder says what it was built for;
* ``vdla.core``   — a FuseSoC core of the same sources (:mod:`vdla_hw.fpga.fusesoc`).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

from vdla_hw import regmap
from vdla_hw.config import HwConfig
from vdla_hw.errors import ToolchainError
from vdla_hw.fpga.boards import FPGA_SCRIPTS_DIR, Board
from vdla_hw.fpga.flow import BuildResult
from vdla_hw.fpga.fusesoc import generate_core
from vdla_hw.fpga.wrapper import CTRL_INTF, MEM_INTF, WRAPPER_TOP, generate_wrapper
from vdla_hw.rtl_build import rtl_sources

COMMON_TCL = FPGA_SCRIPTS_DIR / "vivado" / "build.tcl"
SRC_DIR = "src"
OUT_DIR = "out"
# IP integrator maps no address segment smaller than 4 KiB.
MIN_SEGMENT_BYTES = 4096
OUTPUTS = ("vdla.bit", "vdla.hwh", "vdla.xsa", "utilization.rpt", "timing_summary.rpt", "summary.txt")

_PLAIN = re.compile(r"[A-Za-z0-9_.:/*+,-]+")


def tcl_word(value: object) -> str:
    """``value`` as one Tcl word: bare when it is plain, braced otherwise."""
    text = str(value)
    if _PLAIN.fullmatch(text):
        return text
    if any(c in text for c in "{}\\"):
        raise ValueError(f"cannot quote {text!r} as a Tcl word")
    return "{" + text + "}"


def tcl_list(values: list[object] | tuple[object, ...]) -> str:
    return "{" + " ".join(tcl_word(v) for v in values) + "}"


def _set(name: str, value: str) -> str:
    return f"set {name} {value}"


def board_tcl(board: Board) -> str:
    """The text of ``board.tcl``: the board table's row for ``board`` as Tcl variables."""
    if board.ps is None:
        raise ValueError(f"board {board.name} has no Zynq PS: it is not built with Vivado")
    ps = board.ps
    enable = [w for kv in ps.enable_props for w in kv]
    lines = [
        f"# {board.title}: generated from vdla_hw/fpga/boards.py by `vdla fpga gen-scripts`. Do not edit.",
        _set("vdla_board", tcl_word(board.name)),
        _set("vdla_part", tcl_word(board.part)),
        _set("vdla_board_part_pattern", tcl_word(board.board_part)),
        _set("vdla_ps_ip", tcl_word(ps.ip)),
        _set("vdla_ps_rule", tcl_word(ps.automation_rule)),
        _set("vdla_ps_external", tcl_list(ps.external_intfs)),
        _set("vdla_ps_clock_prop", tcl_word(ps.clock_prop)),
        _set("vdla_ps_actual_clock_prop", tcl_word(ps.actual_clock_prop)),
        _set("vdla_ps_enable", tcl_list(enable)),
        _set("vdla_ps_hp_width_prop", tcl_word(ps.hp_width_prop)),
        _set("vdla_ps_gp_intf", tcl_word(ps.gp_intf)),
        _set("vdla_ps_hp_intf", tcl_word(ps.hp_intf)),
        _set("vdla_ps_clk_pin", tcl_word(ps.clk_pin)),
        _set("vdla_ps_rstn_pin", tcl_word(ps.rstn_pin)),
        _set("vdla_ps_gp_aclk_pin", tcl_word(ps.gp_aclk_pin)),
        _set("vdla_ps_hp_aclk_pin", tcl_word(ps.hp_aclk_pin)),
        _set("vdla_ps_irq_pin", tcl_word(ps.irq_pin)),
        _set("vdla_ps_address_space", tcl_word(ps.address_space)),
        _set("vdla_reg_base", f"0x{ps.reg_base:08X}"),
        "",
    ]
    return "\n".join(lines)


def source_names(cfg: HwConfig) -> list[str]:
    """The project's sources, relative to its folder: the config's RTL in order, then the wrapper."""
    return [f"{SRC_DIR}/{p.name}" for p in rtl_sources(cfg)] + [f"{SRC_DIR}/{WRAPPER_TOP}.v"]


def params_tcl(board: Board, cfg: HwConfig, build_id: int = 0) -> str:
    """The text of ``params.tcl``: what ``build.tcl`` needs from the config and the register map."""
    if board.ps is None:
        raise ValueError(f"board {board.name} has no Zynq PS: it is not built with Vivado")
    regs = [w for r in regmap.REGISTERS for w in (r.name, f"0x{r.offset:02X}")]
    lines = [
        (f"# Config {cfg.label()} for {board.name}: generated from vdla_hw (config, regmap) by "
         "`vdla fpga build`. Do not edit."),
        _set("vdla_config_name", tcl_word(cfg.name)),
        _set("vdla_config_digest", tcl_word(cfg.digest)),
        _set("vdla_build_id", str(build_id)),
        _set("vdla_clock_mhz", tcl_word(cfg.clock_mhz)),
        _set("vdla_bus_width", str(cfg.bus_width)),
        _set("vdla_hp_width", str(board.ps.hp_width(cfg.bus_width))),
        _set("vdla_rtl_sources", tcl_list(source_names(cfg))),
        _set("vdla_wrapper_top", WRAPPER_TOP),
        _set("vdla_ctrl_intf", CTRL_INTF),
        _set("vdla_mem_intf", MEM_INTF),
        _set("vdla_reg_range", str(max(MIN_SEGMENT_BYTES, 1 << regmap.AXIL_ADDR_WIDTH))),
        _set("vdla_registers", tcl_list(regs)),
        "",
    ]
    return "\n".join(lines)


def write_project(board: Board, cfg: HwConfig, out_dir: Path, build_id: int = 0) -> Path:
    """Write the Vivado project folder of ``cfg`` for ``board`` into ``out_dir``; returns its ``build.tcl``."""
    out_dir = Path(out_dir)
    src = out_dir / SRC_DIR
    src.mkdir(parents=True, exist_ok=True)
    for path in rtl_sources(cfg):
        shutil.copyfile(path, src / path.name)
    (src / f"{WRAPPER_TOP}.v").write_text(generate_wrapper(cfg))
    (out_dir / "board.tcl").write_text(board_tcl(board))
    (out_dir / "params.tcl").write_text(params_tcl(board, cfg, build_id))
    (out_dir / "config.json").write_text(cfg.to_json() + "\n")
    (out_dir / "vdla.core").write_text(generate_core(board, cfg, source_names(cfg)))
    build = out_dir / "build.tcl"
    shutil.copyfile(COMMON_TCL, build)
    return build


def run_command() -> list[str]:
    """How the project folder is built (run inside it)."""
    return ["vivado", "-mode", "batch", "-nojournal", "-log", "vivado.log", "-source", "build.tcl"]


def read_summary(path: Path) -> dict[str, str]:
    """The ``key value`` lines ``build.tcl`` writes to ``out/summary.txt``."""
    pairs = (line.split(None, 1) for line in path.read_text().splitlines() if line.strip())
    return {p[0]: (p[1] if len(p) > 1 else "") for p in pairs}


def build(board: Board, cfg: HwConfig, out_dir: Path, *, run: bool = True, build_id: int = 0) -> BuildResult:
    """Write the project; with ``run``, build the bitstream with the ``vivado`` on ``PATH``.

    Without Vivado the project is still written, then :class:`ToolchainError` says so and how to
    build the folder on another machine.
    """
    out_dir = Path(out_dir).resolve()
    write_project(board, cfg, out_dir, build_id)
    command = run_command()
    elsewhere = f"cd {shlex.quote(str(out_dir))} && {shlex.join(command)}"
    result = BuildResult(board=board.name, config=cfg.label(), project_dir=out_dir, ran=False,
                         run_hint=elsewhere, outputs={}, summary={}, build_id=build_id)
    if not run:
        return result
    vivado = shutil.which("vivado")
    if vivado is None:
        raise ToolchainError(
            f"Vivado is not installed here (no `vivado` on PATH); the {board.name} project for config "
            f"{cfg.label()} is written to {out_dir}",
            hint=f"on a machine with Vivado (with {board.part} device support) run `{elsewhere}`; the bitstream, "
                 f".hwh and reports land in {out_dir / OUT_DIR}. Or put Vivado on PATH here (source its "
                 "settings64.sh) and rerun; --no-run only writes the project")
    # Outputs of an earlier build in this folder must not pass for this one's.
    for name in OUTPUTS:
        (out_dir / OUT_DIR / name).unlink(missing_ok=True)
    proc = subprocess.run([vivado, *command[1:]], cwd=out_dir, check=False)
    log = out_dir / "vivado.log"
    if proc.returncode != 0:
        raise ToolchainError(f"Vivado failed (exit {proc.returncode}) building {board.name} / {cfg.label()}",
                             hint=f"see {log}")
    outputs = {name: out_dir / OUT_DIR / name for name in OUTPUTS}
    missing = [name for name, path in outputs.items() if not path.exists()]
    if missing:
        raise ToolchainError(f"Vivado finished but did not write {', '.join(missing)} in {out_dir / OUT_DIR}",
                             hint=f"see {log}")
    return BuildResult(board=board.name, config=cfg.label(), project_dir=out_dir, ran=True, run_hint=elsewhere,
                       outputs=outputs, summary=read_summary(outputs["summary.txt"]), build_id=build_id,
                       bitstream_files={"bit": outputs["vdla.bit"], "hwh": outputs["vdla.hwh"]})
