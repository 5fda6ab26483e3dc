"""Every CPU operator the model zoo uses, compiled for the boards' ARM processors and run under qemu-user.

Each graph is compiled for ``board:ultra96-v2`` (AArch64, Cortex-A53) and ``board:pynq-z2`` (ARMv7-A,
Cortex-A9, NEON, hard-float); its kernels are cross-built into one static executable (zig, musl) and
every kernel call runs under ``qemu-aarch64`` / ``qemu-arm`` (:class:`vdla.compiler.codegen.llvm.cross.
EmulatedLibrary`), parallel loops on two threads.  The outputs are compared with the graph's NumPy
reference executor: fp32 within ``rtol = atol = 1e-4`` (a Cortex-A9 has no fused multiply-add and flushes
NEON denormals to zero, so the last bits differ from x86), the integer graphs bit-exact.

Needs ``qemu-user`` (``.ci/run`` installs it) and the ``ziglang`` wheel; zig builds its musl C library
once per architecture (minutes on a loaded machine, then cached in zig's own cache).
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from vdla.compiler.graph import GraphBuilder, run_graph
from vdla.compiler.graph.build import build_model
from vdla.runtime.cpu_module import ForeignArchitecture

BOARDS = ("ultra96-v2", "pynq-z2")
TOL = {"rtol": 1e-4, "atol": 1e-4}

pytestmark = pytest.mark.skipif(not (shutil.which("qemu-aarch64") and shutil.which("qemu-arm")),
                                reason="qemu-user is not installed (apt-get install qemu-user; .ci/run does)")


def _randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def cnn_graph(rng: np.random.Generator):
    """Blocked 3x3 convs with bias, ReLU and a residual add (layout transforms in and out), max and global
    average pooling, a dense layer: the CPU operators of a ResNet."""
    b = GraphBuilder()
    x = b.input("x", (1, 3, 12, 12), "float32")
    c1 = b.op("conv2d", [x, b.const(_randn(rng, 8, 3, 3, 3, scale=0.4)), b.const(_randn(rng, 8))],
              padding=(1, 1, 1, 1))
    r1 = b.op("relu", [c1])
    c2 = b.op("conv2d", [r1, b.const(_randn(rng, 8, 8, 3, 3, scale=0.2))], padding=(1, 1, 1, 1))
    r2 = b.op("relu", [b.op("add", [c2, r1])])
    p = b.op("max_pool2d", [r2], pool_size=(2, 2), strides=(2, 2))
    c3 = b.op("conv2d", [p, b.const(_randn(rng, 16, 8, 1, 1, scale=0.3))], strides=(1, 1))
    g = b.op("global_avg_pool2d", [b.op("relu", [c3])])
    y = b.op("dense", [b.op("reshape", [g], newshape=(1, 16)), b.const(_randn(rng, 10, 16)), b.const(_randn(rng, 10))])
    return b.build([y]), {"x": _randn(rng, 1, 3, 12, 12)}


def mobile_graph(rng: np.random.Generator):
    """A MobileNet block: pointwise expand, depthwise 3x3 stride 2, ReLU6 (clip), average pooling, project."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 10, 10), "float32")
    e = b.op("clip", [b.op("conv2d", [x, b.const(_randn(rng, 16, 8, 1, 1, scale=0.3))])], a_min=0.0, a_max=6.0)
    d = b.op("conv2d", [e, b.const(_randn(rng, 16, 1, 3, 3, scale=0.3)), b.const(_randn(rng, 16))], groups=16,
             strides=(2, 2), padding=(1, 1, 1, 1))
    d = b.op("clip", [d], a_min=0.0, a_max=6.0)
    a = b.op("avg_pool2d", [d], pool_size=(3, 3), strides=(1, 1), padding=(1, 1, 1, 1))
    y = b.op("conv2d", [a, b.const(_randn(rng, 8, 16, 1, 1, scale=0.3))])
    return b.build([y]), {"x": _randn(rng, 1, 8, 10, 10)}


def transformer_graph(rng: np.random.Generator):
    """An attention block: matmuls with weights and of two activations, transpose, softmax, LayerNorm, GELU
    (erf), residual adds."""
    b = GraphBuilder()
    x = b.input("x", (1, 6, 16), "float32")
    q = b.op("matmul", [x, b.const(_randn(rng, 16, 16, scale=0.3))])
    k = b.op("matmul", [x, b.const(_randn(rng, 16, 16, scale=0.3))])
    att = b.op("softmax", [b.op("matmul", [q, b.op("transpose", [k], axes=(0, 2, 1))])], axis=-1)
    h = b.op("add", [x, b.op("matmul", [att, x])])
    n = b.op("layer_norm", [h, b.const(_randn(rng, 16)), b.const(_randn(rng, 16))], axis=-1)
    f = b.op("matmul", [n, b.const(_randn(rng, 16, 32, scale=0.3))])
    gelu = b.op("multiply", [f, b.op("add", [b.op("erf", [b.op("multiply", [f, b.const(np.float32(0.7071068))])]),
                                            b.const(np.float32(1.0))])])
    y = b.op("add", [n, b.op("matmul", [gelu, b.const(_randn(rng, 32, 16, scale=0.2))])])
    return b.build([y]), {"x": _randn(rng, 1, 6, 16)}


def int8_graph(rng: np.random.Generator):
    """The int8 operators of a quantized model on the CPU: quantize_linear, an int8 conv accumulating in
    int32, the requantize chain (multiply, right shift, clip, cast to int8), an int8 max pool and
    dequantize_linear."""
    b = GraphBuilder()
    x = b.input("x", (1, 8, 9, 9), "float32")
    q = b.op("quantize_linear", [x, b.const(np.float32(1 / 32)), b.const(np.int8(0))])
    w = b.const(rng.integers(-127, 128, (16, 8, 3, 3)).astype(np.int8))
    acc = b.op("conv2d", [q, w, b.const(rng.integers(-2000, 2000, 16).astype(np.int32))], padding=(1, 1, 1, 1),
               out_dtype="int32")
    req = b.op("right_shift", [b.op("multiply", [acc, b.const(np.int32(3))])], shift=9)
    i8 = b.op("cast", [b.op("clip", [req], a_min=-128, a_max=127)], dtype="int8")
    p = b.op("max_pool2d", [i8], pool_size=(3, 3), strides=(2, 2))
    y = b.op("dequantize_linear", [p, b.const(np.float32(0.05)), b.const(np.int8(0))])
    return b.build([y, p]), {"x": _randn(rng, 1, 8, 9, 9, scale=2.0)}


GRAPHS = {"cnn": cnn_graph, "mobile": mobile_graph, "transformer": transformer_graph, "int8": int8_graph}


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", list(GRAPHS))
def test_operators_under_qemu_match_numpy(name: str, board: str) -> None:
    graph, inputs = GRAPHS[name](np.random.default_rng(7))
    compiled = build_model(graph, target="llvm", cpu_target=f"board:{board}", name=name)
    target = compiled.llvm_module.target
    assert target.arch == ("aarch64" if board == "ultra96-v2" else "arm") and target.vector_lanes() == 4
    with pytest.raises(ForeignArchitecture, match=f"compiled for {target.arch}"):
        compiled.run(inputs)  # x86 cannot run it; the message says where it runs
    got = compiled.run_emulated(inputs)
    want = run_graph(graph, inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if np.issubdtype(w.dtype, np.integer):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, **TOL)

