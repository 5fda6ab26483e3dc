"""The conv register tile's loop order (``tile_order``) and AVX2's channels-order default for 1 x 1 convs.

``tile_order="channels"`` puts the tile's output-channel blocks outside its rows and columns, so each weight
vector dies after its FMAs and the broadcast inputs stay live: on AVX2 a 3-column x 4-block tile fills 12
accumulators in 16 registers.  Every order, reduce position and row count runs against a float64 NumPy
convolution, with and without a fused epilogue, on each ISA of the ``cpu_target`` matrix; the default rule is
checked per ResNet-50 1 x 1 shape on a 256-bit and a 512-bit target, and as a legal point of the tuner's space.
"""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.autotune.task import Task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.codegen.llvm import current_target, parse_target, using_target
from vdla.compiler.graph import GraphBuilder, run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.topi.utils import TopiError

from .conv_run import run_conv_nchwc
from .reference import conv2d_nchw, from_nchwc, kernel_blocked, to_nchwc

AVX2 = "llvm -mcpu=haswell"
AVX512 = "llvm -mcpu=skylake-avx512"


# (height = width, input blocks, output blocks, kernel, stride): a 1 x 1 layer whose 3-column tiles leave a
# 2-column last tile, a 7-wide 3 x 3 layer, a stride-2 one.
@pytest.mark.parametrize("layer", [(8, 3, 16, 1, 1), (7, 2, 16, 3, 1), (9, 2, 16, 3, 2)],
                         ids=lambda v: "x".join(map(str, v)))
