"""Text assembly for VDLA programs: :func:`assemble` and :func:`disassemble`.

One instruction per line, a mnemonic, its words, then ``key=value`` operands::

    LOAD INP sram=0 dram=128 y=4 x=8 stride=64 pad=1,1,1,1 deps=pop_next,push_next
    LOAD INP sram=48 dram=128 y=4 x=8 stride=64 estride=2
    GEMM reset uop=0:16 iter=4,2 dst=1,0 src=8,1 wgt=0,1
    GEMM overwrite uop=0:16 iter=4,2 dst=1,0 src=8,1 wgt=0,1
    ALU SHR imm=-3 uop=0:1 iter=16,1 dst=1,0
    ALU ADD acc uop=0:1 iter=16,1 dst=1,0 src=1,0
    STORE OUT sram=0 dram=0 y=1 x=16 stride=16 deps=pop_prev,push_prev
    STORE OUT clip relu sram=0 dram=16 y=1 x=16 stride=16 shift=8
    STORE OUT sram=4 dram=32 y=4 x=16 stride=64 bias=0,1
    FINISH

    .uops
    0 0 0        # dst src wgt of micro-op 0

The operand tables below (:data:`MEM_KEYS`, :data:`LOOP_KEYS`, ...) are the
grammar: the parser, the printer and the generated ``docs/isa.md`` all read
them.  :func:`disassemble` prints the canonical form (fixed key order, optional
operands left out when they hold their default), which assembles back to the
same records, so text -> binary -> text is exact.  The assembler checks syntax
and field widths only; whether a program is meaningful (a STORE of an input
tile, a pop nobody pushes) is for the simulators to judge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence, TypeVar

from vdla_hw.config import HwConfig
from vdla_hw.isa import (
    DEP_FLAG_NAMES,
    MAX_ELEM_STRIDE,
    NO_DEPS,
    AluInsn,
    AluOp,
    DepFlags,
    FinishInsn,
    GemmInsn,
    Insn,
    IsaError,
    Layout,
    MemInsn,
    MemType,
    Opcode,
    Uop,
)

COMMENT_CHARS = "#;"
UOPS_DIRECTIVE = ".uops"
INSNS_DIRECTIVE = ".insns"
RESET_WORD = "reset"
"""GEMM word: zero the accumulators instead of accumulating."""
OVERWRITE_WORD = "overwrite"
"""GEMM word: write the product without reading the accumulator (``acc = inp @ wgt``)."""
GEMM_WORDS = (RESET_WORD, OVERWRITE_WORD)
ACC_WORD = "acc"
"""ALU word: the second operand is the accumulator tile ``acc[src]`` (otherwise ``imm=`` is required)."""
CLIP_WORD = "clip"
"""STORE word: saturate to the signed output range instead of wrapping."""
RELU_WORD = "relu"
"""STORE word: lower bound 0 (after the shift)."""
STORE_WORDS = (CLIP_WORD, RELU_WORD)


class AsmError(IsaError):
    """A line of assembly that does not parse; the message names the line, the token and what is allowed."""

    def __init__(self, line: int, token: str, problem: str) -> None:
        super().__init__(f"line {line}: {token!r}: {problem}")
        self.line = line
        self.token = token


@dataclass(frozen=True)
class Key:
    """One ``key=value`` operand: the record fields it sets, in order, joined by ``sep``."""

    name: str
    fields: tuple[str, ...]
    doc: str
    sep: str = ","
    default: tuple[int, ...] | None = None
    """Value when the key is left out; ``None`` makes the key required."""

    @property
    def syntax(self) -> str:
        return f"{self.name}=" + self.sep.join(f.upper() for f in self.fields)


MEM_KEYS: tuple[Key, ...] = (
    Key("sram", ("sram_base",), "first SRAM element written (LOAD) or read (STORE)"),
    Key("dram", ("dram_base",), "first DRAM element, counted in elements of the memory type"),
    Key("y", ("y_size",), "rows of the 2D block"),
    Key("x", ("x_size",), "elements per row"),
    Key("stride", ("x_stride",), "DRAM elements between the starts of consecutive rows"),
    Key("pad", ("y_pad0", "y_pad1", "x_pad0", "x_pad1"), "zero rows/columns: top, bottom, left, right", default=(0, 0, 0, 0)),
    Key("estride", ("elem_stride",), "LOAD only: DRAM elements between consecutive elements of a row, 1..16 "
        "(a gathering LOAD, > 1, cannot pad along x)", default=(1,)),
)
STORE_KEYS: tuple[Key, ...] = tuple(k for k in MEM_KEYS if k.name not in ("pad", "estride")) + (
    Key("shift", ("shift",), "arithmetic right shift of each accumulator lane before clip and narrowing", default=(0,)),
    Key("bias", ("bias_row", "bias_step"), "add acc[ROW + y*STEP] (STEP 0 or 1) to every element of DRAM row y "
        "before the shift; left out: no bias", default=(0, 0)),
)
LOOP_KEYS: tuple[Key, ...] = (
    Key("uop", ("uop_bgn", "uop_end"), "micro-op range [begin, end)", sep=":"),
    Key("iter", ("iter_out", "iter_in"), "extents of the outer and inner loop"),
    Key("dst", ("dst_factor_out", "dst_factor_in"), "accumulator index factors (outer, inner)"),
)
GEMM_KEYS: tuple[Key, ...] = LOOP_KEYS + (
    Key("src", ("src_factor_out", "src_factor_in"), "input index factors (outer, inner)"),
    Key("wgt", ("wgt_factor_out", "wgt_factor_in"), "weight index factors (outer, inner)"),
)
ALU_KEYS: tuple[Key, ...] = (
    Key("imm", ("imm",), f"signed immediate operand; required unless the word `{ACC_WORD}` is given", default=(0,)),
) + LOOP_KEYS + (
    Key("src", ("src_factor_out", "src_factor_in"), "second-operand accumulator index factors (outer, inner)", default=(0, 0)),
)
DEPS_KEY = "deps"
"""``deps=FLAG,...`` with flags from :data:`~vdla_hw.isa.DEP_FLAG_NAMES`; left out when no flag is set."""

MNEMONICS = tuple(op.name for op in Opcode)


# ---- text -> records -----------------------------------------------------------------------
def assemble(text: str, cfg: HwConfig) -> tuple[list[Insn], list[Uop]]:
    """Parse assembly into instruction records and micro-ops, checking every field fits ``cfg``'s ISA."""
    isa = cfg.isa
    insns: list[Insn] = []
    uops: list[Uop] = []
    in_uops = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _strip_comment(raw)
        if not line:
            continue
        tokens = line.split()
        if tokens[0].startswith("."):
            if len(tokens) > 1 or tokens[0].lower() not in (UOPS_DIRECTIVE, INSNS_DIRECTIVE):
                raise AsmError(lineno, line, f"unknown directive; allowed: {INSNS_DIRECTIVE}, {UOPS_DIRECTIVE} alone on a line")
            in_uops = tokens[0].lower() == UOPS_DIRECTIVE
        elif in_uops:
            uops.append(_parse_uop(tokens, isa.uop, lineno))
        else:
            insn = _parse_insn(tokens, isa.layouts, lineno)
            try:
                isa.encode(insn)
            except IsaError as exc:
                raise AsmError(lineno, line, str(exc)) from None
            insns.append(insn)
    return insns, uops


