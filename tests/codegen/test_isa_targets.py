"""Code for the compile target's ISA, not the host's: ``-mcpu`` features, register budgets, machine code.

An AVX2 build must really be AVX2: ymm registers, FMA, and no AVX-512 (no zmm, no EVEX-only operands
such as mask registers, embedded broadcasts or ymm16-31), whatever the host has.  Compiling never runs
the code, so every test here passes on an AVX2-only host too.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from default_conv import default_conv

from vdla.compiler import te, topi
from vdla.compiler.codegen.llvm import codegen, parse_target, using_target
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model

AVX2 = "llvm -mcpu=haswell"
AVX512 = "llvm -mcpu=skylake-avx512"
#: Operands only an EVEX (AVX-512) encoding can name.
_EVEX = re.compile(r"%zmm\d+|%k[1-7]\b|\{1to\d+\}|%[xy]mm(1[6-9]|2\d|3[01])\b")


def _conv_assembly(target: str) -> str:
    """The machine code of ResNet's 64-channel 3x3 conv micro-kernel with the target's default schedule."""
    func, tgt, _ = default_conv(target, 64, 64, 3, 16)
    return codegen([func], tgt, name="conv").assembly()


def test_a_bare_mcpu_takes_that_cpus_simd_features() -> None:
    avx2 = parse_target(AVX2)
    assert {"avx", "avx2", "fma"} <= avx2.features and "avx512f" not in avx2.features
    assert (avx2.vector_bits, avx2.vector_registers, avx2.vector_lanes()) == (256, 16, 8)
    skx = parse_target(AVX512)
    assert "avx512f" in skx.features and (skx.vector_bits, skx.vector_registers) == (512, 32)
    assert parse_target("llvm -mcpu=x86-64").features == frozenset()  # SSE2 only: no AVX at all


def test_mattr_switches_off_what_the_cpu_name_would_add() -> None:
    narrowed = parse_target(f"llvm -mcpu={parse_target(AVX512).cpu} -mattr=+avx2,+fma")
    assert narrowed.features == {"avx2", "fma"}
    assert "-avx512f" in narrowed.feature_string.split(",") and "-avx" not in narrowed.feature_string.split(",")


def test_avx2_conv_uses_ymm_and_fma_and_no_avx512() -> None:
    asm = _conv_assembly(AVX2)
    assert "%ymm" in asm and "vfmadd" in asm
    assert not _EVEX.search(asm), _EVEX.search(asm)


def test_avx512_conv_uses_zmm() -> None:
    asm = _conv_assembly(AVX512)
    assert "%zmm" in asm and "vfmadd" in asm


@pytest.mark.parametrize(("target", "lanes", "accumulators"), [(AVX2, 8, 12), (AVX512, 16, 28)])
def test_conv_defaults_follow_the_target_not_the_host(target: str, lanes: int, accumulators: int) -> None:
    with using_target(parse_target(target)):
        assert topi.max_accumulators() == accumulators
        data = te.placeholder((1, 4, 56, 56, lanes), name="data")
        kernel = te.placeholder((4, 4, 3, 3, lanes, lanes), name="kernel")
        knobs = topi.default_conv2d_nchwc_knobs(topi.conv2d_nchwc(data, kernel, 1, 1))
    tile = knobs.oh_block * knobs.ow_block * knobs.oc_block
    # The tile fills the target's accumulators with its weight vectors and an input beside them (AVX2:
    # 6 x 2 of the 56-wide row, its last tile partitioned off; AVX-512: 14 x 2).
    assert accumulators - knobs.oc_block < tile <= accumulators and knobs.ow_block <= 56
    assert tile + knobs.oc_block + 1 <= accumulators + 4


def test_graph_built_for_avx2_is_blocked_by_8_and_has_no_avx512() -> None:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 3, 10, 10), "float32")
    y = b.op("relu", [b.op("conv2d", [x, b.const(rng.standard_normal((16, 3, 3, 3)).astype(np.float32))], "c1",
                           padding=(1, 1, 1, 1))])
    y = b.op("conv2d", [y, b.const(rng.standard_normal((16, 16, 3, 3)).astype(np.float32))], "c2",
             padding=(1, 1, 1, 1))
    compiled = build_model(b.build([y]), target="llvm", cpu_target=AVX2)
    layouts = {m.attrs.get("out_layout") for n in compiled.graph.nodes if n.op == "fused"
               for m in n.attrs["body"].nodes if m.op == "conv2d"}
    assert layouts == {"NCHW8c"}
    assert not _EVEX.search(compiled.llvm_module.assembly())
