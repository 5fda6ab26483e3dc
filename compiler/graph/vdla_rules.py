"""Which graph operators the VDLA can run, for a hardware config (used by alter_layout and partition).

The VDLA runs int8 x int8 -> int32 conv2d and dense on its GEMM core, with channel counts
that tile into BLOCK_IN x BLOCK_OUT weight blocks and a batch that tiles into BATCH rows (depthwise
convs as a block-diagonal GEMM, :func:`depthwise_unsupported_reason`),
followed by the ALU ops (relu/max/min, add of a constant, shift, clip) and the STORE
narrowing to int8.
"""

from __future__ import annotations

from collections.abc import Sequence

from vdla_hw.config import HwConfig

from vdla.compiler.graph.ir import Node, TensorType
from vdla.compiler.graph.layout import parse_layout

#: Ops that run on the VDLA ALU after a GEMM (on int32 accumulators), or as the STORE narrowing.
ALU_OPS = frozenset({"relu", "right_shift", "clip", "maximum", "minimum", "add", "multiply", "cast"})


def gemm_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig,
                            pad_channels: bool = False) -> str | None:
    """None when ``node`` (conv2d or dense) can run on the VDLA GEMM core, else why not.  With
    ``pad_channels``, channel counts that are not a multiple of the GEMM block are allowed (alter_layout
    zero-pads them, see :func:`channel_padding`)."""
    if node.op == "batch_matmul":
        return batch_matmul_unsupported_reason(node, input_types, cfg, pad_channels)
    if node.op not in ("conv2d", "dense"):
        return f"{node.op} is not a conv2d, dense or batch_matmul"
    data, weight = input_types[0], input_types[1]
    if node.op == "conv2d":
        n, c, _, _ = parse_layout(node.attrs["data_layout"]).primal_shape(data.shape)
        o = parse_layout(node.attrs["kernel_layout"]).primal_shape(weight.shape)[0]
        groups = node.attrs["groups"]
        if groups != 1:
            reason = depthwise_unsupported_reason(node, c, o, cfg)
            if reason is not None:
                return reason
        if tuple(node.attrs["dilation"]) != (1, 1):
            return f"dilation {tuple(node.attrs['dilation'])}: the VDLA conv schedule reads dense windows only"
    else:
        n, c = parse_layout(node.attrs["data_layout"]).primal_shape(data.shape)
        o = parse_layout(node.attrs["kernel_layout"]).primal_shape(weight.shape)[0]
    if (data.dtype, weight.dtype, node.type.dtype) != ("int8", "int8", "int32"):
        return f"operands {data.dtype} x {weight.dtype} -> {node.type.dtype} are not int8 x int8 -> int32 (quantize first)"
    if len(input_types) == 3 and input_types[2].dtype != "int32":
        return "the bias is not int32"
    if n % cfg.batch or (not pad_channels and (c % cfg.block_in or o % cfg.block_out)):
        return (f"batch {n}, {c} input and {o} output channels do not tile into BATCH={cfg.batch}, "
                f"BLOCK_IN={cfg.block_in}, BLOCK_OUT={cfg.block_out}")
    return None


def batch_matmul_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig,
                                    pad_channels: bool = False) -> str | None:
    """None when a ``batch_matmul`` (a product of two activations per head: attention's Q.K^T or A.V) runs on
    the GEMM core as the batched conv schedule with per-image weights (the second activation loaded as the
    weight operand on every call), else why not.  With ``pad_channels`` an inner or column count that is not a
    multiple of the block (the token count, e.g. 197) is allowed: alter_layout zero-pads it."""
    data, weight = input_types[0], input_types[1]
    if (data.dtype, weight.dtype, node.type.dtype) != ("int8", "int8", "int32"):
        return f"operands {data.dtype} x {weight.dtype} -> {node.type.dtype} are not int8 x int8 -> int32 (quantize first)"
    if cfg.batch != 1:
        return (f"config {cfg.name!r} has BATCH={cfg.batch}: a batched matmul gives every image (head) its own "
                f"weights, which the GEMM core takes only with BATCH == 1")
    _, k, _, _ = parse_layout(node.attrs["data_layout"]).primal_shape(data.shape)
    _, n, _ = parse_layout(node.attrs["kernel_layout"]).primal_shape(weight.shape)
    if not pad_channels and (k % cfg.block_in or n % cfg.block_out):
        return (f"inner size {k} and {n} columns do not tile into BLOCK_IN={cfg.block_in}, "
                f"BLOCK_OUT={cfg.block_out}")
    return None


