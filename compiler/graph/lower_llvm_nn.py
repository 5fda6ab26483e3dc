"""The ``llvm`` lowerings of the compute-heavy graph operators: conv2d, dense, matmul, softmax,
pooling and means (the element-wise and data-movement ones live in :mod:`vdla.compiler.graph.lower_llvm`).

Float conv2d with constant weights runs topi's blocked NCHWc micro-kernel (weights blocked at
compile time); data and output in ``NCHW{c}c`` (what the ``cpu_layout`` pass gives eligible
convs) are used as they are, plain NCHW ones are blocked / unblocked inside the same kernel.
Stride-1 3x3 convs take topi's Winograd F(m x m, 3 x 3) instead when a tuning log says so or, without
one, by the measured rule of :func:`default_conv_tile` (weights transformed at compile time).
Grouped convs take the same micro-kernel with channel blocks inside a group (the output channels
of a group are the vector); depthwise ones (one channel per group) topi's blocked depthwise kernel
on ``NCHW{c}c`` data (a block of channels is the vector), or its NCHW schedule on plain data.
Float dense (and, through :mod:`vdla.compiler.graph.lower_llvm_matmul`, float MatMul) runs topi's
``dense_pack``, register tiles sized from the target's vector registers; pooling (NCHW or NCHWc) and
softmax over the last axis use topi's schedules.  Every other case (integer operands, packed layouts, groups, dilation,
ceil mode, ...) is a plain reduction with the reference's exact semantics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vdla.compiler import te, topi
from vdla.compiler.autotune import dispatch
from vdla.compiler.graph.ir import Node
from vdla.compiler.graph.layout import parse_layout, unpack
from vdla.compiler.graph.lower_llvm import KernelBuilder, Operand, _c, _relayout, _shape, reduced_index
from vdla.compiler.graph.ops import register_lowering
from vdla.compiler.te import Tensor
from vdla.compiler.tir import op as tir
from vdla.compiler.tir.ir import PrimExpr
from vdla.compiler.topi.utils import largest_divisor, schedule_elementwise, vector_lanes



def conv_workload(data: Tensor, kernel: Tensor, stride: Sequence[int], pad: Sequence[int]) -> dict[str, int]:
    """The auto-tuner's description of one blocked conv2d: its operand shapes, stride and padding."""
    return _blocked_conv_workload(_shape(data), _shape(kernel), stride, pad)


def dense_workload(x: Tensor, packed: Tensor, out_features: int) -> dict[str, int]:
    """The auto-tuner's description of one packed dense layer."""
    m, k = _shape(x)
    return {"m": m, "k": k, "n": out_features, "n_block": _shape(packed)[2]}


def depthwise_workload(data: Tensor, kernel: Tensor, stride: Sequence[int], pad: Sequence[int]) -> dict[str, int]:
    """The auto-tuner's description of one NCHW depthwise conv2d."""
    n, c, h, w = _shape(data)
    _, _, kh, kw = _shape(kernel)
    return {"n": n, "c": c, "h": h, "w": w, "kh": kh, "kw": kw, "stride_h": stride[0], "stride_w": stride[1],
            "pad_h": pad[0], "pad_w": pad[1]}


def depthwise_nchwc_workload(data: Tensor, kernel: Tensor, stride: Sequence[int], pad: Sequence[int]
                             ) -> dict[str, int]:
    """The auto-tuner's description of one channel-blocked depthwise conv2d."""
    n, co, h, w, cb = _shape(data)
    _, kh, kw, _ = _shape(kernel)
    return {"n": n, "c_outer": co, "h": h, "w": w, "c_block": cb, "kh": kh, "kw": kw, "stride_h": stride[0],
            "stride_w": stride[1], "pad_h": pad[0], "pad_w": pad[1]}


def pool_workload(data: Tensor, pool: Sequence[int], stride: Sequence[int], pad: Sequence[int], kind: str,
                  count_include_pad: bool) -> dict[str, int]:
    """The auto-tuner's description of one pooling (``c_block`` 0: NCHW, else the NCHWc channel block)."""
    shape = _shape(data)
    return {"n": shape[0], "c": shape[1], "h": shape[2], "w": shape[3], "c_block": shape[4] if len(shape) == 5 else 0,
            "kh": pool[0], "kw": pool[1], "stride_h": stride[0], "stride_w": stride[1], "pad_h": pad[0],
            "pad_w": pad[1], "avg": int(kind == "avg"), "count_include_pad": int(count_include_pad and kind == "avg")}


