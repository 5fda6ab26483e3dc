"""Render ``docs/isa.md``, the ISA reference, from the single source of truth.

Every number in the document comes from :mod:`vdla_hw.config` (presets, ranges,
derived values), :mod:`vdla_hw.isa` (opcodes, bit layouts, dependency queues)
or :mod:`vdla_hw.asm` (the assembly grammar); only the prose lives here.  The
output is deterministic, so a test can regenerate it and compare it with the
committed file.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import fields, replace
from pathlib import Path
from typing import Iterable, Sequence

from vdla_hw import asm, regmap
from vdla_hw.config import CLOCK_MHZ_RANGE, CONFIG_RULES, POW2_FIELDS, RANGES, TIMING_RANGES, HwConfig, TimingConfig, load_config, preset_names
from vdla_hw.isa import (
    DEP_FLAG_NAMES,
    DEP_QUEUE_NAMES,
    FLAG_QUEUES,
    IMM_W,
    INSN_BITS,
    UOP_BITS,
    AluOp,
    Layout,
    MemInsn,
    MemType,
    Module,
    Opcode,
    module_of,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DOC_PATH = PROJECT_ROOT / "docs" / "isa.md"
REGEN_CMD = "vdla hw gen-docs"

LAYOUT_TITLES = {"mem": "LOAD", "store": "STORE", "gemm": "GEMM", "alu": "ALU", "finish": "FINISH", "uop": "micro-op"}

# Meaning of each layout field; (layout, field) entries override the plain field name.
FIELD_DOCS: dict[str | tuple[str, str], str] = {
    "opcode": "instruction opcode (see Opcodes)",
    "pop_prev": "pop a token from the previous stage before executing",
    "pop_next": "pop a token from the next stage before executing",
    "push_prev": "push a token to the previous stage after completing",
    "push_next": "push a token to the next stage after completing",
    "mem_type": "memory type (see Memory types)",
    "sram_base": "first SRAM element written (LOAD) or read (STORE)",
    "dram_base": "first DRAM element; byte address = dram_base × element bytes",
    "y_size": "rows of the 2D block",
    "x_size": "elements per row",
    "x_stride": "DRAM elements between the starts of consecutive rows",
    "y_pad0": "zero rows above the block (LOAD only)",
    "y_pad1": "zero rows below the block (LOAD only)",
    "x_pad0": "zero elements left of each row (LOAD only)",
    "x_pad1": "zero elements right of each row (LOAD only)",
    "elem_stride_m1": "element stride − 1 (LOAD only): DRAM elements between consecutive elements of a row, "
                      "minus one (0: contiguous rows; > 0: a gathering LOAD, which cannot pad along x)",
    "shift": "arithmetic right shift of each accumulator lane (STORE only)",
    "clip": "1: saturate to the signed output range instead of wrapping (STORE only)",
    "relu": "1: lower bound 0 after the shift (STORE only)",
    "reset": "1: write zeros to the accumulators instead of accumulating",
    "overwrite": "1: write the product without reading the accumulator (acc = inp @ wgt); not with reset",
    "bias": "1: add acc[bias_row + y * bias_step] to every element of DRAM row y before the shift (STORE only)",
    "bias_row": "accumulator element of the first row's bias (STORE with bias)",
    "bias_step": "0: one bias for all rows; 1: the bias advances one accumulator element per DRAM row",
    "uop_bgn": "first micro-op of the loop body",
    "uop_end": "one past the last micro-op of the loop body",
    "iter_out": "extent of the outer loop (i0)",
    "iter_in": "extent of the inner loop (i1)",
    "dst_factor_out": "accumulator index step per outer iteration",
    "dst_factor_in": "accumulator index step per inner iteration",
    "src_factor_out": "input index step per outer iteration",
    "src_factor_in": "input index step per inner iteration",
    "wgt_factor_out": "weight index step per outer iteration",
    "wgt_factor_in": "weight index step per inner iteration",
    ("alu", "src_factor_out"): "second-operand accumulator index step per outer iteration",
    ("alu", "src_factor_in"): "second-operand accumulator index step per inner iteration",
    "alu_op": "ALU operation (see ALU operations)",
    "use_imm": "1: the second operand is `imm`; 0: it is acc[src]",
    "imm": f"{IMM_W}-bit immediate operand",
    "dst": "accumulator index",
    "src": "input index (GEMM) or second-operand accumulator index (ALU)",
    "wgt": "weight index (GEMM; unused by ALU)",
}

ALU_DOCS = {
    AluOp.MIN: "min(a, b)",
    AluOp.MAX: "max(a, b)",
    AluOp.ADD: "a + b, wrapping",
    AluOp.SHR: "a >> b, arithmetic; a negative b shifts left by -b",
    AluOp.MUL: "a × b, wrapping",
    AluOp.MOV: "b (a copy: `a` is not read, so it issues every `alu_copy_ii` = 1 cycle; no iteration may "
    "read a destination an earlier iteration of the same MOV writes)",
}

OPCODE_DOCS = {
    Opcode.LOAD: "DRAM → SRAM copy of a 2D block, with zero padding",
    Opcode.STORE: "accumulator SRAM → DRAM copy of a 2D block, requantized (shift, ReLU, clip) and narrowed to the output width",
    Opcode.GEMM: "matrix multiply-accumulate over a micro-op range in a two-level loop",
    Opcode.ALU: "element-wise accumulator operation over a micro-op range in a two-level loop",
    Opcode.FINISH: "ends the program",
}

QUEUE_DOCS = {"l2c": "load → compute", "c2l": "compute → load", "c2s": "compute → store", "s2c": "store → compute"}

EXAMPLE_PROGRAM = """\
# One output tile: acc = bias + inp @ wgt.T over 4 input blocks, then relu(acc >> 4).
LOAD UOP sram=0 dram=0 y=1 x=1 stride=1              # compute: the single micro-op
LOAD ACC sram=0 dram=64 y=1 x=1 stride=1             # compute: bias tile
LOAD INP sram=0 dram=0 y=1 x=4 stride=4              # load
LOAD WGT sram=0 dram=0 y=1 x=4 stride=4 deps=push_next  ; load: tell compute the tiles are in
GEMM uop=0:1 iter=1,4 dst=0,0 src=0,1 wgt=0,1 deps=pop_prev
ALU SHR imm=4 uop=0:1 iter=1,1 dst=0,0
ALU MAX imm=0 uop=0:1 iter=1,1 dst=0,0 deps=push_next
STORE OUT sram=0 dram=0 y=1 x=1 stride=1 deps=pop_prev,push_prev
FINISH deps=pop_next                                 # wait for the store, then stop

