"""The conv2d_nchwc template's prior (:mod:`vdla.compiler.autotune.conv_cost`): which algorithm it ranks
first on ResNet's planes, and why (the tiles' padding, the transforms, the weights' traffic).

Each ordering is what the model computes from the workload, checked against the reason it should hold
(transform points, transform work per tile, weight bytes), not against a stored table of estimates.
"""

from __future__ import annotations

import pytest

from vdla.compiler import topi
from vdla.compiler.autotune.conv_cost import (FMA_LATENCY_CLOCKS, L1_BYTES, L2_BYTES_PER_CLOCK,
                                              MEMORY_BYTES_PER_CYCLE, ConvShape, TileKnobs, channel_block_bytes,
                                              direct_cycles, fmas_per_clock, latency_floor, register_tile_cycles,
                                              step_cycles, transform_cycles, winograd_cycles)
from vdla.compiler.autotune.task import make_task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.codegen.llvm import parse_target
from vdla.compiler.topi.conv2d_winograd import STREAMED_WEIGHT_BYTES, transformed_weight_bytes

#: A 512-bit target whatever the host: features given with ``-mattr`` are taken as given (a bare
#: ``-mcpu=znver4`` gets the CPU's SIMD features as this host's LLVM reports them, 256-bit under an AVX2 host).
AVX512 = "llvm -mcpu=znver4 -mattr=+avx512f,+avx2,+fma"


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


def test_fewer_accumulators_than_the_fma_latency_covers_wait_on_it() -> None:
    # Each accumulator's FMAs form a chain: a step waits FMA_LATENCY_CLOCKS however few it issues, so a
    # tile needs latency x FMAs-a-clock accumulators to keep the FMA pipes busy: 4 of 512 bits, 8 of 256.
    for lanes, needed in ((16, 4), (8, 8)):
        shape = ConvShape(64, 64, 56, 56, lanes=lanes)
        assert FMA_LATENCY_CLOCKS * fmas_per_clock(shape) == needed
        # Tiles of two channel blocks (a broadcast feeds two FMAs: the loads keep up) and of one accumulator.
        tiles = {n: TileKnobs(columns=max(1, n // 2), channel_blocks=2 if n > 1 else 1)
                 for n in (1, needed // 2, needed)}
        per_mac = {n: register_tile_cycles(1e6, shape, tile) for n, tile in tiles.items()}
        assert step_cycles(shape, tiles[1]) == step_cycles(shape, tiles[needed // 2]) == latency_floor(shape)
        assert per_mac[1] == pytest.approx(needed * per_mac[needed])
        assert per_mac[needed // 2] == pytest.approx(2 * per_mac[needed])


def test_a_block_that_does_not_divide_the_row_leaves_a_narrower_tile_at_its_own_rate() -> None:
    # 56 columns: 7 tiles of 8, or 6 of 9 and one of 2.  The 2-column tile has 2 accumulators, half what
    # the FMA latency needs on 512-bit vectors, so its 2 columns of 56 run at half the rate; every other
    # tile is bound by its FMAs (and the weight stream is covered), so the conv costs 2/56 more.
    shape = ConvShape(64, 64, 56, 56)
    assert FMA_LATENCY_CLOCKS * fmas_per_clock(shape) == 4
    assert direct_cycles(shape, TileKnobs(columns=9)) / direct_cycles(shape, TileKnobs(columns=8)) == \
        pytest.approx(1 + 2 / 56)
    # 7 x 7: six columns leave a 1-column tile, seven none.
    small = ConvShape(16, 16, 7, 7)
    assert direct_cycles(small, TileKnobs(columns=6, rows=4)) > direct_cycles(small, TileKnobs(columns=7, rows=4))


def test_the_weight_stream_is_hidden_behind_a_tile_whose_steps_outlast_a_weight_vectors_transfer() -> None:
    # C2 small (16 -> 16 on 7 x 7): a 7 x 4 tile (and its 7 x 3 remainder) is bound by its FMAs, 28 and
    # 21 a step, while a 64-byte weight vector comes from memory in 64 / MEMORY_BYTES_PER_CYCLE cycles:
    # the call is its FMAs alone, two a cycle.
    shape = ConvShape(16, 16, 7, 7)
    fmas = 9 * 16 * 16 * 7 * 7 / 16
    assert direct_cycles(shape, TileKnobs(columns=7, rows=4)) == pytest.approx(fmas / 2)
    # A 1 x 1 tile waits on the FMA latency every step (latency_floor), shorter than a weight vector's
    # transfer: the first tile's 144 steps (16 channels x 9 taps) leave the rest of the stream exposed.
    weights = 9 * 16 * 16 * 4
    steps = 9 * 16
    floor = latency_floor(shape)
    assert floor < 64 / MEMORY_BYTES_PER_CYCLE
    assert direct_cycles(shape, TileKnobs(columns=1)) == pytest.approx(
        49 * steps * floor + weights / MEMORY_BYTES_PER_CYCLE - steps * floor)


def test_weights_swept_past_the_l1_come_from_the_l2_at_its_bandwidth() -> None:
    # C9's Winograd GEMM (256 input channels): one tile column against 4 channel blocks sweeps 256 x 4
    # weight vectors (64 KiB, past the L1) per group of tiles, and a step's 4 weight vectors (256 bytes)
    # take 256 / L2_BYTES_PER_CLOCK clocks, twice its 4 FMAs'; one channel block's 16 KiB stays in the L1.
    shape = ConvShape(256, 256, 14, 14)
    wide = TileKnobs(columns=1, channel_blocks=4)
    swept = 256 * channel_block_bytes(shape, wide)
    assert swept > L1_BYTES >= 256 * channel_block_bytes(shape, TileKnobs(columns=1))
    assert 4 * 64 / L2_BYTES_PER_CLOCK == 2 * 4 / fmas_per_clock(shape)
    l2_clocks = 4 * 64 / L2_BYTES_PER_CLOCK
    assert step_cycles(shape, wide, swept) == pytest.approx(l2_clocks * fmas_per_clock(shape) / 2)
    # From the L1 its loads bind instead: a broadcast and four 512-bit vectors (two pipes each) on two pipes.
    in_l1 = step_cycles(shape, wide, 0.0)
    assert in_l1 == pytest.approx((1 + 4 * 2) / 2 * fmas_per_clock(shape) / 2)
    assert in_l1 < step_cycles(shape, wide, swept)
    # A tile of 6 columns does 6 multiply-adds per weight vector: the L2 keeps up.
    six = TileKnobs(columns=3, rows=2, channel_blocks=4)
    assert step_cycles(shape, six, 256 * channel_block_bytes(shape, six)) == step_cycles(shape, six, 0.0)
