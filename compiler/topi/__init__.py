"""The CPU operator library: tensor-expression computes with x86 schedules.

Every operator family is one module with a compute (``conv2d_nchwc``) and a schedule
(``schedule_conv2d_nchwc``) whose tunable choices are a small frozen dataclass of knobs
with good defaults (``default_conv2d_nchwc_knobs``), for the auto-tuner to search.
"""
from .batch_matmul import (BatchMatmulKnobs, batch_matmul, default_batch_matmul_knobs,
                           schedule_batch_matmul)
from .batch_norm import batch_norm_inference, schedule_batch_norm
from .conv2d import (Conv2dNCHWKnobs, conv2d_nchw, default_conv2d_nchw_knobs, pad_nchw,
                     schedule_conv2d_nchw)
from .conv2d_nchwc import (Conv2dNCHWcKnobs, conv2d_nchwc, default_conv2d_nchwc_knobs, max_accumulators,
                           default_conv2d_nchwc_tile, default_tile_rows, widen_tile, balance_columns,
                           default_nchwc_blocks, schedule_conv2d_nchwc, spare_registers, stem_taps_unrolled,
                           tile_registers)
from .conv2d_winograd import (TUNED_TILES, WINOGRAD_TILES, WinogradKnobs, conv2d_winograd_nchwc, default_winograd_knobs,
                              default_winograd_tile, schedule_conv2d_winograd_nchwc, transform_points, transform_weights,
                              winograd_eligible, winograd_matrices, winograd_tolerance)
from .dense import DenseKnobs, default_dense_knobs, dense, dense_pack, schedule_dense
from .depthwise import (DepthwiseKnobs, DepthwiseNCHWcKnobs, default_depthwise_knobs,
                        default_depthwise_nchwc_knobs, depthwise_conv2d_nchw, depthwise_conv2d_nchwc,
                        schedule_depthwise_conv2d_nchw, schedule_depthwise_conv2d_nchwc)
from .elementwise import (abs, add, bias_add, broadcast_shape, clip, divide, erf, exp,
                          leaky_relu, log, maximum, minimum, multiply, negative, power, relu,
                          schedule_injective, sigmoid, sqrt, subtract, tanh)
from .layer_norm import LayerNormKnobs, layer_norm, schedule_layer_norm
from .layout import (nchw_to_nchwc, nchwc_to_nchw, oihw_to_blocked, pack_dense_weight,
                     schedule_layout, transpose)
from .pooling import PoolKnobs, global_pool, pool2d, schedule_pool
from .softmax import SoftmaxKnobs, schedule_softmax, softmax
from .utils import TopiError, vector_registers

__all__ = [
    "BatchMatmulKnobs", "Conv2dNCHWKnobs", "Conv2dNCHWcKnobs", "DenseKnobs", "DepthwiseKnobs", "DepthwiseNCHWcKnobs",
    "LayerNormKnobs", "PoolKnobs", "SoftmaxKnobs", "TopiError", "abs", "add", "batch_matmul",
    "batch_norm_inference", "bias_add", "broadcast_shape", "clip", "conv2d_nchw",
    "conv2d_nchwc", "default_conv2d_nchwc_tile", "default_batch_matmul_knobs", "default_conv2d_nchw_knobs",
    "default_conv2d_nchwc_knobs", "default_tile_rows", "widen_tile", "balance_columns", "default_dense_knobs", "default_depthwise_knobs", "default_depthwise_nchwc_knobs",
    "default_nchwc_blocks", "dense", "max_accumulators", "spare_registers", "stem_taps_unrolled", "tile_registers", "dense_pack",
    "depthwise_conv2d_nchw",
    "depthwise_conv2d_nchwc", "divide", "erf",
    "exp", "global_pool", "layer_norm", "leaky_relu", "log", "maximum", "minimum", "multiply",
    "nchw_to_nchwc", "nchwc_to_nchw", "negative", "oihw_to_blocked", "pack_dense_weight",
    "pad_nchw", "pool2d", "power", "relu", "schedule_batch_matmul", "schedule_batch_norm",
    "schedule_conv2d_nchw", "schedule_conv2d_nchwc", "schedule_dense", "schedule_layer_norm",
    "schedule_depthwise_conv2d_nchw", "schedule_depthwise_conv2d_nchwc", "schedule_injective", "schedule_layout",
    "schedule_pool", "schedule_softmax", "sigmoid", "softmax", "sqrt", "subtract", "tanh",
    "transpose", "vector_registers",
    "TUNED_TILES", "WINOGRAD_TILES", "WinogradKnobs", "conv2d_winograd_nchwc", "default_winograd_knobs", "default_winograd_tile",
    "schedule_conv2d_winograd_nchwc", "transform_points", "transform_weights", "winograd_eligible", "winograd_matrices",
    "winograd_tolerance",
]