.uops
0 0 0
"""


def render_isa_doc(configs: Sequence[HwConfig] | None = None) -> str:
    """The full text of ``docs/isa.md`` for ``configs`` (default: every preset)."""
    cfgs = list(configs) if configs is not None else [load_config(n) for n in preset_names()]
    if not cfgs:
        raise ValueError("render_isa_doc needs at least one config")
    for cfg in cfgs:
        asm.assemble(EXAMPLE_PROGRAM, cfg)  # the documented example must stay valid on every preset
    parts = [
        "# VDLA instruction set reference\n\n"
        f"<!-- Generated by `{REGEN_CMD}` from vdla_hw/config.py, vdla_hw/isa.py, vdla_hw/asm.py and "
        "vdla_hw/configs/*.json. Do not edit: a test fails when this file is stale. -->\n",
        "Contents: [Overview](#overview) · [Semantics](#semantics) · [Assembly syntax](#assembly-syntax) · "
        "[Configuration rules](#configuration-rules) · [Control registers](#control-registers) · "
        + " · ".join(f"[Preset `{c.name}`](#preset-{c.name})" for c in cfgs)
        + "\n",
        _overview(cfgs[0].isa.finish),
        _semantics(),
        _syntax(),
        _rules(),
        _registers(),
    ]
    parts += [_preset(cfg) for cfg in cfgs]
    return "\n".join(parts)


def write_isa_doc(path: Path | str = DEFAULT_DOC_PATH, configs: Sequence[HwConfig] | None = None) -> Path:
    """Render the reference and write it to ``path``; returns the path. An unchanged file is not rewritten."""
    out = Path(path)
    text = render_isa_doc(configs)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return out


# ---- helpers ---------------------------------------------------------------------------------
def _table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    # A pipe inside a cell (even inside `code`) would split it: escape it.
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def attribute_docs(cls: type) -> dict[str, str]:
    """The attribute docstrings (a string literal right after the field) of a dataclass."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, after in zip(body, body[1:]):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def _documented(docs: dict[str, str], cls: type) -> dict[str, str]:
    missing = [f.name for f in fields(cls) if f.name not in docs]
    if missing:
        raise ValueError(f"{cls.__name__} fields {missing} have no docstring; add one after each field for docs/isa.md")
    return docs


