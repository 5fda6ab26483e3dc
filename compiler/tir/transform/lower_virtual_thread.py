"""On a CPU a virtual thread is a plain loop: turn ``virtual_thread`` loops serial.

(Accelerator targets interleave virtual threads instead to hide memory latency; that is a
different pass in their pipeline.)
"""
from __future__ import annotations

from ..functor import Mutator
from ..ir import For, ForKind, PrimFunc, Stmt


class _Serialize(Mutator):
    def visit_For(self, s: For) -> Stmt:
        body = self.visit(s.body)
        kind = ForKind.SERIAL if s.kind == ForKind.VIRTUAL_THREAD else s.kind
        if kind is s.kind and body is s.body:
            return s
        return For(s.loop_var, s.min, s.extent, kind, body, s.annotations)


def lower_virtual_thread(func: PrimFunc) -> PrimFunc:
    """The function with virtual-thread loops made serial."""
    return func.with_body(_Serialize().visit(func.body))
