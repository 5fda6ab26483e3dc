"""Generate the RTL's SystemVerilog parameter package from the hardware spec.

``package vdla_pkg`` carries every constant the RTL uses: the config's widths,
tile shapes, buffer depths and queue depths, the timing values that are RTL
parameters, the opcode / memory-type / ALU-op enums, one packed struct per
instruction format (built from :class:`vdla_hw.isa.Layout`, MSB first, padded
to 128 / 32 bits) the AXI-lite register offsets of :mod:`vdla_hw.regmap` and the value of its
CONFIG_ID register (the low 32 bits of the config digest).
The RTL never writes one of these numbers by hand.

Every preset's package is committed as ``vdla_hw/rtl/generated/vdla_pkg_<name>.sv``;
all of them declare the same package name, and the build picks the file that
belongs to the config (:func:`vdla_hw.rtl_build.rtl_sources`).
"""

from __future__ import annotations

from pathlib import Path

from vdla_hw import isa as isa_mod
from vdla_hw import regmap
from vdla_hw.config import HwConfig, load_config, preset_names
from vdla_hw.isa import AluOp, Layout, MemType, Opcode

GENERATED_DIR = Path(__file__).parent / "rtl" / "generated"

# AXI4 master: DRAM is a flat 32-bit byte space; every DRAM client shares one ID
# (responses come back in request order and the read arbiter routes them).
AXI_ADDR_WIDTH = 32
AXI_ID_WIDTH = 1

# The TimingConfig fields that are RTL parameters (the others are measured
# properties of the RTL, documented in docs/rtl.md, or of the DRAM).
RTL_TIMING_FIELDS = (
    "dram_burst_bytes", "gemm_pipeline_depth", "alu_pipeline_depth", "alu_ii", "store_pipeline_depth", "dma_max_bursts", "dma_narrow_rows",
    "axi_r_slice",
)

# Enum field types inside the instruction structs.
_ENUM_FIELDS = {"opcode": "opcode_e", "mem_type": "mem_type_e", "alu_op": "alu_op_e"}


def package_path(cfg: HwConfig, out_dir: Path = GENERATED_DIR) -> Path:
    """Where the package of ``cfg`` lives (``vdla_pkg_<name>.sv``)."""
    return Path(out_dir) / f"vdla_pkg_{cfg.name}.sv"


def _param(name: str, value: int, doc: str = "") -> str:
    comment = f"  // {doc}" if doc else ""
    return f"  localparam int {name} = {value};{comment}"


def _config_params(cfg: HwConfig) -> list[str]:
    lines = ["  // ---- widths (bits) and tile shapes ----"]
    for key in ("inp", "wgt", "acc", "out"):
        lines.append(_param(f"LOG_{key.upper()}_WIDTH", getattr(cfg, f"log_{key}_width")))
        lines.append(_param(f"{key.upper()}_WIDTH", getattr(cfg, f"{key}_width")))
    for key in ("batch", "block_in", "block_out"):
        lines.append(_param(f"LOG_{key.upper()}", getattr(cfg, f"log_{key}")))
        lines.append(_param(key.upper(), getattr(cfg, key)))
    lines.append(_param("LOG_BUS_WIDTH", cfg.log_bus_width))
    lines.append(_param("BUS_WIDTH", cfg.bus_width, "AXI4 data width"))
    lines.append(_param("BUS_BYTES", cfg.bus_bytes))
    lines.append(_param("LOG_BUS_BYTES", cfg.bus_bytes.bit_length() - 1))
    lines.append("")
    lines.append("  // ---- SRAM elements (one tile each) and buffers ----")
    for key in ("uop", "inp", "wgt", "acc", "out"):
        nbytes = getattr(cfg, f"{key}_elem_bytes")
        depth = getattr(cfg, f"{key}_buff_depth")
        k = key.upper()
        lines.append(_param(f"{k}_ELEM_BYTES", nbytes))
        lines.append(_param(f"LOG_{k}_ELEM_BYTES", nbytes.bit_length() - 1))
        lines.append(_param(f"{k}_ELEM_BITS", 8 * nbytes))
        lines.append(_param(f"{k}_BUFF_DEPTH", depth))
        lines.append(_param(f"LOG_{k}_BUFF_DEPTH", depth.bit_length() - 1))
    lines.append("")
    lines.append("  // ---- queues ----")
    lines.append(_param("CMD_QUEUE_DEPTH", cfg.cmd_queue_depth, "each of the three command queues"))
    lines.append(_param("DEP_QUEUE_DEPTH", cfg.dep_queue_depth, "each of the four dependency-token queues"))
    lines.append("")
    lines.append("  // ---- resource mapping (same results either way) ----")
    lines.append(_param("GEMM_LUT_MACS", cfg.gemm_lut_macs, "GEMM multipliers built from LUTs, not DSP slices"))
    lines.append("")
    lines.append("  // ---- timing parameters implemented by the RTL (see docs/rtl.md) ----")
    for key in RTL_TIMING_FIELDS:
        lines.append(_param(key.upper(), getattr(cfg.timing, key)))
    lines.append(_param("LOG_DRAM_BURST_BYTES", cfg.timing.dram_burst_bytes.bit_length() - 1))
    lines.append(_param("ALU_COPY_II", cfg.timing.alu_copy_ii, "derived: the ALU copy reads one operand"))
    return lines


