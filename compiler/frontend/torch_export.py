"""PyTorch importer: a ``torch.export`` program (core ATen ops) to the graph IR.

>>> graph = from_torch(model, (torch.randn(1, 3, 224, 224),))      # torch.export + core ATen
>>> graph = from_exported_program(torch.export.export(model, args))

The exported program is decomposed to core ATen (``run_decompositions``) and unlifted
(``ExportedProgram.module()``: parameters and buffers become ``get_attr`` nodes). Every node whose
inputs are all compile-time constants (a weight's ``permute``, ``aten.full``, a buffer's arithmetic)
is evaluated once with PyTorch itself, so only computation on the model's inputs reaches the graph.
Each remaining ATen op maps onto graph operators through :data:`CONVERTERS`; an op outside it is a
:class:`~vdla.compiler.graph.errors.UnsupportedModelError` naming the op and the way out
(``torch.compile(model, backend="vdla")`` runs it in eager PyTorch instead).

:func:`import_fx` is the shared core: the ``torch.compile`` backend
(:mod:`vdla.compiler.frontend.torch_dynamo`) imports each supported partition of an ATen graph with it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.fx

from vdla.compiler.graph.builder import GraphBuilder
from vdla.compiler.graph.errors import UnsupportedModelError
from vdla.compiler.graph.ir import Graph

aten = torch.ops.aten

#: Tensor dtypes the importer accepts for values computed at run time.
DTYPES = {torch.float32: "float32"}

Value = Any  # a graph value name (str), a constant torch.Tensor, a Python scalar/list, or a tuple of them
Converter = Callable[["Importer", torch.fx.Node, list[Value]], Value]
#: ATen op -> converter; filled by :func:`converter` below.
CONVERTERS: dict[Any, Converter] = {}
#: ATen op -> a check of one node; returns why the node cannot be imported, or None.
CHECKS: dict[Any, Callable[[torch.fx.Node], str | None]] = {}


def converter(*ops: Any, check: Callable[[torch.fx.Node], str | None] | None = None) -> Callable[[Converter], Converter]:
    def register(fn: Converter) -> Converter:
        for op in ops:
            CONVERTERS[op] = fn
            if check is not None:
                CHECKS[op] = check
        return fn
    return register


def op_name(target: Any) -> str:
    """A readable name of an fx node's target (``aten.convolution.default``, ``fft_rfft``)."""
    if isinstance(target, torch._ops.OpOverload):
        return f"aten.{target.__name__}" if target.namespace == "aten" else str(target)
    return getattr(target, "__name__", str(target))


def unsupported_reason(node: torch.fx.Node) -> str | None:
    """Why ``node`` (a ``call_function`` of an ATen graph) cannot be imported; None when it can."""
    if node.target is operator.getitem:
        return None
    if not node.all_input_nodes:
        return None  # a factory (aten.empty, aten.full, ...): evaluated at import, like every constant
    if node.target not in CONVERTERS:
        return f"{op_name(node.target)} has no vdla converter"
    for v in _tensor_metas(node):
        if v.dtype not in DTYPES and v.dtype not in (torch.int64, torch.bool):
            return f"{op_name(node.target)} computes {v.dtype}; vdla compiles {', '.join(map(str, DTYPES))}"
    out = node.meta.get("val")
    if isinstance(out, torch.Tensor) and out.dtype not in DTYPES:
        return f"{op_name(node.target)} returns {out.dtype}; vdla compiles {', '.join(map(str, DTYPES))}"
    check = CHECKS.get(node.target)
    return check(node) if check else None


def _tensor_metas(node: torch.fx.Node) -> list[torch.Tensor]:
    metas = []
    for a in node.all_input_nodes:
        v = a.meta.get("val")
        if isinstance(v, torch.Tensor):
            metas.append(v)
    return metas


