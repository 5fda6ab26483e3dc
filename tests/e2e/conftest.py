"""Shared fixtures of the end-to-end tests: the committed models of ``tests/graph/data``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))

from make_models import DATA, DIGITS_MODEL, digits_split, fill_weights  # noqa: E402

from compiler.frontend.onnx import from_onnx  # noqa: E402


def resnet18_onnx(resolution: int) -> onnx.ModelProto:
    """The committed ResNet-18 with seeded weights, its input fixed to ``resolution`` (for onnxruntime)."""
    model = fill_weights(onnx.load(str(DATA / "resnet18.onnx")))
    for d, v in zip(model.graph.input[0].type.tensor_type.shape.dim, (1, 3, resolution, resolution)):
        d.dim_value = v
    del model.graph.value_info[:]
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    return model


@pytest.fixture(scope="session")
def digits():
    """(float graph, calibration samples, held-out images, held-out labels)."""
    x_tr, _, x_te, y_te = digits_split()
    graph = from_onnx(onnx.load(str(DIGITS_MODEL)))
    return graph, [{"x": x_tr[i:i + 1]} for i in range(0, len(x_tr), 8)], x_te, y_te


def rand_input(shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
