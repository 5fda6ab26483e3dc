"""The ULX3S SoC: the accelerator, a LiteDRAM SDRAM controller and a UART bridge, built with LiteX.

One SoC description serves the bitstream and the simulation, which differ only in the board
below the SoC:

* ``board``: the Radiona ULX3S platform of ``litex-boards`` (ECP5-85F), its PLL from the 25 MHz
  oscillator, the SDR SDRAM through ``litedram``'s ``GENSDRPHY``, the bridge on the FTDI UART pins;
* ``sim``: plain clock/reset/UART pins (a Verilator harness drives them) and ``litedram``'s
  ``SDRAMPHYModel`` -- a model of the SDRAM chip behind the same DFI interface, built with the same
  module timings (the ULX3S's MT48LC16M16, 32 MiB) and PHY settings as the board's PHY.

Everything else is the same sources in both: the bridge (``UARTBone``, the real bit-level
``RS232PHY``: the simulated host drives the RX pin bit by bit), the LiteDRAM controller and
crossbar, the accelerator's register file as an AXI-lite slave on the SoC bus and its AXI4
master on a crossbar port of its own (``LiteDRAMAXI2Native``). The host reaches the SDRAM
through the bus at ``main_ram``; the accelerator sees the same SDRAM from address 0, so a DRAM
address ``a`` of a program is host bus address ``main_ram + a``. No L2 cache sits on the host's
path, so the host and the accelerator always see the same bytes.

:func:`generate` writes the Verilog, LiteX's ``csr.json`` and ``soc.json`` -- the link
description the driver reads (``runtime/fpga/serial_board.py``): baud, clock, bus addresses,
the SDRAM init sequence. The driver needs no LiteX.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vdla_hw import regmap
from vdla_hw.config import HwConfig
from vdla_hw.errors import ToolchainError
from vdla_hw.gen_sv import AXI_ADDR_WIDTH, AXI_ID_WIDTH
from vdla_hw.rtl_build import rtl_sources

SOC_FILE = "soc.json"
SOC_FORMAT = "vdla-ulx3s-soc/1"
TOP = "vdla_ulx3s_soc"
DEVICE = "LFE5U-85F"
SDRAM_MODULE = "MT48LC16M16"
SYS_CLK_MHZ = 30.0
"""The SoC's clock on the board, what the ``ulx3s`` SoC closes at after routing (nextpnr-ecp5,
docs/fpga_ulx3s.md: 50 MHz routed at 17.6 MHz before the fault collector was pipelined, and the
bulk of the design needs ~29 ns); the PLL makes it from the 25 MHz oscillator (x6/5). The
accelerator runs at min(this, the config's ``clock_mhz``)."""
BAUD = 3_000_000
"""The bridge's rate: the ULX3S's FT231X reaches 3 Mbaud with an exact divisor of its 48 MHz
clock, and at 30 MHz the RS232 PHY has exactly 10 clocks per bit."""
VDLA_REG_BASE = 0x8200_0000
"""The accelerator's register window on the SoC bus (IO region, uncached)."""


@dataclass(frozen=True)
class SocParams:
    """What makes one SoC: the config, its BUILD_ID, the clock, the baud and the variant."""

    cfg: HwConfig
    build_id: int
    variant: str  # "board" or "sim"
    sys_clk_mhz: float = SYS_CLK_MHZ
    baud: int = BAUD

    @property
    def clk_hz(self) -> float:
        return self.sys_clk_mhz * 1e6


def soc_clock_mhz(cfg: HwConfig) -> float:
    """The SoC's (and accelerator's) clock for ``cfg``: the config's clock when the SoC can run it."""
    return min(SYS_CLK_MHZ, cfg.clock_mhz)


def _litex() -> None:
    try:
        import litedram  # noqa: F401
        import litex  # noqa: F401
        import litex_boards  # noqa: F401
        import migen  # noqa: F401
    except ImportError as exc:
        raise ToolchainError(f"the ULX3S SoC is built with LiteX, and {exc.name} is not installed",
                             hint="pip install 'vdla[hw]' (litex, litedram, litex-boards, migen)") from None


def _build_soc(params: SocParams) -> Any:
    """The LiteX SoC object of ``params`` (imports LiteX lazily: only builds need it)."""
    _litex()
    from litedram import modules as litedram_modules
    from litedram.common import PhySettings
    from litedram.frontend.axi import LiteDRAMAXI2Native
    from litedram.modules import SDRAMModule
    from litedram.phy import GENSDRPHY
    from litedram.phy.model import SDRAMPHYModel
    from litex.build.generic_platform import GenericPlatform, Pins, Subsignal
    from litex.soc.cores.clock import ECP5PLL
    from litex.soc.integration.soc import SoCRegion
    from litex.soc.integration.soc_core import SoCCore
    from litex.soc.interconnect.axi import AXIInterface, AXILiteInterface
    from migen import ClockDomain, ClockSignal, Instance, ResetSignal, Signal

    cfg = params.cfg
    clk = params.clk_hz
    module: SDRAMModule = getattr(litedram_modules, SDRAM_MODULE)(clk, "1:1")

    if params.variant == "board":
        from litex.build.io import DDROutput
        from litex_boards.platforms import radiona_ulx3s

        platform = radiona_ulx3s.Platform(device=DEVICE, revision="2.0", toolchain="trellis")
    else:
        class VerilogPlatform(GenericPlatform):
            """A platform that only writes Verilog: the Verilator harness is ours."""

            def build(self, fragment: Any, build_dir: str, build_name: str = TOP, **_: Any) -> Any:
                with contextlib.chdir(build_dir):  # memory init files land beside the Verilog
                    out = self.get_verilog(fragment, name=build_name)
                    out.write(f"{build_name}.v")
                return out.ns

        io = [("sys_clk", 0, Pins(1)), ("sys_rst", 0, Pins(1)),
              ("serial", 0, Subsignal("tx", Pins(1)), Subsignal("rx", Pins(1)))]
        platform = VerilogPlatform("SIM", io, name=TOP)

    class VdlaSoC(SoCCore):
        def __init__(self) -> None:
            self.cd_sys = ClockDomain()
            if params.variant == "board":
                self.cd_sys_ps = ClockDomain()
                self.pll = pll = ECP5PLL()
                rst = platform.request("rst")
                self.comb += pll.reset.eq(rst)
                pll.register_clkin(platform.request("clk25"), 25e6)
                pll.create_clkout(self.cd_sys, clk)
                pll.create_clkout(self.cd_sys_ps, clk, phase=90)  # the SDRAM's clock, as the board target
                self.specials += DDROutput(1, 0, platform.request("sdram_clock"), ClockSignal("sys_ps"))
                self.comb += platform.request("wifi_gpio0").eq(1)  # keep the ESP32 from resetting the FPGA
            else:
                self.comb += self.cd_sys.clk.eq(platform.request("sys_clk"))
                self.comb += self.cd_sys.rst.eq(platform.request("sys_rst"))  # the harness holds it for cycles
            SoCCore.__init__(self, platform, clk, ident=f"VDLA {cfg.name} {cfg.digest} {params.build_id:08x}",
                             cpu_type=None, with_uart=False, with_timer=False, integrated_rom_size=0,
                             integrated_sram_size=0, csr_data_width=32)
            self.add_uartbone(name="uartbone", uart_name="serial", baudrate=params.baud)

            # SDRAM: the board's PHY, or the chip model with the board PHY's settings.
            if params.variant == "board":
                self.sdrphy = GENSDRPHY(platform.request("sdram"), clk)
            else:
                cl = gensdrphy_cl(clk)
                settings = PhySettings(phytype="GENSDRPHY", memtype="SDR", databits=16, dfi_databits=16,
                                       nranks=1, nphases=1, rdphase=0, wrphase=0, cl=cl, read_latency=cl + 1,
                                       write_latency=0)
                self.sdrphy = SDRAMPHYModel(module=module, settings=settings, clk_freq=clk)
            self.add_sdram("sdram", phy=self.sdrphy, module=module, l2_cache_size=0)

            # The accelerator: registers on the bus, its master on a crossbar port of its own.
            axil = AXILiteInterface(data_width=regmap.AXIL_DATA_WIDTH, address_width=32)
            self.bus.add_slave("vdla", axil, SoCRegion(origin=VDLA_REG_BASE, size=0x1000, cached=False))
            axi = AXIInterface(data_width=cfg.bus_bytes * 8, address_width=AXI_ADDR_WIDTH, id_width=AXI_ID_WIDTH)
            port = self.sdram.crossbar.get_port(data_width=cfg.bus_bytes * 8)
            self.axi2native = LiteDRAMAXI2Native(axi, port, base_address=0)
            done = Signal()
            aw = regmap.AXIL_ADDR_WIDTH
            self.specials += Instance(
                "vdla_top", p_BUILD_ID=params.build_id,
                i_clk=ClockSignal("sys"), i_rst_n=~ResetSignal("sys"),
                i_s_axil_awaddr=axil.aw.addr[:aw], i_s_axil_awvalid=axil.aw.valid, o_s_axil_awready=axil.aw.ready,
                i_s_axil_wdata=axil.w.data, i_s_axil_wstrb=axil.w.strb, i_s_axil_wvalid=axil.w.valid,
                o_s_axil_wready=axil.w.ready, o_s_axil_bresp=axil.b.resp, o_s_axil_bvalid=axil.b.valid,
                i_s_axil_bready=axil.b.ready,
                i_s_axil_araddr=axil.ar.addr[:aw], i_s_axil_arvalid=axil.ar.valid, o_s_axil_arready=axil.ar.ready,
                o_s_axil_rdata=axil.r.data, o_s_axil_rresp=axil.r.resp, o_s_axil_rvalid=axil.r.valid,
                i_s_axil_rready=axil.r.ready,
                o_m_axi_awid=axi.aw.id, o_m_axi_awaddr=axi.aw.addr, o_m_axi_awlen=axi.aw.len,
                o_m_axi_awsize=axi.aw.size, o_m_axi_awburst=axi.aw.burst, o_m_axi_awvalid=axi.aw.valid,
                i_m_axi_awready=axi.aw.ready,
                o_m_axi_wdata=axi.w.data, o_m_axi_wstrb=axi.w.strb, o_m_axi_wlast=axi.w.last,
                o_m_axi_wvalid=axi.w.valid, i_m_axi_wready=axi.w.ready,
                i_m_axi_bid=axi.b.id, i_m_axi_bresp=axi.b.resp, i_m_axi_bvalid=axi.b.valid,
                o_m_axi_bready=axi.b.ready,
                o_m_axi_arid=axi.ar.id, o_m_axi_araddr=axi.ar.addr, o_m_axi_arlen=axi.ar.len,
                o_m_axi_arsize=axi.ar.size, o_m_axi_arburst=axi.ar.burst, o_m_axi_arvalid=axi.ar.valid,
                i_m_axi_arready=axi.ar.ready,
                i_m_axi_rid=axi.r.id, i_m_axi_rresp=axi.r.resp, i_m_axi_rdata=axi.r.data, i_m_axi_rlast=axi.r.last,
                i_m_axi_rvalid=axi.r.valid, o_m_axi_rready=axi.r.ready,
                o_done=done, o_irq=Signal(),
            )
            if params.variant == "board":
                # LED 0: a run finished; LED 7: the SoC is out of reset (the bitstream is loaded).
                leds = platform.request_all("user_led")
                self.comb += [leds[0].eq(done), leds[7].eq(1)]
            for src in rtl_sources(cfg):
                platform.add_source(str(src))

    return VdlaSoC()


def gensdrphy_cl(clk_hz: float) -> int:
    """The CAS latency ``GENSDRPHY`` picks at ``clk_hz`` (so the model runs with the board PHY's settings)."""
    from litedram.common import get_default_cl

    return get_default_cl(memtype="SDR", tck=1 / clk_hz)


def _init_sequence(soc: Any) -> list[tuple[str, int, int, str, int, int]]:
    """The SDRAM's init sequence (what LiteX's BIOS would issue; here the host driver does)."""
    from litedram.init import get_sdram_phy_init_sequence

    seq, _ = get_sdram_phy_init_sequence(soc.sdram.controller.settings.phy, soc.sdram.controller.settings.timing)
    out = []
    for comment, a, ba, cmd, delay in seq:
        # litedram names the bits (DFII_CONTROL_CKE|...): a control word or a command for phase 0
        kind = "control" if "DFII_CONTROL" in cmd else "command"
        value = sum(DFII_BITS[flag.strip()] for flag in cmd.split("|") if flag.strip())
        out.append((comment, int(a), int(ba), kind, value, int(delay)))
    return out


DFII_BITS = {"DFII_CONTROL_SEL": 0x01, "DFII_CONTROL_CKE": 0x02, "DFII_CONTROL_ODT": 0x04,
             "DFII_CONTROL_RESET_N": 0x08, "DFII_COMMAND_CS": 0x01, "DFII_COMMAND_WE": 0x02,
             "DFII_COMMAND_CAS": 0x04, "DFII_COMMAND_RAS": 0x08, "DFII_COMMAND_WRDATA": 0x10,
             "DFII_COMMAND_RDDATA": 0x20}
"""litedram's DFI injector bits (its generated sdram_phy headers name the same values)."""


def generate(params: SocParams, out_dir: Path) -> dict[str, Any]:
    """Write the SoC's Verilog (``gateware/``), ``csr.json`` and ``soc.json`` into ``out_dir``;
    returns soc.json's content. For ``board``, LiteX's ``top.lpf`` is written beside the Verilog."""
    from litex.soc.integration.builder import Builder

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # LiteX reports the SoC it builds (bus, regions, CSRs) on stdout and its log: keep that in soc.log.
    with (out_dir / "soc.log").open("w") as log, contextlib.redirect_stdout(log), _quiet_litex_logs(log):
        soc = _build_soc(params)
        builder = Builder(soc, output_dir=str(out_dir), compile_software=False, compile_gateware=False,
                          csr_json=str(out_dir / "csr.json"))
        builder.build(run=False, build_name=TOP)
    csr = json.loads((out_dir / "csr.json").read_text())
    regs = {k: v["addr"] for k, v in csr["csr_registers"].items() if k.startswith("sdram_dfii")}
    info = {
        "format": SOC_FORMAT, "variant": params.variant, "config": params.cfg.name,
        "config_digest": params.cfg.digest, "build_id": params.build_id,
        "sys_clk_hz": params.clk_hz, "baud": params.baud, "top": TOP,
        "vdla_base": csr["memories"]["vdla"]["base"],
        "sdram_base": csr["memories"]["main_ram"]["base"], "sdram_size": csr["memories"]["main_ram"]["size"],
        "identifier_base": csr["csr_bases"].get("identifier_mem"),
        "dfii": regs, "sdram_init": _init_sequence(soc), "sdram_module": SDRAM_MODULE,
        "sdram_timing": sdram_timing(params),
    }
    (out_dir / SOC_FILE).write_text(json.dumps(info, indent=2) + "\n")
    return info


@contextlib.contextmanager
def _quiet_litex_logs(stream: Any) -> Any:
    """Send LiteX's ``logging`` records to ``stream``: with a root handler in place, LiteX's own
    ``logging.basicConfig`` (a stderr handler) does nothing."""
    root = logging.getLogger()
    handler = logging.StreamHandler(stream)
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def sdram_timing(params: SocParams) -> dict[str, float]:
    """The SDRAM module's timings in SoC clock cycles (the cycle model's DRAM parameters come from them)."""
    from litedram import modules as litedram_modules

    module = getattr(litedram_modules, SDRAM_MODULE)(params.clk_hz, "1:1")
    t = module.timing_settings
    return {"tRP": t.tRP, "tRCD": t.tRCD, "tWR": t.tWR, "tREFI": t.tREFI, "tRFC": t.tRFC[0] if isinstance(
        t.tRFC, tuple) else t.tRFC, "cl": gensdrphy_cl(params.clk_hz), "refresh_ns": 1e9 * t.tREFI / params.clk_hz,
        "bytes_per_cycle": 2.0, "row_bytes": 2 * 2 ** module.geom_settings.colbits}


def bridge_bytes_per_second(baud: int) -> float:
    """Payload bytes per second of the UART bridge at ``baud`` (10 bits per byte on the wire)."""
    return baud / 10.0