def _strip_comment(line: str) -> str:
    cut = min((i for i in (line.find(c) for c in COMMENT_CHARS) if i >= 0), default=len(line))
    return line[:cut].strip()


def _parse_int(token: str, text: str, lineno: int) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise AsmError(lineno, token, f"{text!r} is not an integer (decimal, or 0x/0b/0o prefixed)") from None


def _check_fits(layout: Layout, name: str, value: int, token: str, lineno: int) -> None:
    if name == "elem_stride":  # encoded as elem_stride - 1 (Isa.encode checks the range and says so)
        if not 1 <= value <= MAX_ELEM_STRIDE:
            raise AsmError(lineno, token, f"elem_stride = {value} is out of range; allowed [1, {MAX_ELEM_STRIDE}]")
        return
    f = layout.field(name)
    if not f.lo <= value <= f.hi:
        raise AsmError(lineno, token, f"{name} = {value} does not fit its {f.width}-bit field; allowed [{f.lo}, {f.hi}]")


def _parse_uop(tokens: list[str], layout: Layout, lineno: int) -> Uop:
    line = " ".join(tokens)
    if len(tokens) != 3:
        raise AsmError(lineno, line, "a micro-op line is three integers: DST SRC WGT")
    values = [_parse_int(t, t, lineno) for t in tokens]
    for name, value, token in zip(("dst", "src", "wgt"), values, tokens):
        _check_fits(layout, name, value, token, lineno)
    return Uop(*values)