def _field_doc(layout: str, name: str) -> str:
    doc = FIELD_DOCS.get((layout, name)) or FIELD_DOCS.get(name)
    if doc is None:
        raise ValueError(f"layout field {layout}.{name} has no description; add it to FIELD_DOCS in {__name__}")
    return doc


# ---- derived values (also printed by `vdla hw show-config`) ---------------------------------------
BUFFER_HEADER = ("Buffer", "Element shape", "Element bytes", "Size", "Depth (elements)", "Index bits")


def derived_values(cfg: HwConfig) -> list[tuple[str, object]]:
    """(quantity, value) rows of the values a config derives."""
    return [
        ("BATCH × BLOCK_IN × BLOCK_OUT", f"{cfg.batch} × {cfg.block_in} × {cfg.block_out}"),
        ("input / weight / accumulator / output bits", f"{cfg.inp_width} / {cfg.wgt_width} / {cfg.acc_width} / {cfg.out_width}"),
        ("MACs per cycle", cfg.macs_per_cycle),
        ("peak GOPS at clock_mhz", f"{cfg.peak_gops:g}"),
        ("DRAM bus", f"{cfg.bus_width} bits = {cfg.bus_bytes} bytes"),
        ("fetch cycles per instruction", cfg.fetch_cycles_per_insn),
        ("SRAM index field bits (sram_base)", cfg.isa.sram_idx_w),
        ("micro-op src field bits", cfg.isa.uop_src_w),
    ]


REGISTER_HEADER = ("Offset", "Register", "Access", "Meaning")


def register_rows() -> list[tuple[str, str, str, str]]:
    """One row per control register of :mod:`vdla_hw.regmap`, columns as :data:`REGISTER_HEADER`."""
    return [(f"0x{r.offset:02X}", r.name, r.access, r.doc) for r in regmap.REGISTERS]


def _registers() -> str:
    status = ", ".join(f"bit {getattr(regmap, n).bit_length() - 1} {n.removeprefix('STATUS_').lower()}"
                       for n in ("STATUS_DONE", "STATUS_BUSY", "STATUS_FAULT", "STATUS_BUS_BUSY"))
    classes = ", ".join(f"{getattr(regmap, n)} {n.removeprefix('FAULT_')}" for n in
                        ("FAULT_NONE", "FAULT_DRAM_WINDOW", "FAULT_SRAM_RANGE", "FAULT_LOOP_INDEX", "FAULT_FETCH_WINDOW"))
    buffers = ", ".join(f"{k} {n}" for k, n in enumerate(regmap.BUFFER_NAMES))
    return (
        "## Control registers\n\n"
        f"32-bit AXI-lite registers ({regmap.AXIL_ADDR_WIDTH}-bit byte addresses), from `vdla_hw/regmap.py`. "
        f"STATUS: {status}. A fault (a DMA command outside [WINDOW_BASE, WINDOW_LIMIT), a LOAD/STORE block or a "
        f"micro-op loop past its SRAM buffer) stops the machine before the offending transfer: done and irq rise "
        f"with STATUS.fault. FAULT_CAUSE classes (bits 3:0): {classes}; buffers (bits 7:4): {buffers}. "
        "Drivers turn the FAULT registers into the simulators' error (`runtime/faults.py`).\n\n"
        + _table(REGISTER_HEADER, register_rows()) + "\n"
    )


def buffer_rows(cfg: HwConfig) -> list[tuple[object, ...]]:
    """One row per SRAM buffer, columns as :data:`BUFFER_HEADER`."""
    shapes = {
        "uop": "1 micro-op",
        "inp": f"{cfg.batch} × {cfg.block_in}",
        "wgt": f"{cfg.block_out} × {cfg.block_in}",
        "acc": f"{cfg.batch} × {cfg.block_out}",
        "out": f"{cfg.batch} × {cfg.block_out}",
    }
    rows: list[tuple[object, ...]] = []
    for buf, shape in shapes.items():
        depth = getattr(cfg, f"{buf}_buff_depth")
        size = "(view of acc)" if buf == "out" else f"{1 << getattr(cfg, f'log_{buf}_buff_size')} B"
        rows.append((buf, shape, getattr(cfg, f"{buf}_elem_bytes"), size, depth, depth.bit_length() - 1))
    return rows


