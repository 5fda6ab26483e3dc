"""The conv micro-kernel's row tiles (``oh_block``) and input-channel placement (``reduce_at``).

Every combination runs against a float64 NumPy convolution, with and without a fused epilogue, on
each ISA of the ``cpu_target`` matrix; the defaults are checked for what they promise (rows fill
the accumulators of a short row, weight-heavy layers reduce outside the plane), and a bad knob is
a clear error naming the fix.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.build import build
from vdla.compiler.codegen.llvm import current_target, parse_target, using_target
from vdla.compiler.schedule import create_schedule
from vdla.compiler.topi.utils import TopiError


def _reference(x: np.ndarray, w: np.ndarray, stride: int, pad: int) -> np.ndarray:
    """Blocked NCHWc conv in float64: x [1, C/c, H, W, c], w [O/o, C/c, K, K, c, o]."""
    h, wd = x.shape[2:4]
    oco, _, k, _, _, ocb = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad), (0, 0)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    out = np.zeros((1, oco, oh, ow, ocb))
    for ky, kx in itertools.product(range(k), range(k)):
        win = xp[0, :, ky:ky + stride * oh:stride, kx:kx + stride * ow:stride, :]  # [C/c, oh, ow, c]
        out[0] += np.einsum("cyxi,pcij->pyxj", win, w[:, :, ky, kx].astype(np.float64))
    return out


def _run(h: int, ic: int, oc: int, k: int, stride: int, knobs: topi.Conv2dNCHWcKnobs | None,
         epilogue: bool) -> tuple[np.ndarray, np.ndarray, topi.Conv2dNCHWcKnobs]:
    lanes = current_target().vector_lanes()
    rng = np.random.default_rng(h * 100 + ic + k)
    x = rng.standard_normal((1, ic, h, h, lanes)).astype(np.float32)
    w = (rng.standard_normal((oc, ic, k, k, lanes, lanes)) * 0.1).astype(np.float32)
    bias = rng.standard_normal((oc, lanes)).astype(np.float32)
    tx, tw = te.placeholder(x.shape, name="x"), te.placeholder(w.shape, name="w")
    conv = topi.conv2d_nchwc(tx, tw, stride, k // 2)
    knobs = knobs or topi.default_conv2d_nchwc_knobs(conv)
    want = _reference(x, w, stride, k // 2)
    if epilogue:
        tb = te.placeholder(bias.shape, name="b")
        out = te.compute(conv.shape, lambda n, c, y, xx, o: conv[n, c, y, xx, o] + tb[c, o], name="biased")
        s = create_schedule(out)
        topi.schedule_conv2d_nchwc(conv, knobs, s=s, epilogue=out)
        args, inputs = [tx, tw, tb, out], [x, w, bias]
        want = want + bias[None, :, None, None, :]
    else:
        out = conv
        s = topi.schedule_conv2d_nchwc(conv, knobs)
        args, inputs = [tx, tw, out], [x, w]
    got = np.zeros([int(d.value) for d in out.shape], np.float32)
    build(s, args)(*inputs, got)
    return got, want, knobs


# (height = width, input blocks, output blocks, kernel, stride): a 7-wide row (rows tile with a
# partitioned last row), a stride-2 layer, a 1x1 layer.
_LAYERS = [(7, 4, 8, 3, 1), (9, 2, 8, 3, 2), (6, 3, 8, 1, 1)]


@pytest.mark.parametrize("layer", _LAYERS, ids=lambda v: "x".join(map(str, v)))
@pytest.mark.parametrize("reduce_at", ["tile", "row", "plane"])
@pytest.mark.parametrize("oh_block", [1, 2, 3])
@pytest.mark.parametrize("epilogue", [False, True], ids=["conv", "conv+bias"])
def test_every_row_tile_and_reduce_position_matches_numpy(cpu_target: str, layer: tuple[int, ...],
                                                          reduce_at: str, oh_block: int, epilogue: bool) -> None:
    h, ic, oc, k, stride = layer
    ow = (h + 2 * (k // 2) - k) // stride + 1
    ow_block = max(d for d in (1, 2, 3, 4, 7) if ow % d == 0)
    knobs = topi.Conv2dNCHWcKnobs(ow_block=ow_block, oc_block=2, oh_block=oh_block, reduce_at=reduce_at,
                                  outer_order="oc_y")
    got, want, _ = _run(h, ic, oc, k, stride, knobs, epilogue)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.mark.parametrize("layer", [(7, 2, 8, 3, 1), (9, 2, 8, 3, 2)], ids=["7wide", "5wide_s2"])
@pytest.mark.parametrize("reduce_at", ["tile", "plane"])
@pytest.mark.parametrize("epilogue", [False, True], ids=["conv", "conv+bias"])
def test_a_column_block_that_does_not_divide_the_row_matches_numpy(cpu_target: str, layer: tuple[int, ...],
                                                                   reduce_at: str, epilogue: bool) -> None:
    # 3 columns of a 7-wide row: tiles of 3, 3 and a partitioned last one of 1 (5-wide: 3 and 2).
    knobs = topi.Conv2dNCHWcKnobs(ow_block=3, oc_block=2, oh_block=2, reduce_at=reduce_at, outer_order="oc_y")
    got, want, _ = _run(*layer, knobs, epilogue)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_short_rows_tile_two_rows_and_weight_heavy_layers_reduce_outside_the_plane(cpu_target: str) -> None:
    lanes = current_target().vector_lanes()
    # ResNet-18's layer4 conv (512 channels, 7x7): a 7-wide row holds 7 x oc_block vectors, and the
    # rows fill what the accumulators leave; its 9.4 MB of weights dwarf the 100 KB of data.
    conv = topi.conv2d_nchwc(te.placeholder((1, 512 // lanes, 7, 7, lanes)),
                             te.placeholder((512 // lanes, 512 // lanes, 3, 3, lanes, lanes)), 1, 1)
    knobs = topi.default_conv2d_nchwc_knobs(conv)
    tile = knobs.oh_block * knobs.ow_block * knobs.oc_block
    assert tile <= topi.max_accumulators()
    assert knobs.oh_block == topi.default_tile_rows(7, knobs.ow_block * knobs.oc_block, topi.max_accumulators())
    assert tile + knobs.ow_block * knobs.oc_block > topi.max_accumulators()  # one more row would not fit
    if topi.max_accumulators() == 28:  # AVX-512: two rows of 7 x 2
        assert (knobs.oh_block, knobs.ow_block, knobs.oc_block) == (2, 7, 2)
    assert knobs.reduce_at == "plane"
    # A 56x56 layer with 64 channels: data outweighs weights, one row fills the tile.
    conv = topi.conv2d_nchwc(te.placeholder((1, 64 // lanes, 56, 56, lanes)),
                             te.placeholder((64 // lanes, 64 // lanes, 3, 3, lanes, lanes)), 1, 1)
    knobs = topi.default_conv2d_nchwc_knobs(conv)
    assert (knobs.oh_block, knobs.reduce_at) == (1, "tile")
    got, want, _ = _run(7, 2, 8, 3, 1, None, True)  # the defaults on a small layer, through NumPy
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_a_tile_with_room_for_a_column_widens_past_the_divisors() -> None:
    # AVX2 (12 accumulators): the dividing 4 x 2 tile of a 56-wide row and 7 x 1 of a 14-wide one
    # become 6 x 2 on 56- and 28-wide rows; on 14- and 7-wide ones the row's tiles are balanced (5 + 5 + 4
    # and 4 + 3, not 6 + 6 + 2 and 6 + 1); AVX-512's full tiles of ResNet's rows stay as they were.
    for width, oc_outer, columns in ((56, 8, 6), (28, 16, 6), (14, 32, 5), (7, 64, 4)):
        ob, ow = topi.default_conv2d_nchwc_tile(width, oc_outer, 1, 12)
        assert topi.widen_tile(width, oc_outer, 1, 12, ob, ow, 1) == (2, columns)
    for width, oc_outer in ((56, 4), (28, 8), (14, 16), (112, 4)):
        ob, ow = topi.default_conv2d_nchwc_tile(width, oc_outer, 1, 28)
        assert topi.widen_tile(width, oc_outer, 1, 28, ob, ow, 1) == (ob, ow) == (2, 14)
    assert topi.widen_tile(7, 32, 1, 28, 2, 7, 2) == (2, 7)  # a two-row tile is full
    assert topi.widen_tile(7, 33, 1, 12, 1, 7, 1) == (1, 7)  # channel blocks that do not pair up
    # 16 channels on AVX2 are 2 vectors a column: 3 x 2 x 2 = 12 accumulators need 4 weight vectors and
    # an input beside them, 17 of 16 registers; the dividing 2 x 2 x 2 stays.
    assert topi.widen_tile(8, 2, 2, 12, 2, 2, 1) == (2, 2)
    for accumulators in (12, 28):  # a widened tile fits: accumulators, 2 weight vectors, 1 input
        for width in range(1, 120):
            ob, ow = topi.widen_tile(width, 8, 1, accumulators, *topi.default_conv2d_nchwc_tile(width, 8, 1,
                                                                                                 accumulators), 1)
            assert ow <= width and ob * ow + ob + 1 <= accumulators + 4


def test_a_pointwise_tile_widens_to_two_thirds_of_the_columns() -> None:
    # AVX2: a 1 x 1 conv's 4 x 2 tile of a 56- or 28-wide row stays (not 6 x 2), and the 7 x 1 of a 14- or
    # 7-wide row becomes 4 x 2 (measured faster on ResNet-50's and MobileNetV2's 1 x 1 layers, Zen 3).
    for width, oc_outer in ((56, 8), (28, 16), (14, 32), (7, 64)):
        ob, ow = topi.default_conv2d_nchwc_tile(width, oc_outer, 1, 12)
        assert topi.widen_tile(width, oc_outer, 1, 12, ob, ow, 1, pointwise=True) == (2, 4)
    assert topi.widen_tile(7, 33, 1, 12, 1, 7, 1, pointwise=True) == (1, 7)  # blocks that do not pair up
    for width, oc_outer in ((56, 4), (28, 8), (14, 16)):  # AVX-512's full tiles stay
        ob, ow = topi.default_conv2d_nchwc_tile(width, oc_outer, 1, 28)
        assert topi.widen_tile(width, oc_outer, 1, 28, ob, ow, 1, pointwise=True) == (2, 14)


def test_the_default_pointwise_conv_takes_the_pointwise_tile(cpu_target: str) -> None:
    lanes, accumulators = current_target().vector_lanes(), topi.max_accumulators()
    conv = topi.conv2d_nchwc(te.placeholder((1, 256 // lanes, 14, 14, lanes)),
                             te.placeholder((1024 // lanes, 256 // lanes, 1, 1, lanes, lanes)), 1, 0)
    knobs = topi.default_conv2d_nchwc_knobs(conv)
    conv3 = topi.conv2d_nchwc(te.placeholder((1, 256 // lanes, 14, 14, lanes)),
                              te.placeholder((1024 // lanes, 256 // lanes, 3, 3, lanes, lanes)), 1, 1)
    knobs3 = topi.default_conv2d_nchwc_knobs(conv3)
    ob, ow = topi.default_conv2d_nchwc_tile(14, 1024 // lanes, 1, accumulators)
    rows = topi.default_tile_rows(14, ob * ow, accumulators)
    widened = topi.widen_tile(14, 1024 // lanes, 1, accumulators, ob, ow, rows, pointwise=True)
    if widened == (2, 14):  # AVX-512: a 1 x 1 tile spanning the 14-wide row is split in half, reducing in registers
        assert (knobs.oc_block, knobs.ow_block, knobs.reduce_at) == (2, 7, "tile")
    elif current_target().isa == "avx2":  # 3 columns x 4 channel blocks, channel blocks outermost (test_conv_tiles)
        assert (knobs.oc_block, knobs.ow_block, knobs.tile_order, widened) == (4, 3, "channels", (2, 4))
    else:
        assert (knobs.oc_block, knobs.ow_block) == widened
    assert (knobs3.oc_block, knobs3.ow_block) == topi.widen_tile(14, 1024 // lanes, 1, accumulators, ob, ow, rows)
    assert knobs3.tile_order == "columns"
    if accumulators == 12:  # AVX2: the 3 x 3 conv's widened tile of a 14-wide row
        assert knobs3.ow_block == 5  # 5 + 5 + 4 (balance_columns)
    else:
        assert knobs3.ow_block == 14  # the 3 x 3 conv keeps AVX-512's full-row tile


@pytest.mark.parametrize("knobs, message", [
    (dict(ow_block=8), "ow_block 8 must be between 1 and the output width 7"),
    (dict(oh_block=0), "oh_block 0 must be between 1 and the output height 7"),
    (dict(oh_block=8), "oh_block 8 must be between 1 and the output height 7"),
    (dict(reduce_at="block"), "reduce_at 'block' is not one of"),
    (dict(reduce_at="row", reduce_order="kh_kw_ic"), "reduce_order must be 'ic_kh_kw'"),
    (dict(reduce_at="plane", outer_order="y_oc"), "outer_order must be 'oc_y'"),
    (dict(reduce_at="plane", oc_block=4), "fewer than 4: choose a smaller oc_block"),
])
def test_bad_row_and_reduce_knobs_are_named(knobs: dict, message: str) -> None:
    conv = topi.conv2d_nchwc(te.placeholder((1, 2, 7, 7, 16)), te.placeholder((8, 2, 3, 3, 16, 16)), 1, 1)
    with pytest.raises(TopiError, match=message.replace("(", r"\(")):
        topi.schedule_conv2d_nchwc(conv, topi.Conv2dNCHWcKnobs(**dict(dict(ow_block=7, oc_block=2), **knobs)))


def test_balanced_columns_cover_a_row_in_as_few_tiles_with_no_sliver() -> None:
    for width in range(1, 120):
        for columns in range(1, 15):
            got = topi.balance_columns(width, columns)
            tiles = -(-width // columns)
            assert got <= columns and -(-width // got) == tiles  # never more tiles than asked
            assert width - (tiles - 1) * got >= got - (tiles - 1)  # the last tile at most tiles - 1 short
            assert got == 1 or -(-width // (got - 1)) > tiles  # the narrowest that does
    assert [topi.balance_columns(w, 6) for w in (56, 28, 14, 7, 112)] == [6, 6, 5, 4, 6]


def test_pointwise_convs_with_512_bit_vectors_reduce_in_the_tile() -> None:
    # AVX-512: a 1 x 1 conv whose weights outweigh its 7 x 7 data reduces in registers, not over the plane
    # (measured faster on a Zen 4); its 3 x 3 neighbour and AVX2 keep the plane rule.
    for cpu, lanes, want in (("llvm -mcpu=skylake-avx512", 16, "tile"), ("llvm -mcpu=haswell", 8, "plane")):
        with using_target(parse_target(cpu)):
            for k, expect in ((1, want), (3, "plane")):
                conv = topi.conv2d_nchwc(te.placeholder((1, 2048 // lanes, 7, 7, lanes)),
                                         te.placeholder((512 // lanes, 2048 // lanes, k, k, lanes, lanes)), 1, k // 2)
                assert topi.default_conv2d_nchwc_knobs(conv).reduce_at == expect, (cpu, k)