class Importer:
    """Converts one fx graph of ATen ops into a :class:`Graph`."""

    def __init__(self) -> None:
        self.builder = GraphBuilder()

    def tensor(self, v: Value, node: torch.fx.Node) -> str:
        """A graph value for ``v``; a constant tensor or a scalar becomes a graph constant."""
        if isinstance(v, str):
            return v
        if isinstance(v, torch.Tensor):
            return self.builder.const(v.detach().cpu().numpy().copy(), "const")
        if isinstance(v, (int, float, bool)):
            out = node.meta.get("val")
            dtype = out.dtype if isinstance(out, torch.Tensor) else torch.float32
            return self.builder.const(np.asarray(v, dtype=torch.empty((), dtype=dtype).numpy().dtype), "scalar")
        raise UnsupportedModelError(f"{op_name(node.target)} (node {node.name}): operand {v!r} is not a tensor")

    def op(self, op: str, inputs: Sequence[str], node: torch.fx.Node, **attrs: Any) -> str:
        return self.builder.op(op, inputs, name=node.name, **attrs)


def out_shape(node: torch.fx.Node) -> tuple[int, ...]:
    v = node.meta["val"]
    return tuple(int(d) for d in v.shape)


def _is_const(v: Value) -> bool:
    if isinstance(v, (tuple, list)):
        return all(_is_const(x) for x in v)
    return not isinstance(v, str)


def _map(v: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(v, (tuple, list)):
        return type(v)(_map(x, fn) for x in v)
    if isinstance(v, dict):
        return {k: _map(x, fn) for k, x in v.items()}
    return fn(v)


def import_fx(gm: torch.fx.GraphModule, inputs: Sequence[torch.Tensor], constant: Sequence[bool] | None = None,
              names: Sequence[str] | None = None) -> tuple[Graph, list[str]]:
    """The graph of ``gm`` (ATen ops) and the names of its run-time inputs, in placeholder order.

    ``inputs`` are example (or actual) values of ``gm``'s placeholders; ``constant[i]`` makes
    placeholder ``i`` a compile-time constant with that value (a partition's weights)."""
    imp = Importer()
    env: dict[torch.fx.Node, Value] = {}
    constant = list(constant) if constant is not None else [False] * len(inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(inputs):
        raise UnsupportedModelError(f"the graph has {len(placeholders)} inputs but {len(inputs)} values were given")
    input_names: list[str] = []
    outputs: list[str] = []
    for i, (p, x) in enumerate(zip(placeholders, inputs)):
        if constant[i] or not isinstance(x, torch.Tensor):
            env[p] = x
            continue
        if x.dtype not in DTYPES:
            raise UnsupportedModelError(
                f"input {p.name!r} has dtype {x.dtype}; vdla compiles {', '.join(map(str, DTYPES))} models: "
                f"pass float32 inputs (and call model.float())")
        name = imp.builder.fresh(names[i] if names else p.name)
        env[p] = imp.builder.input(name, tuple(int(d) for d in x.shape), DTYPES[x.dtype])
        input_names.append(env[p])
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            continue
        if n.op == "get_attr":
            env[n] = _fetch_attr(gm, n.target)
        elif n.op == "call_module":
            if n.target.startswith("_guards"):
                continue  # torch.export's input guards: checked by export, nothing to compute
            raise UnsupportedModelError(f"node {n.name} calls submodule {n.target}; export the model to ATen ops first")
        elif n.op == "call_function":
            args = _map(n.args, lambda a: env[a] if isinstance(a, torch.fx.Node) else a)
            kwargs = _map(n.kwargs, lambda a: env[a] if isinstance(a, torch.fx.Node) else a)
            if n.target is operator.getitem:
                env[n] = args[0][args[1]]
            elif _is_const(list(args)) and _is_const(list(kwargs.values())):
                with torch.no_grad():
                    env[n] = n.target(*args, **kwargs)  # constant folding with PyTorch's own op
            else:
                reason = unsupported_reason(n)
                if reason is not None:
                    raise UnsupportedModelError(
                        f"node {n.name}: {reason}. vdla.from_torch imports core ATen ops "
                        f"({len(CONVERTERS)} supported); run the model with torch.compile(model, backend='vdla'), "
                        f"which runs such ops in eager PyTorch, or rewrite that part of the model")
                env[n] = CONVERTERS[n.target](imp, n, [*args, *kwargs.values()] if kwargs else list(args))
        elif n.op == "output":
            results = n.args[0]
            flat = list(results) if isinstance(results, (tuple, list)) else [results]
            for r in flat:
                v = env[r] if isinstance(r, torch.fx.Node) else r
                outputs.append(imp.tensor(v, n) if v is not None else imp.tensor(torch.zeros(()), n))
    graph = imp.builder.build(outputs)
    return graph, input_names


def _fetch_attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj.detach() if isinstance(obj, torch.Tensor) else obj


def export_program(model: torch.nn.Module, example_inputs: Sequence[Any]) -> Any:
    """``torch.export.export`` of ``model`` in eval mode, decomposed to core ATen; clear errors."""
    if not isinstance(model, torch.nn.Module):
        raise UnsupportedModelError(f"from_torch needs a torch.nn.Module, got {type(model).__name__}")
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor) and a.dtype not in DTYPES:
            raise UnsupportedModelError(f"example input {i} has dtype {a.dtype}; vdla compiles float32 models: "
                                        f"pass float32 inputs (and call model.float())")
    model = model.eval()
    try:
        ep = torch.export.export(model, args)
    except Exception as exc:  # torch raises many kinds (Unsupported, UserError, TypeError, ...)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UnsupportedModelError(
            f"torch.export cannot capture {type(model).__name__}: {type(exc).__name__}: {first[:300]}. "
            f"Fix: make the model exportable (see torch.export's error above), or use "
            f"torch.compile(model, backend='vdla'), which runs untraceable parts in eager PyTorch") from None
    return ep.run_decompositions()


