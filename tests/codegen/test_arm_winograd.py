"""Winograd F(m x m, 3 x 3) convs compiled for AArch64 (NEON, 128-bit vectors) and run under qemu-aarch64.

The default rule picks F(4x4) on a 28 x 28 plane and F(2x2) on 14 x 14 for the ARM target as it does on x86;
F(6x6), which no rule picks, is forced through a dispatcher as a tuning log would.  Each conv's output (with its
fused bias) is compared with a float64 correlation within :data:`~vdla.compiler.topi.conv2d_winograd.
WINOGRAD_TOLERANCE` of its tile, and the kernels must be NEON code: ``fmla`` on ``.4s`` vectors.

Needs ``qemu-user`` (``.ci/run`` installs it) and the ``ziglang`` wheel (the cross linker).
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from vdla.compiler import topi
from vdla.compiler.autotune import dispatch
from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.runtime.cpu_module import ForeignArchitecture

ARM64 = "llvm -mtriple=aarch64-linux-gnu"

pytestmark = pytest.mark.skipif(shutil.which("qemu-aarch64") is None,
                                reason="qemu-user is not installed (apt-get install qemu-user; .ci/run does)")


def conv_f64(x: np.ndarray, w: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """NCHW x OIHW 3x3 stride-1 pad-1 correlation plus bias, in float64."""
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = x.shape[2], x.shape[3]
    out = np.zeros((x.shape[0], w.shape[0], oh, ow)) + bias.astype(np.float64)[None, :, None, None]
    for ky in range(3):
        for kx in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, ky:ky + oh, kx:kx + ow], w[:, :, ky, kx].astype(np.float64))
    return out


def winograd_graph(channels: int, size: int, rng: np.random.Generator):
    b = GraphBuilder()
    x = b.input("x", (1, channels, size, size), "float32")
    w = (rng.standard_normal((channels, channels, 3, 3)) * 0.1).astype(np.float32)
    bias = rng.standard_normal(channels).astype(np.float32)
    y = b.op("conv2d", [x, b.const(w), b.const(bias)], "conv", padding=(1, 1, 1, 1))
    return b.build([y]), w, bias


def transformed_weight_points(compiled) -> set[int]:
    """The ``a^2`` transform points of every Winograd kernel's weight parameter (16: F(2), 36: F(4), 64: F(6))."""
    return {p.shape[0] for f in compiled.llvm_module.functions for p in f.params if "_wu" in p.name}


@pytest.mark.parametrize(("tile", "channels", "size"), [(4, 64, 28), (2, 64, 14), (6, 16, 13)])
def test_winograd_for_aarch64_under_qemu_within_tolerance_of_float64(tile: int, channels: int, size: int,
                                                                    force_winograd) -> None:
    rng = np.random.default_rng(tile)
    graph, w, bias = winograd_graph(channels, size, rng)
    force = force_winograd(topi.WinogradKnobs(6, tx_block=2, oc_block=1)) if tile == 6 else None
    if force is None:  # the default rule, as for x86
        compiled = build_model(graph, target="llvm", cpu_target=ARM64, name=f"wino{tile}")
    else:
        with dispatch.dispatching(force):
            compiled = build_model(graph, target="llvm", cpu_target=ARM64, name=f"wino{tile}")
        assert force.answered == 1
    target = compiled.llvm_module.target
    assert target.arch == "aarch64" and target.vector_lanes() == 4
    assert transformed_weight_points(compiled) == {(tile + 2) ** 2}
    assert re.search(r"fmla\s+v\d+\.4s", compiled.llvm_module.assembly()), "no NEON fused multiply-add in the kernels"
    x = rng.standard_normal((1, channels, size, size)).astype(np.float32)
    with pytest.raises(ForeignArchitecture, match="compiled for aarch64"):
        compiled.run({"x": x})
    got = compiled.run_emulated({"x": x})[0]
    want = conv_f64(x, w, bias)
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"F({tile}x{tile}) aarch64 under qemu: max abs error {err:.2e} x max|out|")
    assert err <= topi.winograd_tolerance(tile), f"F({tile}) max abs error {err:.2e} x max|out|"