# ---- sections --------------------------------------------------------------------------------
def _overview(common: Layout) -> str:
    """``common`` is any layout holding the fields every instruction shares (opcode, flags)."""
    load_modules = {m: module_of(MemInsn(Opcode.LOAD, m, 0, 0, 0, 0, 0)).name.lower() for m in MemType}
    opcode_rows = []
    for op in Opcode:
        if op == Opcode.LOAD:
            by_module: dict[str, list[str]] = {}
            for m, mod in load_modules.items():
                if m != MemType.OUT:
                    by_module.setdefault(mod, []).append(m.name)
            where = "; ".join(f"{mod} ({', '.join(types)})" for mod, types in by_module.items())
        elif op == Opcode.STORE:
            where = module_of(MemInsn(op, MemType.OUT, 0, 0, 0, 0, 0)).name.lower() + " (OUT)"
        else:
            where = Module.COMPUTE.name.lower()
        opcode_rows.append((f"`{op.name}`", int(op), where, OPCODE_DOCS[op]))
    elems = {
        MemType.UOP: f"one {UOP_BITS}-bit micro-op",
        MemType.WGT: "BLOCK_OUT × BLOCK_IN weights (a row per output channel)",
        MemType.INP: "BATCH × BLOCK_IN inputs",
        MemType.ACC: "BATCH × BLOCK_OUT accumulators",
        MemType.OUT: "BATCH × BLOCK_OUT outputs (accumulators requantized and narrowed to the output width)",
    }
    mem_rows = [
        (f"`{m.name}`", int(m), elems[m], "STORE" if m == MemType.OUT else f"LOAD on {load_modules[m]}") for m in MemType
    ]
    flag_rows = []
    for flag in DEP_FLAG_NAMES:
        bit = common.field(flag).offset
        cells = []
        for module in Module:
            queue = FLAG_QUEUES[module].get(flag)
            action = "pop" if flag.startswith("pop") else "push"
            cells.append(f"{action} `{queue}`" if queue else "— (must be 0)")
        flag_rows.append((f"`{flag}`", bit, *cells))
    return (
        "## Overview\n\n"
        f"Instructions are {INSN_BITS}-bit words stored little-endian ({INSN_BITS // 8} bytes each) in DRAM; "
        f"micro-ops are {UOP_BITS}-bit little-endian words. Fields are packed from bit 0 upward in the order of "
        "the tables below; bits above the last field are reserved, must be zero, and a word with any of them set "
        "does not decode. The widths of SRAM index fields depend on the preset (its buffer depths).\n\n"
        "### Opcodes\n\n"
        + _table(("Opcode", "Value", "Runs on", "Does"), opcode_rows)
        + "\n### Memory types\n\nOne SRAM element (a *tile*) of each type:\n\n"
        + _table(("Type", "Value", "Element", "Moved by"), mem_rows)
        + "\n### ALU operations\n\n`acc[dst] = op(a, b)` with `a = acc[dst]` and `b = imm` (sign-extended) or `acc[src]`, "
        "element-wise, wrapping to the accumulator width:\n\n"
        + _table(("Op", "Value", "Result"), [(f"`{a.name}`", int(a), ALU_DOCS[a]) for a in AluOp])
        + "\n### Dependency flags\n\nFlags are relative to the module that executes the instruction "
        "(load: next = compute; compute: prev = load, next = store; store: prev = compute). "
        "The four token queues: "
        + ", ".join(f"`{q}` = {d}" for q, d in QUEUE_DOCS.items())
        + ".\n\n"
        + _table(("Flag", "Bit", *(f"on {m.name.lower()}" for m in Module)), flag_rows)
    )


