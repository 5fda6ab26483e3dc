"""The flush before each timed CPU call is what passes through the caches between two runs of a node of
the model being tuned: the model's weight bytes (as the llvm pipeline lays them out), at most the full
flush that evicts every operand (``measure.model_flush_bytes``, ``footprint.model_weight_bytes``)."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.autotune.footprint import model_weight_bytes
from vdla.compiler.autotune.measure import FULL_FLUSH_BYTES, MeasureOptions, model_flush_bytes
from vdla.compiler.graph import GraphBuilder


def _graph(channels: list[int], spatial: int = 4):  # type: ignore[no-untyped-def]
    """1 x 1 convs of ``channels`` in a chain, a ReLU after each; returns the graph and its weights' bytes."""
    rng = np.random.default_rng(0)
    b = GraphBuilder()
    h = b.input("x", (1, channels[0], spatial, spatial), "float32")
    nbytes = 0
    for k, (cin, cout) in enumerate(zip(channels, channels[1:])):
        w = rng.standard_normal((cout, cin, 1, 1)).astype(np.float32)
        nbytes += w.nbytes
        h = b.op("relu", [b.op("conv2d", [h, b.const(w)], f"c{k}")])
    return b.build([h]), nbytes


def test_a_models_weight_bytes_are_its_blocked_weights() -> None:
    # Channel counts that are multiples of every target's block: blocking pads nothing, the bytes are the weights'.
    graph, nbytes = _graph([64, 128, 64])
    assert model_weight_bytes(graph) == nbytes
    bigger, more = _graph([64, 128, 256, 64])
    assert model_weight_bytes(bigger) == more > nbytes


def test_the_flush_is_the_models_weights_up_to_the_full_flush() -> None:
    graph, nbytes = _graph([64, 128, 64])
    assert model_flush_bytes(model_weight_bytes(graph)) == nbytes < FULL_FLUSH_BYTES
    assert model_flush_bytes(FULL_FLUSH_BYTES + 1) == FULL_FLUSH_BYTES  # ResNet's 45-97 MiB: every operand evicted
    assert model_flush_bytes(0) == 0
    with pytest.raises(ValueError, match=">= 0"):
        model_flush_bytes(-1)
    assert MeasureOptions().flush_bytes == FULL_FLUSH_BYTES  # no model known: the full flush
    assert MeasureOptions(flush_bytes=model_flush_bytes(nbytes)).flush_bytes == nbytes
    with pytest.raises(ValueError, match="flush_bytes"):
        MeasureOptions(flush_bytes=-1)
