"""Property tests: every encodable record survives encode/decode and assemble/disassemble exactly."""

from __future__ import annotations

import dataclasses
from enum import IntEnum

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla_hw.asm import assemble, disassemble, format_insn
from vdla_hw.config import load_config, preset_names
from vdla_hw.isa import (
    INSN_BYTES,
    AluInsn,
    AluOp,
    DepFlags,
    FinishInsn,
    GemmInsn,
    Isa,
    IsaError,
    MemInsn,
    MemType,
    Opcode,
    Uop,
)

PRESETS = preset_names()
FORMATS = {"mem": MemInsn, "store": MemInsn, "gemm": GemmInsn, "alu": AluInsn, "finish": FinishInsn}
OPCODES = {"mem": [Opcode.LOAD], "store": [Opcode.STORE]}
ENUM_CHOICES: dict[str, list[IntEnum]] = {
    "mem_type": list(MemType),
    "alu_op": list(AluOp),
}
SETTINGS = settings(max_examples=60, deadline=None)

deps_st = st.builds(DepFlags, st.booleans(), st.booleans(), st.booleans(), st.booleans())


def insn_st(isa: Isa, fmt: str) -> st.SearchStrategy:
    """Records of one format with every field drawn across its whole bit width."""
    cls, layout = FORMATS[fmt], isa.layouts[fmt]
    args = {}
    for f in dataclasses.fields(cls):
        if f.name == "deps":
            args[f.name] = deps_st
        elif f.name == "opcode":
            args[f.name] = st.sampled_from(OPCODES[fmt])
        elif f.name not in {lf.name for lf in layout.fields}:
            args[f.name] = st.just(f.default)  # no bits in this format (a STORE's pads, a LOAD's shift)
        elif f.name in ENUM_CHOICES:
            args[f.name] = st.sampled_from(ENUM_CHOICES[f.name])
        elif f.type in (bool, "bool"):
            args[f.name] = st.booleans()
        else:
            field = layout.field(f.name)
            args[f.name] = st.integers(field.lo, field.hi)
    records = st.builds(cls, **args)
    if fmt == "gemm":  # reset and overwrite exclude each other
        records = records.map(lambda i: dataclasses.replace(i, overwrite=False) if i.reset else i)
    if fmt == "store":  # the bias row and step are meaningful only with the bias bit
        records = records.map(lambda i: i if i.bias else dataclasses.replace(i, bias_row=0, bias_step=0))
    return records


def uop_st(isa: Isa) -> st.SearchStrategy:
    return st.builds(Uop, *(st.integers(f.lo, f.hi) for f in isa.uop.fields))


def program_st(isa: Isa) -> st.SearchStrategy:
    return st.lists(st.one_of(*(insn_st(isa, fmt) for fmt in FORMATS)), max_size=12)


@pytest.fixture(scope="module", params=PRESETS)
def isa(request) -> Isa:
    return load_config(request.param).isa


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_decode_every_format(isa, fmt):
    @SETTINGS
    @given(insn_st(isa, fmt))
    def check(insn):
        word = isa.encode(insn)
        assert 0 <= word < 1 << 128
        assert word >> isa.layouts[fmt].used_bits == 0  # reserved bits stay clear
        assert isa.decode(word) == insn
        assert isa.encode(isa.decode(word)) == word

    check()


@pytest.mark.parametrize("fmt", FORMATS)
def test_assemble_disassemble_every_format(isa, fmt):
    @SETTINGS
    @given(insn_st(isa, fmt))
    def check(insn):
        line = format_insn(insn)
        (back,), uops = assemble(line, isa.cfg)
        assert back == insn and uops == []
        assert format_insn(back) == line

    check()


def test_program_text_binary_text_is_exact(isa):
    @SETTINGS
    @given(program_st(isa), st.lists(uop_st(isa), max_size=8))
    def check(insns, uops):
        text = disassemble(insns, uops)
        image = isa.encode_program(insns)
        assert image.dtype == np.uint8 and image.size == INSN_BYTES * len(insns)
        decoded = isa.decode_program(image)
        assert decoded == insns
        assert assemble(text, isa.cfg) == (insns, uops)
        assert disassemble(decoded, uops) == text
        assert assemble(disassemble(insns, uops, numbered=True), isa.cfg) == (insns, uops)

    check()


def test_uop_round_trip(isa):
    @SETTINGS
    @given(st.lists(uop_st(isa), min_size=1, max_size=32))
    def check(uops):
        words = isa.encode_uops(uops)
        assert words.dtype == np.dtype("<u4")
        assert [isa.decode_uop(int(w)) for w in words] == uops
        dst, src, wgt = isa.decode_uop_fields(words)
        assert dst.tolist() == [u.dst for u in uops]
        assert src.tolist() == [u.src for u in uops]
        assert wgt.tolist() == [u.wgt for u in uops]

    check()


def test_decode_program_of_a_random_image(isa):
    """Random bytes either decode to records that re-encode to the same bytes, or raise IsaError."""

    @SETTINGS
    @given(st.binary(min_size=0, max_size=8 * INSN_BYTES).map(lambda b: b[: len(b) - len(b) % INSN_BYTES]))
    def check(raw):
        try:
            insns = isa.decode_program(raw)
        except IsaError as exc:
            assert str(exc).startswith("instruction ")
            return
        assert isa.encode_program(insns).tobytes() == raw

    check()


def test_decode_program_of_valid_random_words(isa):
    """Images built from valid words with random field values decode in order (bytes and ndarray input)."""

    @SETTINGS
    @given(program_st(isa))
    def check(insns):
        raw = b"".join(isa.encode(i).to_bytes(INSN_BYTES, "little") for i in insns)
        assert isa.decode_program(raw) == insns
        assert isa.decode_program(np.frombuffer(raw, dtype=np.uint8)) == insns

    check()
