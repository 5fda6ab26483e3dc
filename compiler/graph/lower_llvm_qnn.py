"""The ``llvm`` lowerings of the requantizing int8 operators (``qadd``, ``qavg_pool2d``), for the
kernels the partitioner leaves on the host; the same arithmetic as their NumPy references
(:mod:`vdla.compiler.graph.ops.qnn`): int32 products and sums that wrap, floor shifts, an int8 clip."""

from __future__ import annotations

from collections.abc import Sequence

from vdla.compiler import te
from vdla.compiler.graph.ir import Node
from vdla.compiler.graph.layout import parse_layout
from vdla.compiler.graph.lower_llvm import Operand
from vdla.compiler.graph.ops import register_lowering
from vdla.compiler.te import Tensor
from vdla.compiler.tir import op as tir
from vdla.compiler.tir import all_of
from vdla.compiler.tir.ir import PrimExpr, const


def _requantized(v: PrimExpr, shift: int, relu: bool) -> PrimExpr:
    if relu:
        v = tir.max(v, const(0, "int32"))
    if shift:
        v = v // const(1 << shift, "int32")
    return tir.min(tir.max(v, const(-128, "int32")), const(127, "int32")).astype("int8")


@register_lowering("qadd", "llvm")
def _qadd(node: Node, xs: Sequence[Operand]) -> Tensor:
    a = node.attrs

    def term(k: int, v: PrimExpr) -> PrimExpr:
        w = v.astype("int32")
        if a.get("mult") is not None:
            return w * const(int(a.get("mult")[k]), "int32")
        s = a["align"][k]
        if s > 0:
            return w // const(1 << s, "int32")
        return w * const(1 << -s, "int32") if s < 0 else w

    def fn(*i: PrimExpr) -> PrimExpr:
        acc = term(0, xs[0].tensor[i]) + term(1, xs[1].tensor[i])
        if a["round"]:
            acc = acc + const(int(a["round"]), "int32")
        return _requantized(acc, a["shift"], a["relu"])

    return te.compute(node.type.shape, fn, name=node.name)


@register_lowering("qavg_pool2d", "llvm")
def _qavg_pool2d(node: Node, xs: Sequence[Operand]) -> Tensor:
    a = node.attrs
    lay = parse_layout(a["layout"])
    ah, aw = lay.axes.index("H"), lay.axes.index("W")
    x = xs[0].tensor
    shape = [int(s.value) for s in x.shape]  # type: ignore[attr-defined]
    (kh, kw), (sh, sw) = a["pool_size"], a["strides"]
    pt, pl = a["padding"][0], a["padding"][1]
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")

    def window(i: Sequence[PrimExpr]) -> PrimExpr:
        idx = list(i)
        y, xx = idx[ah] * sh + ry - pt, idx[aw] * sw + rx - pl
        idx[ah], idx[aw] = y, xx
        inside = all_of(y >= 0, y < shape[ah], xx >= 0, xx < shape[aw]) if any(a["padding"]) else None
        v = x[tuple(idx)].astype("int32")
        return tir.if_then_else(inside, v, const(0, "int32")) if inside is not None else v

    sums = te.compute(node.type.shape, lambda *i: te.sum(window(i), axis=[ry, rx]), name=f"{node.name}_sum")

    def fn(*i: PrimExpr) -> PrimExpr:
        acc = (sums[i] + const(int(a["round"]), "int32")) * const(int(a.get("mult")), "int32")
        return _requantized(acc, a["shift"], False)

    return te.compute(node.type.shape, fn, name=node.name)