def _parse_insn(tokens: list[str], layouts: dict[str, Layout], lineno: int) -> Insn:
    mnemonic = tokens[0].upper()
    if mnemonic not in MNEMONICS:
        raise AsmError(lineno, tokens[0], f"unknown mnemonic; allowed: {', '.join(MNEMONICS)} (or a {UOPS_DIRECTIVE} section)")
    words = [t for t in tokens[1:] if "=" not in t]
    pairs = [t for t in tokens[1:] if "=" in t]
    op = Opcode[mnemonic]
    if op == Opcode.LOAD:
        mem_type = _one_word(words, {m.name: m for m in MemType}, f"{mnemonic} memory type", lineno)
        values, deps = _parse_keys(pairs, MEM_KEYS, layouts["mem"], mnemonic, lineno)
        return MemInsn(op, mem_type, **values, deps=deps)
    if op == Opcode.STORE:
        flag_words = [w for w in words if w.lower() in STORE_WORDS]
        flags = _flag_words(flag_words, STORE_WORDS, mnemonic, lineno)
        mem_type = _one_word([w for w in words if w.lower() not in STORE_WORDS], {m.name: m for m in MemType},
                             f"{mnemonic} memory type", lineno)
        bias = any(p.split("=", 1)[0].lower() == "bias" for p in pairs)
        values, deps = _parse_keys(pairs, STORE_KEYS, layouts["store"], mnemonic, lineno)
        if values["bias_step"] not in (0, 1):
            raise AsmError(lineno, f"bias={values['bias_row']},{values['bias_step']}", "the bias STEP is 0 or 1")
        return MemInsn(op, mem_type, **values, deps=deps, clip=CLIP_WORD in flags, relu=RELU_WORD in flags, bias=bias)
    if op == Opcode.GEMM:
        flags = _flag_words(words, GEMM_WORDS, mnemonic, lineno)
        if len(flags) > 1:
            raise AsmError(lineno, " ".join(words), "a GEMM either resets or overwrites; give one of the two words")
        values, deps = _parse_keys(pairs, GEMM_KEYS, layouts["gemm"], mnemonic, lineno)
        return GemmInsn(reset=RESET_WORD in flags, overwrite=OVERWRITE_WORD in flags, **values, deps=deps)
    if op == Opcode.ALU:
        acc_words = [w for w in words if w.lower() == ACC_WORD]
        use_acc = ACC_WORD in _flag_words(acc_words, (ACC_WORD,), mnemonic, lineno)
        others = [w for w in words if w.lower() != ACC_WORD]
        alu_op = _one_word(others, {a.name: a for a in AluOp}, "ALU operation", lineno)
        if not use_acc and not any(p.split("=", 1)[0].lower() == "imm" for p in pairs):
            raise AsmError(lineno, " ".join(tokens), f"ALU needs an operand: imm=N (immediate) or the word `{ACC_WORD}` (acc[src])")
        values, deps = _parse_keys(pairs, ALU_KEYS, layouts["alu"], mnemonic, lineno)
        return AluInsn(alu_op=alu_op, use_imm=not use_acc, **values, deps=deps)
    if words:
        raise AsmError(lineno, words[0], "FINISH takes no words; allowed: deps=...")
    _, deps = _parse_keys(pairs, (), layouts["finish"], mnemonic, lineno)
    return FinishInsn(deps=deps)


_E = TypeVar("_E")


def _one_word(words: list[str], choices: Mapping[str, _E], what: str, lineno: int) -> _E:
    allowed = ", ".join(choices)
    if len(words) != 1:
        token = " ".join(words) if words else "(nothing)"
        raise AsmError(lineno, token, f"expected exactly one {what}; allowed: {allowed}")
    try:
        return choices[words[0].upper()]
    except KeyError:
        raise AsmError(lineno, words[0], f"unknown {what}; allowed: {allowed}") from None


def _flag_words(words: list[str], allowed: tuple[str, ...], mnemonic: str, lineno: int) -> set[str]:
    seen: set[str] = set()
    for w in words:
        word = w.lower()
        if word not in allowed or word in seen:
            problem = "repeated word" if word in seen else "unexpected word"
            raise AsmError(lineno, w, f"{problem} for {mnemonic}; allowed words: {', '.join(allowed)}")
        seen.add(word)
    return seen


