"""Layout transformation for the CPU: keep float activations channel-blocked (``NCHW16c``) between convs.

The LLVM conv2d micro-kernel (``vdla.compiler.topi.conv2d_nchwc``) reads ``[N, C/16, H, W, 16]`` and
writes ``[N, O/16, H', W', 16]``, one output position's 16 channels being one vector register.
Re-blocking the input and un-blocking the output inside every conv costs per-lane gathers on
every layer; this pass instead gives each eligible conv2d the blocked data and output layouts,
so the blocked values flow through bias adds, ReLUs, residual adds and pooling
(:class:`~vdla.compiler.graph.passes.alter_layout.LayoutRewriter`), and a ``layout_transform`` is
left only where a consumer needs the plain layout (e.g. a flatten before the classifier).

A conv2d is eligible when it is float32 with constant weights, no dilation, its output channels
are a multiple of the block (or of half of it, at least 8: :func:`channel_block`; else see below) and, if grouped,
so are its input and output channels per group (a block never straddles two groups) or it is
depthwise (a block of independent channels is one vector of ``vdla.compiler.topi.depthwise_conv2d_nchwc``,
so the 1x1 convs around it stay blocked too).  Its data stays ``NCHW`` when the input channels are
few (the 3-channel first conv reads the image as is); weights stay ``OIHW`` in the graph, since
the lowering re-blocks constants at compile time anyway.

An ungrouped or depthwise conv whose channels fill no block (ShuffleNet's 58 and 116) runs with them
zero-padded to whole blocks, through the channel padding of
:meth:`~vdla.compiler.graph.passes.alter_layout.LayoutRewriter.padded_gemm` (the VDLA's): zero weights and
bias keep the extra output channels zero, so the next padded conv reads them as they are, and the
padding is sliced away where a consumer needs the real channels (a channel shuffle, the output).
"""

from __future__ import annotations

from collections.abc import Sequence

from vdla.compiler.graph.errors import GraphError
from vdla.compiler.graph.ir import Graph, Node, TensorType
from vdla.compiler.graph.passes.alter_layout import LayoutRewriter

#: Input channels from which a conv whose input fills no block reads it zero-padded to whole blocks;
#: below it (the image's 3 channels) it reads the plain NCHW input.
MIN_PADDED_CHANNELS = 8


def blocked_layout(block: int) -> str:
    """The channel-blocked activation layout ``NCHW{block}c``."""
    return f"NCHW{block}c"


def is_depthwise(channels: int, out_channels: int, groups: int) -> bool:
    """Whether a conv with these channel counts and groups is depthwise (one in and one out channel per group)."""
    return groups > 1 and channels == groups == out_channels


def cpu_conv_layouts(node: Node, types: Sequence[TensorType], graph: Graph, block: int) -> dict[str, str] | None:
    """The layouts the CPU runs ``node`` in, or None to leave it as it is (see the module doc)."""
    if node.op != "conv2d" or node.attrs["data_layout"] != "NCHW" or node.attrs["kernel_layout"] != "OIHW":
        return None
    if (node.attrs.get("out_layout") or "NCHW") != "NCHW":
        return None
    data, weight = types[0], types[1]
    if (data.dtype, weight.dtype, node.type.dtype) != ("float32",) * 3 or graph.node(node.inputs[1]).op != "constant":
        return None
    if tuple(node.attrs["dilation"]) != (1, 1):
        return None
    groups = node.attrs["groups"]
    channels, out_channels = data.shape[1], weight.shape[0]
    pads = channel_block(block, block) is not None  # a block too small to vectorize pads nothing
    if pads and is_depthwise(channels, out_channels, groups) and channel_block(channels, block) is None:
        padded = padded_channels(channels, block)  # in and out channels alike: one zero filter per extra channel
        return {"data_layout": blocked_layout(block), "kernel_layout": "OIHW", "out_layout": blocked_layout(block),
                "pad_channels": f"{padded},{padded}"}
    in_block, out_block = channel_block(channels, block), channel_block(out_channels, block)
    if pads and groups == 1 and (out_block is None or (in_block is None and channels >= MIN_PADDED_CHANNELS)):
        # ShuffleNet's 58 and 116 channels: zero-padded to whole blocks beat the plain NCHW conv.
        ic = channels if in_block is not None or channels < MIN_PADDED_CHANNELS else padded_channels(channels, block)
        oc = out_channels if out_block is not None else padded_channels(out_channels, block)
        in_block, out_block = channel_block(ic, block), channel_block(oc, block)
        return {"data_layout": blocked_layout(in_block) if in_block else "NCHW", "kernel_layout": "OIHW",
                "out_layout": blocked_layout(out_block), "pad_channels": f"{ic},{oc}"}
    if out_block is None:
        return None
    # A block must not straddle two groups, except in a depthwise conv, whose channels are independent
    # (a block of them is one vector of topi's blocked depthwise kernel).
    if (groups > 1 and not is_depthwise(channels, out_channels, groups)
            and (in_block is None or (channels // groups) % in_block or (out_channels // groups) % out_block)):
        return None
    return {"data_layout": blocked_layout(in_block) if in_block else "NCHW", "kernel_layout": "OIHW",
            "out_layout": blocked_layout(out_block)}


def padded_channels(channels: int, block: int) -> int:
    """``channels`` rounded up to a whole number of ``block``-channel blocks."""
    return -(-channels // block) * block


def channel_block(channels: int, block: int) -> int | None:
    """The channel block of a value with ``channels`` channels: ``block``, else half of it (the
    MobileNets' 24, 40, 72, 120, 184 channels on AVX-512: half-width vectors beat a trip through
    NCHW), else None (plain NCHW).  Every conv applies the same rule to the same count, so a value's
    producer and consumers agree on its layout."""
    for b in (block, block // 2):
        if b >= 8 and channels % b == 0:
            return b
    return None


def cpu_layout(graph: Graph, block: int = 16) -> Graph:
    """Keep the activations between eligible float conv2d's in ``NCHW{block}c`` (see the module doc)."""
    if block < 1:
        raise GraphError(f"cpu_layout: the channel block must be positive, got {block}")
    return LayoutRewriter(graph, lambda n, types, g: cpu_conv_layouts(n, types, g, block)).run()
