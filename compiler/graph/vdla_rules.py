"""Which graph operators the VDLA can run, for a hardware config (used by alter_layout and partition).

The VDLA runs int8 x int8 -> int32 conv2d and dense on its GEMM core, with channel counts
that tile into BLOCK_IN x BLOCK_OUT weight blocks and a batch that tiles into BATCH rows,
followed by the ALU ops (relu/max/min, add of a constant, shift, clip) and the STORE
narrowing to int8.
"""

from __future__ import annotations

from collections.abc import Sequence

from vdla_hw.config import HwConfig

from compiler.graph.ir import Node, TensorType
from compiler.graph.layout import parse_layout

#: Ops that run on the VDLA ALU after a GEMM (on int32 accumulators), or as the STORE narrowing.
ALU_OPS = frozenset({"relu", "right_shift", "clip", "maximum", "minimum", "add", "multiply", "cast"})


def gemm_unsupported_reason(node: Node, input_types: Sequence[TensorType], cfg: HwConfig) -> str | None:
    """None when ``node`` (conv2d or dense) can run on the VDLA GEMM core, else why not."""
    if node.op not in ("conv2d", "dense"):
        return f"{node.op} is not a conv2d or dense"
    data, weight = input_types[0], input_types[1]
    if (data.dtype, weight.dtype, node.type.dtype) != ("int8", "int8", "int32"):
        return f"operands {data.dtype} x {weight.dtype} -> {node.type.dtype} are not int8 x int8 -> int32 (quantize first)"
    if len(input_types) == 3 and input_types[2].dtype != "int32":
        return "the bias is not int32"
    if node.op == "conv2d":
        if node.attrs["groups"] != 1 or tuple(node.attrs["dilation"]) != (1, 1):
            return "grouped or dilated convolutions are not supported"
        n, c, _, _ = parse_layout(node.attrs["data_layout"]).primal_shape(data.shape)
        o = parse_layout(node.attrs["kernel_layout"]).primal_shape(weight.shape)[0]
    else:
        n, c = parse_layout(node.attrs["data_layout"]).primal_shape(data.shape)
        o = parse_layout(node.attrs["kernel_layout"]).primal_shape(weight.shape)[0]
    if n % cfg.batch or c % cfg.block_in or o % cfg.block_out:
        return (f"batch {n}, {c} input and {o} output channels do not tile into BATCH={cfg.batch}, "
                f"BLOCK_IN={cfg.block_in}, BLOCK_OUT={cfg.block_out}")
    return None


def packed_layouts(op: str, cfg: HwConfig) -> dict[str, str]:
    """The VDLA data/kernel/output layouts of a conv2d or dense."""
    if op == "conv2d":
        return {"data_layout": f"NCHW{cfg.batch}n{cfg.block_in}c",
                "kernel_layout": f"OIHW{cfg.block_out}o{cfg.block_in}i",
                "out_layout": f"NCHW{cfg.batch}n{cfg.block_out}c"}
    return {"data_layout": f"NC{cfg.batch}n{cfg.block_in}c", "kernel_layout": f"OI{cfg.block_out}o{cfg.block_in}i",
            "out_layout": f"NC{cfg.batch}n{cfg.block_out}c"}


def is_packed_for(node: Node, cfg: HwConfig) -> bool:
    """True when a conv2d/dense already uses the VDLA layouts of ``cfg``."""
    want = packed_layouts(node.op, cfg)
    return all((node.attrs.get(k) or node.attrs["data_layout"]) == v for k, v in want.items())