def _parse_keys(
    pairs: list[str], keys: Sequence[Key], layout: Layout, mnemonic: str, lineno: int
) -> tuple[dict[str, int], DepFlags]:
    by_name = {k.name: k for k in keys}
    allowed = ", ".join([k.name for k in keys] + [DEPS_KEY])
    values: dict[str, int] = {}
    deps = NO_DEPS
    seen: set[str] = set()
    for token in pairs:
        name, _, text = token.partition("=")
        name = name.lower()
        if name in seen:
            raise AsmError(lineno, token, f"{name} given twice")
        seen.add(name)
        if name == DEPS_KEY:
            deps = _parse_deps(token, text, lineno)
            continue
        key = by_name.get(name)
        if key is None:
            raise AsmError(lineno, token, f"unknown operand for {mnemonic}; allowed: {allowed}")
        parts = text.split(key.sep)
        if len(parts) != len(key.fields):
            raise AsmError(lineno, token, f"expected {key.syntax} ({len(key.fields)} value(s) separated by {key.sep!r})")
        for field_name, part in zip(key.fields, parts):
            value = _parse_int(token, part, lineno)
            _check_fits(layout, field_name, value, token, lineno)
            values[field_name] = value
    for key in keys:
        if key.name in seen:
            continue
        if key.default is None:
            raise AsmError(lineno, mnemonic, f"missing operand {key.syntax} ({key.doc})")
        values.update(zip(key.fields, key.default))
    return values, deps


def _parse_deps(token: str, text: str, lineno: int) -> DepFlags:
    flags = text.lower().split(",")
    bad = [f for f in flags if f not in DEP_FLAG_NAMES]
    if bad or len(set(flags)) != len(flags):
        problem = f"unknown flag {bad[0]!r}" if bad else "a flag is repeated"
        raise AsmError(lineno, token, f"{problem}; allowed: {', '.join(DEP_FLAG_NAMES)} (comma-separated, no spaces)")
    return DepFlags(*(n in flags for n in DEP_FLAG_NAMES))


# ---- records -> text -----------------------------------------------------------------------
def format_insn(insn: Insn) -> str:
    """The canonical one-line text of an instruction."""
    if isinstance(insn, MemInsn):
        words = [insn.opcode.name, MemType(insn.mem_type).name]
        keys: Sequence[Key] = MEM_KEYS
        if insn.opcode == Opcode.STORE:
            words += [w for w, on in ((CLIP_WORD, insn.clip), (RELU_WORD, insn.relu)) if on]
            # A bias prints even at row 0, step 0: the key's presence is what enables it.
            keys = [replace(k, default=None) if k.name == "bias" and insn.bias else k for k in STORE_KEYS]
    elif isinstance(insn, GemmInsn):
        words = ["GEMM"] + ([RESET_WORD] if insn.reset else []) + ([OVERWRITE_WORD] if insn.overwrite else [])
        keys = GEMM_KEYS
    elif isinstance(insn, AluInsn):
        words = ["ALU", AluOp(insn.alu_op).name] + ([] if insn.use_imm else [ACC_WORD])
        # An immediate ALU prints its immediate even when zero: it is what selects the mode.
        keys = [replace(k, default=None) if k.name == "imm" and insn.use_imm else k for k in ALU_KEYS]
        if not insn.use_imm:
            keys = [replace(k, default=None) if k.name == "src" else k for k in keys]
    elif isinstance(insn, FinishInsn):
        words, keys = ["FINISH"], ()
    else:
        raise IsaError(f"not a VDLA instruction: {insn!r}")
    for key in keys:
        value = tuple(int(getattr(insn, f)) for f in key.fields)
        if value != key.default:
            words.append(f"{key.name}=" + key.sep.join(map(str, value)))
    if insn.deps != NO_DEPS:
        words.append(f"{DEPS_KEY}={insn.deps}")
    return " ".join(words)


def format_uop(uop: Uop) -> str:
    """The canonical text of a micro-op line: ``DST SRC WGT``."""
    return f"{uop.dst} {uop.src} {uop.wgt}"


def disassemble(insns: Iterable[Insn], uops: Iterable[Uop] | None = None, numbered: bool = False) -> str:
    """Canonical assembly text of a program; ``numbered`` appends each line's index as a comment."""
    lines = [format_insn(i) for i in insns]
    uop_lines = [format_uop(u) for u in uops or ()]
    if numbered:
        lines = _number(lines)
        uop_lines = _number(uop_lines)
    if uop_lines:
        lines += ([""] if lines else []) + [UOPS_DIRECTIVE] + uop_lines
    return "".join(line + "\n" for line in lines)


def _number(lines: list[str]) -> list[str]:
    width = max((len(line) for line in lines), default=0)
    return [f"{line:<{width}}  # {k}" for k, line in enumerate(lines)]

