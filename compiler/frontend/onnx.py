"""ONNX import: an ONNX model (opsets 13-21) becomes a typed :class:`~vdla.compiler.graph.Graph`.

Shapes are static: a symbolic input dimension (e.g. a batch size exported as dynamic)
must be given a value through ``shapes``.  Inputs an operator needs as constants (a
Reshape's shape, a Pad's widths) must be initializers or ``Constant`` nodes, or be
bound to values through ``bind``.  Anything outside the supported operator set, opset
range, attribute combinations or data types raises :class:`UnsupportedModelError` naming
the operator, the node and what is supported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper
from onnx.external_data_helper import load_external_data_for_model

from vdla.runtime.file_checks import describe, read_bytes, wrong_kind
from vdla_hw.errors import BadFileError

from vdla.compiler.frontend.onnx_context import ImportContext, onnx_dtype
from vdla.compiler.frontend import onnx_ops_ext  # noqa: F401  (registers the converters it defines)
from vdla.compiler.frontend.onnx_ops import CONVERTERS
from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.errors import GraphError, UnsupportedModelError
from vdla.compiler.graph.ir import Graph

#: Versions of the default ONNX operator set this frontend implements.
SUPPORTED_OPSETS = range(13, 22)
#: ONNX operators the frontend converts.
SUPPORTED_OPERATORS = tuple(sorted(CONVERTERS))


def load_model(model: onnx.ModelProto | str | Path) -> onnx.ModelProto:
    """The model itself, or the model read from an ONNX file, checked: a missing, empty, truncated or
    foreign file is a :class:`~vdla_hw.errors.BadFileError` naming it."""
    if isinstance(model, onnx.ModelProto):
        return model
    path = Path(model)
    what = "an ONNX model (.onnx)"
    data = read_bytes(path, what)
    if describe(data) not in ("binary data of an unknown kind", "a text file"):
        raise wrong_kind(path, data, what, hint="export the model with torch.onnx.export or onnx.save")
    try:
        proto = onnx.load_model_from_string(data)
    except DecodeError as exc:
        raise BadFileError(f"{path} is truncated or not an ONNX model ({len(data)} bytes; {exc})",
                           hint="export the model again with torch.onnx.export or onnx.save") from None
    if not proto.HasField("graph") or not proto.graph.node:
        raise BadFileError(f"{path} is not an ONNX model: it holds no graph", hint="pass the .onnx file of a model")
    load_external_data_for_model(proto, str(path.parent))  # as onnx.load does; a no-op without external data
    return proto


def default_opset(model: onnx.ModelProto) -> int:
    """The model's version of the default operator set; raises when it is outside 13-21."""
    versions = {o.domain: o.version for o in model.opset_import}
    version = versions.get("", versions.get("ai.onnx"))
    if version is None:
        raise UnsupportedModelError("the model imports no default ONNX operator set")
    if version not in SUPPORTED_OPSETS:
        raise UnsupportedModelError(
            f"the model uses ONNX opset {version}; supported opsets are {SUPPORTED_OPSETS.start}-"
            f"{SUPPORTED_OPSETS.stop - 1} (convert it with onnx.version_converter.convert_version(model, 17))"
        )
    return version


def from_onnx(model: onnx.ModelProto | str | Path, shapes: Mapping[str, Sequence[int]] | None = None,
              bind: Mapping[str, np.ndarray] | None = None) -> Graph:
    """Import an ONNX model.

    ``shapes`` fixes the shape of named graph inputs (needed for symbolic dimensions);
    ``bind`` turns named graph inputs into constants with the given values.
    """
    proto = load_model(model)
    opset = default_opset(proto)
    shapes, bind = dict(shapes or {}), dict(bind or {})
    g = proto.graph
    initializers = {t.name: _initializer(t) for t in g.initializer}
    known = {i.name for i in g.input} | set(initializers)
    unknown = sorted((set(shapes) | set(bind)) - known)
    if unknown:
        raise UnsupportedModelError(f"shapes/bind name {unknown}, which are not graph inputs; inputs: {sorted(known)}")

    ctx = ImportContext(GraphBuilder(), opset)
    for name, arr in initializers.items():
        ctx.define(name, ctx.builder.const(arr, ctx.value_name(name)))
    for vi in g.input:
        if vi.name in initializers:
            continue  # an initializer listed as input (old exporters): its value is the default
        if vi.name in bind:
            ctx.define(vi.name, ctx.builder.const(_supported_array(vi.name, np.asarray(bind[vi.name])),
                                                  ctx.value_name(vi.name)))
            continue
        shape, dtype = _input_type(vi, shapes.get(vi.name))
        ctx.define(vi.name, ctx.builder.input(ctx.value_name(vi.name), shape, dtype))

    for node in g.node:
        _convert_node(ctx, node)

    outputs = [ctx.lookup(o.name, "graph output") for o in g.output]
    return ctx.builder.build(outputs)


def _convert_node(ctx: ImportContext, node: onnx.NodeProto) -> None:
    label = f"{node.op_type} node {node.name or node.output[0]!r}"
    if node.domain not in ("", "ai.onnx"):
        raise UnsupportedModelError(f"{label} is in operator domain {node.domain!r}; only the default ONNX domain is supported")
    convert = CONVERTERS.get(node.op_type)
    if convert is None:
        raise UnsupportedModelError(
            f"operator {node.op_type!r} (node {node.name or node.output[0]!r}) is not supported; "
            f"supported operators: {', '.join(SUPPORTED_OPERATORS)}"
        )
    try:
        outs = convert(ctx, node)
    except UnsupportedModelError as exc:
        raise UnsupportedModelError(f"{label}: {exc}") from None
    except GraphError as exc:
        raise UnsupportedModelError(f"{label}: {exc}") from None
    for i, name in enumerate(node.output):
        if not name:
            continue
        if i >= len(outs):
            raise UnsupportedModelError(f"{label}: output {i} ({name!r}) is not supported; only the first "
                                        f"{len(outs)} output(s) of {node.op_type} can be used")
        ctx.define(name, outs[i])


def _input_type(vi: onnx.ValueInfoProto, override: Sequence[int] | None) -> tuple[tuple[int, ...], str]:
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        raise UnsupportedModelError(f"graph input {vi.name!r} is not a tensor (sequences/maps are not supported)")
    dtype = onnx_dtype(tt.elem_type, f"graph input {vi.name!r}")
    if override is not None:
        return tuple(int(d) for d in override), dtype
    dims = []
    for d in tt.shape.dim:
        if not d.HasField("dim_value") or d.dim_value < 0:
            raise UnsupportedModelError(
                f"graph input {vi.name!r} has a symbolic dimension {d.dim_param or '?'!r}; give its shape with "
                f"from_onnx(..., shapes={{{vi.name!r}: (...)}})"
            )
        dims.append(d.dim_value)
    return tuple(dims), dtype


def _initializer(t: onnx.TensorProto) -> np.ndarray:
    onnx_dtype(t.data_type, f"initializer {t.name!r}")
    if t.data_location == onnx.TensorProto.EXTERNAL:
        raise UnsupportedModelError(f"initializer {t.name!r} keeps its data in an external file; load the model with "
                                    "onnx.load(path) (which reads external data) and pass the ModelProto")
    try:
        return numpy_helper.to_array(t)
    except ValueError as exc:
        raise UnsupportedModelError(f"initializer {t.name!r} is malformed ({exc}); re-export the model") from None


def _supported_array(name: str, arr: np.ndarray) -> np.ndarray:
    onnx_dtype(arr.dtype, f"tensor {name!r}")
    return arr
