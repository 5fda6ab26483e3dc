"""Malformed words and out-of-range fields raise IsaError with a message naming the cause."""

from __future__ import annotations

import pytest

from vdla_hw.config import load_config, preset_names
from vdla_hw.isa import (
    DEP_FLAG_NAMES,
    FLAG_QUEUES,
    INSN_BITS,
    OPCODE_W,
    AluInsn,
    AluOp,
    FinishInsn,
    GemmInsn,
    IsaError,
    MemInsn,
    MemType,
    Module,
    Opcode,
    Uop,
)

PRESETS = preset_names()
LOAD = MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 1, 1)
GEMM = GemmInsn(False, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0)
ALU = AluInsn(AluOp.ADD, True, -1, 0, 1, 1, 1, 0, 0, 0, 0)


@pytest.fixture(params=PRESETS)
def isa(request):
    return load_config(request.param).isa


@pytest.mark.parametrize("raw", [5, 6, 7])
def test_bad_opcode(isa, raw):
    with pytest.raises(IsaError, match=rf"opcode {raw} is not one of \['LOAD', 'STORE', 'GEMM', 'ALU', 'FINISH'\]"):
        isa.decode(raw)


@pytest.mark.parametrize("raw", [5, 6, 7])
def test_bad_mem_type(isa, raw):
    word = isa.encode(LOAD) & ~(isa.mem.field("mem_type").mask << isa.mem.field("mem_type").offset)
    word |= raw << isa.mem.field("mem_type").offset
    with pytest.raises(IsaError, match=rf"malformed LOAD .*memory type {raw} is not one of \['UOP', 'WGT', 'INP', 'ACC', 'OUT'\]"):
        isa.decode(word)


@pytest.mark.parametrize("raw", [6, 7])
def test_bad_alu_op(isa, raw):
    f = isa.alu.field("alu_op")
    word = (isa.encode(ALU) & ~(f.mask << f.offset)) | raw << f.offset
    with pytest.raises(IsaError, match=rf"ALU op {raw} is not one of \['MIN', 'MAX', 'ADD', 'SHR', 'MUL', 'MOV'\]"):
        isa.decode(word)


@pytest.mark.parametrize("insn", [LOAD, GEMM, ALU, FinishInsn()], ids=["mem", "gemm", "alu", "finish"])
def test_reserved_bits_set(isa, insn):
    word = isa.encode(insn)
    layout = {Opcode.LOAD: isa.mem, Opcode.GEMM: isa.gemm, Opcode.ALU: isa.alu, Opcode.FINISH: isa.finish}[Opcode(word & 7)]
    for bit in range(layout.used_bits, INSN_BITS):
        with pytest.raises(IsaError, match=rf"bits above bit {layout.used_bits - 1} are reserved and must be zero"):
            isa.decode(word | 1 << bit)


def test_reserved_uop_bits_and_word_ranges(isa):
    if isa.uop.used_bits < 32:
        with pytest.raises(IsaError, match="reserved"):
            isa.decode_uop(1 << 31)
    for word in (-1, 1 << INSN_BITS, 1.0):
        with pytest.raises(IsaError, match="not a 128-bit unsigned integer"):
            isa.decode(word)
    with pytest.raises(IsaError, match="not a 32-bit unsigned integer"):
        isa.decode_uop(1 << 32)


def test_decode_program_names_the_instruction_and_checks_length(isa):
    good = isa.encode(LOAD).to_bytes(16, "little")
    with pytest.raises(IsaError, match=r"^instruction 1: malformed instruction .* opcode 7"):
        isa.decode_program(good + (7).to_bytes(16, "little"))
    with pytest.raises(IsaError, match="20 bytes is not a multiple of 16"):
        isa.decode_program(good + b"\0" * 4)


