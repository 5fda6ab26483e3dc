"""VDLA hardware: the single source of truth (config + ISA) and the RTL generated from it."""

from vdla_hw.config import CONFIG_DIR, ConfigError, HwConfig, TimingConfig, from_dict, load_config, preset_names
from vdla_hw.isa import (
    DEP_FLAG_NAMES,
    DEP_QUEUE_NAMES,
    FLAG_QUEUES,
    AluInsn,
    AluOp,
    DepFlags,
    FinishInsn,
    GemmInsn,
    Insn,
    Isa,
    IsaError,
    MemInsn,
    MemType,
    Module,
    Opcode,
    Uop,
    module_of,
    opcode_of,
)

__all__ = [
    "CONFIG_DIR", "ConfigError", "HwConfig", "TimingConfig", "from_dict", "load_config", "preset_names",
    "DEP_FLAG_NAMES", "DEP_QUEUE_NAMES", "FLAG_QUEUES", "AluInsn", "AluOp", "DepFlags", "FinishInsn", "GemmInsn", "Insn", "Isa", "IsaError", "MemInsn",
    "MemType", "Module", "Opcode", "Uop", "module_of", "opcode_of",
]