def from_exported_program(ep: Any) -> Graph:
    """The graph IR of a ``torch.export.ExportedProgram`` (decomposed to core ATen here)."""
    ep = ep.run_decompositions()
    gm = ep.module()
    inputs = [p.meta["val"] for p in gm.graph.nodes if p.op == "placeholder"]
    concrete = [torch.zeros(tuple(int(d) for d in v.shape), dtype=v.dtype) if isinstance(v, torch.Tensor) else v
                for v in inputs]
    graph, _ = import_fx(gm, concrete)
    return graph


def from_torch(model: torch.nn.Module, example_inputs: Sequence[Any] | torch.Tensor) -> Graph:
    """The graph IR of ``model`` traced by ``torch.export`` at the shapes of ``example_inputs``."""
    ep = export_program(model, example_inputs)
    gm = ep.module()
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    graph, _ = import_fx(gm, list(args))
    return graph


# ---------------------------------------------------------------------------------------------------
# Converters. ``a`` holds the node's positional arguments followed by its keyword arguments'
# values, with fx nodes replaced by graph values or constants.

def _conv_check(node: torch.fx.Node) -> str | None:
    transposed = node.args[6] if len(node.args) > 6 else False
    if transposed:
        return "aten.convolution with transposed=True (ConvTranspose) is not supported"
    if len(node.args[3]) != 2:
        return f"aten.convolution over {len(node.args[3])} spatial dims; vdla compiles 2-D convolutions"
    return None