def _enum(type_name: str, width_param: str, width: int, prefix: str, members: type) -> list[str]:
    items = ", ".join(f"{prefix}_{m.name} = {width}'d{int(m)}" for m in members)
    return [f"  typedef enum logic [{width_param}-1:0] {{{items}}} {type_name};"]


def _struct(layout: Layout, type_name: str) -> list[str]:
    """A packed struct of ``layout``, MSB first, padded with a reserved field to the full width.

    Also emits ``<NAME>_T_BITS``, the sum of the field widths and the padding, which the
    package checks against the instruction width (yosys cannot take ``$bits`` of a type).
    """
    prefix = layout.name.upper()
    pad = layout.total_bits - layout.used_bits
    lines = [f"  // {layout.name}: {layout.used_bits} of {layout.total_bits} bits used"]
    for f in layout.fields:
        lines.append(_param(f"{prefix}_{f.name.upper()}_W", f.width))
    lines.append(_param(f"{prefix}_RSVD_W", pad, "reserved bits above the fields"))
    total = " + ".join([f"{prefix}_RSVD_W"] + [f"{prefix}_{f.name.upper()}_W" for f in layout.fields])
    lines.append(f"  localparam int {prefix}_T_BITS = {total};")
    lines.append(f"  typedef struct packed {{")
    if pad:
        lines.append(f"    logic [{prefix}_RSVD_W-1:0] rsvd;")
    for f in reversed(layout.fields):
        if f.name in _ENUM_FIELDS:
            lines.append(f"    {_ENUM_FIELDS[f.name]} {f.name};")
        elif f.width == 1:
            lines.append(f"    logic {f.name};")
        else:
            sign = " signed" if f.signed else ""
            lines.append(f"    logic{sign} [{prefix}_{f.name.upper()}_W-1:0] {f.name};")
    lines.append(f"  }} {type_name};")
    return lines


def _isa_params(cfg: HwConfig) -> list[str]:
    isa = cfg.isa
    lines = ["  // ---- ISA ----"]
    for name in ("INSN_BITS", "UOP_BITS", "INSN_BYTES", "UOP_BYTES", "OPCODE_W", "MEMTYPE_W", "ALUOP_W",
                 "DRAM_ADDR_W", "SIZE_W", "STRIDE_W", "PAD_W", "LOOP_ITER_W", "IMM_W"):
        lines.append(_param(name, getattr(isa_mod, name)))
    lines.append(_param("LOG_INSN_BYTES", isa_mod.INSN_BYTES.bit_length() - 1))
    lines.append(_param("SRAM_IDX_W", isa.sram_idx_w, "sram_base of LOAD/STORE"))
    lines += _enum("opcode_e", "OPCODE_W", isa_mod.OPCODE_W, "OP", Opcode)
    lines += _enum("mem_type_e", "MEMTYPE_W", isa_mod.MEMTYPE_W, "MEM", MemType)
    lines += _enum("alu_op_e", "ALUOP_W", isa_mod.ALUOP_W, "ALU", AluOp)
    lines.append("")
    structs = {"mem": "mem_insn_t", "store": "store_insn_t", "gemm": "gemm_insn_t", "alu": "alu_insn_t", "finish": "finish_insn_t", "uop": "uop_t"}
    for key, type_name in structs.items():
        lines += _struct(isa.layouts[key], type_name)
        lines.append("")
    checks = " &&\n    ".join(f"{k.upper()}_T_BITS == {'UOP_BITS' if k == 'uop' else 'INSN_BITS'}" for k in structs)
    lines.append("  // Every struct must be exactly one instruction / micro-op wide; vdla_top stops")
    lines.append("  // elaboration when this is false.")
    lines.append(f"  localparam bit STRUCT_WIDTHS_OK =\n    {checks};")
    return lines


