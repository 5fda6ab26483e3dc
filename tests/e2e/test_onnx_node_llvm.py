"""The ONNX backend node tests on the ``llvm`` target: each case compiled and run natively.

The cases and their handling are those of ``tests/graph/test_onnx_node.py`` (the reference
executor's run): the same operator set, the same deliberately rejected cases.
"""

from __future__ import annotations

import numpy as np
import pytest

import test_onnx_node as node_cases
from vdla.compiler.frontend.onnx import SUPPORTED_OPERATORS, from_onnx
from vdla.compiler.graph.build import build_model

CASES = [c for c in node_cases.CASES if c.name not in node_cases.REJECTED]


def _run(case) -> None:  # type: ignore[no-untyped-def]
    model = node_cases._at_supported_opset(case.model)
    inputs, expected = (node_cases._arrays(v) for v in case.data_sets[0])
    names = [i.name for i in model.graph.input]
    static = {i for n in model.graph.node for k, i in enumerate(n.input)
              if k in node_cases.STATIC_INPUTS.get(n.op_type, ())}
    graph = from_onnx(model, bind={nm: v for nm, v in zip(names, inputs) if nm in static})
    feed = {g.name: v for g, v in zip(graph.input_nodes, [v for nm, v in zip(names, inputs) if nm not in static])}
    outputs = build_model(graph, target="llvm").run(feed)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)


#: Operators supported only on compile-time constants (shape arithmetic, folded at import): every node
#: case feeds them run-time inputs, so tests/e2e/test_onnx_ops_ort.py covers their folded form.
FOLDED_ONLY = {"Mod"}


def test_every_supported_operator_is_covered() -> None:
    assert {n.op_type for c in CASES for n in c.model.graph.node} == set(SUPPORTED_OPERATORS) - FOLDED_ONLY


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_node_on_llvm(case) -> None:  # type: ignore[no-untyped-def]
    _run(case)