@converter(aten.convolution.default, check=_conv_check)
def _convolution(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    x, w, b, stride, padding, dilation, _transposed, _out_pad, groups = a[:9]
    inputs = [imp.tensor(x, node), imp.tensor(w, node)] + ([imp.tensor(b, node)] if b is not None else [])
    ph, pw = padding
    return imp.op("conv2d", inputs, node, strides=tuple(stride), padding=(ph, pw, ph, pw),
                  dilation=tuple(dilation), groups=int(groups))


@converter(aten._native_batch_norm_legit_no_training.default)
def _batch_norm(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    x, w, b, mean, var, _momentum, eps = a[:7]
    c = out_shape(node.args[0])[1]
    w = w if w is not None else torch.ones(c)
    b = b if b is not None else torch.zeros(c)
    y = imp.op("batch_norm", [imp.tensor(v, node) for v in (x, w, b, mean, var)], node, epsilon=float(eps))
    return (y, None, None)


def _native_batch_norm_check(node: torch.fx.Node) -> str | None:
    return "aten.native_batch_norm in training mode (call model.eval())" if node.args[5] else None


@converter(aten.native_batch_norm.default, check=_native_batch_norm_check)
def _native_batch_norm(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    x, w, b, mean, var, _training, _momentum, eps = a[:8]
    return _batch_norm(imp, node, [x, w, b, mean, var, _momentum, eps])


@converter(aten.native_layer_norm.default)
def _layer_norm(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    x, shape, w, b, eps = a[:5]
    shape = tuple(shape)
    w = w if w is not None else torch.ones(shape)
    b = b if b is not None else torch.zeros(shape)
    y = imp.op("layer_norm", [imp.tensor(v, node) for v in (x, w, b)], node, axis=-len(shape), epsilon=float(eps))
    return (y, None, None)


def _unary(op: str) -> Converter:
    def convert(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
        return imp.op(op, [imp.tensor(a[0], node)], node)
    return convert


for _aten, _op in ((aten.relu.default, "relu"), (aten.sigmoid.default, "sigmoid"), (aten.tanh.default, "tanh"),
                   (aten.exp.default, "exp"), (aten.sqrt.default, "sqrt"), (aten.erf.default, "erf")):
    converter(_aten)(_unary(_op))


def _binary(op: str) -> Converter:
    def convert(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
        lhs, rhs = imp.tensor(a[0], node), a[1]
        alpha = a[2] if len(a) > 2 else 1
        if alpha != 1:
            rhs = imp.op("multiply", [imp.tensor(rhs, node), imp.tensor(float(alpha), node)], node)
        return imp.op(op, [lhs, imp.tensor(rhs, node)], node)
    return convert


for _aten, _op in ((aten.add.Tensor, "add"), (aten.sub.Tensor, "subtract"), (aten.mul.Tensor, "multiply"),
                   (aten.div.Tensor, "divide"), (aten.maximum.default, "maximum"), (aten.minimum.default, "minimum"),
                   (aten.pow.Tensor_Tensor, "power"), (aten.add.Scalar, "add"), (aten.sub.Scalar, "subtract"),
                   (aten.mul.Scalar, "multiply"), (aten.div.Scalar, "divide")):
    converter(_aten)(_binary(_op))


@converter(aten.pow.Tensor_Scalar)
def _pow_scalar(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    return imp.op("power", [imp.tensor(a[0], node), imp.tensor(float(a[1]), node)], node)


@converter(aten.hardtanh.default, aten.clamp.default)
def _clip(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    lo = a[1] if len(a) > 1 else (-1.0 if node.target == aten.hardtanh.default else None)
    hi = a[2] if len(a) > 2 else (1.0 if node.target == aten.hardtanh.default else None)
    return imp.op("clip", [imp.tensor(a[0], node)], node, a_min=None if lo is None else float(lo),
                  a_max=None if hi is None else float(hi))


@converter(aten.gelu.default)
def _gelu(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    approximate = a[1] if len(a) > 1 else "none"
    if approximate != "none":
        raise UnsupportedModelError(f"node {node.name}: aten.gelu with approximate={approximate!r} is not supported")
    x = imp.tensor(a[0], node)
    scaled = imp.op("multiply", [x, imp.tensor(1.0 / math.sqrt(2.0), node)], node)
    inner = imp.op("add", [imp.op("erf", [scaled], node), imp.tensor(1.0, node)], node)
    return imp.op("multiply", [imp.op("multiply", [x, inner], node), imp.tensor(0.5, node)], node)


@converter(aten._softmax.default)
def _softmax(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    return imp.op("softmax", [imp.tensor(a[0], node)], node, axis=int(a[1]))


@converter(aten.mean.dim)
def _mean(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    x, dims = a[0], a[1]
    keepdim = bool(a[2]) if len(a) > 2 else False
    rank = len(out_shape(node.args[0]))
    axes = tuple(sorted(int(d) % rank for d in dims))
    if rank == 4 and axes == (2, 3) and keepdim:
        return imp.op("global_avg_pool2d", [imp.tensor(x, node)], node)
    return imp.op("mean", [imp.tensor(x, node)], node, axes=axes, keepdims=keepdim)


@converter(aten.sum.dim_IntList)
def _sum(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    rank = len(out_shape(node.args[0]))
    axes = tuple(sorted(int(d) % rank for d in a[1]))
    return imp.op("sum", [imp.tensor(a[0], node)], node, axes=axes, keepdims=bool(a[2]) if len(a) > 2 else False)


@converter(aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
           aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default, aten.view_copy.default,
           aten.unsqueeze_copy.default, aten.squeeze_copy.dim, aten.squeeze_copy.dims, aten.squeeze_copy.default)
def _reshape(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    return imp.op("reshape", [imp.tensor(a[0], node)], node, newshape=out_shape(node))


@converter(aten.clone.default, aten.alias.default, aten.detach.default, aten.lift_fresh_copy.default,
           aten.alias_copy.default, aten.detach_copy.default)
def _identity(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    return imp.tensor(a[0], node)


def _to_copy_check(node: torch.fx.Node) -> str | None:
    src, dst = node.args[0].meta.get("val"), node.meta.get("val")
    if isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor) and src.dtype != dst.dtype:
        return f"aten._to_copy from {src.dtype} to {dst.dtype}"
    return None


@converter(aten._to_copy.default, check=_to_copy_check)
def _to_copy(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    return imp.tensor(a[0], node)


@converter(aten.permute.default, aten.permute_copy.default)
def _permute(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    rank = len(out_shape(node))
    return imp.op("transpose", [imp.tensor(a[0], node)], node, axes=tuple(int(d) % rank for d in a[1]))


@converter(aten.t.default, aten.transpose.int, aten.t_copy.default, aten.transpose_copy.int)
def _transpose(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    rank = len(out_shape(node))
    d0, d1 = (int(a[1]) % rank, int(a[2]) % rank) if len(a) > 2 else (0, 1)
    axes = list(range(rank))
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return imp.op("transpose", [imp.tensor(a[0], node)], node, axes=tuple(axes))


@converter(aten.expand.default, aten.expand_copy.default)
def _expand(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    return imp.op("broadcast_to", [imp.tensor(a[0], node)], node, shape=out_shape(node))


@converter(aten.cat.default)
def _cat(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    rank = len(out_shape(node))
    dim = int(a[1]) % rank if len(a) > 1 else 0
    return imp.op("concatenate", [imp.tensor(t, node) for t in a[0]], node, axis=dim)


@converter(aten.slice.Tensor, aten.slice_copy.Tensor)
def _slice(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    shape = out_shape(node.args[0])
    dim = int(a[1]) % len(shape) if len(a) > 1 else 0
    start = a[2] if len(a) > 2 and a[2] is not None else 0
    end = a[3] if len(a) > 3 and a[3] is not None else shape[dim]
    step = int(a[4]) if len(a) > 4 else 1
    start, end, _ = slice(start, end, step).indices(shape[dim])
    begin = [0] * len(shape)
    stop = list(shape)
    strides = [1] * len(shape)
    begin[dim], stop[dim], strides[dim] = start, end, step
    return imp.op("strided_slice", [imp.tensor(a[0], node)], node, begin=tuple(begin), end=tuple(stop),
                  strides=tuple(strides))


@converter(aten.select.int, aten.select_copy.int)
def _select(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    shape = out_shape(node.args[0])
    dim = int(a[1]) % len(shape)
    index = int(a[2]) % shape[dim]
    begin, stop = [0] * len(shape), list(shape)
    begin[dim], stop[dim] = index, index + 1
    sliced = imp.op("strided_slice", [imp.tensor(a[0], node)], node, begin=tuple(begin), end=tuple(stop),
                    strides=(1,) * len(shape))
    return imp.op("reshape", [sliced], node, newshape=out_shape(node))


@converter(aten.split_with_sizes.default, aten.split_with_sizes_copy.default)
def _split(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    shape = out_shape(node.args[0])
    dim = int(a[2]) % len(shape) if len(a) > 2 else 0
    parts, start = [], 0
    for size in a[1]:
        begin, stop = [0] * len(shape), list(shape)
        begin[dim], stop[dim] = start, start + int(size)
        parts.append(imp.op("strided_slice", [imp.tensor(a[0], node)], node, begin=tuple(begin), end=tuple(stop),
                            strides=(1,) * len(shape)))
        start += int(size)
    return tuple(parts)


def _weight_t(v: Value) -> torch.Tensor | None:
    """A constant (K, N) right-hand side as the (N, K) weight ``dense`` takes."""
    return v.t().contiguous() if isinstance(v, torch.Tensor) and v.dim() == 2 else None


@converter(aten.addmm.default)
def _addmm(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    bias, x, rhs = a[:3]
    beta = a[3] if len(a) > 3 else 1
    alpha = a[4] if len(a) > 4 else 1
    w = _weight_t(rhs)
    if w is not None and beta == 1 and alpha == 1 and isinstance(bias, torch.Tensor) and bias.dim() == 1:
        return imp.op("dense", [imp.tensor(x, node), imp.tensor(w, node), imp.tensor(bias, node)], node)
    y = imp.op("matmul", [imp.tensor(x, node), imp.tensor(rhs, node)], node)
    if alpha != 1:
        y = imp.op("multiply", [y, imp.tensor(float(alpha), node)], node)
    b = imp.tensor(bias, node)
    if beta != 1:
        b = imp.op("multiply", [b, imp.tensor(float(beta), node)], node)
    return imp.op("add", [y, b], node)


@converter(aten.mm.default, aten.bmm.default, aten.matmul.default)
def _matmul(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    w = _weight_t(a[1]) if node.target == aten.mm.default else None
    if w is not None:
        return imp.op("dense", [imp.tensor(a[0], node), imp.tensor(w, node)], node)
    return imp.op("matmul", [imp.tensor(a[0], node), imp.tensor(a[1], node)], node)


def _pool_check(node: torch.fx.Node) -> str | None:
    if len(node.args[1]) != 2:
        return f"{op_name(node.target)} over {len(node.args[1])} spatial dims; vdla compiles 2-D pooling"
    return None


def _pool_args(a: list[Value], node: torch.fx.Node) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    kernel = tuple(int(k) for k in a[1])
    stride = tuple(int(s) for s in a[2]) if len(a) > 2 and a[2] else kernel
    pad = tuple(int(p) for p in a[3]) if len(a) > 3 else (0, 0)
    if len(pad) == 1:
        pad = (pad[0], pad[0])
    return kernel, stride, (pad[0], pad[1], pad[0], pad[1])  # type: ignore[return-value]


@converter(aten.max_pool2d_with_indices.default, check=_pool_check)
def _max_pool(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    kernel, stride, pad = _pool_args(a, node)
    dilation = tuple(int(d) for d in a[4]) if len(a) > 4 else (1, 1)
    ceil = bool(a[5]) if len(a) > 5 else False
    y = imp.op("max_pool2d", [imp.tensor(a[0], node)], node, pool_size=kernel, strides=stride, padding=pad,
               dilation=dilation, ceil_mode=ceil)
    return (y, None)


@converter(aten.avg_pool2d.default, check=_pool_check)
def _avg_pool(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    kernel, stride, pad = _pool_args(a, node)
    ceil = bool(a[4]) if len(a) > 4 else False
    include_pad = bool(a[5]) if len(a) > 5 else True
    if len(a) > 6 and a[6] is not None:
        raise UnsupportedModelError(f"node {node.name}: avg_pool2d with divisor_override is not supported")
    return imp.op("avg_pool2d", [imp.tensor(a[0], node)], node, pool_size=kernel, strides=stride, padding=pad,
                  ceil_mode=ceil, count_include_pad=include_pad)


def _adaptive_check(node: torch.fx.Node) -> str | None:
    h, w = out_shape(node.args[0])[2:]
    oh, ow = out_shape(node)[2:]
    if h % oh or w % ow:
        return f"aten._adaptive_avg_pool2d from {h}x{w} to {oh}x{ow} (not a whole-window pooling)"
    return None


@converter(aten._adaptive_avg_pool2d.default, check=_adaptive_check)
def _adaptive_avg_pool(imp: Importer, node: torch.fx.Node, a: list[Value]) -> Value:
    h, w = out_shape(node.args[0])[2:]
    oh, ow = out_shape(node)[2:]
    x = imp.tensor(a[0], node)
    if (oh, ow) == (1, 1):
        return imp.op("global_avg_pool2d", [x], node)
    if (oh, ow) == (h, w):
        return x
    k = (h // oh, w // ow)
    return imp.op("avg_pool2d", [x], node, pool_size=k, strides=k)


__all__ = ["CONVERTERS", "DTYPES", "export_program", "from_exported_program", "from_torch", "import_fx",
           "op_name", "unsupported_reason"]
