"""Integer analysis: canonical simplification, constant bounds and symbolic intervals."""
from .analyzer import Analyzer, Linear, simplify_expr
from .interval import Interval, eval_interval

__all__ = ["Analyzer", "Linear", "simplify_expr", "Interval", "eval_interval"]
