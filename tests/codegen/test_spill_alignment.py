"""Vector spill slots at their natural alignment (``compiler/codegen/llvm/frame.py``).

A kernel whose register tile spills stores and reloads its spill slots every iteration; a 32-byte slot
left at the ABI's 16-byte alignment can straddle a cache line or, at some stack positions, a 4 KiB page,
where one process in about fifteen ran the AVX2 MobileNetV2 7-25% slow (docs/cpu_speed.md).  The
functions now realign their frame to the widest vector, so every vector access to the stack is aligned,
whatever the stack pointer is at the call.  Checked on the machine code (compiling runs nothing, so this
holds on any host): the spilling AVX2 1 x 1 conv of MobileNetV2's second block realigns its frame and
accesses the stack only with aligned vector moves; AVX-512 realigns to 64; SSE and NEON emit nothing new.
The outputs are unchanged (bit-identical to the build without the realignment)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from default_conv import default_conv

from vdla.compiler.codegen.llvm import codegen, frame, parse_target
from vdla.compiler.codegen.llvm.frame import spill_alignment
from vdla.compiler.tir.stmt import PrimFunc
from vdla.runtime.cpu_module import host_cpu_features

AVX2 = "llvm -mcpu=haswell"
AVX512 = "llvm -mcpu=skylake-avx512"
#: A vector move between a register and the stack (rsp- or rbp-relative), aligned or not.
_STACK_MOVE = re.compile(r"\b(vmov(aps|ups|apd|upd|dqa|dqu|dqa64|dqu64|dqa32|dqu32))\s+(\S+),\s*(\S+)")


def _pointwise(target: str, cin: int = 16, cout: int = 96, size: int = 112) -> tuple[PrimFunc, object]:
    """MobileNetV2's features.2 expand conv (1 x 1, 16 -> 96 channels on 112 x 112) with the target's
    default schedule: on AVX2 its tile spills."""
    func, tgt, _ = default_conv(target, cin, cout, 1, size, name="pw")
    return func, tgt


def _stack_vector_moves(asm: str, register: str) -> list[tuple[str, bool]]:
    """(mnemonic, aligned) of every move of a ``register``-class vector (``ymm``/``zmm``) to or from the
    stack."""
    moves = []
    for m in _STACK_MOVE.finditer(asm):
        src, dst = m.group(3), m.group(4)
        if (f"%{register}" in src and ("(%rsp)" in dst or "(%rbp)" in dst)) or \
                (f"%{register}" in dst and ("(%rsp)" in src or "(%rbp)" in src)):
            moves.append((m.group(1), m.group(1) in ("vmovaps", "vmovapd", "vmovdqa", "vmovdqa64", "vmovdqa32")))
    return moves


def test_spilling_avx2_kernel_realigns_its_frame_and_moves_only_aligned() -> None:
    func, tgt = _pointwise(AVX2)
    assert spill_alignment(tgt) == 32
    asm = codegen([func], tgt, name="pw").assembly()
    moves = _stack_vector_moves(asm, "ymm")
    assert len(moves) >= 8, "the AVX2 kernel no longer spills: pick another kernel that does"
    assert all(aligned for _, aligned in moves), [m for m, a in moves if not a]
    assert re.search(r"andq?\s+\$-32,\s*%rsp", asm)


def test_without_the_realignment_the_same_kernel_spills_unaligned(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property above is the realignment's doing: without it, LLVM spills with unaligned moves."""
    monkeypatch.setattr(frame, "spill_alignment", lambda target: frame.ABI_STACK_ALIGN)
    func, tgt = _pointwise(AVX2)
    moves = _stack_vector_moves(codegen([func], tgt, name="pw").assembly(), "ymm")
    assert moves and not all(aligned for _, aligned in moves)


def test_alignment_follows_the_widest_vector() -> None:
    assert spill_alignment(parse_target(AVX512)) == 64
    assert spill_alignment(parse_target("llvm -mcpu=x86-64")) == 16  # SSE: the ABI's 16 bytes suffice
    func, tgt = _pointwise(AVX512, cin=32, cout=128, size=28)
    assert re.search(r"andq?\s+\$-64,\s*%rsp", codegen([func], tgt, name="pw").assembly())
    func, tgt = _pointwise("llvm -mcpu=x86-64", cin=8, cout=8, size=8)
    sse = codegen([func], tgt, name="pw")
    assert "spill_align" not in sse.ir_text and not re.search(r"andq?\s+\$-\d+,\s*%rsp", sse.assembly())
    func, tgt = _pointwise(AVX2)
    assert "spill_align" in codegen([func], tgt, name="pw").ir_text


@pytest.mark.skipif("avx2" not in host_cpu_features(), reason="runs AVX2 code: this host has no AVX2")
def test_realigned_kernel_computes_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same inputs through the spilling kernel built with and without the realignment: bit-identical
    outputs, matching NumPy's 1 x 1 conv to float rounding.  (AVX2 code: runs on any AVX2 host.)"""
    from vdla.compiler.codegen.llvm.jit import jit

    rng = np.random.default_rng(0)
    func, tgt = _pointwise(AVX2)  # the spilling one
    data = rng.standard_normal((1, 2, 112, 112, 8)).astype(np.float32)
    kernel = rng.standard_normal((12, 2, 1, 1, 8, 8)).astype(np.float32)
    outs = []
    for align in (spill_alignment, lambda target: frame.ABI_STACK_ALIGN):
        monkeypatch.setattr(frame, "spill_alignment", align)
        out = np.zeros((1, 12, 112, 112, 8), np.float32)
        jit(codegen([func], tgt, name="pw"))(data.copy(), kernel.copy(), out)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    # NCHWc: out[n, ob, y, x, o] = sum over ib, i of data[n, ib, y, x, i] * kernel[ob, ib, 0, 0, i, o]
    want = np.einsum("nbyxi,cbio->ncyxo", data.astype(np.float64), kernel[:, :, 0, 0].astype(np.float64))
    np.testing.assert_allclose(outs[0], want, rtol=1e-5, atol=1e-4)
