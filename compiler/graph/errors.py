"""Exceptions of the graph level; each names the cause and, where it can, the fix."""

from __future__ import annotations

from vdla_hw.errors import UnsupportedError


class GraphError(UnsupportedError):
    """A malformed graph: a dangling input, a duplicate name, a cycle, a bad output."""


class TypeInferenceError(GraphError):
    """An operator's inputs or attributes do not satisfy its type relation."""


class UnknownOperatorError(GraphError):
    """An operator name that the registry does not define."""


class NotLoweredError(NotImplementedError):
    """An operator has no lowering for the requested target yet.

    Raised instead of silently falling back, so a missing lowering is visible at compile time.
    """


class UnsupportedModelError(UnsupportedError):
    """A model uses an operator, attribute or data type the frontend does not accept."""