@pytest.mark.parametrize(
    "insn, field",
    [
        (MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1 << 16, 1, 1), "mem.y_size"),
        (MemInsn(Opcode.STORE, MemType.OUT, -1, 0, 1, 1, 1), "store.sram_base"),
        (MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, shift=32), "store.shift"),
        (MemInsn(Opcode.LOAD, MemType.INP, 0, 1 << 32, 1, 1, 1), "mem.dram_base"),
        (MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 1, 1, x_pad1=16), "mem.x_pad1"),
        (GemmInsn(False, 0, 1, 1 << 14, 1, 0, 0, 0, 0, 0, 0), "gemm.iter_out"),
        (GemmInsn(False, 0, 1, 1, 1, 0, 0, 0, 0, 0, 1 << 22), "gemm.wgt_factor_in"),
        (AluInsn(AluOp.SHR, True, 1 << 15, 0, 1, 1, 1, 0, 0, 0, 0), "alu.imm"),
        (AluInsn(AluOp.SHR, True, -(1 << 15) - 1, 0, 1, 1, 1, 0, 0, 0, 0), "alu.imm"),
        (AluInsn(AluOp.SHR, True, 0, 1 << 22, 1, 1, 1, 0, 0, 0, 0), "alu.uop_bgn"),
    ],
)
def test_encode_out_of_range_field_names_it(isa, insn, field):
    with pytest.raises(IsaError, match=rf"^{field} = -?\d+ does not fit its \d+-bit field \(allowed \[-?\d+, \d+\]\)"):
        isa.encode(insn)


@pytest.mark.parametrize(
    "insn, pattern",
    [
        (MemInsn(Opcode.STORE, MemType.OUT, 0, 0, 1, 1, 1, 0, 0, 1, 0), "STORE cannot pad"),
        (MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1, 1, 1, shift=2), "only a STORE requantizes"),
        (MemInsn(Opcode.LOAD, MemType.ACC, 0, 0, 1, 1, 1, relu=True), "only a STORE requantizes"),
    ],
)
def test_encode_rejects_fields_the_format_has_no_bits_for(isa, insn, pattern):
    with pytest.raises(IsaError, match=pattern):
        isa.encode(insn)


def test_encode_uop_out_of_range_and_bad_records(isa):
    with pytest.raises(IsaError, match=r"^uop\.dst = .* does not fit"):
        isa.encode_uop(Uop(isa.uop.field("dst").mask + 1, 0, 0))
    with pytest.raises(IsaError, match="mem.y_size must be an integer, got 1.5"):
        isa.encode(MemInsn(Opcode.LOAD, MemType.INP, 0, 0, 1.5, 1, 1))  # type: ignore[arg-type]
    with pytest.raises(IsaError, match="MemInsn must have opcode LOAD or STORE"):
        isa.encode(MemInsn(Opcode.GEMM, MemType.INP, 0, 0, 1, 1, 1))
    with pytest.raises(IsaError, match=r"mem_type = 7 is not one of"):
        isa.encode(MemInsn(Opcode.LOAD, 7, 0, 0, 1, 1, 1))  # type: ignore[arg-type]
    with pytest.raises(IsaError, match=r"alu_op = 9 is not one of"):
        isa.encode(AluInsn(9, True, 0, 0, 1, 1, 1, 0, 0, 0, 0))  # type: ignore[arg-type]
    with pytest.raises(IsaError, match="not a VDLA instruction"):
        isa.encode(Uop(0, 0, 0))  # type: ignore[arg-type]


def test_dependency_queues_pair_up():
    """Every queue has exactly one pushing and one popping (module, flag), on opposite ends."""
    pops: dict[str, Module] = {}
    pushes: dict[str, Module] = {}
    for module, flags in FLAG_QUEUES.items():
        for flag, queue in flags.items():
            assert flag in DEP_FLAG_NAMES
            side = pops if flag.startswith("pop") else pushes
            assert queue not in side
            side[queue] = module
    assert set(pops) == set(pushes) == {"l2c", "c2l", "c2s", "s2c"}
    assert all(pops[q] != pushes[q] for q in pops)
    assert pushes["l2c"] == pops["c2l"] == Module.LOAD and pushes["c2s"] == Module.COMPUTE


def test_opcode_field_is_first():
    """Fetch routes on the low OPCODE_W bits of every format; the layouts must agree."""
    for name in PRESETS:
        isa = load_config(name).isa
        for key in ("mem", "gemm", "alu", "finish"):
            f = isa.layouts[key].field("opcode")
            assert (f.offset, f.width) == (0, OPCODE_W)
