"""The loop IR (``ir``), its printer, reference interpreter, analyses and passes."""
from . import dtype
from .functor import Mutator, collect, post_order_map, substitute, walk
from .interpreter import InterpreterError, run
from .ir import *  # noqa: F401,F403 - the IR node classes are this package's vocabulary
from .op import (abs, call_packed, cast, ceil, erf, exp, fabs, floor, if_then_else, log,
                 max, max_value, min, min_value, power, round, rsqrt, sigmoid, sqrt, tanh)
from .packed import get_packed, register_packed
from .pipeline import PIPELINES, lower
