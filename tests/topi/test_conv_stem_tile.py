"""The stem conv's default register tile without spills (3 NCHW input channels, one per input block).

With the kernel-width taps unrolled and one input channel per block (``topi.stem_taps_unrolled``), a stem's
tile keeps every tap's weight vectors live together; MobileNetV2's 3 x 3 stride-2 stem spilled that way with
more than half the registers as accumulators (AVX-512's 2 x 14, AVX2's 2 x 6).  On 32-register targets the
default then narrows the tile to half of them; AVX2 keeps its tile (half of 16 would leave too few accumulators,
and rolling the taps measured slower in the model).  Checked per stem on both ISAs,
as a legal point of the tuner's space, and against a float64 NumPy convolution on each ISA of the matrix.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.autotune.task import Task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.codegen.llvm import current_target, parse_target, using_target

from .conv_run import run_conv_nchwc
from .reference import conv2d_nchw, from_nchwc, kernel_blocked, to_nchwc

AVX2 = "llvm -mcpu=haswell"
AVX512 = "llvm -mcpu=skylake-avx512"
ARM = "llvm -mtriple=aarch64-linux-gnu"


def _stem(size: int, out_channels: int, k: int, stride: int, lanes: int, in_channels: int = 3,
          in_block: int = 1) -> te.Tensor:
    """A conv of an NCHW image blocked as the graph lowering blocks a model's first conv."""
    return topi.conv2d_nchwc(te.placeholder((1, in_channels // in_block, size, size, in_block), "float32", "d"),
                             te.placeholder((out_channels // lanes, in_channels // in_block, k, k, in_block, lanes),
                                            "float32", "w"), stride, k // 2)


# (target, image size, output channels, kernel, stride) -> (oc_block, ow_block, reduce_order, unroll_kw)
@pytest.mark.parametrize("target, layer, want", [
    # MobileNetV2's stem: AVX-512's 2 x 14 tile narrows to 2 x 8; AVX2's 2 x 6 stays.
    (AVX512, (224, 32, 3, 2), (2, 8, "ic_kh_kw", True)),
    (AVX2, (224, 32, 3, 2), (2, 6, "ic_kh_kw", True)),
    # ResNet's 7 x 7 stem never unrolled its taps: unchanged (AVX2's kh_kw_ic is the tenth session's rule).
    (AVX512, (224, 64, 7, 2), (2, 14, "ic_kh_kw", False)),
    (AVX2, (224, 64, 7, 2), (2, 6, "kh_kw_ic", False)),
], ids=["mnv2-avx512", "mnv2-avx2", "resnet-avx512", "resnet-avx2"])
def test_the_stem_rule_per_stem_and_isa(target: str, layer: tuple[int, int, int, int],
                                        want: tuple[int, int, str, bool]) -> None:
    size, oc, k, stride = layer
    with using_target(parse_target(target)):
        lanes = current_target().vector_lanes()
        knobs = topi.default_conv2d_nchwc_knobs(_stem(size, oc, k, stride, lanes))
        assert (knobs.oc_block, knobs.ow_block, knobs.reduce_order, knobs.unroll_kw) == want
        assert knobs.reduce_at == "tile"
        if lanes == 16:
            assert _unrolled_accumulators(knobs, k) <= current_target().vector_registers // 2


def _unrolled_accumulators(knobs: topi.Conv2dNCHWcKnobs, kw: int) -> int:
    """The tile's accumulators (one vector per column) where a stem's taps are unrolled, else 0."""
    if not topi.stem_taps_unrolled(knobs, 1, kw):
        return 0
    return knobs.oh_block * knobs.ow_block * knobs.oc_block


@pytest.mark.parametrize("size, oc, k, stride", [(224, 32, 3, 2), (112, 16, 3, 1), (96, 64, 3, 2), (56, 32, 2, 2)])
def test_no_avx512_stem_tile_unrolls_its_taps_beside_more_than_half_the_registers(size: int, oc: int, k: int,
                                                                                    stride: int) -> None:
    with using_target(parse_target(AVX512)):
        lanes = current_target().vector_lanes()
        knobs = topi.default_conv2d_nchwc_knobs(_stem(size, oc, k, stride, lanes))
        assert _unrolled_accumulators(knobs, k) <= current_target().vector_registers // 2, knobs


def test_only_x86_stems_with_unrolled_taps_count() -> None:
    tile = topi.Conv2dNCHWcKnobs(ow_block=14, oc_block=2)
    with using_target(parse_target(AVX512)):
        assert topi.stem_taps_unrolled(tile, 1, 3)
        assert not topi.stem_taps_unrolled(tile, 16, 3)  # a blocked input: the channel loop stays
        assert not topi.stem_taps_unrolled(tile, 1, 1)
        for change in (dict(unroll_kw=False), dict(reduce_order="kh_kw_ic"), dict(tile_order="channels")):
            assert not topi.stem_taps_unrolled(dataclasses.replace(tile, **change), 1, 3)
    assert not topi.stem_taps_unrolled(tile, 1, 3, parse_target(ARM))


def test_blocked_convs_keep_their_default() -> None:
    """The rule is keyed on a stem: a blocked 3 x 3 conv of the same output keeps its unrolled 2 x 14 tile."""
    with using_target(parse_target(AVX512)):
        blocked = topi.default_conv2d_nchwc_knobs(_stem(224, 32, 3, 2, 16, in_channels=16, in_block=16))
    assert (blocked.oc_block, blocked.ow_block, blocked.reduce_order, blocked.unroll_kw) == (2, 14, "ic_kh_kw", True)


@pytest.mark.parametrize("target, oc_block", [(AVX512, 16), (AVX2, 8)])
def test_the_default_is_a_legal_point_of_the_tuner_space(target: str, oc_block: int) -> None:
    wl = {"n": 1, "ic_outer": 3, "h": 224, "w": 224, "ic_block": 1, "oc_outer": 32 // oc_block, "kh": 3, "kw": 3,
          "oc_block": oc_block, "stride_h": 2, "stride_w": 2, "pad_h": 1, "pad_w": 1}
    isa = "avx512" if oc_block == 16 else "avx2"
    tmpl = template_for(Task("conv2d_nchwc", tuple(sorted(wl.items())), f"{target} ({isa})", f"test/{isa}"))
    default = tmpl.default()
    assert tmpl.space.why_illegal(default) is None
    want = (8, "ic_kh_kw", True) if oc_block == 16 else (6, "ic_kh_kw", True)
    assert (default["ow_block"], default["reduce_order"], default["unroll_kw"]) == want


@pytest.mark.parametrize("epilogue", [False, True], ids=["conv", "conv+bias"])
def test_the_stem_default_matches_numpy(cpu_target: str, epilogue: bool) -> None:
    """A 56 x 56 3 x 3 stride-2 stem (28-wide rows: AVX-512's 2 x 14 tile, which the rule narrows) with its
    default knobs, against a float64 NumPy convolution."""
    lanes = current_target().vector_lanes()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((1, 3, 56, 56)).astype(np.float32)
    w = (rng.standard_normal((2 * lanes, 3, 3, 3)) * 0.2).astype(np.float32)
    bias = rng.standard_normal((2, lanes)).astype(np.float32)
    want = conv2d_nchw(x, w, 2, 1) + (bias.reshape(-1)[None, :, None, None] if epilogue else 0.0)
    tx = te.placeholder((1, 3, 56, 56, 1), "float32", "x")
    tw = te.placeholder((2, 3, 3, 3, 1, lanes), "float32", "w")
    conv = topi.conv2d_nchwc(tx, tw, 2, 1)
    knobs = topi.default_conv2d_nchwc_knobs(conv)
    # The rule fired on AVX-512: 2 x 14 narrowed to half the registers.  AVX2 keeps 2 x 6.
    want_tile = (2, 7) if lanes == 16 else (2, 6)
    assert (knobs.oc_block, knobs.ow_block, knobs.unroll_kw, knobs.reduce_order) == (*want_tile, True, "ic_kh_kw")
    inputs = [to_nchwc(x, 1), kernel_blocked(w, 1, lanes)]
    got = run_conv_nchwc(conv, knobs, tx, tw, inputs, bias if epilogue else None)
    np.testing.assert_allclose(from_nchwc(got), want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
