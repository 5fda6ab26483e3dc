"""Errors raised by schedule primitives; each names the cause and the way out."""

from vdla_hw.errors import UsageError


class ScheduleError(UsageError):
    """Base of all schedule errors."""


class LoopNotFoundError(ScheduleError):
    """The loop is not in the current program (replaced by split/fuse, or foreign)."""


class BlockNotFoundError(ScheduleError):
    """No block (stage) of that name or tensor exists."""


class AxisNotInStageError(ScheduleError):
    """The loop does not enclose the stage it was used with."""


class InvalidFactorError(ScheduleError):
    """A split factor / number of parts / tile size is not a positive integer."""


class LoopNestError(ScheduleError):
    """Loops given to fuse/reorder/tile are not a single perfectly nested chain."""


class ComputeAtError(ScheduleError):
    """compute_at/compute_root cannot place the producer where asked."""


class InlineError(ScheduleError):
    """compute_inline is not possible for this stage."""


class LoopKindError(ScheduleError):
    """vectorize/parallel/unroll/bind is not valid for this loop (e.g. a reduction)."""


class CacheError(ScheduleError):
    """cache_read/cache_write preconditions failed."""


class TensorizeError(ScheduleError):
    """The loop nest does not match the tensor intrinsic's description."""
