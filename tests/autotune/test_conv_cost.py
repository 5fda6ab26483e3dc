"""The conv2d_nchwc template's prior (:mod:`vdla.compiler.autotune.conv_cost`): which algorithm it ranks
first on ResNet's planes, and why (the tiles' padding, the transforms, the weights' traffic).

Each ordering is what the model computes from the workload, checked against the reason it should hold
(transform points, transform work per tile, weight bytes), not against a stored table of estimates.
"""

from __future__ import annotations

import pytest

from vdla.compiler import topi
from vdla.compiler.autotune.conv_cost import (ConvShape, TileKnobs, direct_cycles, register_tile_cycles,
                                              transform_cycles, winograd_cycles)
from vdla.compiler.autotune.task import make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.codegen.llvm import parse_target
from vdla.compiler.topi.conv2d_winograd import STREAMED_WEIGHT_BYTES, transformed_weight_bytes

AVX512 = "llvm -mcpu=znver4"


def _conv(channels: int, size: int) -> dict[str, int]:
    return {"n": 1, "ic_outer": channels // 16, "h": size, "w": size, "ic_block": 16, "oc_outer": channels // 16,
            "kh": 3, "kw": 3, "oc_block": 16, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}


def _best_by_algorithm(channels: int, size: int, target: str = AVX512) -> dict[str, float]:
    """The prior's lowest estimate of each algorithm over the task's whole legal space."""
    template = template_for(make_task("conv2d_nchwc", _conv(channels, size), target=target))
    space = template.space
    best: dict[str, float] = {}
    for i in space.legal_indices():
        config = space.get(i)
        algorithm = str(config["algorithm"])
        best[algorithm] = min(best.get(algorithm, float("inf")), template.estimate_cycles(config))
    return best


def test_56_wide_plane_ranks_f4_before_f5_because_tiles_of_5_pad_it() -> None:
    # 56 is 14 tiles of 4 but 12 tiles of 5 cover 60: the GEMM's points come out equal (14^2 x 36 = 12^2 x 49),
    # so F(5x5)'s bigger transforms per tile and weights decide.
    assert topi.transform_points(4, 56, 56) == topi.transform_points(5, 56, 56)
    assert sum(transform_cycles(5)) > sum(transform_cycles(4))
    best = _best_by_algorithm(64, 56)
    assert best["winograd_4"] < best["winograd_5"] < best["winograd_2"] < best["direct"]


def test_7x7_plane_of_16_channels_ranks_direct_first_because_transforms_are_not_repaid() -> None:
    best = _best_by_algorithm(16, 7)
    assert min(best, key=best.__getitem__) == "direct"
    # Though every Winograd tile needs fewer products (the GEMM's points against 9 per output): its
    # transforms and its bigger transformed weights (read cold each call) are not repaid at 16 channels.
    for m in topi.TUNED_TILES:
        assert topi.transform_points(m, 7, 7) < 9 * 7 * 7
        assert transformed_weight_bytes(m, 16, 16) > 9 * 16 * 16 * 4
    assert best["direct"] < min(v for k, v in best.items() if k != "direct")
    # With 256 channels on the same plane the products win back the transforms.
    wide = _best_by_algorithm(256, 7)
    assert min(wide, key=wide.__getitem__) != "direct"


def test_14x14_plane_of_256_channels_ranks_f5_before_f4_on_a_512_bit_target() -> None:
    # 3 x 3 tiles of 5 (441 points) against 4 x 4 tiles of 4 (576: 14 padded to 16).
    assert topi.transform_points(5, 14, 14) < topi.transform_points(4, 14, 14)
    best = _best_by_algorithm(256, 14)
    assert best["winograd_5"] < best["winograd_4"] < best["direct"]


@pytest.mark.parametrize("channels,size", [(16, 7), (64, 56), (128, 28), (256, 14)])
def test_the_prior_agrees_with_the_compilers_default_algorithm(channels: int, size: int) -> None:
    """``default_winograd_tile`` (measured on this target) and the model's best algorithm agree on these
    planes (on 512 x 7 x 7 the model puts F(2x2) ~10% ahead of the measured F(4x4): docs/autotune.md)."""
    best = _best_by_algorithm(channels, size)
    tile = topi.default_winograd_tile(channels, channels, size, size, parse_target(AVX512))
    assert min(best, key=best.__getitem__) == (f"winograd_{tile}" if tile else "direct")


def test_transforms_scale_with_channels_in_plus_out_and_the_gemm_with_their_product() -> None:
    knobs = TileKnobs(columns=4, channel_blocks=2, plane=True)

    def parts(c: int, k: int) -> tuple[float, float]:
        shape = ConvShape(c, k, 14, 14)  # the plane's buffers stay in the L2
        gemm = register_tile_cycles(topi.transform_points(4, 14, 14) * c * k, shape, knobs)
        return gemm, winograd_cycles(shape, 4, knobs) - gemm

    gemm, rest = parts(64, 64)
    gemm_in, rest_in = parts(128, 64)   # twice the input channels
    gemm_both, _ = parts(128, 128)
    assert gemm_in == pytest.approx(2 * gemm) and gemm_both == pytest.approx(4 * gemm)
    assert rest < rest_in < 2 * rest  # the input transform's share (and the weights) doubles, not the rest


def test_weights_beyond_the_assumed_cache_cost_a_pass_per_row_of_tiles_unless_the_gemm_runs_over_the_plane() -> None:
    shape = ConvShape(256, 256, 14, 14)
    assert transformed_weight_bytes(5, 256, 256) > STREAMED_WEIGHT_BYTES
    per_row = winograd_cycles(shape, 5, TileKnobs(columns=3, rows=1, channel_blocks=4))
    plane = winograd_cycles(shape, 5, TileKnobs(columns=3, rows=1, channel_blocks=4, plane=True))
    two_rows = winograd_cycles(shape, 5, TileKnobs(columns=3, rows=2, channel_blocks=4))
    assert plane < two_rows < per_row


def test_direct_keeps_the_register_tile_order() -> None:
    # More accumulators amortize the loads; past the register file they spill.
    shape = ConvShape(64, 64, 56, 56)
    one, wide, spilling = (direct_cycles(shape, TileKnobs(columns=c, channel_blocks=b)) for c, b in
                           ((1, 1), (14, 2), (8, 4)))
    assert wide < one and wide < spilling
    # A column block that does not divide the row is charged as whole tiles: 9 columns cover 56 in 63.
    assert direct_cycles(shape, TileKnobs(columns=9)) > direct_cycles(shape, TileKnobs(columns=8))
