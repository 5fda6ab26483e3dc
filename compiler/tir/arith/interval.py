"""Symbolic integer interval sets, used for bound inference (which region of a buffer a
loop nest touches, as a function of the loops outside it)."""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtype as dt
from ..functor import uses_var
from ..ir import Call, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Select, Var
from .analyzer import Analyzer


@dataclass(frozen=True)
class Interval:
    """The integers ``[min, max]`` (inclusive); a None bound is unknown."""

    min: PrimExpr | None
    max: PrimExpr | None

    @staticmethod
    def point(e: PrimExpr) -> Interval:
        return Interval(e, e)

    @staticmethod
    def from_range(lo: PrimExpr, extent: PrimExpr) -> Interval:
        """``[lo, lo + extent - 1]``."""
        return Interval(lo, Analyzer().simplify(lo + extent - 1))

    def is_bounded(self) -> bool:
        return self.min is not None and self.max is not None

    def extent(self, an: Analyzer) -> PrimExpr | None:
        """``max - min + 1`` simplified, or None when unbounded."""
        if self.min is None or self.max is None:
            return None
        return an.simplify(self.max - self.min + 1)


def _add(a: PrimExpr | None, b: PrimExpr | None) -> PrimExpr | None:
    return None if a is None or b is None else a + b


def _scale(iv: Interval, k: int) -> Interval:
    lo = None if iv.min is None else iv.min * k
    hi = None if iv.max is None else iv.max * k
    return Interval(lo, hi) if k >= 0 else Interval(hi, lo)


def _opt(fn: type, a: PrimExpr | None, b: PrimExpr | None) -> PrimExpr | None:
    return None if a is None or b is None else fn(a, b)


def _either(fn: type, a: PrimExpr | None, b: PrimExpr | None) -> PrimExpr | None:
    # A bound known on one side only still bounds a min's max (or a max's min).
    return a if b is None else b if a is None else fn(a, b)


def _const(e: PrimExpr | None) -> int | None:
    return e.value if isinstance(e, IntImm) else None


def eval_interval(e: PrimExpr, relax: dict[Var, Interval], an: Analyzer) -> Interval:
    """The interval of integer expression ``e`` when each variable in ``relax`` ranges over
    its interval; other variables stay symbolic. Bounds come back simplified."""
    if not uses_var(e, relax):
        s = an.simplify(e)
        return Interval(s, s)
    lin = an.linear(e)
    total = Interval(IntImm(lin.const, e.dtype), IntImm(lin.const, e.dtype))
    for atom, k in lin.terms.items():
        part = _scale(_atom_interval(atom, relax, an), k)
        total = Interval(_add(total.min, part.min), _add(total.max, part.max))
    lo = None if total.min is None else an.simplify(total.min)
    hi = None if total.max is None else an.simplify(total.max)
    return Interval(lo, hi)


def _atom_interval(a: PrimExpr, relax: dict[Var, Interval], an: Analyzer) -> Interval:
    if not uses_var(a, relax):
        return Interval(a, a)
    if isinstance(a, Var):
        return relax[a]
    if isinstance(a, (FloorDiv, FloorMod)) and isinstance(a.b, IntImm) and a.b.value > 0:
        c = a.b.value
        x = eval_interval(a.a, relax, an)
        if isinstance(a, FloorDiv):
            return Interval(_opt(FloorDiv, x.min, a.b), _opt(FloorDiv, x.max, a.b))
        if x.is_bounded():
            same = an.simplify(FloorDiv(x.max, a.b) - FloorDiv(x.min, a.b))  # type: ignore[arg-type]
            if _const(same) == 0:
                return Interval(an.simplify(FloorMod(x.min, a.b)),  # type: ignore[arg-type]
                                an.simplify(FloorMod(x.max, a.b)))  # type: ignore[arg-type]
        return Interval(IntImm(0, a.dtype), IntImm(c - 1, a.dtype))
    if isinstance(a, (Min, Max)):
        x, y = eval_interval(a.a, relax, an), eval_interval(a.b, relax, an)
        if isinstance(a, Min):
            return Interval(_opt(Min, x.min, y.min), _either(Min, x.max, y.max))
        return Interval(_either(Max, x.min, y.min), _opt(Max, x.max, y.max))
    if isinstance(a, Select) or (isinstance(a, Call) and a.op == "if_then_else"):
        t, f = (a.true_value, a.false_value) if isinstance(a, Select) else a.args[1:]
        x, y = eval_interval(t, relax, an), eval_interval(f, relax, an)
        return Interval(_opt(Min, x.min, y.min), _opt(Max, x.max, y.max))
    if isinstance(a, Mul):
        x, y = eval_interval(a.a, relax, an), eval_interval(a.b, relax, an)
        vals = [_const(v) for v in (x.min, x.max, y.min, y.max)]
        if None not in vals:
            prods = [vals[0] * vals[2], vals[0] * vals[3], vals[1] * vals[2],  # type: ignore
                     vals[1] * vals[3]]  # type: ignore[operator]
            return Interval(IntImm(min(prods), a.dtype), IntImm(max(prods), a.dtype))
    lo, hi = _const_bound_relaxed(a, relax, an)
    return Interval(None if lo is None else IntImm(lo, a.dtype),
                    None if hi is None else IntImm(hi, a.dtype))


def _const_bound_relaxed(a: PrimExpr, relax: dict[Var, Interval],
                         an: Analyzer) -> tuple[int | None, int | None]:
    # Fall back to constant bounds with every relaxed variable bounded by its interval.
    sub = Analyzer(an.bounds)
    for v, iv in relax.items():
        lo = an.bound(iv.min)[0] if iv.min is not None else None
        hi = an.bound(iv.max)[1] if iv.max is not None else None
        sub.bind(v, lo, hi)
    if not dt.is_integer(a.dtype):
        return None, None
    return sub.bound(a)
