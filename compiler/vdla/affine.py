"""Small integer-expression helpers of the VDLA passes: affine decomposition and evaluation."""

from __future__ import annotations

from typing import Iterable, Mapping

from vdla.compiler.tir import (Add, Cast, FloorDiv, FloorMod, IntImm, Max, Min, Mul, PrimExpr, Select, Sub, Var)
from vdla.compiler.tir.arith import Analyzer
from vdla.compiler.tir.arith.analyzer import Linear
from vdla.compiler.tir.functor import uses_var


class NotAffineError(ValueError):
    """An index expression is not affine in the loop variables a pass must fold."""


def affine(e: PrimExpr, variables: Iterable[Var]) -> tuple[dict[Var, int], PrimExpr]:
    """Split ``e`` into ``sum(coef[v] * v) + rest`` where ``rest`` does not use ``variables``.

    Raises :class:`NotAffineError` when a variable occurs other than linearly with a constant
    coefficient (e.g. inside a division or a product of two variables).
    """
    vs = list(variables)
    an = Analyzer()
    lin = an.linear(an.simplify(e))
    coef = {v: 0 for v in vs}
    rest = Linear(lin.dtype, const=lin.const)
    for atom, k in lin.terms.items():
        if isinstance(atom, Var) and atom in coef:
            coef[atom] += k
        elif uses_var(atom, set(vs)):
            raise NotAffineError(f"index {e} is not affine in {[v.name for v in vs]}: term {atom}")
        else:
            rest.terms[atom] = rest.terms.get(atom, 0) + k
    return coef, an.rebuild(rest)


def simplify(e: PrimExpr) -> PrimExpr:
    return Analyzer().simplify(e)


def eval_int(e: PrimExpr, env: Mapping[Var, int]) -> int:
    """The integer value of ``e`` with variables bound by ``env`` (fast path for codegen)."""
    if isinstance(e, IntImm):
        return e.value
    if isinstance(e, Var):
        try:
            return env[e]
        except KeyError:
            raise ValueError(f"variable {e.name} is unbound when evaluating an instruction field") from None
    if isinstance(e, Add):
        return eval_int(e.a, env) + eval_int(e.b, env)
    if isinstance(e, Sub):
        return eval_int(e.a, env) - eval_int(e.b, env)
    if isinstance(e, Mul):
        return eval_int(e.a, env) * eval_int(e.b, env)
    if isinstance(e, FloorDiv):
        return eval_int(e.a, env) // eval_int(e.b, env)
    if isinstance(e, FloorMod):
        return eval_int(e.a, env) % eval_int(e.b, env)
    if isinstance(e, Min):
        return min(eval_int(e.a, env), eval_int(e.b, env))
    if isinstance(e, Max):
        return max(eval_int(e.a, env), eval_int(e.b, env))
    if isinstance(e, Cast):
        return eval_int(e.value, env)
    if isinstance(e, Select):
        return eval_int(e.true_value if eval_int(e.condition, env) else e.false_value, env)
    raise ValueError(f"cannot evaluate {type(e).__name__} {e} as an instruction field")
