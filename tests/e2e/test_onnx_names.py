"""Any legal ONNX name compiles: models exported by torch with their default names, and graphs whose
value and node names are dots, slashes, colons, spaces, non-ASCII, leading digits, names that collide
once spelled as C identifiers, and very long names.  Each is compiled for ``llvm`` and matched against
onnxruntime; the module, the profile and error messages show the original ONNX names.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.codegen.symbols import MAX_LENGTH, SymbolTable, c_identifier
from vdla.compiler.frontend.onnx import from_onnx
from vdla.compiler.graph.build import CompiledModule, build_model
from vdla.compiler.graph.errors import UnsupportedModelError
from vdla.runtime.graph_executor import GraphModule

NASTY = [
    "input:0", "/layer1/layer1.0/conv1/Conv_output_0", "a.b", "a/b", "a b", "a_b", "ünïcödé名前",
    "0starts_with_digit", "x" * 700, "x" * 699 + "y", "tab\tand\nnewline", "",
]


def _ort(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feed)


def _check(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> CompiledModule:
    compiled = build_model(from_onnx(model), target="llvm")
    got, want = compiled.run(feed), _ort(model, feed)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5 * float(np.abs(w).max()))
    return compiled


def test_symbol_table_gives_distinct_c_identifiers() -> None:
    table = SymbolTable()
    symbols = [table.symbol(n) for n in NASTY]
    assert len(set(symbols)) == len(NASTY)
    for name, sym in zip(NASTY, symbols):
        assert sym.isascii() and sym.isidentifier() and len(sym) <= MAX_LENGTH + 4
        assert table.symbol(name) == sym and table.name_of(sym) == name
    assert c_identifier("a.b") == c_identifier("a/b")  # why the table, not the spelling, owns uniqueness


def _nasty_graph(names: list[str]) -> onnx.ModelProto:
    """x -> Conv -> Relu -> (Add with itself through a second Relu) -> Mul; every value named from ``names``."""
    rng = np.random.default_rng(0)
    x, w, b, c, r1, r2, s, out, k = names[:9]
    nodes = [
        helper.make_node("Conv", [x, w, b], [c], name=names[9], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", [c], [r1], name=names[10]),
        helper.make_node("Relu", [c], [r2], name=names[11]),  # node names may be empty too
        helper.make_node("Add", [r1, r2], [s], name=names[1]),
        helper.make_node("Mul", [s, k], [out], name=names[0]),
    ]
    inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), w),
             numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), b),
             numpy_helper.from_array(np.float32(0.5), k)]
    graph = helper.make_graph(nodes, "names", [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 4, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("names", [NASTY, list(reversed(NASTY[:-1])) + [""]], ids=["forward", "reversed"])
def test_nasty_names_compile_and_match_onnxruntime(names: list[str], tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = _nasty_graph(names)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    compiled = _check(model, {names[0]: x})
    module = compiled.module
    assert module.input_names == [names[0]] and module.output_names == [names[7]]
    # The module's nodes carry ONNX value names (fused kernels are named after their last value).
    onnx_values = set(names[:9])
    assert {n["name"] for n in module.graph["nodes"]} <= onnx_values
    _, profile = module.profile({names[0]: x})
    assert {row.name for row in profile.nodes} <= onnx_values
    assert names[7] in profile.table()
    # The exported file round-trips the names.
    loaded = GraphModule.load(compiled.export(tmp_path / "names.vdla"))
    np.testing.assert_array_equal(loaded.run({names[0]: x})[0], module.run({names[0]: x})[0])


def test_unsupported_node_error_names_the_original_node() -> None:
    model = _nasty_graph(NASTY)
    model.graph.node[1].op_type = "Celu"  # a real ONNX op this compiler does not implement
    with pytest.raises(UnsupportedModelError, match="Celu") as err:
        from_onnx(model)
    assert repr(NASTY[10]) in str(err.value)  # quoted, so a name with a newline stays one line


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)) + x)


class _Net(torch.nn.Module):
    """Nested containers: the exporters name values like ``/layer1/layer1.0/Relu_output_0``."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU())
        self.layer1 = torch.nn.Sequential(_Block(), _Block())
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.layer1(self.stem(x))
        return self.head(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


def _export(net: torch.nn.Module, x: torch.Tensor, dynamo: bool) -> onnx.ModelProto:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            return torch.onnx.export(net, (x,), dynamo=True, verbose=False).model_proto
        torch.onnx.export(net, (x,), buf, dynamo=False)
    return onnx.load_from_string(buf.getvalue())


@pytest.mark.parametrize("dynamo", [False, True], ids=["torchscript", "dynamo"])
def test_torch_export_default_names(dynamo: bool) -> None:
    torch.manual_seed(0)
    net = _Net().eval()
    for m in net.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(1, 3, 16, 16)
    model = _export(net, x, dynamo)
    value_names = {o for n in model.graph.node for o in n.output}
    if not dynamo:
        assert any("." in v and "/" in v for v in value_names)  # the case that used to fail
    module = _check(model, {model.graph.input[0].name: x.numpy()}).module
    assert {n["name"] for n in module.graph["nodes"]} <= value_names
