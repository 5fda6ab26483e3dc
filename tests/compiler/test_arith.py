"""The simplifier and interval analysis agree with direct evaluation."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from vdla.compiler.tir.arith import Analyzer, Interval, eval_interval
from vdla.compiler.tir.ir import (FloorDiv, FloorMod, IntImm, Max, Min, PrimExpr, Var, const,
                             floordiv, floormod)

X, Y, Z = Var("x"), Var("y"), Var("z")
BOUNDS = {X: (0, 7), Y: (0, 12), Z: (-3, 5)}


def evaluate(e: PrimExpr, env: dict) -> int:
    from vdla.compiler.tir.ir import EQ, GE, GT, LE, LT, NE, Add, And, Mul, Not, Or, Select, Sub
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        return env[e]
    ops = {Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
           FloorDiv: lambda a, b: a // b, FloorMod: lambda a, b: a % b, Min: min, Max: max,
           LT: lambda a, b: int(a < b), LE: lambda a, b: int(a <= b), GT: lambda a, b: int(a > b),
           GE: lambda a, b: int(a >= b), EQ: lambda a, b: int(a == b),
           NE: lambda a, b: int(a != b), And: lambda a, b: int(a and b),
           Or: lambda a, b: int(a or b)}
    if isinstance(e, Not):
        return int(not evaluate(e.a, env))
    if isinstance(e, Select):
        return evaluate(e.true_value if evaluate(e.condition, env) else e.false_value, env)
    return ops[type(e)](evaluate(e.a, env), evaluate(e.b, env))


leaves = st.sampled_from([X, Y, Z]) | st.integers(-9, 9).map(const)


def extend(children):
    pos = st.integers(1, 8)
    return st.one_of(
        st.tuples(children, children).map(lambda t: t[0] + t[1]),
        st.tuples(children, children).map(lambda t: t[0] - t[1]),
        st.tuples(children, st.integers(-4, 4)).map(lambda t: t[0] * t[1]),
        st.tuples(children, pos).map(lambda t: floordiv(t[0], t[1])),
        st.tuples(children, pos).map(lambda t: floormod(t[0], t[1])),
        st.tuples(children, children).map(lambda t: Min(t[0], t[1])),
        st.tuples(children, children).map(lambda t: Max(t[0], t[1])),
    )


exprs = st.recursive(leaves, extend, max_leaves=8)
points = st.fixed_dictionaries({X: st.integers(0, 7), Y: st.integers(0, 12),
                                Z: st.integers(-3, 5)})


@settings(max_examples=150, deadline=None)
@given(exprs, points)
def test_simplify_preserves_value(e, env):
    an = Analyzer(BOUNDS)
    assert evaluate(an.simplify(e), env) == evaluate(e, env)


@settings(max_examples=150, deadline=None)
@given(exprs, points)
def test_bounds_are_sound(e, env):
    lo, hi = Analyzer(BOUNDS).bound(e)
    v = evaluate(e, env)
    assert lo is None or lo <= v
    assert hi is None or v <= hi


@settings(max_examples=100, deadline=None)
@given(exprs, points, st.sampled_from(["lt", "ge", "eq"]), st.integers(-10, 20))
def test_comparison_simplify(e, env, op, c):
    cond = {"lt": e < c, "ge": e >= c, "eq": __import__("vdla.compiler.tir.ir", fromlist=["eq"]).eq(e, c)}[op]
    assert evaluate(Analyzer(BOUNDS).simplify(cond), env) == evaluate(cond, env)


@settings(max_examples=100, deadline=None)
@given(exprs, points)
def test_interval_contains_value(e, env):
    """Relaxing x over its range gives an interval (symbolic in y, z) containing e."""
    an = Analyzer(BOUNDS)
    iv = eval_interval(e, {X: Interval(const(0), const(7))}, an)
    v = evaluate(e, env)
    if iv.min is not None:
        assert evaluate(iv.min, env) <= v
    if iv.max is not None:
        assert v <= evaluate(iv.max, env)


def test_canonical_rules():
    an = Analyzer({X: (0, 7), Y: (0, 3)})
    assert an.simplify(floordiv(Y * 8 + X, 8)) == Y
    assert an.simplify(floormod(Y * 8 + X, 8)) == X
    assert an.simplify(floordiv(Z, 16) * 16 + floormod(Z, 16)) == Z
    assert an.simplify(floordiv(floordiv(Z, 4), 8)) == floordiv(Z, 32)
    assert an.simplify((X + 3) - (3 + X)) == const(0)
    assert an.simplify(Min(X, const(9))) == X
    assert an.can_prove(Y * 8 + X < 32)
    assert not an.can_prove(Y * 8 + X < 31)


def test_vectorized_select_on_a_constant_condition_folds() -> None:
    # A loop unrolled after vectorizing leaves select(broadcast(True, 8), a, b): only a may remain.
    from vdla.compiler.tir.ir import Broadcast, Select

    a, b = Var("a", "float32"), Var("b", "float32")
    va, vb = Broadcast(a, 8), Broadcast(b, 8)
    assert Analyzer().simplify(Select(Broadcast(const(True, "bool"), 8), va, vb)) == va
    assert Analyzer().simplify(Select(Broadcast(const(False, "bool"), 8), va, vb)) == vb