def batch_matmul_layouts(cfg: HwConfig) -> dict[str, str]:
    """The VDLA layouts of a ``batch_matmul``: the conv data / output layouts, weights one tile innermost."""
    return {"data_layout": f"NCHW{cfg.batch}n{cfg.block_in}c", "kernel_layout": f"NOI{cfg.block_out}o{cfg.block_in}i",
            "out_layout": f"NCHW{cfg.batch}n{cfg.block_out}c"}


def depthwise_unsupported_reason(node: Node, channels: int, out_channels: int, cfg: HwConfig) -> str | None:
    """None when a grouped conv2d is depthwise and runs as the block-diagonal GEMM (output block ``o``
    contracts only input block ``o`` through a diagonal BLOCK_OUT x BLOCK_IN weight tile: BLOCK_IN x the
    useful MACs), else why not."""
    groups = node.attrs["groups"]
    if groups != channels or out_channels != channels:
        return (f"grouped conv ({groups} groups of {channels // groups} input channels, {out_channels} outputs): "
                f"the VDLA runs depthwise convs (one input and one output channel per group) as a block-diagonal "
                f"GEMM, other groupings have no VDLA schedule")
    if cfg.block_in != cfg.block_out:
        return (f"depthwise conv on config {cfg.name!r}: the block-diagonal GEMM needs BLOCK_IN == BLOCK_OUT "
                f"({cfg.block_in} != {cfg.block_out})")
    return None


#: Operators a transformer keeps on the host, and why (the partition report's reason for their kernels).
HOST_ONLY = {
    "layer_norm": "layer_norm needs a mean, a variance, a division and a square root over the features: the VDLA ALU "
                  "has only MIN, MAX, ADD, SHR, MUL and MOV on int32, so it runs in float on the CPU",
    "softmax": "softmax needs exp and a division per row: no VDLA ALU form, so it runs in float on the CPU",
    "erf": "GELU's erf is a transcendental function: no VDLA ALU form, so it runs in float on the CPU",
    "matmul": "a matmul the quantizer left in float (broadcast leading axes, or an operand that is not an "
              "activation of rank >= 3): it runs on the CPU",
}


def host_only_reason(ops: Sequence[str]) -> str | None:
    """Why a kernel made of ``ops`` (without a conv2d/dense) stays on the CPU, when one of its operators is
    one the VDLA has no form for (:data:`HOST_ONLY`); None otherwise."""
    reasons = [f"{op}: {HOST_ONLY[op]}" if not HOST_ONLY[op].startswith(op) else HOST_ONLY[op]
               for op in dict.fromkeys(ops) if op in HOST_ONLY]
    return "; ".join(reasons) or None


