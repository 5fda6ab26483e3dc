"""Split loops at the points where guarding conditions change value (loop tails, padding
borders), so each piece runs without the condition.

For ``for v: ... if k*v + r < 0`` with every other term ``r`` a loop variable nested
inside (bounded) or a constant, the iterations where the condition holds for every ``r``,
those where it fails for every ``r``, and the rest form up to three loops; the simplifier
then decides the condition in each. Conditions come from ``if`` statements and from
``if_then_else`` expressions.
"""
from __future__ import annotations

from ..arith import Analyzer
from ..functor import Mutator, collect, fresh_copy
from ..ir import (EQ, GE, GT, LE, LT, NE, And, Call, For, IfThenElse, IntImm, PrimExpr, PrimFunc,
                  Stmt, Var, seq)
from .simplify import StmtSimplifier

# Each condition can triple a loop; cap the candidates per loop to bound code growth.
_MAX_CONDITIONS = 4


def _conditions(body: Stmt) -> list[PrimExpr]:
    found: list[PrimExpr] = []
    for n in collect(body, lambda n: isinstance(n, IfThenElse) or
                     (isinstance(n, Call) and n.op == "if_then_else")):
        cond = n.condition if isinstance(n, IfThenElse) else n.args[0]  # type: ignore
        stack = [cond]
        while stack:
            c = stack.pop()
            if isinstance(c, And):
                stack += [c.b, c.a]
            elif isinstance(c, (LT, LE, GT, GE, EQ, NE)) and c not in found:
                found.append(c)
    return found


def _inner_bounds(body: Stmt, an: Analyzer) -> dict[Var, tuple[int | None, int | None]]:
    out = {}
    for lp in collect(body, lambda n: isinstance(n, For)):
        lo = an.bound(lp.min)[0]  # type: ignore[attr-defined]
        hi = an.bound(lp.min + lp.extent - 1)[1]  # type: ignore[attr-defined]
        out[lp.loop_var] = (lo, hi)  # type: ignore[attr-defined]
    return out


def _cut_points(cond: PrimExpr, v: Var, inner: dict[Var, tuple[int | None, int | None]],
                an: Analyzer) -> list[int] | None:
    """Values of ``v`` where ``cond`` may switch between always-true and always-false."""
    diff = an.linear(cond.a).plus(an.linear(cond.b), -1)  # type: ignore[attr-defined]
    k = diff.terms.get(v)
    if not k or any(not isinstance(t, Var) or (t is not v and t not in inner)
                    for t in diff.terms):
        return None
    rest = an.linear(cond.a).plus(an.linear(cond.b), -1)  # type: ignore[attr-defined]
    del rest.terms[v]
    sub = Analyzer(an.bounds)
    for t, (lo, hi) in inner.items():
        sub.bind(t, lo, hi)
    rlo, rhi = sub._bound_linear(rest)
    if rlo is None or rhi is None:
        return None
    if isinstance(cond, (EQ, NE)):
        if rlo != rhi or (-rlo) % k:
            return None
        p = -rlo // k
        return [p, p + 1]
    # Normalise to d < 0 with d = k*v + r, r in [rlo, rhi].
    if isinstance(cond, LE):
        rlo, rhi = rlo - 1, rhi - 1
    elif isinstance(cond, (GT, GE)):
        k, rlo, rhi = -k, -rhi, -rlo
        if isinstance(cond, GE):
            rlo, rhi = rlo - 1, rhi - 1
    if k > 0:
        # true for all r when v < ceil(-rhi/k); false for all r when v >= ceil(-rlo/k)
        return [-(rhi // k), -(rlo // k)]
    kk = -k
    # true for all r when v > rhi/kk; false for all r when v <= rlo/kk
    return [rlo // kk + 1, rhi // kk + 1]


class _Partition(Mutator):
    def __init__(self) -> None:
        self.an = Analyzer()

    def visit_For(self, s: For) -> Stmt:
        if not (isinstance(s.min, IntImm) and isinstance(s.extent, IntImm)):
            return self.descend(s)
        lo, hi = s.min.value, s.min.value + s.extent.value
        inner = _inner_bounds(s.body, self.an)
        cuts: set[int] = set()
        used = 0
        for cond in _conditions(s.body):
            if used == _MAX_CONDITIONS:
                break
            pts = _cut_points(cond, s.loop_var, inner, self.an)
            if pts is None:
                continue
            new = {p for p in pts if lo < p < hi}
            if new - cuts:
                used += 1
                cuts |= new
        if not cuts:
            return self.descend(s)
        bounds = [lo] + sorted(cuts) + [hi]
        pieces = []
        for a, b in zip(bounds, bounds[1:]):
            piece = For(s.loop_var, IntImm(a, s.min.dtype), IntImm(b - a, s.min.dtype), s.kind,
                        s.body, s.annotations)
            piece = StmtSimplifier(Analyzer(self.an.bounds)).visit(fresh_copy(piece))
            pieces.append(self.visit(piece))
        return seq(*pieces)

    def descend(self, s: For) -> Stmt:
        lo = self.an.bound(s.min)[0]
        hi = self.an.bound(s.min + s.extent - 1)[1]
        with self.an.scope(s.loop_var, lo, hi):
            body = self.visit(s.body)
        return s if body is s.body else For(s.loop_var, s.min, s.extent, s.kind, body,
                                            s.annotations)

def partition_loop(func: PrimFunc) -> PrimFunc:
    """The function with loops split where their guards change value."""
    return func.with_body(_Partition().visit(func.body))