def _semantics() -> str:
    return (
        "## Semantics\n\n"
        "- **Fetch** reads instructions in program order and dispatches each to the command queue of its module "
        "(`cmd_queue_depth` entries each), blocking while that queue is full.\n"
        "- **Tokens.** Pops happen before an instruction executes, pushes after it completes. A pop blocks until a "
        "token is there; a push blocks while the queue holds `dep_queue_depth` tokens.\n"
        "- **LOAD** writes `(y_pad0 + y_size + y_pad1) × (x_pad0 + x_size + x_pad1)` consecutive SRAM elements "
        "from `sram_base`; padding elements are zero. DRAM element `(r, c)` of the block is at "
        "`dram_base + r·x_stride + c·elem_stride` (`elem_stride` = `elem_stride_m1 + 1`, 1..16; assembly "
        "`estride=S`, left out for 1); addresses, sizes and strides count elements of the memory type. A "
        "*gathering* LOAD (`elem_stride` > 1, e.g. the pixels a stride-2 convolution uses) reads one DMA command "
        "per element, cannot pad along x, and its window and range checks cover every element up to "
        "`dram_base + (y_size−1)·x_stride + (x_size−1)·elem_stride`.\n"
        "- **STORE** (memory type `OUT` only, no padding) writes `acc[sram_base + r·x_size + c]` to DRAM element "
        "`dram_base + r·x_stride + c`, requantizing each accumulator lane `a` on the way out: "
        "`v = a >> shift` (arithmetic), then `v = max(v, 0)` if `relu`, then `v = clamp(v, -2^(out_width-1), "
        "2^(out_width-1) - 1)` if `clip`, then the low `out_width` bits of `v` (two's complement wrap). `shift=0` "
        "with `clip` and `relu` clear is the plain narrowing; `shift` must be below `acc_width`.\n"
        "- **GEMM** and **ALU** run a two-level loop over a micro-op range:\n\n"
        "  ```\n"
        "  for i0 in range(iter_out):\n"
        "    for i1 in range(iter_in):\n"
        "      for u in uops[uop_bgn:uop_end]:\n"
        "        dst = u.dst + i0*dst_factor_out + i1*dst_factor_in\n"
        "        src = u.src + i0*src_factor_out + i1*src_factor_in\n"
        "        wgt = u.wgt + i0*wgt_factor_out + i1*wgt_factor_in      # GEMM only\n"
        "        GEMM: acc[dst] = 0 if reset else acc[dst] + inp[src] @ wgt[wgt].T   (int32 wrap)\n"
        "        ALU:  acc[dst] = op(acc[dst], imm if use_imm else acc[src])\n"
        "  ```\n\n"
        "- **FINISH** (on compute) ends the program once it executes.\n"
    )


def _syntax() -> str:
    def form(words: str, keys: Sequence[asm.Key]) -> str:
        ops = [k.syntax if k.default is None else f"[{k.syntax}]" for k in keys]
        return "`" + " ".join([words, *ops, f"[{asm.DEPS_KEY}=FLAG,...]"]) + "`"

    alu_ops = "|".join(a.name for a in AluOp)
    forms = [
        ("LOAD", form(f"LOAD {'|'.join(m.name for m in MemType)}", asm.MEM_KEYS)),
        ("STORE", form(f"STORE OUT [{asm.CLIP_WORD}] [{asm.RELU_WORD}]", asm.STORE_KEYS)),
        ("GEMM", form(f"GEMM [{asm.RESET_WORD}|{asm.OVERWRITE_WORD}]", asm.GEMM_KEYS)),
        ("ALU, immediate", form(f"ALU {alu_ops}", [replace(k, default=None) if k.name == "imm" else k for k in asm.ALU_KEYS])),
        ("ALU, tensor", form(f"ALU {alu_ops} {asm.ACC_WORD}", asm.ALU_KEYS)),
        ("FINISH", form("FINISH", ())),
    ]
    operand_rows = []
    for title, keys in (("LOAD", asm.MEM_KEYS), ("STORE", asm.STORE_KEYS), ("GEMM", asm.GEMM_KEYS), ("ALU", asm.ALU_KEYS)):
        for k in keys:
            default = "required" if k.default is None else k.sep.join(map(str, k.default))
            operand_rows.append((title, f"`{k.syntax}`", default, k.doc))
    canonical = asm.disassemble(*asm.assemble(EXAMPLE_PROGRAM, load_config(preset_names()[0])))
    return (
        "## Assembly syntax\n\n"
        "`vdla asm FILE.s -o FILE.bin [--uops-out FILE.uops] [--config NAME]` assembles; "
        "`vdla disasm FILE.bin [--uops FILE.uops] [--config NAME]` prints the text back. "
        "One instruction per line: a mnemonic, its words, then `key=value` operands in any order, separated by "
        "spaces (no spaces inside a value). Mnemonics, words and keys are case-insensitive; integers are decimal "
        f"or `0x`/`0b`/`0o` prefixed. `{asm.COMMENT_CHARS[0]}` or `{asm.COMMENT_CHARS[1]}` starts a comment. "
        f"A line `{asm.UOPS_DIRECTIVE}` starts the micro-op section, one `DST SRC WGT` triple per line "
        f"(`{asm.INSNS_DIRECTIVE}` switches back).\n\n"
        + _table(("Instruction", "Form"), forms)
        + "\n"
        + _table(("Format", "Operand", "Default", "Meaning"), operand_rows)
        + "\n"
        f"- `{asm.CLIP_WORD}` (STORE) saturates to the output range, `{asm.RELU_WORD}` (STORE) bounds below by 0.\n"
        f"- `{asm.RESET_WORD}` (GEMM) zeroes the accumulators; `{asm.OVERWRITE_WORD}` (GEMM) writes the products "
        f"without reading them (`acc = inp @ wgt`: a tile's first reduction step, no accumulator init before it). "
        f"`bias=ROW,STEP` (STORE) adds `acc[ROW + y*STEP]` to row `y` before the shift (one extra read cycle per "
        f"row). An ALU takes either `imm=N` (immediate operand) or the "
        f"word `{asm.ACC_WORD}` (second operand `acc[src]`; an `imm=` given with it is kept in the word but unused).\n"
        f"- `{asm.DEPS_KEY}=` takes a comma-separated subset of {', '.join(f'`{n}`' for n in DEP_FLAG_NAMES)}.\n"
        "- Errors name the line, the token and what is allowed; every value is checked against its field width "
        "for the chosen `--config`.\n"
        "- The disassembler prints the *canonical form*: keys in the order above, optional operands left out when "
        "they hold their default (an immediate ALU always shows `imm=`, a tensor ALU always shows `src=`). "
        "Canonical text assembles and disassembles back to itself exactly.\n\n"
        "Example (valid on every preset):\n\n```\n" + EXAMPLE_PROGRAM + "```\n\n"
        "Its canonical form, as `vdla disasm` prints it:\n\n```\n" + canonical + "```\n"
    )


