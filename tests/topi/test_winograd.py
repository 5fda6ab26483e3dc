"""Winograd F(m x m, 3 x 3) convs: the transforms are exact, the fp32 kernel is within the stated
tolerance of float64, and the graph lowering and the tuner's space take it."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.autotune import dispatch
from vdla.compiler.autotune.task import Task
from vdla.compiler.autotune.template import template_for
from vdla.compiler.build import build
from vdla.compiler.codegen.llvm import parse_target, using_target
from vdla.compiler.graph import GraphBuilder, run_graph
from vdla.compiler.graph.build import build_model
from vdla.compiler.graph.lower_llvm_nn import default_conv_tile
from vdla.compiler.topi.conv2d_winograd import STREAMED_WEIGHT_BYTES, transformed_weight_bytes
from vdla.compiler.topi.utils import TopiError


def _conv_f64(x: np.ndarray, w: np.ndarray, pad: int) -> np.ndarray:
    """NCHW x OIHW 3x3 stride-1 correlation in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = xp.shape[2] - 2, xp.shape[3] - 2
    out = np.zeros((x.shape[0], w.shape[0], oh, ow))
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, ky:ky + oh, kx:kx + ow], w[:, :, ky, kx].astype(np.float64))
    return out


@pytest.mark.parametrize("m", topi.WINOGRAD_TILES)
def test_transforms_compute_the_correlation_exactly(m: int) -> None:
    at, g, bt = topi.winograd_matrices(m)
    rng = np.random.default_rng(m)
    d, k = rng.standard_normal(m + 2), rng.standard_normal(3)
    want = np.array([d[i:i + 3] @ k for i in range(m)])
    np.testing.assert_allclose(at @ ((g @ k) * (bt @ d)), want, rtol=1e-12, atol=1e-12)
    # The 2-D transform of the weights (compile time) is G g G^T per channel pair, blocked.
    w = rng.standard_normal((16, 8, 3, 3))
    u = topi.transform_weights(w, m, 4, 8)
    a = m + 2
    assert u.shape == (a * a, 2, 2, 4, 8) and u.dtype == np.float32
    ref = (g @ w[5, 6] @ g.T).ravel()
    np.testing.assert_allclose(u[:, 0, 1, 2, 5], ref, rtol=1e-6)


