"""fold_requant_store: the tail of a fused epilogue (shift right, ReLU, clip to the output range) -> the STORE.

A STORE requantizes each accumulator lane on its way out (``vdla_hw.isa.requantize``: an
arithmetic shift right, a lower bound 0, saturation to the signed output range, then the
narrowing), so those operations need not run on the compute module's ALU, where each costs
``alu_ii`` cycles per output tile.  After ``compute_inline`` of the epilogue stages the result
store reads ``out[...] = cast(f(acc[...]))``; this pass peels the outermost operations of ``f``
that the STORE can do exactly and rewrites the value to
``cast(vdla.requant(g(acc[...]), shift, clip, relu))``.  ``inject_alu_op`` then lowers only
``g`` (e.g. the bias add) to ALU instructions and ``inject_dma_copy`` turns the store into a
requantizing STORE.

Peeled, outermost first: ``min(x, OUT_MAX)`` and ``max(x, OUT_MIN)`` (a clip needs its upper
bound and a lower bound: ``OUT_MIN`` or the ReLU's 0), ``max(x, 0)`` (ReLU), ``x // 2**s``
(the shift), and ``max(x, 0)`` again under the shift (floor division by a positive power of two
commutes with ``max(., 0)``).  A tail the STORE cannot reproduce exactly (an upper clip alone,
other constants) is left to the ALU.  The program means the same before and after: the
interpreter runs ``vdla.requant`` with the ISA's own semantics.

A function with the attribute ``vdla.requant_on_store`` set to False is left unchanged (the
whole epilogue runs on the ALU, as before requantizing stores).
"""

from __future__ import annotations

from vdla.compiler.tir import BufferLoad, BufferStore, Cast, FloorDiv, IntImm, Mutator, PrimExpr, PrimFunc, Stmt
from vdla.compiler.tir.functor import collect
from vdla.compiler.tir.ir import Max, Min

from ..stmt import Requant, requant
from ..target import SCOPE_ACC
from .common import is_vdla_scope

ATTR = "vdla.requant_on_store"
"""PrimFunc attribute: False keeps the whole epilogue on the ALU."""
MAX_SHIFT = 31


def _const_operand(e: PrimExpr, node: type) -> tuple[PrimExpr, int] | None:
    """``(x, c)`` when ``e`` is ``node(x, c)`` or ``node(c, x)`` with an integer constant ``c``."""
    if type(e) is not node:
        return None
    a, b = e.a, e.b  # type: ignore[attr-defined]
    if isinstance(b, IntImm):
        return a, b.value
    if isinstance(a, IntImm):
        return b, a.value
    return None


def _peel(e: PrimExpr, bits: int) -> tuple[PrimExpr, Requant] | None:
    """Split ``e`` into the part the ALU keeps and the requantization the STORE does, or None."""
    hi, lo = (1 << (bits - 1)) - 1, -(1 << (bits - 1))
    clip_hi = clip_lo = relu = False
    shift = 0
    m = _const_operand(e, Min)
    if m is not None and m[1] == hi:
        e, clip_hi = m[0], True
    m = _const_operand(e, Max)
    if m is not None and m[1] == lo:
        e, clip_lo = m[0], True
    m = _const_operand(e, Max)
    if m is not None and m[1] == 0:
        e, relu = m[0], True
    if isinstance(e, FloorDiv) and isinstance(e.b, IntImm):
        d = e.b.value
        if d > 0 and not d & (d - 1) and d.bit_length() - 1 <= MAX_SHIFT:
            e, shift = e.a, d.bit_length() - 1
            m = _const_operand(e, Max)
            if not relu and m is not None and m[1] == 0:
                e, relu = m[0], True
    if clip_hi and not (clip_lo or relu):
        return None  # an upper bound alone is not a saturating clip: keep the tail on the ALU
    if clip_lo and not clip_hi:
        return None
    r = Requant(shift, clip_hi, relu)
    return (e, r) if r != Requant() else None


class _Fold(Mutator):
    def visit_BufferStore(self, node: BufferStore) -> Stmt:
        value = node.value
        if is_vdla_scope(node.buffer) or not isinstance(value, Cast) or not value.dtype.startswith("int"):
            return node
        if node.buffer.dtype != value.dtype or not value.dtype[3:].isdigit():
            return node  # the STORE narrows to the buffer's own integer type
        bits = int(value.dtype[3:])
        if not collect(value, lambda n: isinstance(n, BufferLoad) and n.buffer.scope == SCOPE_ACC):
            return node  # no accumulator involved: not a VDLA result store
        peeled = _peel(value.value, bits)
        if peeled is None:
            return node
        inner, fields = peeled
        return BufferStore(node.buffer, Cast(value.dtype, requant(inner, fields, bits)), node.indices)


def fold_requant_store(func: PrimFunc) -> PrimFunc:
    """Move the shift / ReLU / clip tail of every fused result store of ``func`` into its STORE."""
    if not dict(func.attrs).get(ATTR, True):
        return func
    return func.with_body(_Fold().visit(func.body))
