"""Small graph builders shared by the graph tests."""

from __future__ import annotations

import numpy as np

from vdla.compiler.graph import Graph, GraphBuilder


def rand(rng: np.random.Generator, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def conv_net(rng: np.random.Generator, cin: int = 16, cmid: int = 32, hw: int = 8, batch_norm: bool = False) -> Graph:
    """conv -> (bn) -> relu -> conv -> add(skip conv) -> relu -> maxpool -> global pool -> flatten -> dense."""
    b = GraphBuilder()
    x = b.input("x", (1, cin, hw, hw), "float32")
    w1 = b.const(rand(rng, (cmid, cin, 3, 3), (2 / (9 * cin)) ** 0.5), "w1")
    y = b.op("conv2d", [x, w1, b.const(rand(rng, (cmid,), 0.1), "b1")], "conv1", padding=(1, 1, 1, 1))
    if batch_norm:
        stats = [b.const(rng.uniform(0.5, 1.5, cmid).astype(np.float32)), b.const(rand(rng, (cmid,), 0.1)),
                 b.const(rand(rng, (cmid,), 0.1)), b.const(rng.uniform(0.5, 1.5, cmid).astype(np.float32))]
        y = b.op("batch_norm", [y] + stats, "bn1")
    y = b.op("relu", [y], "relu1")
    w2 = b.const(rand(rng, (cmid, cmid, 3, 3), (2 / (9 * cmid)) ** 0.5), "w2")
    y = b.op("conv2d", [y, w2], "conv2", padding=(1, 1, 1, 1))
    skip = b.op("conv2d", [x, b.const(rand(rng, (cmid, cin, 1, 1), (2 / cin) ** 0.5), "w3")], "conv3")
    y = b.op("relu", [b.op("add", [y, skip], "add")], "relu2")
    y = b.op("max_pool2d", [y], "pool", pool_size=(2, 2), strides=(2, 2))
    y = b.op("global_avg_pool2d", [y], "gap")
    y = b.op("reshape", [y], "flat", newshape=(1, cmid))
    y = b.op("dense", [y, b.const(rand(rng, (16, cmid), (1 / cmid) ** 0.5), "wd")], "fc")
    return b.build([y])
