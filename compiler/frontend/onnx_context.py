"""State shared by the ONNX converters: the graph being built and the ONNX-name environment."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.errors import UnsupportedModelError
from vdla.compiler.graph.ir import DTYPES, TensorType
from vdla.compiler.graph.ops import get_op

#: Graph operators never evaluated at import, even on constant inputs.
_NO_FOLD = frozenset({"quantize_linear", "dequantize_linear"})

def onnx_dtype(elem: int | np.dtype, what: str) -> str:
    """The graph dtype of an ONNX element type (or NumPy dtype); rejects unsupported ones."""
    if isinstance(elem, (int, np.integer)):
        try:
            np_dtype = helper.tensor_dtype_to_np_dtype(int(elem))
            label = onnx.TensorProto.DataType.Name(int(elem))
        except (KeyError, ValueError):
            np_dtype, label = None, str(elem)
    else:
        np_dtype, label = np.dtype(elem), str(elem)
    name = np.dtype(np_dtype).name if np_dtype is not None else ""
    # ml_dtypes types (bfloat16, float8, int4) report names NumPy does not compute with.
    if name not in DTYPES:
        supported = sorted(DTYPES)
        raise UnsupportedModelError(f"{what} has element type {label}, which is not supported; supported: {supported}")
    return name


@dataclass
class ImportContext:
    builder: GraphBuilder
    opset: int
    env: dict[str, str] = field(default_factory=dict)

    def value_name(self, onnx_name: str) -> str:
        """The graph value name of an ONNX name: the ONNX name itself (any string), made unique by the builder.

        Generated code spells names through :mod:`vdla.compiler.codegen.symbols`; the graph, the module and
        error messages keep the names the user sees in the ONNX file.
        """
        return self.builder.fresh(onnx_name or "v")

    def define(self, onnx_name: str, value: str) -> None:
        self.env[onnx_name] = value

    def lookup(self, onnx_name: str, what: str) -> str:
        try:
            return self.env[onnx_name]
        except KeyError:
            raise UnsupportedModelError(f"{what} {onnx_name!r} is never produced (the graph is not topologically sorted "
                                        "or references a missing value)") from None

    def inputs(self, node: onnx.NodeProto) -> list[str | None]:
        """Graph values of the node's inputs; ``None`` for omitted optional inputs."""
        return [self.lookup(i, f"input of node {node.name!r}") if i else None for i in node.input]

    def input(self, node: onnx.NodeProto, i: int) -> str | None:
        return self.lookup(node.input[i], f"input of node {node.name!r}") if i < len(node.input) and node.input[i] else None

    def type_of(self, value: str) -> TensorType:
        return self.builder.type_of(value)

    def const(self, node: onnx.NodeProto, i: int, what: str) -> np.ndarray | None:
        """The constant value of optional input ``i``; None when omitted; raises when computed at run time."""
        value = self.input(node, i)
        if value is None:
            return None
        arr = self.builder.const_value(value)
        if arr is None:
            raise UnsupportedModelError(
                f"input {i} ({what}, {node.input[i]!r}) must be a constant (an initializer or a Constant node); "
                f"if it is a graph input, bind it with from_onnx(..., bind={{{node.input[i]!r}: value}})"
            )
        return arr

    def op(self, node: onnx.NodeProto, op: str, inputs: list[str], *, output: int = 0, **attrs: Any) -> str:
        """Add a graph node named after the ONNX node's output ``output`` (the first by default).

        When every input is a constant the node is evaluated now (its NumPy reference) and becomes a
        constant: exporters compute shapes at run time (Shape -> Gather -> Concat -> Reshape), and with
        static shapes that arithmetic is known at compile time.  Quantize/dequantize stay nodes, since
        the int8 passes match them.
        """
        name = self.value_name(node.output[output] or op)
        values = [self.builder.const_value(i) for i in inputs]
        if inputs and op not in _NO_FOLD and all(v is not None for v in values):
            opdef = get_op(op)
            merged = opdef.make_attrs(attrs)
            out_type = opdef.infer([self.type_of(i) for i in inputs], merged)
            folded = np.asarray(opdef.reference(values, merged)).astype(out_type.dtype, copy=False)
            return self.builder.const(folded.reshape(out_type.shape), name)
        return self.builder.op(op, inputs, name, **attrs)

    def const_value(self, node: onnx.NodeProto, value: np.ndarray, suffix: str) -> str:
        return self.builder.const(value, self.value_name(f"{node.output[0]}_{suffix}"))


def attributes(node: onnx.NodeProto) -> dict[str, Any]:
    """The node's attributes as Python values (strings decoded)."""
    out: dict[str, Any] = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode()
        out[a.name] = v
    return out


def reject_attrs(node: onnx.NodeProto, attrs: dict[str, Any], allowed: set[str]) -> None:
    extra = sorted(set(attrs) - allowed)
    if extra:
        raise UnsupportedModelError(f"attribute(s) {extra} are not supported (supported: {sorted(allowed)})")
