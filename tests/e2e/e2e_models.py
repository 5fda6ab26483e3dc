"""Helpers of the end-to-end tests (a module of its own: tests import it by a name unique in the suite)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))

from make_models import resnet18_at as resnet18_onnx  # noqa: E402,F401  (the tests' name for it)



def rand_input(shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
