"""The graph IR, the builder, the printer and the operator registry."""

from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler.graph import (
    Attrs, ConstValue, Graph, GraphBuilder, GraphError, Node, NotLoweredError, OpPattern, TensorType,
    TypeInferenceError, UnknownOperatorError, get_lowering, get_op, registered_ops, run_graph,
)
from vdla.compiler.graph.ops import TARGETS, register_lowering


def test_attrs_are_frozen_and_hashable() -> None:
    a = Attrs({"pads": [1, 2]}, axis=0)
    assert a["pads"] == (1, 2) and hash(a) == hash(Attrs(axis=0, pads=(1, 2)))
    with pytest.raises(AttributeError):
        a.x = 1  # type: ignore[attr-defined]
    assert a.replace(axis=None) == Attrs(pads=(1, 2))
    with pytest.raises(GraphError, match="arrays are not attributes"):
        Attrs(value=np.zeros(2))


def test_const_value_is_read_only_and_compared_by_content() -> None:
    c = ConstValue(np.arange(4, dtype=np.float32))
    assert c == ConstValue(np.arange(4, dtype=np.float32)) and c != ConstValue(np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError):
        c.array[0] = 1


def test_graph_rejects_dangling_inputs_duplicates_and_missing_outputs() -> None:
    t = TensorType((2,), "float32")
    x = Node("x", "input", (), Attrs(shape=(2,), dtype="float32"), t)
    with pytest.raises(GraphError, match="no earlier node"):
        Graph((Node("y", "relu", ("x",), Attrs(), t), x), ("y",))
    with pytest.raises(GraphError, match="duplicate"):
        Graph((x, x), ("x",))
    with pytest.raises(GraphError, match="not produced"):
        Graph((x,), ("z",))
    with pytest.raises(GraphError, match="unknown dtype"):
        TensorType((1,), "bfloat16")


def test_builder_infers_types_and_reports_bad_inputs() -> None:
    b = GraphBuilder()
    x = b.input("x", (1, 3, 8, 8), "float32")
    w = b.const(np.zeros((4, 3, 3, 3), np.float32), "w")
    y = b.op("conv2d", [x, w], strides=(2, 2), padding=(1, 1, 1, 1))
    assert b.type_of(y) == TensorType((1, 4, 4, 4), "float32")
    with pytest.raises(TypeInferenceError, match="node 'bad'.*do not broadcast"):
        b.op("add", [y, b.const(np.zeros((3,), np.float32))], "bad")
    with pytest.raises(TypeInferenceError, match="no attribute"):
        b.op("relu", [y], alpha=1.0)
    with pytest.raises(TypeInferenceError, match="needs attribute"):
        b.op("reshape", [y])
    with pytest.raises(UnknownOperatorError, match="unknown graph operator 'gelu'"):
        b.op("gelu", [y])


def test_printer_shows_every_node_and_the_return() -> None:
    b = GraphBuilder()
    x = b.input("x", (2, 3), "float32")
    g = b.build([b.op("relu", [x])])
    assert str(g).splitlines() == ["%x: float32[2, 3] = input", "%relu: float32[2, 3] = relu(%x)", "return %relu"]


def test_executor_checks_inputs() -> None:
    b = GraphBuilder()
    g = b.build([b.op("relu", [b.input("x", (2,), "float32")])])
    with pytest.raises(GraphError, match="missing"):
        run_graph(g, {})
    with pytest.raises(GraphError, match=r"must be float32\[2\]"):
        run_graph(g, {"x": np.zeros(3, np.float32)})


def test_every_operator_has_one_complete_definition() -> None:
    for name in registered_ops():
        op = get_op(name)
        assert op.name == name and isinstance(op.pattern, OpPattern) and op.doc
        assert callable(op.relation) and callable(op.reference)


def test_patterns_follow_the_paper() -> None:
    assert get_op("conv2d").pattern == OpPattern.COMPLEX_OUT_FUSABLE
    assert get_op("dense").pattern == OpPattern.COMPLEX_OUT_FUSABLE
    assert get_op("add").pattern == OpPattern.INJECTIVE and get_op("reshape").pattern == OpPattern.INJECTIVE
    assert get_op("max_pool2d").pattern == OpPattern.REDUCTION
    assert get_op("softmax").pattern == OpPattern.OPAQUE


def test_missing_lowering_names_the_operator_and_target() -> None:
    for target in TARGETS:
        with pytest.raises(NotLoweredError, match=f"operator 'input' is not yet lowered for target '{target}'"):
            get_lowering("input", target)
    with pytest.raises(ValueError, match="unknown target 'cuda'"):
        get_lowering("relu", "cuda")
    with pytest.raises(UnknownOperatorError):
        register_lowering("gelu", "llvm")
