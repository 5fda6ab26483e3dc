"""VDLA operator schedules: packed int8 conv2d (+ bias, ReLU, requantize) and dense."""

from .conv2d import Conv2dTensors, conv2d_compute, conv2d_func, conv2d_schedule
from .ops import (RESNET18_C1, RESNET18_CONVS, CompiledConv, batch_matmul_workload, check_conv2d, compile_conv2d,
                  compile_default_conv,
                  dense_workload, random_conv_data,
                  resnet18_layer, tune_conv2d,
                  requant_shift)
from .epilogue import Requantize
from .fit import check_knobs, default_knobs, fits, footprint, knob_space, tiling_edges, uop_count
from .resident_fit import default_resident, estimate_resident_cycles, resident_error, resident_footprint, resident_space
from .resident import conv2d_resident, emit_two_phase
from .tiling import Conv2dKnobs, Conv2dWorkload, ResidentKnobs, estimate_cycles

__all__ = ["RESNET18_C1", "RESNET18_CONVS", "CompiledConv", "Conv2dKnobs", "Conv2dTensors", "conv2d_compute", "conv2d_func", "Conv2dWorkload", "Requantize", "batch_matmul_workload", "check_conv2d",
           "check_knobs", "compile_conv2d", "conv2d_schedule", "default_knobs", "dense_workload", "estimate_cycles",
           "fits", "footprint", "knob_space", "random_conv_data", "ResidentKnobs", "conv2d_resident", "emit_two_phase",
           "resident_error", "resident_footprint", "resident_space", "requant_shift", "resnet18_layer", "tune_conv2d", "uop_count",
           "default_resident", "estimate_resident_cycles", "tiling_edges", "compile_default_conv"]