def _regmap_params(cfg: HwConfig) -> list[str]:
    lines = ["  // ---- AXI ----"]
    lines.append(_param("AXI_ADDR_WIDTH", AXI_ADDR_WIDTH))
    lines.append(_param("AXI_ID_WIDTH", AXI_ID_WIDTH))
    lines.append("  localparam int AXI_DATA_WIDTH = BUS_WIDTH;")
    lines.append(_param("AXIL_ADDR_WIDTH", regmap.AXIL_ADDR_WIDTH))
    lines.append(_param("AXIL_DATA_WIDTH", regmap.AXIL_DATA_WIDTH))
    lines.append("")
    lines.append("  // ---- control registers (vdla_hw/regmap.py) ----")
    for reg in regmap.REGISTERS:
        lines.append(
            f"  localparam logic [AXIL_ADDR_WIDTH-1:0] REG_{reg.name} = {regmap.AXIL_ADDR_WIDTH}'h{reg.offset:02x};"
            f"  // {reg.access}: {reg.doc}"
        )
    for name in ("CONTROL_START", "STATUS_DONE", "STATUS_BUSY", "STATUS_FAULT", "STATUS_BUS_BUSY"):
        bit = getattr(regmap, name).bit_length() - 1
        lines.append(_param(f"{name}_BIT", bit))
    for name in ("FAULT_NONE", "FAULT_DRAM_WINDOW", "FAULT_SRAM_RANGE", "FAULT_LOOP_INDEX", "FAULT_FETCH_WINDOW"):
        lines.append(f"  localparam logic [3:0] {name} = 4'd{getattr(regmap, name)};")
    for k, name in enumerate(regmap.BUFFER_NAMES):
        lines.append(f"  localparam logic [3:0] BUF_{name} = 4'd{k};")
    lines.append(f"  // CONFIG_ID reads this: the low 32 bits of the config digest {cfg.digest}.")
    lines.append(f"  localparam logic [AXIL_DATA_WIDTH-1:0] CONFIG_ID_VALUE = 32'h{regmap.config_id(cfg):08x};")
    return lines


def generate_package(cfg: HwConfig) -> str:
    """The text of ``vdla_pkg`` for ``cfg``."""
    head = [
        f"// Generated by `vdla hw gen-pkg --config {cfg.name}` from vdla_hw/config.py, isa.py and",
        "// regmap.py. Do not edit: change the config or the ISA and regenerate.",
        "",
        "`ifndef VDLA_PKG_SV",
        "`define VDLA_PKG_SV",
        "",
        "// The package lists every constant of the design; each module uses a few of them. The file is",
        "// named after its config so that all presets' packages can sit side by side.",
        "/* verilator lint_off UNUSEDPARAM */",
        "/* verilator lint_off DECLFILENAME */",
        "package vdla_pkg;",
        "",
    ]
    body = _config_params(cfg) + [""] + _isa_params(cfg) + [""] + _regmap_params(cfg)
    tail = ["endpackage", "/* verilator lint_on DECLFILENAME */", "/* verilator lint_on UNUSEDPARAM */", "", "`endif", ""]
    return "\n".join(head + body + tail)


def write_package(cfg: HwConfig, out_dir: Path = GENERATED_DIR) -> Path:
    """Write ``vdla_pkg_<name>.sv`` into ``out_dir``; returns its path. Unchanged files are not rewritten."""
    path = package_path(cfg, out_dir)
    text = generate_package(cfg)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def write_all_presets(out_dir: Path = GENERATED_DIR) -> list[Path]:
    """Regenerate the committed package of every preset."""
    return [write_package(load_config(name), out_dir) for name in preset_names()]