def channel_padding(node: Node, input_types: Sequence[TensorType], cfg: HwConfig) -> tuple[int, int] | None:
    """The input and output channel counts, rounded up to BLOCK_IN / BLOCK_OUT, to which ``node``'s
    channels are zero-padded so it runs on the VDLA; None when it runs unpadded or not at all."""
    if gemm_unsupported_reason(node, input_types, cfg) is None:
        return None
    if gemm_unsupported_reason(node, input_types, cfg, pad_channels=True) is not None:
        return None
    if not all(parse_layout(node.attrs[k]).is_primal for k in ("data_layout", "kernel_layout")):
        return None
    c, o = input_types[0].shape[1], input_types[1].shape[0]  # primal layouts: the ones alter_layout sees
    return -(-c // cfg.block_in) * cfg.block_in, -(-o // cfg.block_out) * cfg.block_out


def packed_layouts(op: str, cfg: HwConfig, depthwise: bool = False) -> dict[str, str]:
    """The VDLA data/kernel/output layouts of a conv2d or dense.  A depthwise conv keeps its ``(C, 1, KH, KW)``
    weights in OIHW: its lowering builds the block-diagonal tiles from them."""
    if op == "conv2d":
        return {"data_layout": f"NCHW{cfg.batch}n{cfg.block_in}c",
                "kernel_layout": "OIHW" if depthwise else f"OIHW{cfg.block_out}o{cfg.block_in}i",
                "out_layout": f"NCHW{cfg.batch}n{cfg.block_out}c"}
    return {"data_layout": f"NC{cfg.batch}n{cfg.block_in}c", "kernel_layout": f"OI{cfg.block_out}o{cfg.block_in}i",
            "out_layout": f"NC{cfg.batch}n{cfg.block_out}c"}


def is_packed_for(node: Node, cfg: HwConfig) -> bool:
    """True when a conv2d/dense already uses the VDLA layouts of ``cfg``."""
    want = (batch_matmul_layouts(cfg) if node.op == "batch_matmul"
            else packed_layouts(node.op, cfg, node.attrs.get("groups", 1) > 1))
    return all((node.attrs.get(k) or node.attrs["data_layout"]) == v for k, v in want.items())


def _packed_blocks(t: TensorType, cfg: HwConfig, what: str) -> str | None:
    """None when ``t`` is an int8 tensor in the packed activation layout of ``cfg``, else why not."""
    if t.dtype != "int8":
        return f"{what} is {t.dtype}, not int8 (it is not quantized)"
    if len(t.shape) != 6 or t.shape[4] != cfg.batch or t.shape[5] != cfg.block_in:
        return (f"{what} {list(t.shape)} is not in the packed layout NCHW{cfg.batch}n{cfg.block_in}c (its channels "
                f"do not tile into BLOCK_IN={cfg.block_in}, or no VDLA conv produces it)")
    if cfg.block_in != cfg.block_out:
        return (f"config {cfg.name!r} has BLOCK_IN={cfg.block_in} != BLOCK_OUT={cfg.block_out}: the identity GEMM that "
                f"moves int8 tiles into the accumulators needs them equal")
    return None


def qadd_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig) -> str | None:
    """None when a ``qadd`` runs on the VDLA (identity GEMM into the accumulators + ALU), else why not."""
    for k, t in enumerate(input_types):
        reason = _packed_blocks(t, cfg, f"operand {k}")
        if reason is not None:
            return reason
    mult, align = node.attrs.get("mult"), node.attrs["align"]
    if mult is None and any(a < -14 for a in align):
        return f"an alignment shift of {min(align)} does not fit the ALU's immediate multiplier"
    return None


def qpool_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig) -> str | None:
    """None when a ``qavg_pool2d`` runs on the VDLA (a conv with identity weight tiles per tap, then the
    fixed-point divide on the ALU / STORE), else why not."""
    reason = _packed_blocks(input_types[0], cfg, "the input")
    if reason is not None:
        return reason
    a = node.attrs
    pads = tuple(a["padding"])
    if a["strides"][0] != a["strides"][1] or len(set(pads)) != 1:
        return f"strides {tuple(a['strides'])} / padding {pads} differ per axis; the VDLA conv schedule takes one of each"
    if pads[0] >= min(a["pool_size"]) and pads[0]:
        return f"padding {pads[0]} is not smaller than the window {tuple(a['pool_size'])}"
    return None



