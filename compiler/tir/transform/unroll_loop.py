"""Replace loops marked ``unrolled`` (constant extent) by copies of their body."""
from __future__ import annotations

from ..functor import Mutator, fresh_copy
from ..ir import For, ForKind, IntImm, PrimFunc, Stmt, seq


class _Unroll(Mutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        if s.kind != ForKind.UNROLLED or not isinstance(s.extent, IntImm):
            return For(s.loop_var, s.min, s.extent, s.kind, body, s.annotations)
        copies = [fresh_copy(body, {s.loop_var: s.min + k}) for k in range(s.extent.value)]
        return seq(*copies)


def unroll_loop(func: PrimFunc) -> PrimFunc:
    """The function with unrolled loops expanded (simplify afterwards to fold indices)."""
    return func.with_body(_Unroll().visit(func.body))
