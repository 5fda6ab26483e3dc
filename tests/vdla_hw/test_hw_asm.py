"""The text assembler: accepted spellings, canonical output and error messages."""

from __future__ import annotations

import pytest

from vdla_hw.asm import AsmError, assemble, disassemble
from vdla_hw.config import load_config
from vdla_hw.isa import AluInsn, AluOp, DepFlags, FinishInsn, GemmInsn, IsaError, MemInsn, MemType, Opcode, Uop

CFG = load_config("default")

CANONICAL = """\
LOAD INP sram=0 dram=128 y=4 x=8 stride=64 pad=1,1,1,1 deps=pop_next,push_next
GEMM reset uop=0:16 iter=4,2 dst=1,0 src=8,1 wgt=0,1
ALU SHR imm=-3 uop=0:1 iter=16,1 dst=1,0
ALU ADD acc uop=0:1 iter=16,1 dst=1,0 src=1,0
ALU MAX acc imm=7 uop=0:1 iter=1,1 dst=0,0 src=0,0
STORE OUT sram=0 dram=0 y=1 x=16 stride=16 deps=pop_prev,push_prev
STORE OUT clip relu sram=16 dram=16 y=1 x=16 stride=16 shift=9
FINISH

.uops
0 0 0
1 2 3
"""


def test_canonical_text_round_trips_to_the_expected_records():
    insns, uops = assemble(CANONICAL, CFG)
    assert insns == [
        MemInsn(Opcode.LOAD, MemType.INP, 0, 128, 4, 8, 64, 1, 1, 1, 1, DepFlags(pop_next=True, push_next=True)),
        GemmInsn(True, 0, 16, 4, 2, 1, 0, 8, 1, 0, 1),
        AluInsn(AluOp.SHR, True, -3, 0, 1, 16, 1, 1, 0, 0, 0),
        AluInsn(AluOp.ADD, False, 0, 0, 1, 16, 1, 1, 0, 1, 0),
        AluInsn(AluOp.MAX, False, 7, 0, 1, 1, 1, 0, 0, 0, 0),
        MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 16, 16, deps=DepFlags(pop_prev=True, push_prev=True)),
        MemInsn(Opcode.STORE, MemType.OUT, 16, 16, 1, 16, 16, shift=9, clip=True, relu=True),
        FinishInsn(),
    ]
    assert uops == [Uop(0, 0, 0), Uop(1, 2, 3)]
    assert disassemble(insns, uops) == CANONICAL


def test_free_form_spelling_means_the_same_program():
    loose = """
    ; a comment line
    .insns
    load inp  x=0x8 y=4 dram=0b10000000 sram=0 stride=64 deps=push_next,pop_next pad=1,1,1,1   # trailing
    Gemm uop=0:16 RESET iter=4,2 wgt=0,1 src=8,1 dst=1,0
    alu imm=-3 shr uop=0:1 iter=16,1 dst=1,0 src=0,0
    ALU acc add uop=0:1 iter=16,1 dst=1,0 src=1,0
    ALU MAX imm=7 ACC uop=0:1 iter=1,1 dst=0,0
    STORE OUT sram=0 dram=0 y=1 x=16 stride=16 DEPS=PUSH_PREV,POP_PREV
    store relu shift=9 out Clip sram=16 dram=16 y=1 x=16 stride=16
    .UOPS
      0   0  0
    1 2 0x3 ; last
    .insns
    finish
    """
    insns, uops = assemble(loose, CFG)
    assert disassemble(insns, uops) == CANONICAL


def test_numbered_listing_and_empty_program():
    insns, uops = assemble(CANONICAL, CFG)
    listing = disassemble(insns, uops, numbered=True)
    assert listing.splitlines()[0].endswith("# 0") and listing.splitlines()[-1].endswith("# 1")
    assert assemble(listing, CFG) == (insns, uops)
    assert assemble("", CFG) == ([], []) and disassemble([]) == ""
    assert disassemble([], [Uop(1, 2, 3)]) == ".uops\n1 2 3\n"


BASE = "LOAD INP sram=0 dram=0 y=1 x=1 stride=1"
LOOP = "uop=0:1 iter=1,1 dst=0,0"


