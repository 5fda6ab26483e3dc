"""Integer canonical simplification with known variable bounds.

Integer expressions are brought to a linear form ``sum(coeff * atom) + const`` where atoms
are variables and the non-linear rest (floordiv/floormod that cannot be removed, products
of two non-constants, loads, ...). Division rules use the bounds of the remainder:

* ``floordiv(c*q + r, c) == q + floordiv(r, c)`` and ``floordiv(r, c)`` is a constant when
  the bounds of ``r`` lie within one multiple of ``c``;
* ``floormod(c*q + r, c) == floormod(r, c)``, which is ``r - k*c`` within one period;
* ``floordiv(x, c) * c + floormod(x, c) == x`` (undoes split/fuse index arithmetic).

Comparisons, min/max and selects are decided from constant bounds when possible. Floating
point is only constant-folded (never reassociated).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

import numpy as np

from .. import dtype as dt
from ..ir import (EQ, GE, GT, LE, LT, NE, Add, And, Broadcast, BufferLoad, Call, Cast, CmpOp,
                  Div, FloatImm, FloorDiv, FloorMod, IntImm, Max, Min, Mul, Not, Or, PrimExpr,
                  Ramp, Select, Sub, Var)
from ..functor import Mutator

Bound = tuple[Optional[int], Optional[int]]
_UNBOUNDED: Bound = (None, None)


class Linear:
    """``sum(terms[atom] * atom) + const`` for one integer dtype."""

    __slots__ = ("terms", "const", "dtype")

    def __init__(self, dtype: str, terms: dict[PrimExpr, int] | None = None, const: int = 0):
        self.dtype = dtype
        self.terms = terms if terms is not None else {}
        self.const = const

    def scaled(self, k: int) -> Linear:
        if k == 0:
            return Linear(self.dtype)
        return Linear(self.dtype, {t: c * k for t, c in self.terms.items()}, self.const * k)

    def plus(self, o: Linear, sign: int = 1) -> Linear:
        terms = dict(self.terms)
        for t, c in o.terms.items():
            v = terms.get(t, 0) + sign * c
            if v:
                terms[t] = v
            else:
                terms.pop(t, None)
        return Linear(self.dtype, terms, self.const + sign * o.const)

    def is_const(self) -> bool:
        return not self.terms


class Analyzer:
    """Simplifier and constant-bound oracle. ``bind`` tells it the range of a variable."""

    def __init__(self, bounds: dict[Var, Bound] | None = None):
        self.bounds: dict[Var, Bound] = dict(bounds or {})

    # -- bounds
    def bind(self, var: Var, lo: int | None, hi: int | None) -> None:
        """Declare ``lo <= var <= hi`` (inclusive; None for unknown)."""
        self.bounds[var] = (lo, hi)

    @contextmanager
    def scope(self, var: Var, lo: int | None, hi: int | None) -> Iterator[None]:
        """``bind`` for the duration of a ``with`` block."""
        old = self.bounds.get(var)
        self.bounds[var] = (lo, hi)
        try:
            yield
        finally:
            if old is None:
                del self.bounds[var]
            else:
                self.bounds[var] = old

    def bound(self, e: PrimExpr) -> Bound:
        """Constant inclusive bounds of an integer expression (None where unknown)."""
        if not (dt.is_integer(e.dtype) or dt.is_bool(e.dtype)) or dt.lanes(e.dtype) != 1:
            return _UNBOUNDED
        return self._bound_linear(self.linear(e))

    def _bound_linear(self, lin: Linear) -> Bound:
        lo: int | None = lin.const
        hi: int | None = lin.const
        for atom, k in lin.terms.items():
            alo, ahi = self._bound_atom(atom)
            if k < 0:
                alo, ahi = ahi, alo
            lo = None if lo is None or alo is None else lo + k * alo
            hi = None if hi is None or ahi is None else hi + k * ahi
        return lo, hi

    def _bound_atom(self, a: PrimExpr) -> Bound:
        if isinstance(a, Var):
            return self.bounds.get(a, _dtype_bound(a.dtype))
        if isinstance(a, (FloorDiv, FloorMod)) and isinstance(a.b, IntImm) and a.b.value > 0:
            c = a.b.value
            lo, hi = self.bound(a.a)
            if isinstance(a, FloorDiv):
                return (None if lo is None else lo // c, None if hi is None else hi // c)
            if lo is not None and hi is not None and lo // c == hi // c:
                return lo % c, hi % c
            return 0, c - 1
        if isinstance(a, (Min, Max)):
            (alo, ahi), (blo, bhi) = self.bound(a.a), self.bound(a.b)
            pick = min if isinstance(a, Min) else max
            if isinstance(a, Min):
                lo = None if alo is None or blo is None else pick(alo, blo)
                hi = ahi if bhi is None else bhi if ahi is None else pick(ahi, bhi)
            else:
                lo = alo if blo is None else blo if alo is None else pick(alo, blo)
                hi = None if ahi is None or bhi is None else pick(ahi, bhi)
            return lo, hi
        if isinstance(a, Mul):
            (alo, ahi), (blo, bhi) = self.bound(a.a), self.bound(a.b)
            if None in (alo, ahi, blo, bhi):
                return _dtype_bound(a.dtype)
            prods = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]  # type: ignore[operator]
            return min(prods), max(prods)
        if isinstance(a, Select) or (isinstance(a, Call) and a.op == "if_then_else"):
            t, f = (a.true_value, a.false_value) if isinstance(a, Select) else a.args[1:]
            (tlo, thi), (flo, fhi) = self.bound(t), self.bound(f)
            lo = None if tlo is None or flo is None else min(tlo, flo)
            hi = None if thi is None or fhi is None else max(thi, fhi)
            return lo, hi
        if isinstance(a, Cast) and dt.is_integer(a.value.dtype) and \
                dt.bits(a.value.dtype) <= dt.bits(a.dtype):
            return self.bound(a.value)
        return _dtype_bound(a.dtype)

    def can_prove(self, cond: PrimExpr) -> bool:
        """True only if ``cond`` holds for every value of the bound variables."""
        s = self.simplify(cond)
        return isinstance(s, IntImm) and s.value != 0

    # -- linear form
    def linear(self, e: PrimExpr) -> Linear:
        """The linear form of a scalar integer expression (children simplified)."""
        d = e.dtype
        if isinstance(e, IntImm):
            return Linear(d, const=e.value)
        if isinstance(e, Var):
            return Linear(d, {e: 1})
        if isinstance(e, Add):
            return self.linear(e.a).plus(self.linear(e.b))
        if isinstance(e, Sub):
            return self.linear(e.a).plus(self.linear(e.b), -1)
        if isinstance(e, Mul):
            la, lb = self.linear(e.a), self.linear(e.b)
            if la.is_const():
                return lb.scaled(la.const)
            if lb.is_const():
                return la.scaled(lb.const)
            return _atom(Mul(self.rebuild(la), self.rebuild(lb)))
        if isinstance(e, (FloorDiv, FloorMod)):
            la, lb = self.linear(e.a), self.linear(e.b)
            if lb.is_const() and lb.const > 0:
                return self._div(la, lb.const) if isinstance(e, FloorDiv) else \
                    self._mod(la, lb.const)
            if la.is_const() and lb.is_const() and lb.const != 0:
                v = la.const // lb.const if isinstance(e, FloorDiv) else la.const % lb.const
                return Linear(d, const=v)
            return _atom(type(e)(self.rebuild(la), self.rebuild(lb)))
        s = self._simplify_other(e)
        if isinstance(s, IntImm):
            return Linear(d, const=s.value)
        if isinstance(s, (Add, Sub, Mul, FloorDiv, FloorMod, Var)):
            return self.linear(s)
        return _atom(s)

    def _div(self, la: Linear, c: int) -> Linear:
        if c == 1:
            return la
        q = Linear(la.dtype, const=la.const // c)
        rest = Linear(la.dtype, const=la.const % c)
        for t, k in la.terms.items():
            if k % c == 0:
                q.terms[t] = k // c
            else:
                rest.terms[t] = k
        lo, hi = self._bound_linear(rest)
        if lo is not None and hi is not None and lo // c == hi // c:
            return q.plus(Linear(la.dtype, const=lo // c))
        if len(rest.terms) == 1 and rest.const == 0:
            (atom, k), = rest.terms.items()
            if k == 1 and isinstance(atom, FloorDiv) and isinstance(atom.b, IntImm) \
                    and atom.b.value > 0:
                return q.plus(self._div(self.linear(atom.a), atom.b.value * c))
        return q.plus(_atom(FloorDiv(self.rebuild(rest), IntImm(c, la.dtype))))

    def _mod(self, la: Linear, c: int) -> Linear:
        if c == 1:
            return Linear(la.dtype)
        rest = Linear(la.dtype, const=la.const % c)
        for t, k in la.terms.items():
            if k % c:
                rest.terms[t] = k % c
        lo, hi = self._bound_linear(rest)
        if lo is not None and hi is not None and lo // c == hi // c:
            return rest.plus(Linear(la.dtype, const=-(lo // c) * c))
        if len(rest.terms) == 1 and rest.const == 0:
            (atom, k), = rest.terms.items()
            if k == 1 and isinstance(atom, FloorMod) and isinstance(atom.b, IntImm) \
                    and atom.b.value % c == 0:
                return self._mod(self.linear(atom.a), c)
        return _atom(FloorMod(self.rebuild(rest), IntImm(c, la.dtype)))

    def rebuild(self, lin: Linear) -> PrimExpr:
        """The expression of a linear form (positive terms first, constant last)."""
        _merge_divmod(lin)
        d = lin.dtype
        pos = [(t, k) for t, k in lin.terms.items() if k > 0]
        neg = [(t, -k) for t, k in lin.terms.items() if k < 0]

        def term(t: PrimExpr, k: int) -> PrimExpr:
            return t if k == 1 else Mul(t, IntImm(k, d))

        out: PrimExpr | None = None
        for t, k in pos:
            out = term(t, k) if out is None else Add(out, term(t, k))
        if out is None and neg:
            if lin.const > 0:
                out, lin_const = IntImm(lin.const, d), 0
            else:
                t, k = neg.pop(0)
                out, lin_const = Mul(t, IntImm(-k, d)), lin.const
        else:
            lin_const = lin.const
        for t, k in neg:
            out = Sub(out, term(t, k))  # type: ignore[arg-type]
        if out is None:
            return IntImm(lin_const, d)
        if lin_const > 0:
            out = Add(out, IntImm(lin_const, d))
        elif lin_const < 0:
            out = Sub(out, IntImm(-lin_const, d))
        return out

    # -- simplification
    def simplify(self, e: PrimExpr) -> PrimExpr:
        """An equivalent, simpler expression."""
        if dt.is_integer(e.dtype) and dt.lanes(e.dtype) == 1:
            return self.rebuild(self.linear(e))
        return self._simplify_other(e)

    def _simplify_other(self, e: PrimExpr) -> PrimExpr:
        return _Rewriter(self).visit(e)


def _atom(e: PrimExpr) -> Linear:
    if isinstance(e, IntImm):
        return Linear(e.dtype, const=e.value)
    return Linear(e.dtype, {e: 1})


def _merge_divmod(lin: Linear) -> None:
    # floordiv(x, c) * (k*c) + floormod(x, c) * k  ->  x * k, when x is a plain variable
    # or atom (the common shape left by split-then-fuse).
    for t in list(lin.terms):
        if isinstance(t, FloorMod) and isinstance(t.b, IntImm) and t in lin.terms:
            k = lin.terms[t]
            partner = FloorDiv(t.a, t.b)
            if lin.terms.get(partner) == k * t.b.value:
                del lin.terms[t], lin.terms[partner]
                extra = Linear(lin.dtype, {t.a: k}) if not isinstance(t.a, IntImm) else \
                    Linear(lin.dtype, const=k * t.a.value)
                merged = lin.plus(extra)
                lin.terms, lin.const = merged.terms, merged.const


def _dtype_bound(dtype: str) -> Bound:
    if dt.is_bool(dtype):
        return 0, 1
    if dt.is_integer(dtype) and dt.bits(dtype) <= 16:
        info = np.iinfo(dt.to_numpy(dtype))
        return int(info.min), int(info.max)
    if dt.is_uint(dtype):
        return 0, None
    return _UNBOUNDED


_TRUE, _FALSE = IntImm(1, "bool"), IntImm(0, "bool")
_CMP = {LT: lambda x: x < 0, LE: lambda x: x <= 0, GT: lambda x: x > 0, GE: lambda x: x >= 0,
        EQ: lambda x: x == 0, NE: lambda x: x != 0}
_FLIP = {LT: GT, LE: GE, GT: LT, GE: LE, EQ: EQ, NE: NE}


class _Rewriter(Mutator):
    """Rules for everything except integer arithmetic (which goes through ``linear``)."""

    def __init__(self, an: Analyzer):
        self.an = an

    def visit(self, node: object) -> object:
        if isinstance(node, PrimExpr) and dt.is_integer(node.dtype) and \
                dt.lanes(node.dtype) == 1 and isinstance(node, (Add, Sub, Mul, FloorDiv, FloorMod)):
            return self.an.simplify(node)
        return super().visit(node)

    def _int_scalar(self, e: PrimExpr) -> bool:
        return dt.is_integer(e.dtype) and dt.lanes(e.dtype) == 1

    def visit_cmp(self, e: CmpOp) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if self._int_scalar(a):
            diff = self.an.linear(a).plus(self.an.linear(b), -1)
            lo, hi = self.an._bound_linear(diff)
            test = _CMP[type(e)]
            if lo is not None and hi is not None and lo == hi:
                return _TRUE if test(lo) else _FALSE
            if type(e) in (LT, LE, GT, GE):
                if lo is not None and hi is not None:
                    if test(lo) and test(hi):
                        return _TRUE
                    if not test(lo) and not test(hi):
                        return _FALSE
                elif type(e) in (LT, LE) and hi is not None and test(hi):
                    return _TRUE
                elif type(e) in (LT, LE) and lo is not None and not test(lo):
                    return _FALSE
                elif type(e) in (GT, GE) and lo is not None and test(lo):
                    return _TRUE
                elif type(e) in (GT, GE) and hi is not None and not test(hi):
                    return _FALSE
            elif lo is not None and hi is not None and (lo > 0 or hi < 0):
                return _FALSE if type(e) is EQ else _TRUE
            rhs = -diff.const
            diff.const = 0
            op = type(e)
            if diff.terms and all(k < 0 for k in diff.terms.values()):
                diff, rhs, op = diff.scaled(-1), -rhs, _FLIP[op]
            return op(self.an.rebuild(diff), IntImm(rhs, a.dtype))
        if isinstance(a, (IntImm, FloatImm)) and isinstance(b, (IntImm, FloatImm)):
            return _TRUE if _CMP[type(e)](a.value - b.value) else _FALSE
        return e if a is e.a and b is e.b else type(e)(a, b)

    visit_LT = visit_LE = visit_GT = visit_GE = visit_EQ = visit_NE = visit_cmp

    def visit_And(self, e: And) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return y if x.value else x
        return And(a, b)

    def visit_Or(self, e: Or) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        for x, y in ((a, b), (b, a)):
            if isinstance(x, IntImm):
                return x if x.value else y
        return Or(a, b)

    def visit_Not(self, e: Not) -> PrimExpr:
        a = self.visit(e.a)
        if isinstance(a, IntImm):
            return _FALSE if a.value else _TRUE
        if isinstance(a, CmpOp):
            neg = {LT: GE, LE: GT, GT: LE, GE: LT, EQ: NE, NE: EQ}[type(a)]
            return neg(a.a, a.b)
        return Not(a)

    def visit_Select(self, e: Select) -> PrimExpr:
        c = self.visit(e.condition)
        if isinstance(c, Broadcast) and isinstance(c.value, IntImm):
            c = c.value  # a vectorized select on a constant condition (a loop unrolled after vectorizing)
        if isinstance(c, IntImm):
            return self.visit(e.true_value if c.value else e.false_value)
        t, f = self.visit(e.true_value), self.visit(e.false_value)
        return t if t == f else Select(c, t, f)

    def visit_minmax(self, e: Min | Max) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)
        if self._int_scalar(a):
            lo, hi = self.an._bound_linear(self.an.linear(a).plus(self.an.linear(b), -1))
            first_smaller = hi is not None and hi <= 0
            first_larger = lo is not None and lo >= 0
            if first_smaller or first_larger:
                return a if first_smaller == isinstance(e, Min) else b
        elif isinstance(a, FloatImm) and isinstance(b, FloatImm):
            return a if (a.value <= b.value) == isinstance(e, Min) else b
        if a == b:
            return a
        return type(e)(a, b)

    visit_Min = visit_Max = visit_minmax

    def visit_arith(self, e: PrimExpr) -> PrimExpr:
        a, b = self.visit(e.a), self.visit(e.b)  # type: ignore[attr-defined]
        if isinstance(a, FloatImm) and isinstance(b, FloatImm):
            x, y = dt.to_numpy(a.dtype).type(a.value), dt.to_numpy(a.dtype).type(b.value)
            with np.errstate(all="ignore"):
                r = {Add: np.add, Sub: np.subtract, Mul: np.multiply, Div: np.divide}[type(e)](x, y)
            return FloatImm(float(r), a.dtype)
        vec = _vector_rule(type(e), a, b)
        if vec is not None:
            return self.visit(vec)
        return e if a is e.a and b is e.b else type(e)(a, b)  # type: ignore[attr-defined]

    visit_Add = visit_Sub = visit_Mul = visit_Div = visit_arith

    def visit_Cast(self, e: Cast) -> PrimExpr:
        v = self.visit(e.value)
        if v.dtype == e.dtype:
            return v
        if isinstance(v, (IntImm, FloatImm)) and dt.lanes(e.dtype) == 1:
            if dt.is_float(e.dtype):
                return FloatImm(float(dt.to_numpy(e.dtype).type(v.value)), e.dtype)
            if dt.is_bool(e.dtype):
                return IntImm(int(bool(v.value)), e.dtype)
            if np.isfinite(v.value):
                bits, x = dt.bits(e.dtype), int(v.value) & ((1 << dt.bits(e.dtype)) - 1)
                if dt.is_int(e.dtype) and x >= 1 << (bits - 1):
                    x -= 1 << bits
                return IntImm(x, e.dtype)
        return Cast(e.dtype, v)

    def visit_Call(self, e: Call) -> PrimExpr:
        args = tuple(self.visit(a) for a in e.args)
        if e.op == "if_then_else" and isinstance(args[0], IntImm):
            return args[1] if args[0].value else args[2]
        return e if all(x is y for x, y in zip(args, e.args)) else Call(e.dtype, e.op, args)

    def visit_Broadcast(self, e: Broadcast) -> PrimExpr:
        return Broadcast(self.visit(e.value), e.lanes)

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        base, stride = self.visit(e.base), self.visit(e.stride)
        if isinstance(stride, IntImm) and stride.value == 0:
            return Broadcast(base, e.lanes)
        return Ramp(base, stride, e.lanes)

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        idx = tuple(self.visit(i) for i in e.indices)
        return e if all(x is y for x, y in zip(idx, e.indices)) else BufferLoad(e.buffer, idx)


def _vector_rule(op: type, a: PrimExpr, b: PrimExpr) -> PrimExpr | None:
    """Keep index vectors in Ramp/Broadcast form so code generators see strides."""
    if isinstance(a, Broadcast) and isinstance(b, Broadcast):
        return Broadcast(op(a.value, b.value), a.lanes)
    if op in (Add, Sub) and isinstance(a, Ramp) and isinstance(b, Broadcast):
        return Ramp(op(a.base, b.value), a.stride, a.lanes)
    if op is Add and isinstance(a, Broadcast) and isinstance(b, Ramp):
        return Ramp(Add(a.value, b.base), b.stride, b.lanes)
    if op in (Add, Sub) and isinstance(a, Ramp) and isinstance(b, Ramp):
        return Ramp(op(a.base, b.base), op(a.stride, b.stride), a.lanes)
    if op is Mul and isinstance(a, Ramp) and isinstance(b, Broadcast):
        return Ramp(Mul(a.base, b.value), Mul(a.stride, b.value), a.lanes)
    if op is Mul and isinstance(a, Broadcast) and isinstance(b, Ramp):
        return Ramp(Mul(a.value, b.base), Mul(a.value, b.stride), b.lanes)
    return None


def simplify_expr(e: PrimExpr, bounds: dict[Var, Bound] | None = None) -> PrimExpr:
    """Simplify one expression given optional variable bounds."""
    return Analyzer(bounds).simplify(e)
