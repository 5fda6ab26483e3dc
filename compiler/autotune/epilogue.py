"""The element-wise epilogue a model's node runs after its conv: what a tuning task times with the kernel.

A ``fused`` node of the CPU graph runs a conv followed by what the graph fused into it: the conv's bias,
a residual add (a second activation, written by another node), a ReLU or a clip (ReLU6).  The lowering
computes that chain tile by tile inside the conv's register tile (``schedule_conv2d_nchwc(...,
epilogue=stage)``), so the node's loop nest is not the bare kernel's.  A task records the chain's
operations, not their constants, as a ``+``-joined string (``bias+add+relu``; ``""`` the bare kernel), and
its template builds, checks and times the kernel with that epilogue (:func:`epilogue_stage`,
:func:`apply_epilogue`).

This module knows the vocabulary, reads a node's chain from its body graph (:func:`node_epilogue`), and
builds the chain as a tensor expression over a blocked (NCHWc) conv output and as a float64 NumPy
reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vdla_hw.errors import UsageError

#: The operations an epilogue may chain, in any order: the conv's per-channel bias, a residual add of a
#: same-shape activation, ReLU, and a clip (ReLU6: a min and a max, as costly whatever the bounds).
EPILOGUE_OPS = ("bias", "add", "relu", "clip")
#: The task kinds whose lowering fuses an epilogue into the kernel's register tile (``with_epilogue``):
#: other kinds run an epilogue as a separate pass, so their tasks time the bare kernel.
EPILOGUE_KINDS = ("conv2d_nchwc", "depthwise_conv2d_nchwc")
#: The bounds a ``clip`` is timed and checked with (MobileNetV2's ReLU6; the bounds do not change the cost).
CLIP_BOUNDS = (0.0, 6.0)


def parse_epilogue(epilogue: str, kind: str | None = None) -> tuple[str, ...]:
    """The operations of ``epilogue`` (``"bias+add+relu"`` -> ``("bias", "add", "relu")``; ``""`` -> ``()``).

    Raises :class:`UsageError` naming the bad operation, or the kind when ``kind`` takes no epilogue."""
    ops = tuple(op for op in epilogue.split("+") if op) if epilogue else ()
    bad = [op for op in ops if op not in EPILOGUE_OPS]
    if bad:
        raise UsageError(f"epilogue {epilogue!r}: unknown operation(s) {bad}; an epilogue chains {EPILOGUE_OPS} "
                         f"joined by '+' (e.g. 'bias+add+relu'), or is '' for the bare kernel")
    if ops.count("bias") > 1 or ops.count("add") > 1:
        raise UsageError(f"epilogue {epilogue!r}: at most one 'bias' and one 'add' (the node's one bias and one "
                         f"residual operand)")
    if ops and kind is not None and kind not in EPILOGUE_KINDS:
        raise UsageError(f"a {kind} task times the bare kernel (its lowering runs an epilogue as a separate pass); "
                         f"epilogue {epilogue!r} applies to {EPILOGUE_KINDS} only: pass ''")
    return ops


def node_epilogue(node: Any, fuses: bool) -> str:
    """The epilogue of a ``fused`` CPU node (a :class:`vdla.compiler.graph.ir.Node` with a ``body`` graph) whose
    first operator is a conv: ``""`` when the body is the conv alone, when the lowering does not fuse the chain
    into the conv's tile (``fuses`` False: e.g. an NCHW output, see ``KernelDraft.fuses_epilogue``), or when the
    chain holds an operation outside :data:`EPILOGUE_OPS` (then the task times the bare kernel)."""
    if not fuses:
        return ""
    body = node.attrs["body"]
    inner = [n for n in body.nodes if n.op not in ("input", "constant")]
    if not inner or inner[0].op != "conv2d":
        return ""
    ops = ["bias"] if len(inner[0].inputs) == 3 else []
    previous = inner[0]
    for n in inner[1:]:
        if previous.name not in n.inputs:
            return ""  # not a chain over the conv's result
        if n.op == "add" and len(n.inputs) == 2:
            other = body.node(n.inputs[1] if n.inputs[0] == previous.name else n.inputs[0])
            if other.op == "constant" or other.type.shape != n.type.shape or "add" in ops:
                return ""  # a broadcast constant or a second residual: not the vocabulary's add
            ops.append("add")
        elif n.op == "relu" and len(n.inputs) == 1:
            ops.append("relu")
        elif n.op == "clip" and len(n.inputs) == 1:
            ops.append("clip")
        else:
            return ""
        previous = n
    if body.outputs[0] != previous.name:
        return ""
    return "+".join(ops)


def epilogue_stage(conv: Any, ops: Sequence[str]) -> tuple[list[Any], list[Any], Any]:
    """``ops`` over a blocked conv output ``conv`` (``[N, C/b, H, W, b]``) as one element-wise stage, as the
    lowering's chain is after inlining: ``(activations, weights, stage)``, the new placeholders (the residual is
    an activation, the bias a weight) and the stage.  ``ops`` empty: no placeholders, the stage is ``conv``."""
    from vdla.compiler import te
    from vdla.compiler.tir import op as tir
    from vdla.compiler.tir.ir import const

    if not ops:
        return [], [], conv
    shape = tuple(int(s.value) for s in conv.shape)
    block = shape[4]
    bias = te.placeholder((shape[1] * block,), "float32", "bias") if "bias" in ops else None
    residual = te.placeholder(shape, "float32", "residual") if "add" in ops else None
    lo, hi = CLIP_BOUNDS

    def fn(b: Any, k: Any, y: Any, x: Any, i: Any) -> Any:
        v = conv[b, k, y, x, i]
        for op in ops:
            if op == "bias":
                v = v + bias[k * block + i]
            elif op == "add":
                v = v + residual[b, k, y, x, i]
            elif op == "relu":
                v = tir.max(v, const(0.0, "float32"))
            else:
                v = tir.min(tir.max(v, const(lo, "float32")), const(hi, "float32"))
        return v

    stage = te.compute(shape, fn, name="epilogue")
    return [residual] if residual is not None else [], [bias] if bias is not None else [], stage


def apply_epilogue(y: np.ndarray, ops: Sequence[str], residual: np.ndarray | None,
                   bias: np.ndarray | None) -> np.ndarray:
    """The float64 reference of :func:`epilogue_stage`: ``ops`` applied in order to the blocked conv output ``y``."""
    v = y.astype(np.float64)
    block = v.shape[4]
    for op in ops:
        if op == "bias":
            assert bias is not None
            v = v + bias.astype(np.float64).reshape(v.shape[1], block)[None, :, None, None, :]
        elif op == "add":
            assert residual is not None
            v = v + residual.astype(np.float64)
        elif op == "relu":
            v = np.maximum(v, 0.0)
        else:
            v = np.clip(v, *CLIP_BOUNDS)
    return v
