"""Schedule primitives on an explicit loop program (TensorIR style)."""
from .errors import (AxisNotInStageError, BlockNotFoundError, CacheError, ComputeAtError,
                     InlineError, InvalidFactorError, LoopKindError, LoopNestError,
                     LoopNotFoundError, ScheduleError, TensorizeError)
from .annotate import StorageError
from .schedule import Schedule, Stage, create_schedule
from .tensorize import TensorIntrin

__all__ = [
    "AxisNotInStageError", "BlockNotFoundError", "CacheError", "ComputeAtError", "InlineError",
    "InvalidFactorError", "LoopKindError", "LoopNestError", "LoopNotFoundError",
    "ScheduleError", "StorageError", "TensorizeError", "Schedule", "Stage", "create_schedule",
    "TensorIntrin",
]
