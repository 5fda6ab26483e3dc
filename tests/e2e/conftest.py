"""Shared fixtures of the end-to-end tests: the committed models of ``tests/graph/data``."""

from __future__ import annotations

import sys
from pathlib import Path

import onnx
import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "graph"))

from make_models import DIGITS_MODEL, digits_split  # noqa: E402

from vdla.compiler.frontend.onnx import from_onnx  # noqa: E402


@pytest.fixture(scope="session")
def digits():
    """(float graph, calibration samples, held-out images, held-out labels)."""
    x_tr, _, x_te, y_te = digits_split()
    graph = from_onnx(onnx.load(str(DIGITS_MODEL)))
    return graph, [{"x": x_tr[i:i + 1]} for i in range(0, len(x_tr), 8)], x_te, y_te