@pytest.mark.parametrize(
    "text, line, token, problem",
    [
        ("FINISH\nFOO x=1", 2, "FOO", "unknown mnemonic; allowed: LOAD, STORE, GEMM, ALU, FINISH"),
        ("LOAD XYZ sram=0 dram=0 y=1 x=1 stride=1", 1, "XYZ", "unknown LOAD memory type; allowed: UOP, WGT, INP, ACC, OUT"),
        ("STORE sram=0 dram=0 y=1 x=1 stride=1", 1, "(nothing)", "expected exactly one STORE memory type"),
        ("LOAD INP sram=0 dram=0 y=1 x=1", 1, "LOAD", "missing operand stride=X_STRIDE"),
        (BASE + " strde=1", 1, "strde=1", "unknown operand for LOAD; allowed: sram, dram, y, x, stride, pad, estride, deps"),
        (BASE + " x=2", 1, "x=2", "x given twice"),
        ("LOAD INP sram=0 dram=0 y=70000 x=1 stride=1", 1, "y=70000", "y_size = 70000 does not fit its 16-bit field; allowed [0, 65535]"),
        ("LOAD INP sram=0 dram=-1 y=1 x=1 stride=1", 1, "dram=-1", "dram_base = -1 does not fit its 32-bit field"),
        ("LOAD INP sram=9000 dram=0 y=1 x=1 stride=1", 1, "sram=9000", "sram_base = 9000 does not fit its 13-bit field; allowed [0, 8191]"),
        (BASE + " pad=1,1", 1, "pad=1,1", "expected pad=Y_PAD0,Y_PAD1,X_PAD0,X_PAD1 (4 value(s) separated by ',')"),
        (BASE + " pad=0,0,0,16", 1, "pad=0,0,0,16", "x_pad1 = 16 does not fit its 4-bit field; allowed [0, 15]"),
        (BASE.replace("x=1", "x=1e3"), 1, "x=1e3", "'1e3' is not an integer"),
        (BASE + " deps=pop_nxt", 1, "deps=pop_nxt", "unknown flag 'pop_nxt'; allowed: pop_prev, pop_next, push_prev, push_next"),
        (BASE + " deps=pop_next,pop_next", 1, "deps=pop_next,pop_next", "a flag is repeated"),
        ("GEMM uop=0,1 iter=1,1 dst=0,0 src=0,0 wgt=0,0", 1, "uop=0,1", "expected uop=UOP_BGN:UOP_END"),
        ("GEMM zero " + LOOP + " src=0,0 wgt=0,0", 1, "zero", "unexpected word for GEMM; allowed words: reset"),
        ("GEMM reset reset " + LOOP + " src=0,0 wgt=0,0", 1, "reset", "repeated word for GEMM"),
        ("GEMM " + LOOP + " src=0,0", 1, "GEMM", "missing operand wgt=WGT_FACTOR_OUT,WGT_FACTOR_IN"),
        ("ALU ADD " + LOOP, 1, "ALU ADD " + LOOP, "ALU needs an operand: imm=N (immediate) or the word `acc`"),
        ("ALU DIV imm=1 " + LOOP, 1, "DIV", "unknown ALU operation; allowed: MIN, MAX, ADD, SHR, MUL"),
        ("ALU ADD MUL imm=1 " + LOOP, 1, "ADD MUL", "expected exactly one ALU operation"),
        ("ALU ADD imm=32768 " + LOOP, 1, "imm=32768", "imm = 32768 does not fit its 16-bit field; allowed [-32768, 32767]"),
        ("ALU ADD imm=1 wgt=0,0 " + LOOP, 1, "wgt=0,0", "unknown operand for ALU; allowed: imm, uop, iter, dst, src, deps"),
        ("STORE OUT sram=0 dram=0 y=1 x=1 stride=1 pad=0,0,0,0", 1, "pad=0,0,0,0",
         "unknown operand for STORE; allowed: sram, dram, y, x, stride, shift, bias, deps"),
        (BASE + " shift=1", 1, "shift=1", "unknown operand for LOAD"),
        ("STORE OUT clip clip sram=0 dram=0 y=1 x=1 stride=1", 1, "clip", "repeated word for STORE"),
        ("STORE OUT sram=0 dram=0 y=1 x=1 stride=1 shift=32", 1, "shift=32", "shift = 32 does not fit its 5-bit field"),
        (BASE + " estride=17", 1, "estride=17", "elem_stride = 17 is out of range; allowed [1, 16]"),
        (BASE + " estride=0", 1, "estride=0", "elem_stride = 0 is out of range"),
        (BASE + " estride=2 pad=0,0,1,0", 1, BASE + " estride=2 pad=0,0,1,0", "a gathering LOAD (elem_stride = 2) cannot pad along x"),
        ("STORE OUT sram=0 dram=0 y=1 x=1 stride=1 estride=2", 1, "estride=2", "unknown operand for STORE"),
        ("FINISH now", 1, "now", "FINISH takes no words"),
        (".data", 1, ".data", "unknown directive; allowed: .insns, .uops"),
        (".uops\n1 2", 2, "1 2", "a micro-op line is three integers: DST SRC WGT"),
        (".uops\n1 2 99999", 2, "99999", "wgt = 99999 does not fit its 10-bit field"),
    ],
)
def test_errors_name_line_token_and_what_is_allowed(text, line, token, problem):
    with pytest.raises(AsmError) as info:
        assemble(text, CFG)
    assert info.value.line == line and info.value.token == token
    assert str(info.value).startswith(f"line {line}: {token!r}: ")
    assert problem in str(info.value)
    assert isinstance(info.value, IsaError)


def test_field_widths_follow_the_config():
    line = "LOAD INP sram=600 dram=0 y=1 x=1 stride=1"
    assert assemble(line, CFG)[0][0].sram_base == 600
    with pytest.raises(AsmError, match=r"sram_base = 600 does not fit its 9-bit field; allowed \[0, 511\]"):
        assemble(line, load_config("tiny"))


def test_gathering_load_round_trips_and_prints_its_element_stride():
    text = "LOAD INP sram=0 dram=5 y=7 x=14 stride=56 estride=2 pad=1,0,0,0\nLOAD INP sram=0 dram=5 y=7 x=14 stride=56"
    insns, _ = assemble(text, CFG)
    assert [i.elem_stride for i in insns] == [2, 1]
    assert disassemble(insns).splitlines() == ["LOAD INP sram=0 dram=5 y=7 x=14 stride=56 pad=1,0,0,0 estride=2",
                                               "LOAD INP sram=0 dram=5 y=7 x=14 stride=56"]
    assert CFG.isa.decode_program(CFG.isa.encode_program(insns)) == insns