def _rules() -> str:
    return (
        "## Configuration rules\n\n"
        "A config is validated when it is loaded (`vdla_hw.load_config`); one that breaks a rule is refused "
        "with a `BadConfigError` naming the field, the rule and the allowed values. Besides each field's "
        "range (the *Allowed* column of every preset below), these hold across fields; together they are "
        "every condition the RTL checks at elaboration (`$fatal`), so a config that validates elaborates. "
        "Fields left out of a config take the `default` preset's values.\n\n"
        + "".join(f"* {rule}\n" for rule in CONFIG_RULES)
    )


def _preset(cfg: HwConfig) -> str:
    hw_docs = _documented(attribute_docs(HwConfig), HwConfig)
    timing_docs = _documented(attribute_docs(TimingConfig), TimingConfig)

    def allowed(name: str, ranges: dict[str, tuple[int, int]]) -> str:
        if name == "clock_mhz":
            return f"[{CLOCK_MHZ_RANGE[0]}, {CLOCK_MHZ_RANGE[1]}]"
        if name not in ranges:
            return ""
        lo, hi = ranges[name]
        return f"[{lo}, {hi}]" + (", power of two" if name in POW2_FIELDS else "")

    raw_rows = [
        (f"`{f.name}`", getattr(cfg, f.name), allowed(f.name, RANGES), hw_docs[f.name])
        for f in fields(HwConfig)
        if f.name not in ("name", "timing")
    ]
    timing_rows = [
        (f"`{f.name}`", getattr(cfg.timing, f.name), allowed(f.name, TIMING_RANGES), timing_docs[f.name])
        for f in fields(TimingConfig)
    ]
    isa = cfg.isa
    layouts = []
    for key, layout in isa.layouts.items():
        rows = [
            (f"`{f.name}`", f"[{f.offset + f.width - 1}:{f.offset}]", f.width, _field_doc(key, f.name) + (" (signed)" if f.signed else ""))
            for f in layout.fields
        ]
        if layout.used_bits < layout.total_bits:
            rows.append(("*reserved*", f"[{layout.total_bits - 1}:{layout.used_bits}]", layout.total_bits - layout.used_bits, "must be zero"))
        layouts.append(f"#### `{key}` — {LAYOUT_TITLES[key]} ({layout.used_bits} of {layout.total_bits} bits used)\n\n" + _table(("Field", "Bits", "Width", "Meaning"), rows))
    return (
        f"## Preset `{cfg.name}`\n\n"
        "### Configuration\n\n"
        + _table(("Key", "Value", "Allowed", "Meaning"), raw_rows)
        + "\nTiming (cycle model):\n\n"
        + _table(("Key", "Value", "Allowed", "Meaning"), timing_rows)
        + "\n### Derived values\n\n"
        + _table(("Quantity", "Value"), derived_values(cfg))
        + "\n"
        + _table(BUFFER_HEADER, buffer_rows(cfg))
        + "\n### Field layouts\n\n"
        + "\n".join(layouts)
    )