def max_pool_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig) -> str | None:
    """None when an int8 ``max_pool2d`` runs on the VDLA (an identity GEMM per window tap, an ALU MAX chain;
    padding made exact by an indicator offset, see :mod:`vdla.compiler.vdla.topi.maxpool`), else why not."""
    reason = _packed_blocks(input_types[0], cfg, "the input")
    if reason is not None:
        return reason
    a = node.attrs
    pads, (kh, kw), (sh, sw) = tuple(a["padding"]), tuple(a["pool_size"]), tuple(a["strides"])
    if tuple(a["dilation"]) != (1, 1):
        return f"dilation {tuple(a['dilation'])}: the VDLA max pool reads dense windows only"
    if sh != sw or len(set(pads)) != 1:
        return f"strides {(sh, sw)} / padding {pads} differ per axis; the VDLA max pool takes one of each"
    h, w = input_types[0].shape[2:4]
    if a["ceil_mode"] and ((h + 2 * pads[0] - kh) % sh or (w + 2 * pads[0] - kw) % sh):
        return "ceil_mode adds a partial window past the padding; the VDLA max pool takes floor windows only"
    if pads[0] > 15:
        return f"padding {pads[0]} exceeds the LOAD's 4-bit padding fields"
    return None


def clamp_bounds(node: Node) -> tuple[int, int] | None:
    """The int8 interval ``[lo, hi]`` a ``relu`` / ``clip`` clamps to, or None when a bound is not an integer
    inside the int8 range."""
    if node.op == "relu":
        return 0, 127
    lo, hi = node.attrs.get("a_min"), node.attrs.get("a_max")
    lo, hi = -128 if lo is None else lo, 127 if hi is None else hi
    if lo != int(lo) or hi != int(hi) or not -128 <= lo <= hi <= 127:
        return None
    return int(lo), int(hi)


def clamp_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig) -> str | None:
    """None when a standalone int8 ``relu`` / ``clip`` (no conv or add before it to absorb it) runs on the
    VDLA (an identity GEMM, ALU MAX/MIN immediates or the STORE's ReLU), else why not."""
    reason = _packed_blocks(input_types[0], cfg, "the input")
    if reason is not None:
        return reason
    if clamp_bounds(node) is None:
        return (f"clip bounds [{node.attrs.get('a_min')}, {node.attrs.get('a_max')}] are not integers inside the "
                f"int8 range (the ALU clamps with integer immediates)")
    return None

#: Per op kind of a kernel that is not a GEMM: why the VDLA leaves it to the host when no rule places it.
HOST_REASONS = {
    "layout_transform": "a layout change (data movement between the host's and the VDLA's layouts)",
    "quantize_linear": "the float -> int8 border (the VDLA computes on int8 only)",
    "dequantize_linear": "the int8 -> float border (the VDLA computes on int8 only)",
    "strided_slice": "slicing away channel padding (data movement)",
    "pad": "zero-padding channels to the GEMM block (data movement)",
    "reshape": "a reshape (data movement)",
    "transpose": "a transpose (data movement)",
    "take": "a gather of slices (data movement: attention's split of Q, K and V)",
    # softmax, layer_norm, erf, matmul: HOST_ONLY (named first, whatever else the kernel holds)
}


#: Why an int8 op of these kinds stays on the host.
HOST_REASONS_INT8: dict[str, str] = {}


def host_reason(ops: Sequence[Node]) -> str:
    """Why a kernel made of ``ops`` runs on the host (for the partition report)."""
    named = host_only_reason([n.op for n in ops])
    if named is not None:  # an op the VDLA has no form for: the reason, whatever borders the kernel holds
        return named
    compute = [n for n in ops if n.op not in HOST_REASONS]
    if not compute:  # only borders and data movement
        return f"{ops[0].op}: {HOST_REASONS[ops[0].op]}"
    first = compute[0]
    if any(n.type.dtype.startswith("float") for n in compute):
        first = next(n for n in compute if n.type.dtype.startswith("float"))
        return (f"{first.op} runs in float: the quantizer left it in float (it quantizes conv2d, dense, residual "
                f"adds, relu/clip and average pools whose inputs are int8; the first conv stays float with "
                f"skip_first_conv)")
    if first.op in HOST_REASONS_INT8:
        return f"{first.op}: {HOST_REASONS_INT8[first.op]}"
    return f"{', '.join(sorted({n.op for n in compute}))}: no VDLA rule for this op"
