"""``GraphModule.profile`` times each CPU node in its place inside whole runs of the model (as
:meth:`GraphModule.run` and onnxruntime's profiler see it), not by calling one node over and over
with its weights left in cache."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from vdla.compiler.graph import GraphBuilder
from vdla.compiler.graph.build import build_model
from vdla.runtime.graph_executor import GraphExecutorError


class _Recorder:
    """Stands in for a compiled kernel: records the order of calls, then calls the kernel."""

    def __init__(self, fn: Any, index: int, log: list[int]) -> None:
        self.fn, self.index, self.log = fn, index, log

    def call_unchecked(self, packed: Any) -> None:
        self.log.append(self.index)
        self.fn.call_unchecked(packed)


def test_profile_times_nodes_inside_whole_runs() -> None:
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    x = b.input("x", (1, 8, 12, 12), "float32")
    h = b.op("relu", [b.op("conv2d", [x, b.const(rng.standard_normal((16, 8, 3, 3)).astype(np.float32))], "c1",
                           padding=(1, 1, 1, 1))])
    h = b.op("max_pool2d", [h], "pool", pool_size=(2, 2), strides=(2, 2), padding=(0, 0, 0, 0))
    y = b.op("softmax", [b.op("reshape", [h], "flat", newshape=(1, 576))], "prob", axis=-1)
    module = build_model(b.build([y])).module
    feed = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    want = module.run(feed)[0]
    calls: list[int] = []
    module._calls = [(_Recorder(fn, k, calls), packed) for k, (fn, packed) in enumerate(module._calls)]
    n = len(module._calls)
    assert n >= 2
    outputs, profile = module.profile(feed, warmup=1, repeat=3)
    # One warm-up run and three timed runs, each the whole model in order.
    assert calls == list(range(n)) * 4
    assert len(profile.nodes) == n and all(r.seconds > 0 for r in profile.nodes)
    np.testing.assert_array_equal(outputs[0], want)


class _Sleeper(_Recorder):
    """A kernel that also sleeps: time the thread does not run, as when another process holds the core."""

    def call_unchecked(self, packed: Any) -> None:
        time.sleep(0.02)
        super().call_unchecked(packed)


def test_thread_clock_leaves_out_time_the_thread_does_not_run() -> None:
    rng = np.random.default_rng(1)
    b = GraphBuilder()
    x = b.input("x", (1, 4, 8, 8), "float32")
    y = b.op("relu", [b.op("conv2d", [x, b.const(rng.standard_normal((8, 4, 3, 3)).astype(np.float32))], "c",
                           padding=(1, 1, 1, 1))])
    module = build_model(b.build([y])).module
    feed = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    calls: list[int] = []
    module._calls = [(_Sleeper(fn, k, calls), packed) for k, (fn, packed) in enumerate(module._calls)]
    module.set_num_threads(2)
    with pytest.raises(GraphExecutorError, match="set_num_threads\\(1\\)"):
        module.profile(feed, clock="thread")
    with pytest.raises(GraphExecutorError, match="unknown profile clock 'cpu'"):
        module.profile(feed, clock="cpu")
    module.set_num_threads(1)
    _, wall = module.profile(feed, warmup=0, repeat=2)
    _, cpu = module.profile(feed, warmup=0, repeat=2, clock="thread")
    assert all(r.seconds >= 0.02 for r in wall.nodes)
    assert all(0 < r.seconds < 0.02 for r in cpu.nodes)