def _acc_dtype(node: Node) -> str:
    return node.type.dtype


def _conv2d_generic(node: Node, x: Tensor, w: Tensor, name: str) -> Tensor:
    """NCHW x OIHW convolution with any padding, stride, dilation, groups and dtype."""
    a = node.attrs
    n, c, h, wd = _shape(x)
    o, ci, kh, kw = _shape(w)
    pt, pl, _, _ = a["padding"]
    (sh, sw), (dh, dw) = a["strides"], a["dilation"]
    og = o // a["groups"]
    acc = _acc_dtype(node)
    _, _, oh, ow = parse_layout("NCHW").shape(
        parse_layout(a.get("out_layout") or a["data_layout"]).primal_shape(node.type.shape))
    rc, ry, rx = te.reduce_axis(ci, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")

    def fn(b: PrimExpr, k: PrimExpr, y: PrimExpr, xx: PrimExpr) -> PrimExpr:
        iy, ix = y * sh + ry * dh - pt, xx * sw + rx * dw - pl
        cin = (k // og) * ci + rc if a["groups"] > 1 else rc
        inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < wd)
        v = x[b, cin, tir.min(tir.max(iy, 0), h - 1), tir.min(tir.max(ix, 0), wd - 1)].astype(acc)
        v = tir.if_then_else(inside, v, _c(0, acc)) if (pt or pl or a["padding"][2] or a["padding"][3]) else v
        return te.sum(v * w[k, rc, ry, rx].astype(acc), axis=[rc, ry, rx])

    return te.compute((n, o, oh, ow), fn, name=name)


def _channel_block(layout: str) -> int | None:
    """The channel block of ``NCHW`` (1) or ``NCHW{c}c``; None for any other layout."""
    lay = parse_layout(layout)
    if lay.primal != "NCHW" or lay.axes[:4] != ("N", "C", "H", "W") or lay.axes[4:] not in ((), ("c",)):
        return None
    return lay.factor("C")


def _pad_spatial(x: Tensor, top: int, bottom: int, left: int, right: int, name: str) -> Tensor:
    """Zero rows/columns around axes 2 and 3 of an NCHW or NCHWc tensor."""
    shape = _shape(x)
    h, w = shape[2], shape[3]

    def padded(*i: PrimExpr) -> PrimExpr:
        y, xx = i[2], i[3]
        inside = (y >= top) & (y < h + top) & (xx >= left) & (xx < w + left)
        src = i[:2] + (tir.min(tir.max(y - top, 0), h - 1), tir.min(tir.max(xx - left, 0), w - 1)) + i[4:]
        return tir.if_then_else(inside, x[src], _c(0.0, x.dtype))

    return te.compute(shape[:2] + (h + top + bottom, w + left + right) + shape[4:], padded, name=name)


def _symmetric_source(node: Node, x: Tensor) -> tuple[Tensor, int, int]:
    """``(source, pad_top, pad_left)`` for topi's symmetric padding: a node padded asymmetrically gets the
    extra rows/columns here, and topi pads the rest."""
    pt, pl, pb, pr = node.attrs["padding"]
    if (pt, pl) == (pb, pr):
        return x, pt, pl
    ph, pw = min(pt, pb), min(pl, pr)
    return _pad_spatial(x, pt - ph, pb - ph, pl - pw, pr - pw, f"{node.name}_pad"), ph, pw


def _fast_conv2d(node: Node, x: Tensor, weight: np.ndarray, bias: Tensor | None, kb: KernelBuilder,
                 in_block: int, out_block: int) -> Tensor:
    """Float conv2d (+ bias) through topi's blocked NCHWc micro-kernel; weights blocked at compile time.

    ``in_block``/``out_block`` are the channel blocks of the data and output layouts (1 = NCHW): a
    blocked operand is used as it is, a plain one is blocked (data) or unblocked (output) in the kernel.
    With groups, the blocks divide the channels per group (:func:`_grouped_blocks_fit`).
    """
    a = node.attrs
    groups = a["groups"]
    shape = _shape(x)
    n, h, w = shape[0], shape[2], shape[3]
    c = shape[1] * in_block
    o, cg = weight.shape[0], weight.shape[1]
    lanes = vector_lanes(None)  # the widest channel block: one vector register of fp32
    ib = in_block if in_block > 1 else math.gcd(cg, lanes)
    ob = out_block if out_block > 1 else math.gcd(o // groups, lanes)
    src, pt, pl = _symmetric_source(node, x)
    h, w = _shape(src)[2], _shape(src)[3]
    if in_block > 1:
        data = src
    else:
        data = te.compute((n, c // ib, h, w, ib), lambda b, k, y, xx, i: src[b, k * ib + i, y, xx],
                          name=f"{node.name}_pack")
    blocked = weight.reshape(o // ob, ob, cg // ib, ib, *weight.shape[2:]).transpose(0, 2, 4, 5, 3, 1)
    # The tuner's conv2d_nchwc task has no groups: grouped convs keep the default register tile.
    workload = _blocked_conv_workload(_shape(data), blocked.shape, a["strides"], (pt, pl))
    tuned = dispatch.query("conv2d_nchwc", workload) if groups == 1 else None
    winograd = topi.winograd_eligible(weight.shape[2:], a["strides"], groups)
    if isinstance(tuned, topi.WinogradKnobs) or (tuned is None and winograd and default_conv_tile(workload)):
        conv = _winograd_conv(node, data, weight, kb, ib, ob, (pt, pl), tuned)
    else:
        wt = kb.constant(blocked, f"{node.name}_w")
        conv = topi.conv2d_nchwc(data, wt, stride=tuple(a["strides"]), padding=(pt, pl),
                                 name=f"{node.name}_nchwc", groups=groups)
        knobs = tuned or topi.default_conv2d_nchwc_knobs(conv)
        kb.scheduled(conv, lambda s: topi.schedule_conv2d_nchwc(conv, knobs, s=s), [data, wt],
                     with_epilogue=lambda s, stage: topi.schedule_conv2d_nchwc(conv, knobs, s=s, epilogue=stage))
    if out_block > 1:
        if bias is None:
            return conv
        return te.compute(_shape(conv), lambda b, k, y, xx, i: conv[b, k, y, xx, i] + bias[k * ob + i],
                          name=node.name)
    if bias is None:
        return te.compute(node.type.shape, lambda b, k, y, xx: conv[b, k // ob, y, xx, k % ob], name=node.name)
    return te.compute(node.type.shape, lambda b, k, y, xx: conv[b, k // ob, y, xx, k % ob] + bias[k], name=node.name)


def _blocked_conv_workload(data: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
                           pad: Sequence[int]) -> dict[str, int]:
    n, ico, h, w, icb = data
    oco, _, kh, kw, _, ocb = kernel
    return {"n": n, "ic_outer": ico, "h": h, "w": w, "ic_block": icb, "oc_outer": oco, "kh": kh, "kw": kw,
            "oc_block": ocb, "stride_h": stride[0], "stride_w": stride[1], "pad_h": pad[0], "pad_w": pad[1]}


def default_conv_tile(workload: dict[str, int]) -> int | None:
    """The Winograd output tile the default schedule of this ``conv2d_nchwc`` workload takes (None:
    the direct conv), by the target's measured rule (:func:`vdla.compiler.topi.default_winograd_tile`)."""
    w = workload
    if not topi.winograd_eligible((w["kh"], w["kw"]), (w["stride_h"], w["stride_w"])):
        return None
    oh, ow = w["h"] + 2 * w["pad_h"] - 2, w["w"] + 2 * w["pad_w"] - 2
    return topi.default_winograd_tile(w["ic_outer"] * w["ic_block"], w["oc_outer"] * w["oc_block"], oh, ow)


def _winograd_conv(node: Node, data: Tensor, weight: np.ndarray, kb: KernelBuilder, ib: int, ob: int,
                   pad: tuple[int, int], tuned: topi.WinogradKnobs | None) -> Tensor:
    """A stride-1 3x3 conv by F(m x m, 3 x 3): weights transformed at compile time, the tuned knobs or
    the default tile of :func:`default_conv_tile`."""
    shape = _shape(data)
    workload = _blocked_conv_workload(shape, (weight.shape[0] // ob, shape[1], 3, 3, ib, ob), (1, 1), pad)
    tile = tuned.tile if tuned is not None else default_conv_tile(workload)
    assert tile is not None
    u = kb.constant(topi.transform_weights(weight, tile, ib, ob), f"{node.name}_wu")
    conv = topi.conv2d_winograd_nchwc(data, u, tile, pad, name=f"{node.name}_winograd")
    knobs = tuned or topi.default_winograd_knobs(conv)
    kb.scheduled(conv, lambda s: topi.schedule_conv2d_winograd_nchwc(conv, knobs, s=s), [data, u],
                 with_epilogue=lambda s, stage: topi.schedule_conv2d_winograd_nchwc(conv, knobs, s=s, epilogue=stage))
    return conv


def _depthwise_conv2d(node: Node, x: Tensor, weight: np.ndarray, bias: Tensor | None, kb: KernelBuilder) -> Tensor:
    """Float NCHW depthwise conv2d (+ bias) through topi's depthwise schedule."""
    a = node.attrs
    src, pt, pl = _symmetric_source(node, x)
    wt = kb.constant(weight, f"{node.name}_w")
    conv = topi.depthwise_conv2d_nchw(src, wt, stride=tuple(a["strides"]), padding=(pt, pl),
                                      name=f"{node.name}_dw")
    knobs = dispatch.query("depthwise_conv2d_nchw", depthwise_workload(src, wt, a["strides"], (pt, pl)))
    kb.scheduled(conv, lambda s: topi.schedule_depthwise_conv2d_nchw(conv, knobs, s=s), [src, wt])
    if bias is None:
        return conv
    return te.compute(node.type.shape, lambda b, k, y, xx: conv[b, k, y, xx] + bias[k], name=node.name)


def _depthwise_nchwc(node: Node, x: Tensor, weight: np.ndarray, bias: Tensor | None, kb: KernelBuilder,
                     block: int) -> Tensor:
    """Float depthwise conv2d (+ bias) on ``NCHW{block}c`` data through topi's blocked depthwise kernel."""
    a = node.attrs
    src, pt, pl = _symmetric_source(node, x)
    c, kh, kw = weight.shape[0], weight.shape[2], weight.shape[3]
    blocked = weight.reshape(c // block, block, kh, kw).transpose(0, 2, 3, 1)
    wt = kb.constant(np.ascontiguousarray(blocked), f"{node.name}_w")
    conv = topi.depthwise_conv2d_nchwc(src, wt, stride=tuple(a["strides"]), padding=(pt, pl),
                                       name=f"{node.name}_dwc")
    knobs = dispatch.query("depthwise_conv2d_nchwc", depthwise_nchwc_workload(src, wt, a["strides"], (pt, pl)))
    kb.scheduled(conv, lambda s: topi.schedule_depthwise_conv2d_nchwc(conv, knobs, s=s), [src, wt],
                 with_epilogue=lambda s, stage: topi.schedule_depthwise_conv2d_nchwc(conv, knobs, s=s,
                                                                                     epilogue=stage))
    if bias is None:
        return conv
    return te.compute(_shape(conv), lambda b, k, y, xx, i: conv[b, k, y, xx, i] + bias[k * block + i],
                      name=node.name)


def _grouped_blocks_fit(weight_shape: Sequence[int], groups: int, in_block: int, out_block: int) -> bool:
    """Whether the blocked micro-kernel runs a conv with these OIHW weights, groups and layout blocks.

    Every conv without groups does; a grouped one when the layouts' channel blocks (1 = plain NCHW)
    divide the channels per group, so no block straddles two groups; depthwise ones (one input and
    one output channel per group) are left to the depthwise schedule, which vectorizes along rows.
    """
    if groups == 1:
        return True
    out_per_group, in_per_group = weight_shape[0] // groups, weight_shape[1]
    if out_per_group == 1 and in_per_group == 1:
        return False
    return in_per_group % in_block == 0 and out_per_group % out_block == 0


@register_lowering("conv2d", "llvm")
def _conv2d(node: Node, xs: Sequence[Operand]) -> Tensor:
    a, kb = node.attrs, xs[0].kernel
    x, w = xs[0].tensor, xs[1].tensor
    dl, kl = a["data_layout"], a["kernel_layout"]
    ol = a.get("out_layout") or dl
    weight = xs[1].value
    bias = xs[2].tensor if len(xs) == 3 else None
    in_block, out_block = _channel_block(dl), _channel_block(ol)
    if (node.type.dtype == "float32" and tuple(a["dilation"]) == (1, 1) and weight is not None
            and in_block is not None and out_block is not None
            and _grouped_blocks_fit(unpack(weight, kl).shape, a["groups"], in_block, out_block)):
        return _fast_conv2d(node, x, unpack(weight, kl), bias, kb, in_block, out_block)
    if (node.type.dtype == "float32" and weight is not None and in_block is not None and in_block > 1
            and in_block == out_block and tuple(a["dilation"]) == (1, 1)
            and unpack(weight, kl).shape[:2] == (a["groups"], 1) and a["groups"] == _shape(x)[1] * in_block):
        return _depthwise_nchwc(node, x, unpack(weight, kl), bias, kb, in_block)
    if (node.type.dtype == "float32" and weight is not None and dl == "NCHW" and ol == "NCHW"
            and tuple(a["dilation"]) == (1, 1) and a["groups"] > 1 and a["groups"] == _shape(x)[1]
            and unpack(weight, kl).shape[:2] == (a["groups"], 1)):
        return _depthwise_conv2d(node, x, unpack(weight, kl), bias, kb)
    primal_out = parse_layout(ol).primal_shape(node.type.shape)
    xd = _relayout(x, dl, "NCHW", parse_layout(dl).primal_shape(_shape(x)), f"{node.name}_data")
    wk = (kb.constant(unpack(weight, kl), f"{node.name}_w") if weight is not None
          else _relayout(w, kl, "OIHW", parse_layout(kl).primal_shape(_shape(w)), f"{node.name}_wt"))
    out = _conv2d_generic(node, xd, wk, f"{node.name}_nchw")
    if bias is not None:
        conv = out
        out = te.compute(primal_out, lambda b, k, y, xx: conv[b, k, y, xx] + bias[k], name=f"{node.name}_bias")
    return _relayout(out, "NCHW", ol, node.type.shape, node.name)


@register_lowering("dense", "llvm")
def _dense(node: Node, xs: Sequence[Operand]) -> Tensor:
    a, kb = node.attrs, xs[0].kernel
    x, w, weight = xs[0].tensor, xs[1].tensor, xs[1].value
    dl, kl = a["data_layout"], a["kernel_layout"]
    ol = a.get("out_layout") or dl
    m, n = parse_layout(ol).primal_shape(node.type.shape)
    xd = _relayout(x, dl, "NC", parse_layout(dl).primal_shape(_shape(x)), f"{node.name}_data")
    acc = node.type.dtype
    if acc == "float32" and weight is not None:
        out = dense_packed(xd, unpack(weight, kl), kb, node.name)
    else:
        wk = (kb.constant(unpack(weight, kl), f"{node.name}_w") if weight is not None
              else _relayout(w, kl, "OI", parse_layout(kl).primal_shape(_shape(w)), f"{node.name}_wt"))
        r = te.reduce_axis(_shape(wk)[1], "rk")
        out = te.compute((m, n), lambda i, j: te.sum(xd[i, r].astype(acc) * wk[j, r].astype(acc), axis=r),
                         name=f"{node.name}_dense")
    if len(xs) == 3:
        bias, mm = xs[2].tensor, out
        out = te.compute((m, n), lambda i, j: mm[i, j] + bias[j], name=f"{node.name}_bias")
    return _relayout(out, "NC", ol, node.type.shape, node.name)


@register_lowering("batch_matmul", "llvm")
def _batch_matmul(node: Node, xs: Sequence[Operand]) -> Tensor:
    """A product of two activations per batch (packed or not): a plain reduction in the accumulator type."""
    a = node.attrs
    dl, kl = a["data_layout"], a["kernel_layout"]
    ol = a.get("out_layout") or dl
    b, n, m, _ = parse_layout(ol).primal_shape(node.type.shape)
    xd = _relayout(xs[0].tensor, dl, "NCHW", parse_layout(dl).primal_shape(_shape(xs[0].tensor)), f"{node.name}_data")
    wd = _relayout(xs[1].tensor, kl, "NOI", parse_layout(kl).primal_shape(_shape(xs[1].tensor)), f"{node.name}_wt")
    acc = node.type.dtype
    r = te.reduce_axis(_shape(wd)[2], "rk")
    out = te.compute((b, n, m, 1), lambda i, j, y, x: te.sum(wd[i, j, r].astype(acc) * xd[i, r, y, x].astype(acc), axis=r),
                     name=f"{node.name}_bmm")
    if len(xs) == 3:
        bias, mm = xs[2].tensor, out
        out = te.compute((b, n, m, 1), lambda i, j, y, x: mm[i, j, y, x] + bias[j], name=f"{node.name}_bias")
    return _relayout(out, "NCHW", ol, node.type.shape, node.name)


def _dense_tile(m: int, n: int) -> tuple[int, int]:
    """(rows, vectors) of the register tile of a float dense/matmul: ``rows x vectors`` accumulators
    plus a weight vector per column and one broadcast fit the vector registers.  The vectors divide
    the output's vectors where they can: a column tile with a tail (96 outputs in tiles of 64) runs
    its guarded loop ~15x slower."""
    lanes = vector_lanes(None)
    vectors = largest_divisor(max(1, -(-n // lanes)), 4 if lanes >= 16 else 2)
    registers = topi.vector_registers(None)
    rows = max(1, min(m, (registers - vectors - 1) // vectors, 6))
    return rows, vectors


def default_dense_knobs(m: int, n: int) -> topi.DenseKnobs:
    """The graph's default packed-dense schedule for ``m`` rows (already padded to the tile) and ``n`` outputs."""
    rows, vectors = _dense_tile(m, n)
    return topi.DenseKnobs(n_vector=vector_lanes(None), n_vectors=vectors, m_block=largest_divisor(m, rows),
                           outer_order="n_m" if m > rows else "m_n")


def dense_packed(x: Tensor, weight: np.ndarray, kb: KernelBuilder, name: str) -> Tensor:
    """``x [M, K] @ weight[N, K].T`` in float32 through topi's ``dense_pack`` (weights packed at compile time).

    With more rows than one register tile, the rows are zero-padded to a multiple of the tile (a
    prime count such as ViT's 197 tokens would otherwise leave one-row tiles that stream the
    weights once per row) and the column panels become the outer loop.  The outputs are padded
    (zero weights) to a multiple of the column tile, so no tile has a guarded tail.
    """
    m, k = _shape(x)
    n = weight.shape[0]
    lanes = vector_lanes(None)
    rows, vectors = _dense_tile(m, n)
    np_ = -(-n // (lanes * vectors)) * lanes * vectors
    packed = np.zeros((np_, k), weight.dtype)
    packed[:n] = weight
    pw = kb.constant(np.ascontiguousarray(packed.reshape(np_ // lanes, lanes, -1).transpose(0, 2, 1)), f"{name}_w")
    mp = -(-m // rows) * rows
    xs = x
    if mp != m:
        xs = te.compute((mp, k), lambda i, j: tir.if_then_else(i < m, x[tir.min(i, m - 1), j], _c(0.0, x.dtype)),
                        name=f"{name}_rows")
        kb.scheduled(xs, lambda s: schedule_elementwise(s, xs, lanes, False), [x])
    mm = topi.dense_pack(xs, pw, np_, name=f"{name}_dense")
    knobs = dispatch.query("dense_pack", dense_workload(xs, pw, np_)) or default_dense_knobs(mp, np_)
    out = kb.scheduled(mm, lambda s: topi.schedule_dense(mm, knobs, s=s), [xs, pw])
    if (mp, np_) == (m, n):
        return out
    return te.compute((m, n), lambda i, j: out[i, j], name=f"{name}_crop")


@register_lowering("softmax", "llvm")
def _softmax(node: Node, xs: Sequence[Operand]) -> Tensor:
    x, kb = xs[0].tensor, xs[0].kernel
    shape = _shape(x)
    axis = node.attrs["axis"] % len(shape)
    if axis == len(shape) - 1 and len(shape) > 1 and x.dtype == "float32":
        out = topi.softmax(x, name=node.name)
        return kb.scheduled(out, lambda s: topi.schedule_softmax(out, s=s), [x])
    rows = shape[:axis] + shape[axis + 1:]
    k1, k2 = te.reduce_axis(shape[axis], "k1"), te.reduce_axis(shape[axis], "k2")

    def at(r: Sequence[PrimExpr], k: PrimExpr) -> tuple[PrimExpr, ...]:
        return tuple(r[:axis]) + (k,) + tuple(r[axis:])

    mx = te.compute(rows, lambda *r: te.max(x[at(r, k1)], axis=k1), name=f"{node.name}_max")
    ex = te.compute(shape, lambda *i: te.exp(x[i] - mx[i[:axis] + i[axis + 1:]]), name=f"{node.name}_exp")
    sm = te.compute(rows, lambda *r: te.sum(ex[at(r, k2)], axis=k2), name=f"{node.name}_sum")
    return te.compute(shape, lambda *i: ex[i] / sm[i[:axis] + i[axis + 1:]], name=node.name)


@register_lowering("layer_norm", "llvm")
def _layer_norm(node: Node, xs: Sequence[Operand]) -> Tensor:
    x, kb = xs[0].tensor, xs[0].kernel
    scale, bias = xs[1].tensor, (xs[2].tensor if len(xs) > 2 else None)
    shape = _shape(x)
    axis, eps = node.attrs["axis"] % len(shape), float(node.attrs["epsilon"])
    if axis == len(shape) - 1 and len(shape) > 1 and x.dtype == "float32":
        out = topi.layer_norm(x, scale, bias, eps, name=node.name)
        return kb.scheduled(out, lambda s: topi.schedule_layer_norm(out, s=s), [x, scale, bias] if bias else [x, scale])
    # Several normalized axes (or another float type): plain reductions in float64, the reference's order.
    axes = list(range(axis, len(shape)))
    count = _c(float(math.prod(shape[axis:])), "float64")
    rs1 = [te.reduce_axis(shape[a], f"m{a}") for a in axes]
    rs2 = [te.reduce_axis(shape[a], f"v{a}") for a in axes]
    stat = tuple(shape[:axis]) + (1,) * len(axes)
    f1, f2 = reduced_index(len(shape), axes, rs1, True), reduced_index(len(shape), axes, rs2, True)
    total = te.compute(stat, lambda *i: te.sum(x[f1(i)].astype("float64"), axis=rs1), name=f"{node.name}_sum")

    def dev(i: Sequence[PrimExpr]) -> PrimExpr:
        return x[i].astype("float64") - total[tuple(i[:axis]) + (0,) * len(axes)] / count

    sq = te.compute(stat, lambda *i: te.sum(dev(f2(i)) * dev(f2(i)), axis=rs2), name=f"{node.name}_sq")

    def norm(*i: PrimExpr) -> PrimExpr:
        v = sq[tuple(i[:axis]) + (0,) * len(axes)] / count + _c(eps, "float64")
        y = dev(i) / te.sqrt(v) * scale[i[axis:]].astype("float64")
        return (y + bias[i[axis:]].astype("float64") if bias is not None else y).astype(x.dtype)

    return te.compute(shape, norm, name=node.name)


# ---- pooling ----------------------------------------------------------------------------------------------
def _topi_pool_ok(node: Node, x: Tensor) -> bool:
    a = node.attrs
    pt, pl, pb, pr = a["padding"]
    return (_channel_block(a["layout"]) is not None and x.dtype == "float32" and (pt, pl) == (pb, pr)
            and not a["ceil_mode"] and tuple(a["dilation"]) == (1, 1))


def _pool(node: Node, xs: Sequence[Operand], kind: str) -> Tensor:
    x, kb, a = xs[0].tensor, xs[0].kernel, node.attrs
    if _topi_pool_ok(node, x):
        pt, pl, _, _ = a["padding"]
        layout = "NCHW" if parse_layout(a["layout"]).is_primal else "NCHWc"
        include_pad = bool(a.get("count_include_pad", False))
        out = topi.pool2d(x, tuple(a["pool_size"]), tuple(a["strides"]), (pt, pl), kind, layout,
                          count_include_pad=include_pad, name=node.name)
        knobs = dispatch.query("pool2d", pool_workload(x, tuple(a["pool_size"]), tuple(a["strides"]), (pt, pl),
                                                       kind, include_pad))
        return kb.scheduled(out, lambda s: topi.schedule_pool(out, knobs, s=s), [x])
    lay = parse_layout(a["layout"])
    ah, aw = lay.axes.index("H"), lay.axes.index("W")
    shape = _shape(x)
    h, w = shape[ah], shape[aw]
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    pt, pl, pb, pr = a["padding"]
    ry, rx = te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    dtype = x.dtype
    is_float = dtype.startswith("float")

    def window(i: Sequence[PrimExpr]) -> tuple[PrimExpr, PrimExpr, PrimExpr, tuple[PrimExpr, ...]]:
        iy, ix = i[ah] * sh + ry * dh - pt, i[aw] * sw + rx * dw - pl
        idx = list(i)
        idx[ah], idx[aw] = tir.min(tir.max(iy, 0), h - 1), tir.min(tir.max(ix, 0), w - 1)
        inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
        return iy, ix, inside, tuple(idx)

    if kind == "max":
        low = _c(float("-inf") if is_float else int(np.iinfo(dtype).min), dtype)

        def mx(*i: PrimExpr) -> PrimExpr:
            _, _, inside, idx = window(i)
            return te.max(tir.if_then_else(inside, x[idx], low), axis=[ry, rx])

        return te.compute(node.type.shape, mx, name=node.name)

    def total(*i: PrimExpr) -> PrimExpr:
        _, _, inside, idx = window(i)
        return te.sum(tir.if_then_else(inside, x[idx].astype("float64"), _c(0.0, "float64")), axis=[ry, rx])

    sums = te.compute(node.type.shape, total, name=f"{node.name}_sum")
    # The divisor counts window positions inside the input (or its explicit padding): a per-position constant.
    counts = _avg_counts(node, h, w)
    cnt = kb.constant(counts, f"{node.name}_count")
    return te.compute(node.type.shape, lambda *i: (sums[i] / cnt[i[ah], i[aw]]).astype(dtype), name=node.name)


def _avg_counts(node: Node, h: int, w: int) -> np.ndarray:
    a = node.attrs
    lay = parse_layout(a["layout"])
    oh, ow = node.type.shape[lay.axes.index("H")], node.type.shape[lay.axes.index("W")]
    (kh, kw), (sh, sw), (dh, dw) = a["pool_size"], a["strides"], a["dilation"]
    pt, pl, pb, pr = a["padding"]
    lo_y, hi_y, lo_x, hi_x = (-pt, h + pb, -pl, w + pr) if a["count_include_pad"] else (0, h, 0, w)
    ys = np.arange(oh)[:, None] * sh - pt + np.arange(kh)[None, :] * dh
    xs = np.arange(ow)[:, None] * sw - pl + np.arange(kw)[None, :] * dw
    cy = ((ys >= lo_y) & (ys < hi_y)).sum(1)
    cx = ((xs >= lo_x) & (xs < hi_x)).sum(1)
    return (cy[:, None] * cx[None, :]).astype(np.float64)


@register_lowering("max_pool2d", "llvm")
def _max_pool2d(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _pool(node, xs, "max")


@register_lowering("avg_pool2d", "llvm")
def _avg_pool2d(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _pool(node, xs, "avg")


def _mean(node: Node, x: Tensor, axes: Sequence[int], keepdims: bool) -> Tensor:
    shape = _shape(x)
    rs = [te.reduce_axis(shape[a], f"r{a}") for a in axes]
    count = float(np.prod([shape[a] for a in axes]))
    full = reduced_index(len(shape), axes, rs, keepdims)
    out_shape = node.type.shape
    sums = te.compute(out_shape, lambda *i: te.sum(x[full(i)].astype("float64"), axis=rs), name=f"{node.name}_sum")
    return te.compute(out_shape, lambda *i: (sums[i] / _c(count, "float64")).astype(x.dtype), name=node.name)


@register_lowering("global_avg_pool2d", "llvm")
def _global_avg_pool2d(node: Node, xs: Sequence[Operand]) -> Tensor:
    lay = parse_layout(node.attrs["layout"])
    return _mean(node, xs[0].tensor, [lay.axes.index("H"), lay.axes.index("W")], True)


@register_lowering("mean", "llvm")
def _mean_lowering(node: Node, xs: Sequence[Operand]) -> Tensor:
    return _mean(node, xs[0].tensor, sorted(node.attrs["axes"]), bool(node.attrs["keepdims"]))
