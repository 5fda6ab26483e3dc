"""LLVM lowerings of the float-math, comparison, reduction-sum and indexing operators."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vdla.compiler import te
from vdla.compiler.graph.ir import Node
from vdla.compiler.graph.lower_llvm import Operand, _bcast, _c, _elementwise, _out_shape, _shape, reduced_index
from vdla.compiler.graph.ops import register_lowering
from vdla.compiler.te import Tensor
from vdla.compiler.tir import op as tir
from vdla.compiler.tir.ir import PrimExpr

_UNARY: dict[str, Callable[[PrimExpr], PrimExpr]] = {"sqrt": tir.sqrt, "exp": tir.exp, "erf": tir.erf}


def _register_unary(name: str, fn: Callable[[PrimExpr], PrimExpr]) -> None:
    @register_lowering(name, "llvm")
    def _lower(node: Node, xs: Sequence[Operand]) -> Tensor:
        return _elementwise(node, fn, xs[0].tensor)


for _name, _fn in _UNARY.items():
    _register_unary(_name, _fn)


@register_lowering("power", "llvm")
def _power(node: Node, xs: Sequence[Operand]) -> Tensor:
    y = xs[1].value
    if y is not None and y.size == 1 and float(y) in (2.0, 3.0, 0.5):
        # Exporters write x*x as Pow(x, 2) (LayerNorm variance); keep it a multiply LLVM can vectorize.
        e = float(y)
        if e == 0.5:
            return _elementwise(node, tir.sqrt, xs[0].tensor)
        return _elementwise(node, (lambda v: v * v) if e == 2.0 else (lambda v: v * v * v), xs[0].tensor)
    return _elementwise(node, tir.power, xs[0].tensor, xs[1].tensor)


@register_lowering("equal", "llvm")
def _equal(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _elementwise(node, lambda a, b: a == b, xs[0].tensor, xs[1].tensor)


@register_lowering("where", "llvm")
def _where(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _elementwise(node, tir.if_then_else, *(o.tensor for o in xs))


@register_lowering("sum", "llvm")
def _sum(node: Node, xs: Sequence[Operand]) -> Tensor:
    x = xs[0].tensor
    shape, axes, keep = _shape(x), sorted(node.attrs["axes"]), bool(node.attrs["keepdims"])
    acc = "float64" if x.dtype.startswith("float") else x.dtype

    out_shape = _out_shape(node)
    if any(shape[a] == 0 for a in axes):
        return te.compute(out_shape, lambda *i: _c(0, x.dtype), name=node.name)  # the empty sum
    rs = [te.reduce_axis(shape[a], f"r{a}") for a in axes]
    full = reduced_index(len(shape), axes, rs, keep)
    if acc == x.dtype:
        return te.compute(out_shape, lambda *i: te.sum(x[full(i)], axis=rs), name=node.name)
    sums = te.compute(out_shape, lambda *i: te.sum(x[full(i)].astype(acc), axis=rs), name=f"{node.name}_acc")
    return te.compute(out_shape, lambda *i: sums[i].astype(x.dtype), name=node.name)


@register_lowering("strided_slice", "llvm")
def _strided_slice(node: Node, xs: Sequence[Operand]) -> Tensor:
    x = xs[0].tensor
    begin, strides = node.attrs["begin"], node.attrs["strides"]
    return te.compute(_out_shape(node), lambda *i: x[tuple(b + k * s for k, b, s in zip(i, begin, strides))],
                      name=node.name)


@register_lowering("take", "llvm")
def _take(node: Node, xs: Sequence[Operand]) -> Tensor:
    data, indices = xs[0].tensor, xs[1].tensor
    dshape = _shape(data)
    axis = node.attrs["axis"] % len(dshape)
    n, irank = dshape[axis], len(_shape(indices))
    known = xs[1].value

    def fn(*i: PrimExpr) -> PrimExpr:
        inner = i[axis:axis + irank]
        if known is not None and known.size == 1:
            j: PrimExpr | int = int(known.reshape(-1)[0]) % n
        else:
            # Loop indices are int32; an axis longer than 2**31 does not fit in memory anyway.
            raw = indices[tuple(inner)].astype("int32")
            wrapped = tir.if_then_else(raw < _c(0, "int32"), raw + _c(n, "int32"), raw)
            # An out-of-range index (an error in onnxruntime) must not read outside the buffer.
            j = tir.min(tir.max(wrapped, _c(0, "int32")), _c(n - 1, "int32"))
        return data[tuple(i[:axis]) + (j,) + tuple(i[axis + irank:])]

    return te.compute(_out_shape(node), fn, name=node.name)


@register_lowering("broadcast_to", "llvm")
def _broadcast_to(node: Node, xs: Sequence[Operand]) -> Tensor:
    return te.compute(_out_shape(node), lambda *i: _bcast(xs[0].tensor, i), name=node.name)


@register_lowering("tile", "llvm")
def _tile(node: Node, xs: Sequence[Operand]) -> Tensor:
    x = xs[0].tensor
    shape = _shape(x)
    return te.compute(_out_shape(node), lambda *i: x[tuple(k % d if r != 1 else k
                                                           for k, d, r in zip(i, shape, node.attrs["reps"]))],
                      name=node.name)

