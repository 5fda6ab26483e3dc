"""Helpers of the end-to-end tests (a module of its own: tests import it by a name unique in the suite)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx

sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))

from make_models import DATA, fill_weights  # noqa: E402


def resnet18_onnx(resolution: int) -> onnx.ModelProto:
    """The committed ResNet-18 with seeded weights, its input fixed to ``resolution`` (for onnxruntime)."""
    model = fill_weights(onnx.load(str(DATA / "resnet18.onnx")))
    for d, v in zip(model.graph.input[0].type.tensor_type.shape.dim, (1, 3, resolution, resolution)):
        d.dim_value = v
    del model.graph.value_info[:]
    del model.graph.output[0].type.tensor_type.shape.dim[:]
    return model



def rand_input(shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
