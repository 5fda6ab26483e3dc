"""The FPGA boards ``vdla fpga build`` targets: one table, the only place a board is described.

A :class:`Board` names its FPGA part and the *flow* that builds a bitstream for it. The flow is
the name of a module in this package (``vdla_hw.fpga.<flow>``) with a function

    ``build(board: Board, cfg: HwConfig, out_dir: Path, *, run: bool) -> BuildResult``

that writes the project for ``cfg`` into ``out_dir`` and, when ``run`` is true and its tools are
installed, runs it (raising :class:`~vdla_hw.errors.ToolchainError` naming the missing tool
otherwise). The Zynq boards use the ``vivado`` flow and carry a :class:`ZynqPs` (the processing
system and its ports); a board of another flow (e.g. an open ECP5 flow) leaves ``ps`` unset and
adds its own fields in its flow module, keyed by the board name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from vdla_hw.config import HwConfig
from vdla_hw.errors import UsageError


@dataclass(frozen=True)
class ZynqPs:
    """A Zynq processing system as Vivado's IP integrator sees it.

    Everything the common Tcl (``fpga_scripts/vivado/build.tcl``) needs to know that differs between
    the Zynq-7000 PS (``processing_system7``) and the Zynq UltraScale+ MPSoC PS (``zynq_ultra_ps_e``):
    the IP, the properties that enable the ports and set the fabric clock, and the port and pin names.
    """

    ip: str
    """IP name (VLNV without version: the installed Vivado's version is used)."""
    automation_rule: str
    """The ``apply_bd_automation`` rule that applies the board preset (DDR, MIO) to the PS."""
    external_intfs: tuple[str, ...]
    """PS interfaces made external by the automation (the Zynq-7000's DDR and fixed I/O)."""
    clock_prop: str
    """PS property: requested frequency (MHz) of the fabric clock that drives the accelerator."""
    actual_clock_prop: str
    """PS property: the frequency the PS's PLL dividers actually give (read back, reported)."""
    enable_props: tuple[tuple[str, str], ...]
    """PS properties that enable the GP master, the HP slave and the fabric interrupt."""
    hp_width_prop: str
    """PS property: data width of the HP slave port."""
    hp_widths: tuple[int, ...]
    """Data widths the HP port supports; the interconnect converts the accelerator's bus to the
    widest one that is not wider than it."""
    gp_intf: str
    """General-purpose AXI master: the accelerator's AXI-lite control registers hang off it."""
    hp_intf: str
    """High-performance AXI slave: the accelerator's AXI4 master reaches DRAM through it."""
    clk_pin: str
    rstn_pin: str
    gp_aclk_pin: str
    hp_aclk_pin: str
    irq_pin: str
    address_space: str
    """The PS's master address space (the GP port's view) where the registers are mapped."""
    reg_base: int
    """Base address of the control registers in the GP port's window."""

    def hp_width(self, bus_width: int) -> int:
        """HP port width for an accelerator bus of ``bus_width`` bits."""
        fitting = [w for w in self.hp_widths if w <= bus_width]
        return max(fitting) if fitting else min(self.hp_widths)


ZYNQ7000_PS = ZynqPs(
    ip="processing_system7",
    automation_rule="xilinx.com:bd_rule:processing_system7",
    external_intfs=("FIXED_IO", "DDR"),
    clock_prop="PCW_FPGA0_PERIPHERAL_FREQMHZ",
    actual_clock_prop="PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ",
    enable_props=(("PCW_USE_M_AXI_GP0", "1"), ("PCW_USE_S_AXI_HP0", "1"),
                  ("PCW_USE_FABRIC_INTERRUPT", "1"), ("PCW_IRQ_F2P_INTR", "1")),
    hp_width_prop="PCW_S_AXI_HP0_DATA_WIDTH",
    hp_widths=(32, 64),
    gp_intf="M_AXI_GP0",
    hp_intf="S_AXI_HP0",
    clk_pin="FCLK_CLK0",
    rstn_pin="FCLK_RESET0_N",
    gp_aclk_pin="M_AXI_GP0_ACLK",
    hp_aclk_pin="S_AXI_HP0_ACLK",
    irq_pin="IRQ_F2P",
    address_space="Data",
    reg_base=0x43C0_0000,
)

ZYNQMP_PS = ZynqPs(
    ip="zynq_ultra_ps_e",
    automation_rule="xilinx.com:bd_rule:zynq_ultra_ps_e",
    external_intfs=(),
    clock_prop="PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ",
    actual_clock_prop="PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ",
    # HPM0_FPD on (GP0), HPM1_FPD and HPM0_LPD off (their clocks would otherwise need driving),
    # HP0_FPD (S_AXI_GP2) on, PL-to-PS interrupt group 0 on.
    enable_props=(("PSU__USE__M_AXI_GP0", "1"), ("PSU__USE__M_AXI_GP1", "0"), ("PSU__USE__M_AXI_GP2", "0"),
                  ("PSU__USE__S_AXI_GP2", "1"), ("PSU__USE__IRQ0", "1")),
    hp_width_prop="PSU__SAXIGP2__DATA_WIDTH",
    hp_widths=(32, 64, 128),
    gp_intf="M_AXI_HPM0_FPD",
    hp_intf="S_AXI_HP0_FPD",
    clk_pin="pl_clk0",
    rstn_pin="pl_resetn0",
    gp_aclk_pin="maxihpm0_fpd_aclk",
    hp_aclk_pin="saxihp0_fpd_aclk",
    irq_pin="pl_ps_irq0",
    address_space="Data",
    reg_base=0xA000_0000,
)


@dataclass(frozen=True)
class Resources:
    """What an FPGA offers, in the units of its family's synthesis report.

    ``luts`` are the family's LUTs (LUT6 on the Xilinx parts, LUT4 on ECP5), ``dsps`` its multiplier
    slices (DSP48E1/E2; MULT18X18D on ECP5) and ``bram36`` its block RAM in 36 Kbit units (an ECP5
    DP16KD is 18 Kbit: half of one).
    """

    family: str
    """``xc7``, ``zynqmp`` (UltraScale+) or ``ecp5``: which synthesis estimate describes it."""
    luts: int
    ffs: int
    dsps: int
    bram36: float

    def shortfall(self, need: dict[str, float]) -> list[str]:
        """Each resource of ``need`` (keys ``luts``, ``ffs``, ``dsps``, ``bram36``) beyond this device."""
        return [f"{need[k]:g} {k} > {getattr(self, k):g}" for k in ("luts", "ffs", "dsps", "bram36")
                if need.get(k, 0) > getattr(self, k)]


# A yosys synth_xilinx (xc7) estimate describes the UltraScale+ parts too: LUT6, DSP48 and 36 Kbit
# block RAM alike.  An ECP5 fit needs the ECP5 flow's own synthesis.
XC7_ESTIMATE_FAMILIES = ("xc7", "zynqmp")


@dataclass(frozen=True)
class HostCpu:
    """The processor a board's runtime (and a module's CPU kernels) runs on.

    ``llvm_target`` is the target string the compiler's ``--cpu-target board:<name>`` resolves to, so
    this table stays the one place a board is described (the compiler derives everything else from it).
    """

    title: str
    triple: str
    """LLVM triple of the board's userland (the ABI its Linux distribution is built with)."""
    cpu: str
    """LLVM CPU name (scheduling model)."""
    mattr: str = ""
    """LLVM ``-mattr`` features, when the CPU name alone does not give them all."""

    @property
    def llvm_target(self) -> str:
        attr = f" -mattr={self.mattr}" if self.mattr else ""
        return f"llvm -mtriple={self.triple} -mcpu={self.cpu}{attr}"


CORTEX_A9 = HostCpu("dual Cortex-A9, ARMv7-A, NEON, VFPv3, hard-float", "armv7a-unknown-linux-gnueabihf",
                    "cortex-a9", "+neon,+vfp3")
CORTEX_A53 = HostCpu("quad Cortex-A53, AArch64, NEON", "aarch64-unknown-linux-gnu", "cortex-a53", "+neon")


@dataclass(frozen=True)
class Board:
    """One FPGA board: its name on the command line, its part and the flow that builds for it."""

    name: str
    title: str
    part: str
    flow: str
    """Module of ``vdla_hw.fpga`` that builds for this board (``vivado``, ...)."""
    board_part: str = ""
    """Vivado board-file pattern (``get_board_parts``); used for the PS preset when installed."""
    ps: ZynqPs | None = None
    resources: Resources | None = None
    """The FPGA's capacity (``vdla dse`` reports which boards a config fits)."""
    host_cpu: HostCpu | None = None
    """The board's own processor (the Zynq PS), which runs the runtime and the CPU kernels; None when the
    board's host is the workstation it is attached to."""
    notes: tuple[str, ...] = field(default=())
    """What a user of the real board should know (shown by ``vdla fpga boards``)."""
    serial: bool = False
    """The host drives the board over a serial port (``--port``) instead of a processor on the board."""
    default_config: str = ""
    """The config ``vdla fpga build`` and the driver use when none is named (boards sized for one preset)."""
    sources: tuple[str, ...] = ()
    """Project files (relative to the repository root) the flow builds from besides the RTL and the
    board's scripts; they count in the build id."""
    dram_timing: tuple[tuple[str, int], ...] = ()
    """The cycle model's DRAM timing (``TimingConfig`` fields) for the board's own memory, where it
    differs from the RTL harness's fixed-latency DRAM the presets are calibrated against; measured
    against the board's simulation (``bench/ulx3s.py``)."""

    def model_config(self, cfg: HwConfig) -> HwConfig:
        """``cfg`` with this board's DRAM timing: what the cycle model runs to predict the board."""
        return cfg.replace(timing=dict(self.dram_timing)) if self.dram_timing else cfg

    @property
    def scripts_dir(self) -> Path:
        """This board's folder under ``fpga_scripts/``."""
        return FPGA_SCRIPTS_DIR / self.name.replace("-", "_")

    def source_paths(self) -> list[Path]:
        """:attr:`sources` as paths."""
        return [FPGA_SCRIPTS_DIR.parent / s for s in self.sources]


# The scripts are package data of the ``fpga_scripts`` package, so a wheel install has them as well as a
# checkout; every flow copies from here (a regular package: ``files`` is a real folder on disk).
FPGA_SCRIPTS_DIR = Path(str(files("vdla.fpga_scripts")))

BOARDS: dict[str, Board] = {b.name: b for b in (
    Board("pynq-z2", "TUL PYNQ-Z2 (Zynq-7020)", "xc7z020clg400-1", "vivado",
          board_part="*:pynq-z2:*", ps=ZYNQ7000_PS,
          resources=Resources("xc7", luts=53_200, ffs=106_400, dsps=220, bram36=140), host_cpu=CORTEX_A9,
          notes=("512 MiB DDR3 behind HP0; the accelerator's 32-bit master sees it from 0x0",)),
    Board("ultra96-v2", "Avnet Ultra96-V2 (Zynq UltraScale+ ZU3EG)", "xczu3eg-sbva484-1-e", "vivado",
          board_part="*:ultra96v2:*", ps=ZYNQMP_PS,
          resources=Resources("zynqmp", luts=70_560, ffs=141_120, dsps=360, bram36=216), host_cpu=CORTEX_A53,
          notes=("2 GiB LPDDR4; HP0_FPD maps the low 2 GiB, which the 32-bit master reaches",)),
    Board("zcu104", "AMD ZCU104 (Zynq UltraScale+ ZU7EV)", "xczu7ev-ffvc1156-2-e", "vivado",
          board_part="*:zcu104:*", ps=ZYNQMP_PS,
          resources=Resources("zynqmp", luts=230_400, ffs=460_800, dsps=1_728, bram36=312), host_cpu=CORTEX_A53,
          notes=("2 GiB PS DDR4; HP0_FPD maps the low 2 GiB, which the 32-bit master reaches",)),
    Board("ulx3s", "Radiona ULX3S (Lattice ECP5-85F): LiteX SoC, 32 MiB SDRAM, USB serial link",
          "LFE5U-85F-6CABGA381", "ulx3s_flow", serial=True, default_config="ulx3s",
          sources=("vdla_hw/fpga/ulx3s_soc.py",),
          # The 16-bit SDR SDRAM behind LiteDRAM and the AXI bridge, as traced in the simulated SoC at
          # its 30 MHz clock (docs/fpga_ulx3s.md, "Where the cycles go"): every 64-bit beat, read or
          # written, takes 5 cycles of LiteDRAM's port down-converter (1 to accept it + 4 16-bit
          # commands), one command path for both directions; refresh (every tREFI = 235 cycles,
          # ~9 cycles each) is ~1 per burst on average; a read's first beat comes 14 cycles after its
          # AR handshake on an open row, which in the model's terms (data at the end of its 5n + 1
          # cycles) is a latency of 9.
          dram_timing=(("dram_latency", 9), ("dram_beat_cycles", 5), ("dram_burst_cycles", 1)),
          resources=Resources("ecp5", luts=83_640, ffs=83_640, dsps=156, bram36=104),
          notes=("open flow from pip (LiteX, yosys, nextpnr-ecp5, ecppack); the host runs programs over the "
                 "USB serial port (UART bridge) into the SDRAM (docs/fpga_ulx3s.md)",
                 "flash: vdla fpga program --board ulx3s --bitstream DIR (openFPGALoader)")),
    Board("ulx3s-selftest", "Radiona ULX3S (Lattice ECP5-85F): accelerator-only self-test", "LFE5U-85F-6CABGA381",
          "ecp5_flow", resources=Resources("ecp5", luts=83_640, ffs=83_640, dsps=156, bram36=104),
          notes=("open flow from pip (yosys, nextpnr-ecp5, ecppack); the DRAM is on-chip block RAM holding a "
                 "self-test program, LEDs show done/pass/fail/fault (docs/fpga_ecp5.md)",
                 "only the tiny preset fits the 85F")),
)}


def get_board(name: str) -> Board:
    """The board called ``name``; a :class:`UsageError` lists the known boards otherwise."""
    try:
        return BOARDS[name]
    except KeyError:
        raise UsageError(f"unknown board {name!r}", hint=f"choose one of: {', '.join(BOARDS)}") from None