@pytest.mark.parametrize("reduce_at, oh_block", [("tile", 1), ("tile", 2), ("row", 1), ("plane", 2)])
@pytest.mark.parametrize("epilogue", [False, True], ids=["conv", "conv+bias"])
def test_the_channels_order_matches_numpy(cpu_target: str, layer: tuple[int, ...], reduce_at: str, oh_block: int,
                                          epilogue: bool) -> None:
    size, ic, oc, k, stride = layer
    lanes = current_target().vector_lanes()
    rng = np.random.default_rng(size * 100 + k)
    x = rng.standard_normal((1, ic * lanes, size, size)).astype(np.float32)
    w = (rng.standard_normal((oc * lanes, ic * lanes, k, k)) * 0.1).astype(np.float32)
    bias = rng.standard_normal((oc, lanes)).astype(np.float32)
    want = conv2d_nchw(x, w, stride, k // 2) + (bias.reshape(-1)[None, :, None, None] if epilogue else 0.0)
    tx = te.placeholder((1, ic, size, size, lanes), "float32", "x")
    tw = te.placeholder((oc, ic, k, k, lanes, lanes), "float32", "w")
    conv = topi.conv2d_nchwc(tx, tw, stride, k // 2)
    knobs = topi.Conv2dNCHWcKnobs(ow_block=3, oc_block=4, oh_block=oh_block, reduce_at=reduce_at, outer_order="oc_y",
                                  tile_order="channels")
    inputs = [to_nchwc(x, lanes), kernel_blocked(w, lanes, lanes)]
    got = run_conv_nchwc(conv, knobs, tx, tw, inputs, bias if epilogue else None)
    np.testing.assert_allclose(from_nchwc(got), want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def test_tile_registers_count_what_each_order_keeps_live() -> None:
    columns = topi.Conv2dNCHWcKnobs(ow_block=3, oc_block=4)
    channels = topi.Conv2dNCHWcKnobs(ow_block=3, oc_block=4, tile_order="channels")
    # 12 accumulators + 4 weight vectors + 1 input, against 12 + 3 inputs + 1 weight vector.
    assert (topi.tile_registers(columns, 1), topi.tile_registers(channels, 1)) == (17, 16)
    # Two vectors per column (16-channel blocks on AVX2): 24 + 8 + 1 against 24 + 3 + 2.
    assert (topi.tile_registers(columns, 2), topi.tile_registers(channels, 2)) == (33, 29)
    with pytest.raises(TopiError, match="tile_order 'rows' is not one of"):
        topi.Conv2dNCHWcKnobs(ow_block=3, tile_order="rows").validate(8)


# ResNet-50's 1 x 1 convs (input channels, output channels, input plane, stride) and the AVX2 tile each gets:
# (oc_block, ow_block, tile_order, reduce_at).
_CHANNELS = (4, 3, "channels", "tile")
_RESNET50_POINTWISE = [
    ((64, 256, 56, 1), _CHANNELS), ((256, 64, 56, 1), _CHANNELS), ((256, 128, 56, 1), _CHANNELS),
    ((256, 512, 56, 2), _CHANNELS), ((128, 512, 28, 1), _CHANNELS), ((512, 128, 28, 1), _CHANNELS),
    ((512, 1024, 28, 2), _CHANNELS), ((256, 1024, 14, 1), _CHANNELS), ((1024, 256, 14, 1), _CHANNELS),
    ((1024, 2048, 14, 2), (2, 4, "columns", "plane")),  # 7-wide output rows keep the 4 x 2 tile
    ((512, 2048, 7, 1), (2, 4, "columns", "plane")), ((2048, 512, 7, 1), (2, 4, "columns", "plane")),
]


def _pointwise(c: int, k: int, size: int, stride: int, lanes: int, kernel: int = 1) -> te.Tensor:
    return topi.conv2d_nchwc(te.placeholder((1, c // lanes, size, size, lanes), "float32", "d"),
                             te.placeholder((k // lanes, c // lanes, kernel, kernel, lanes, lanes), "float32", "w"),
                             stride, kernel // 2)


# ResNet-50's direct 3 x 3 convs (channels, input plane, stride) and their AVX2 tile: the channels order on
# 7-wide output rows only (the stride-1 one runs Winograd by default; this is its direct default).
@pytest.mark.parametrize("shape, want", [
    ((128, 56, 2), (2, 6, "columns", "tile")), ((256, 28, 2), (2, 5, "columns", "plane")),
    ((512, 14, 2), (4, 3, "channels", "plane")), ((512, 7, 1), (4, 3, "channels", "plane")),
], ids=lambda v: "x".join(map(str, v)))
def test_avx2_rule_per_resnet50_3x3_shape(shape: tuple[int, int, int], want: tuple[int, int, str, str]) -> None:
    c, size, stride = shape
    with using_target(parse_target(AVX2)):
        got = topi.default_conv2d_nchwc_knobs(_pointwise(c, c, size, stride, 8, kernel=3))
    assert (got.oc_block, got.ow_block, got.tile_order, got.reduce_at) == want
    assert topi.tile_registers(got, 1) <= parse_target(AVX2).vector_registers
    with using_target(parse_target(AVX512)):
        assert topi.default_conv2d_nchwc_knobs(_pointwise(c, c, size, stride, 16, kernel=3)).tile_order == "columns"


@pytest.mark.parametrize("shape, want", _RESNET50_POINTWISE, ids=lambda v: "x".join(map(str, v)))
def test_avx2_rule_per_resnet50_pointwise_shape(shape: tuple[int, int, int, int],
                                                want: tuple[int, int, str, str]) -> None:
    # The 256-bit rule, measured with AVX2 code on a Zen 4 (docs/cpu_speed.md, "an eleventh session"): 3 columns
    # x 4 channel blocks in the channels order from 14-wide output rows up, reducing in the tile's registers.
    c, k, size, stride = shape
    with using_target(parse_target(AVX2)):
        got = topi.default_conv2d_nchwc_knobs(_pointwise(c, k, size, stride, 8))
    assert (got.oc_block, got.ow_block, got.tile_order, got.reduce_at) == want
    assert got.oh_block == 1 and topi.tile_registers(got, 1) <= parse_target(AVX2).vector_registers
    # AVX-512 and AArch64's NEON (not measured) keep the columns order.
    for other, lanes in ((AVX512, 16), ("llvm -mtriple=aarch64-linux-gnu", 4)):
        with using_target(parse_target(other)):
            assert topi.default_conv2d_nchwc_knobs(_pointwise(c, k, size, stride, lanes)).tile_order == "columns"
    # The default is a legal point of the tuner's space for the AVX2 task.
    wl = {"n": 1, "ic_outer": c // 8, "h": size, "w": size, "ic_block": 8, "oc_outer": k // 8, "kh": 1, "kw": 1,
          "oc_block": 8, "stride_h": stride, "stride_w": stride, "pad_h": 0, "pad_w": 0}
    tmpl = template_for(Task("conv2d_nchwc", tuple(sorted(wl.items())), f"{AVX2} -mattr=+avx,+avx2,+fma (avx2)",
                             "test/avx2"))
    default = tmpl.default()
    assert (default["tile_order"], default["oc_block"], default["ow_block"]) == (want[2], want[0], want[1])
    assert tmpl.space.why_illegal(default) is None


def test_the_tuner_space_holds_both_orders_and_counts_their_registers() -> None:
    wl = {"n": 1, "ic_outer": 32, "h": 14, "w": 14, "ic_block": 8, "oc_outer": 128, "kh": 1, "kw": 1,
          "oc_block": 8, "stride_h": 1, "stride_w": 1, "pad_h": 0, "pad_w": 0}
    tmpl = template_for(Task("conv2d_nchwc", tuple(sorted(wl.items())), f"{AVX2} -mattr=+avx,+avx2,+fma (avx2)",
                             "test/avx2"))
    space, base = tmpl.space, tmpl.default().to_dict()
    # 3 x 4 fits the 16 ymm in the channels order only; 4 x 4 (16 accumulators + 4 inputs + 1) does not.
    assert space.why_illegal(space.from_dict(dict(base, ow_block=3, oc_block=4, tile_order="channels"))) is None
    assert "17 registers" in space.why_illegal(space.from_dict(dict(base, ow_block=3, oc_block=4,
                                                                    tile_order="columns")))
    assert "21 registers" in space.why_illegal(space.from_dict(dict(base, ow_block=4, oc_block=4,
                                                                    tile_order="channels")))
    # A log written before the knob replays in the columns order.
    old = {k: v for k, v in base.items() if k != "tile_order"}
    assert space.from_dict(old)["tile_order"] == "columns"


def test_a_model_of_pointwise_convs_matches_the_graph(cpu_target: str) -> None:
    """A 1 x 1 bottleneck (the channels-order default on AVX2, a fused bias + residual add + ReLU) compiled for
    each ISA, against the graph interpreter."""
    if current_target().isa == "avx2":  # both convs take the channels order there
        for c, k in ((64, 128), (128, 64)):
            assert topi.default_conv2d_nchwc_knobs(_pointwise(c, k, 14, 1, 8)).tile_order == "channels"
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    x = b.input("x", (1, 64, 14, 14), "float32")
    h = b.op("relu", [b.op("conv2d", [x, b.const((rng.standard_normal((128, 64, 1, 1)) * 0.1).astype(np.float32)),
                                      b.const(rng.standard_normal(128).astype(np.float32))], "reduce")], "r1")
    y = b.op("conv2d", [h, b.const((rng.standard_normal((64, 128, 1, 1)) * 0.1).astype(np.float32))], "expand")
    graph = b.build([b.op("relu", [b.op("add", [y, x])], "out")])
    feed = {"x": rng.standard_normal((1, 64, 14, 14)).astype(np.float32)}
    compiled = build_model(graph, target="llvm", cpu_target=cpu_target)
    compiled.module.set_num_threads(1)
    want = run_graph(graph, feed)[0]
    np.testing.assert_allclose(compiled.run(feed)[0], want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