def _run_winograd(m: int, c: int, oc: int, h: int, w: int, pad: int, seed: int,
                  knobs: topi.WinogradKnobs | None = None) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, h, w)).astype(np.float32)
    wt = rng.standard_normal((oc, c, 3, 3)).astype(np.float32)
    ib = ob = 8
    xb = np.ascontiguousarray(x.reshape(1, c // ib, ib, h, w).transpose(0, 1, 3, 4, 2))
    u_np = topi.transform_weights(wt, m, ib, ob)
    d = te.placeholder(xb.shape, "float32", name="d")
    u = te.placeholder(u_np.shape, "float32", name="u")
    out = topi.conv2d_winograd_nchwc(d, u, m, pad)
    res = np.zeros([int(v.value) for v in out.shape], np.float32)
    build(topi.schedule_conv2d_winograd_nchwc(out, knobs), [d, u, out])(xb, u_np, res)
    got = res.transpose(0, 1, 4, 2, 3).reshape(1, oc, res.shape[2], res.shape[3])
    return got, _conv_f64(x, wt, pad)


@pytest.mark.parametrize(("m", "c", "size", "pad"), [
    (2, 256, (9, 11), 1),
    # F(4) runs in the default suite through the graph test below (each build costs ~30 s here).
    pytest.param(4, 256, (10, 7), 0, marks=pytest.mark.slow)])
def test_winograd_conv_within_its_tolerance_of_float64(cpu_target: str, m: int, c: int, size: tuple[int, int],
                                                       pad: int) -> None:
    # Sizes that leave partial tiles at the bottom and right; 256 input channels per output.
    with using_target(parse_target(cpu_target)):
        got, want = _run_winograd(m, c, 16, *size, pad, seed=m)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(m), f"F({m}) max abs error {err:.2e} x max|out|"


@pytest.mark.slow
@pytest.mark.parametrize("m", [4, 6])
def test_larger_tiles_within_their_tolerance_at_512_channels(m: int) -> None:
    got, want = _run_winograd(m, 512, 16, 14, 14, 1, seed=7)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(m), f"F({m}) max abs error {err:.2e} x max|out|"


def test_bad_winograd_inputs_are_named() -> None:
    with pytest.raises(TopiError, match="3x3 kernels"):
        topi.transform_weights(np.zeros((8, 8, 5, 5), np.float32), 2, 8, 8)
    with pytest.raises(TopiError, match="not one of"):
        topi.winograd_matrices(3)
    d = te.placeholder((1, 2, 8, 8, 8), "float32", name="d")
    u = te.placeholder((16, 1, 1, 8, 8), "float32", name="u")
    with pytest.raises(TopiError, match="input channels"):
        topi.conv2d_winograd_nchwc(d, u, 2, 1)
    out = topi.conv2d_winograd_nchwc(te.placeholder((1, 1, 8, 8, 8), "float32", name="d1"), u, 2, 1)
    with pytest.raises(TopiError, match="tx_block"):
        topi.schedule_conv2d_winograd_nchwc(out, topi.WinogradKnobs(2, tx_block=9, oc_block=1))
    with pytest.raises(TopiError, match="ty_block"):
        topi.schedule_conv2d_winograd_nchwc(out, topi.WinogradKnobs(2, tx_block=2, oc_block=1, ty_block=5))
    with pytest.raises(TopiError, match="F\\(4x4\\)"):
        topi.schedule_conv2d_winograd_nchwc(out, topi.WinogradKnobs(4, tx_block=2, oc_block=1))


def test_graph_takes_winograd_with_a_fused_bias_residual_and_relu(force_winograd) -> None:
    rng = np.random.default_rng(3)
    b = GraphBuilder()
    # 32 channels: two output-channel blocks for the oc_block of 2 on AVX-512 (16-lane blocks) too.
    x = b.input("x", (1, 32, 9, 10), "float32")
    w = b.const((rng.standard_normal((32, 32, 3, 3)) * 0.2).astype(np.float32))
    h = b.op("conv2d", [x, w, b.const(rng.standard_normal(32).astype(np.float32))], "c", padding=(1, 1, 1, 1))
    graph = b.build([b.op("relu", [b.op("add", [h, x])], "out")])
    # F(4x4): the models' default tile; 9 x 10 leaves partial tiles at the bottom and right.
    force = force_winograd(topi.WinogradKnobs(4, tx_block=2, oc_block=2))
    with dispatch.dispatching(force):
        compiled = build_model(graph, target="llvm")
    assert force.answered == 1
    feed = {"x": rng.standard_normal((1, 32, 9, 10)).astype(np.float32)}
    got, want = compiled.run(feed)[0], run_graph(graph, feed)[0]
    assert np.abs(got - want).max() <= topi.winograd_tolerance(4) * np.abs(want).max()


def test_default_rule_and_tuning_space_offer_both_algorithms() -> None:
    resnet_56 = {"n": 1, "ic_outer": 8, "h": 56, "w": 56, "ic_block": 8, "oc_outer": 8, "kh": 3, "kw": 3,
                 "oc_block": 8, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
    with using_target(parse_target("llvm -mcpu=haswell")):
        assert default_conv_tile(resnet_56) == 4
        assert default_conv_tile({**resnet_56, "h": 14, "w": 14}) == 2
        assert default_conv_tile({**resnet_56, "h": 7, "w": 7}) is None
        assert default_conv_tile({**resnet_56, "stride_h": 2, "stride_w": 2}) is None
        assert default_conv_tile({**resnet_56, "ic_outer": 2}) is None
    task = Task("conv2d_nchwc", tuple(sorted({**resnet_56, "h": 28, "w": 28}.items())),
                "llvm -mcpu=haswell -mattr=+avx,+avx2,+fma (avx2)", "test/x86_64")
    tmpl = template_for(task)
    space = tmpl.space
    algorithms = {str(space.get(i)["algorithm"]) for i in space.legal_indices()}
    assert algorithms == {"direct"} | {f"winograd_{m}" for m in topi.TUNED_TILES}
    assert tmpl.default()["algorithm"] == "winograd_4"
    assert isinstance(tmpl.knobs(tmpl.default()), topi.WinogradKnobs)
    # A Winograd config only moves its own knobs: one point per (tile, tiles per register tile, blocks).
    direct_only = dict(tmpl.default().values)
    direct_only.update(algorithm="winograd_2", unroll_kw=True)
    assert "direct conv" in (space.why_illegal(space.from_dict(direct_only)) or "")
    # oh_block is the Winograd GEMM's rows of tiles: legal while the register tile fits AVX2's 16.
    two_rows = {**tmpl.default().to_dict(), "algorithm": "winograd_4", "ow_block": 2, "oc_block": 2, "oh_block": 2}
    assert space.why_illegal(space.from_dict(two_rows)) is None
    assert tmpl.knobs(space.from_dict(two_rows)).ty_block == 2
    assert "registers" in (space.why_illegal(space.from_dict({**two_rows, "ow_block": 4})) or "")
    # reduce_at of a Winograd config is where its GEMM runs: per row of tiles ("tile") or over the plane.
    plane = {**two_rows, "reduce_at": "plane"}
    assert space.why_illegal(space.from_dict(plane)) is None
    assert tmpl.knobs(space.from_dict(plane)).gemm_at == "plane"
    assert tmpl.knobs(space.from_dict(two_rows)).gemm_at == "row"
    assert "reduce_at" in (space.why_illegal(space.from_dict({**two_rows, "reduce_at": "row"})) or "")
    strided = template_for(Task("conv2d_nchwc", tuple(sorted({**resnet_56, "stride_h": 2, "stride_w": 2}.items())),
                                task.target, task.host))
    assert strided.space.get(0)["algorithm"] == "direct" and len(strided.space.axes[0].values) == 1


def test_tuner_measures_a_winograd_config_through_its_artifact_bytes() -> None:
    # The runner gets only the artifact's bytes: its function's name says it takes transformed weights.
    from vdla.compiler.autotune.measure import MeasureOptions, build_job, run_job

    wl = {"n": 1, "ic_outer": 2, "h": 8, "w": 8, "ic_block": 8, "oc_outer": 2, "kh": 3, "kw": 3, "oc_block": 8,
          "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
    task = Task("conv2d_nchwc", tuple(sorted(wl.items())), "llvm -mcpu=haswell -mattr=+avx,+avx2,+fma (avx2)",
                "test/avx2")
    tmpl = template_for(task)
    config = tmpl.space.from_dict({**tmpl.default().to_dict(), "algorithm": "winograd_2", "ow_block": 2,
                                   "oc_block": 2, "oh_block": 1, "unroll_kw": False, "reduce_order": "ic_kh_kw",
                                   "outer_order": "oc_y", "reduce_at": "tile"})
    assert tmpl.space.why_illegal(config) is None
    outcome = run_job(task.to_json(), None, build_job(task.to_json(), None, config.to_dict()),
                      MeasureOptions(repeats=1, warmup=0, flush_bytes=0))
    assert outcome.correct, outcome.detail


@pytest.mark.parametrize(("m", "size", "c", "want"), [(2, 14, 256, 4), (4, 28, 128, 4), (4, 56, 64, 5), (2, 9, 64, 5)])
def test_default_gemm_tile_is_balanced_over_the_row(m: int, size: int, c: int, want: int) -> None:
    # AVX2's 12 accumulators hold 6 tiles x 2 channel vectors; a row of 7 tiles is 4 + 3, not 6 + 1 (a
    # one-tile sliver), 14 tiles 5 + 5 + 4; 9 x 9 with F(2) is 5 tiles, one register tile.
    with using_target(parse_target("llvm -mcpu=haswell")):
        a = m + 2
        d = te.placeholder((1, c // 8, size, size, 8), "float32", name="d")
        u = te.placeholder((a * a, c // 8, c // 8, 8, 8), "float32", name="u")
        knobs = topi.default_winograd_knobs(topi.conv2d_winograd_nchwc(d, u, m, 1))
    tiles = -(-size // m)
    assert (knobs.tile, knobs.oc_block, knobs.tx_block) == (m, 2, want)
    assert knobs.tx_block * knobs.oc_block <= 12
    assert -(-tiles // knobs.tx_block) == -(-tiles // min(tiles, 6))  # no more register tiles than the widest


@pytest.mark.parametrize(("m", "size", "rows", "tx"), [(2, (14, 14), 2, 7), (2, (9, 11), 3, 3), (4, (10, 7), 2, 2)])
def test_winograd_gemm_over_rows_of_tiles_within_its_tolerance(cpu_target: str, m: int, size: tuple[int, int],
                                                               rows: int, tx: int) -> None:
    # Rows of tiles that do not divide the tile rows (7 by 2, 5 by 3, 3 by 2): the last step is partial.
    with using_target(parse_target(cpu_target)):
        got, want = _run_winograd(m, 64, 16, *size, 1, seed=11,
                                  knobs=topi.WinogradKnobs(m, tx_block=tx, oc_block=2, ty_block=rows))
        got1, _ = _run_winograd(m, 64, 16, *size, 1, seed=11, knobs=topi.WinogradKnobs(m, tx_block=tx, oc_block=2))
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(m), f"F({m}) max abs error {err:.2e} x max|out|"
    np.testing.assert_array_equal(got, got1)  # the same sums in the same order, one row of tiles or several


@pytest.mark.parametrize(("m", "size", "rows", "tx"), [(2, (9, 11), 3, 3), (4, (10, 7), 2, 2), (5, (14, 12), 2, 2)])
def test_winograd_gemm_over_the_plane_is_the_row_gemm(cpu_target: str, m: int, size: tuple[int, int],
                                                      rows: int, tx: int) -> None:
    # gemm_at="plane" runs the input transform and the GEMM over the whole plane before the output
    # transform: the same products summed in the same order as per row of tiles, so bit-identical, and
    # within the tolerance; partial register tiles at the right (11 = 5 tiles of 2 + 1) and bottom.
    with using_target(parse_target(cpu_target)):
        knobs = topi.WinogradKnobs(m, tx_block=tx, oc_block=2, ty_block=rows)
        plane, want = _run_winograd(m, 64, 16, *size, 1, seed=13, knobs=replace(knobs, gemm_at="plane"))
        row, _ = _run_winograd(m, 64, 16, *size, 1, seed=13, knobs=knobs)
    err = np.abs(plane - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(m), f"F({m}) max abs error {err:.2e} x max|out|"
    np.testing.assert_array_equal(plane, row)


def test_unknown_gemm_place_is_named() -> None:
    d = te.placeholder((1, 2, 8, 8, 8), "float32", name="d")
    u = te.placeholder((16, 2, 2, 8, 8), "float32", name="u")
    out = topi.conv2d_winograd_nchwc(d, u, 2, 1)
    with pytest.raises(TopiError, match="gemm_at 'image' is not one of"):
        topi.schedule_conv2d_winograd_nchwc(out, topi.WinogradKnobs(2, tx_block=2, oc_block=1, gemm_at="image"))


def test_transform_points_count_the_overhanging_tiles() -> None:
    assert topi.transform_points(4, 14, 14) == 16 * 36 and topi.transform_points(5, 14, 14) == 9 * 49
    assert topi.transform_points(4, 7, 7) == 4 * 36 and topi.transform_points(2, 7, 9) == 4 * 5 * 16


def test_avx512_rule_takes_f4_over_the_plane_where_its_weights_stream() -> None:
    # With 512-bit vectors F(4x4) where its transformed weights stream from memory (> 8 MB: 512 x 7 x 7
    # 37.7 MB, 256 x 14 x 14 9.4 MB), its GEMM over the whole plane, each point's weights read once;
    # 128 x 14 x 14 (2.4 MB) keeps F(2x2) per row of tiles (AVX2's rule: the next test).
    layer4 = {"n": 1, "ic_outer": 32, "h": 7, "w": 7, "ic_block": 16, "oc_outer": 32, "kh": 3, "kw": 3,
              "oc_block": 16, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
    layer3 = {**layer4, "ic_outer": 16, "oc_outer": 16, "h": 14, "w": 14}
    with using_target(parse_target("llvm -mcpu=skylake-avx512")):
        assert default_conv_tile(layer4) == 4
        # 14 x 14: F(5x5)'s 3 x 3 tiles (441 transform points) against F(4x4)'s 4 x 4 (576, padded to 16).
        assert default_conv_tile(layer3) == 5
        assert default_conv_tile({**layer3, "h": 28, "w": 28}) == 4  # a tie (1,764 each): F(4x4)
        assert default_conv_tile({**layer3, "ic_outer": 8, "oc_outer": 8}) == 2
        assert default_conv_tile({**layer4, "h": 6, "w": 6}) is None
        # Where the weights stream, one channel vector by every tile of the plane (F(4x4) on 14 x 14: 4 x 4
        # tiles, 16 of the 28 accumulators).
        for c, size, m, want in ((512, 7, 4, (2, 1, 2, "plane")), (256, 14, 4, (4, 1, 4, "plane")),
                                 (256, 14, 5, (3, 1, 3, "plane")), (256, 14, 2, (7, 2, 1, "row"))):
            d = te.placeholder((1, c // 16, size, size, 16), "float32", name="d")
            u = te.placeholder(((m + 2) ** 2, c // 16, c // 16, 16, 16), "float32", name="u")
            knobs = topi.default_winograd_knobs(topi.conv2d_winograd_nchwc(d, u, m, 1))
            assert (knobs.tx_block, knobs.oc_block, knobs.ty_block, knobs.gemm_at) == want, (c, size, m)
            assert knobs.ty_block * knobs.tx_block * knobs.oc_block <= 28


@pytest.mark.parametrize(("channels", "size", "want", "knobs", "want_512"), [
    (64, 56, 4, (5, 2, 1, "row"), 4), (128, 28, 4, (4, 2, 1, "row"), 4),
    # F(4x4)'s 9.4 MB stream: F(5x5) over the plane (441 transform points against F(4x4)'s 576), one channel
    # vector by all 3 x 3 tiles, so each streamed weight vector serves the whole plane.
    (256, 14, 5, (3, 1, 3, "plane"), 5),
    (128, 14, 2, (4, 2, 1, "row"), 2),  # F(4x4)'s 2.4 MB do not stream: F(2x2) per row, as on the Zen 3
    (512, 7, 4, (2, 1, 2, "plane"), 4),  # F(4x4) over the plane, one channel vector by all 2 x 2 tiles
    (256, 7, 4, (2, 1, 2, "plane"), 4), (64, 14, 2, (4, 2, 1, "row"), 2), (32, 56, None, None, None)])
def test_avx2_rule_per_resnet_layer(channels: int, size: int, want: int | None,
                                    knobs: tuple[int, int, int, str] | None, want_512: int | None) -> None:
    # The 256-bit rule (measured with AVX2 code on a Zen 4: docs/cpu_speed.md, "a tenth session" and "an
    # eleventh session"): below 28 x 28 Winograd where F(4x4)'s weights stream, the tile of fewer transform
    # points with its GEMM over the plane, or F(2x2) per row on 14 x 14; the target decides, and the 512-bit
    # rule on the same layers is unchanged.
    assert topi.default_winograd_tile(channels, channels, size, size, parse_target("llvm -mcpu=haswell")) == want
    assert topi.default_winograd_tile(channels, channels, size, size,
                                      parse_target("llvm -mcpu=skylake-avx512")) == want_512
    # AArch64's NEON (not measured over the plane) keeps the per-row rule: F(4x4) from 28, F(2x2) on 14.
    assert topi.default_winograd_tile(channels, channels, size, size, parse_target("llvm -mtriple=aarch64-linux-gnu")) \
        == (None if channels < 64 else 4 if size >= 28 else 2 if size >= 14 else None)
    if want is None:
        return
    wl = {"n": 1, "ic_outer": channels // 8, "h": size, "w": size, "ic_block": 8, "oc_outer": channels // 8,
          "kh": 3, "kw": 3, "oc_block": 8, "stride_h": 1, "stride_w": 1, "pad_h": 1, "pad_w": 1}
    with using_target(parse_target("llvm -mcpu=haswell")):
        assert default_conv_tile(wl) == want
        d = te.placeholder((1, channels // 8, size, size, 8), "float32", name="d")
        u = te.placeholder(((want + 2) ** 2, channels // 8, channels // 8, 8, 8), "float32", name="u")
        got = topi.default_winograd_knobs(topi.conv2d_winograd_nchwc(d, u, want, 1))
    assert (got.tx_block, got.oc_block, got.ty_block, got.gemm_at) == knobs
    # The default is a point of the tuner's space (its register model: accumulators, weights, an input).
    tmpl = template_for(Task("conv2d_nchwc", tuple(sorted(wl.items())),
                             "llvm -mcpu=haswell -mattr=+avx,+avx2,+fma (avx2)", "test/avx2"))
    assert tmpl.default()["algorithm"] == f"winograd_{want}"
    assert tmpl.space.why_illegal(tmpl.default()) is None


def test_default_plane_knobs_fit_the_register_file_on_every_tile() -> None:
    # Where the weights stream the GEMM's register tile holds its accumulators, its one weight vector and one
    # broadcast input in the register file (AVX2's 16: F(5x5) on 14 x 14 3 x 1 x 3, F(4x4) 4 x 1 x 2).
    for target, lanes in (("llvm -mcpu=haswell", 8), ("llvm -mcpu=skylake-avx512", 16)):
        with using_target(parse_target(target)):
            registers = parse_target(target).vector_registers
            for m in topi.TUNED_TILES:
                for channels, size in ((256, 14), (512, 7)):
                    if transformed_weight_bytes(m, channels, channels) <= STREAMED_WEIGHT_BYTES:
                        continue  # 256 x 14 x 14 F(2x2): 4.2 MB, its GEMM per row of tiles
                    d = te.placeholder((1, channels // lanes, size, size, lanes), "float32", name="d")
                    u = te.placeholder(((m + 2) ** 2, channels // lanes, channels // lanes, lanes, lanes),
                                       "float32", name="u")
                    k = topi.default_winograd_knobs(topi.conv2d_winograd_nchwc(d, u, m, 1))
                    assert k.gemm_at == "plane"
                    live = k.ty_block * k.tx_block * k.oc_block + k.oc_block + 1
                    assert live <= registers, (target, m, channels, size, k)


def test_f5_on_a_14x14_256_channel_layer_within_its_tolerance(cpu_target: str) -> None:
    # ResNet's layer3 shape, where the AVX-512 rule takes F(5x5): 3 x 3 tiles cover 15 x 15, the last row and
    # column of tiles overhang the output by one; the target's default knobs (over the plane on AVX-512).
    with using_target(parse_target(cpu_target)):
        got, want = _run_winograd(5, 256, 32, 14, 14, 1, seed=17)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(5), f"F(5) max abs error {err:.2e} x max|out|"


@pytest.mark.parametrize(("m", "c", "size", "knobs"), [
    (5, 256, 14, (3, 1, 3)),  # ResNet-50's layer3 3 x 3 conv, the default: all 3 x 3 tiles, one channel vector
    (4, 512, 7, (2, 1, 2))])  # layer4's: all 2 x 2 tiles
def test_narrow_plane_knobs_within_their_tolerance(cpu_target: str, m: int, c: int, size: int,
                                                  knobs: tuple[int, int, int]) -> None:
    # The plane GEMM's default tiles (one channel vector by every tile of the plane, the GEMM's loop over the
    # transform points outermost) against float64 on every ISA of the matrix, the last row and column of
    # F(5x5)'s tiles overhanging the 14 x 14 output by one.
    tx, oc, ty = knobs
    wk = topi.WinogradKnobs(tile=m, tx_block=tx, oc_block=oc, ty_block=ty, gemm_at="plane")
    with using_target(parse_target(cpu_target)):
        got, want = _run_winograd(m, c, c, size, size, 1, seed=m + c, knobs=wk)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(m), f"F({m}) max abs error {err:.2e} x max|out|"


@pytest.mark.parametrize("m", [2, 4])
def test_default_knobs_on_a_7x7_512_channel_layer_within_their_tolerance(cpu_target: str, m: int) -> None:
    # ResNet's layer4 shape with the target's default knobs: its transformed weights (16.8 MB F(2x2), 37.7
    # MB F(4x4), the AVX-512 default) stream, so the GEMM runs over the plane; run on every core: the
    # parallel loops over input-channel blocks (the input transform) and output-channel groups (the GEMM).
    with using_target(parse_target(cpu_target)):
        got, want = _run_winograd(m, 512, 512, 7, 7, 1, seed=5)
    err = np.abs(got - want).max() / np.abs(want).max()
    assert err <= topi.winograd_tolerance(m), f"F({m}) max abs error {err:.2e} x max|out|"
