"""tensorize: replace a loop nest by a declared tensor intrinsic.

A :class:`TensorIntrin` pairs a TE description of what the hardware instruction computes
with a function producing the TIR that does it. Tensorizing a loop checks that the
perfect loop nest below it computes exactly the description (same loop extents and
iterator kinds, same expression tree, buffers read at the same indices up to a constant
per-dimension offset fixed by the outer loops; a buffer of higher rank matches on its
trailing dimensions), then replaces the nest by the produced TIR, called with buffer
views that start at those offsets. The update block left by ``decompose_reduction``
matches a reduction description without its init (no reset is emitted).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..te.lower import lower_to_func
from ..te.tensor import Tensor
from ..tir.arith import Analyzer
from ..tir.functor import child_fields, substitute, uses_var
from ..tir.ir import (EQ, Block, BlockRealize, Buffer, BufferLoad, BufferStore, For, IfThenElse,
                      IntImm, IterKind, Node, PrimExpr, PrimFunc, Stmt, Var, all_of, seq)
from .errors import TensorizeError
from .loop_transform import get_loop
from .tree import blocks_in, replace

Impl = Callable[[list[Buffer], list[Buffer]], Stmt]


@dataclass
class TensorIntrin:
    """``desc``: the output tensor of a te.compute describing the instruction.
    ``impl(ins, outs)``: the TIR doing it (for a reduction: accumulating into ``outs``).
    ``reset(outs)``: for a reduction, the TIR setting ``outs`` to the identity."""

    name: str
    desc: Tensor
    impl: Impl
    reset: Callable[[list[Buffer]], Stmt] | None = None

    def description(self) -> tuple[PrimFunc, BlockRealize, list[For]]:
        func, _ = lower_to_func([self.desc], name=self.name)
        blocks = blocks_in(func.body)
        if len(blocks) != 1:
            raise TensorizeError(f"intrinsic {self.name!r}: the description must be a single "
                                 f"te.compute over placeholders")
        r, path = blocks[0]
        return func, r, [s for s in path if isinstance(s, For)]


def _mismatch(intrin: TensorIntrin, why: str) -> TensorizeError:
    return TensorizeError(f"tensorize pattern mismatch with intrinsic {intrin.name!r}: {why}; "
                          f"split/reorder so the loops below the tensorized loop have the "
                          f"intrinsic's shape and order")


class _Matcher:
    def __init__(self, intrin: TensorIntrin, desc_vars: set[Var], an: Analyzer):
        self.intrin, self.desc_vars, self.an = intrin, desc_vars, an
        self.buffers: dict[Buffer, Buffer] = {}
        self.offsets: dict[Buffer, list[PrimExpr]] = {}

    def fail(self, why: str) -> TensorizeError:
        return _mismatch(self.intrin, why)

    def access(self, d: Buffer, t: Buffer, d_idx: tuple, t_idx: tuple) -> None:
        if self.buffers.setdefault(d, t) is not t:
            raise self.fail(f"{d.name} of the description matches both "
                            f"{self.buffers[d].name} and {t.name}")
        if d.dtype != t.dtype or len(d_idx) > len(t_idx):
            raise self.fail(f"{t.name} ({t.dtype}, {len(t_idx)}-D) does not match {d.name} "
                            f"({d.dtype}, {len(d_idx)}-D)")
        # A higher-rank buffer matches on its trailing dimensions; its leading indices are
        # offsets fixed by the outer loops (e.g. the tile position in a packed layout).
        lead = len(t_idx) - len(d_idx)
        offs = [self.an.simplify(ti) for ti in t_idx[:lead]] + \
            [self.an.simplify(ti - di) for ti, di in zip(t_idx[lead:], d_idx)]
        for off, ti in zip(offs, t_idx):
            if uses_var(off, self.desc_vars):
                raise self.fail(f"index {ti} of {t.name} is not the description's index plus "
                                f"an offset fixed outside the tensorized loops")
        old = self.offsets.setdefault(d, offs)
        if any(not self.an.can_prove(EQ(a, b)) for a, b in zip(old, offs)):
            raise self.fail(f"{t.name} is accessed at inconsistent offsets")

    def match(self, d: Any, t: Any) -> None:
        if isinstance(d, (BufferLoad, BufferStore)) and type(d) is type(t):
            self.access(d.buffer, t.buffer, d.indices, t.indices)
            if isinstance(d, BufferStore):
                self.match(d.value, t.value)
            return
        if type(d) is not type(t):
            raise self.fail(f"found {t} where the description has {d}")
        if isinstance(d, Var):
            if d is not t:
                raise self.fail(f"variable {t} does not match {d}")
            return
        if isinstance(d, Node):
            for n in child_fields(type(d)):
                self.match(getattr(d, n), getattr(t, n))
        elif isinstance(d, tuple):
            if len(d) != len(t):
                raise self.fail(f"{t} does not match {d}")
            for x, y in zip(d, t):
                self.match(x, y)
        elif d != t:
            raise self.fail(f"{t!r} does not match {d!r}")


def _nest_below(loop: For, intrin: TensorIntrin) -> tuple[list[For], BlockRealize]:
    loops, node = [loop], loop.body
    while isinstance(node, For):
        loops.append(node)
        node = node.body
    if not isinstance(node, BlockRealize):
        raise _mismatch(intrin, f"the loops below {loop.loop_var.name!r} are not a perfect "
                                f"nest around one block")
    return loops, node


def tensorize(func: PrimFunc, var: Var, intrin: TensorIntrin) -> PrimFunc:
    """Replace the loop nest rooted at ``var`` by ``intrin``'s implementation."""
    loop, _ = get_loop(func, var)
    loops, r = _nest_below(loop, intrin)
    dfunc, dr, dloops = intrin.description()
    divs = dr.block.iter_vars
    if len(loops) != len(dloops):
        raise _mismatch(intrin, f"{len(loops)} loops below the tensorized loop, the "
                                f"description has {len(dloops)}")
    an = Analyzer()
    for lp, dl in zip(loops, dloops):
        if not an.can_prove(EQ(lp.extent, dl.extent)):
            raise _mismatch(intrin, f"loop {lp.loop_var.name!r} has extent {lp.extent}, the "
                                    f"description's loop {dl.loop_var.name!r} has {dl.extent}")
    if not (isinstance(r.predicate, IntImm) and r.predicate.value):
        raise _mismatch(intrin, f"the block is guarded by {r.predicate} (a split that does not "
                                f"divide); use factors that divide the extent")
    # Each target iterator = base (outer loops only) + at most one tensorized loop.
    inner = {lp.loop_var: k for k, lp in enumerate(loops)}
    zero = {v: IntImm(0) for v in inner}
    dvars = [dv.var for dv in divs]
    vmap: dict[Var, PrimExpr] = {}
    bases: dict[Var, PrimExpr] = {}
    used: set[int] = set()
    for iv, val in zip(r.block.iter_vars, r.iter_values):
        base = an.simplify(substitute(val, zero))
        rest = an.simplify(val - base)
        bases[iv.var] = base
        if isinstance(rest, IntImm) and rest.value == 0:
            vmap[iv.var] = base
            continue
        k = inner.get(rest) if isinstance(rest, Var) else None
        if k is None or k in used:
            raise _mismatch(intrin, f"iterator {iv.var.name} = {val} does not step by one "
                                    f"tensorized loop")
        if divs[k].kind != iv.kind:
            raise _mismatch(intrin, f"loop {loops[k].loop_var.name!r} drives a {iv.kind.value} "
                                    f"iterator, the description's is {divs[k].kind.value}")
        used.add(k)
        vmap[iv.var] = an.simplify(base + dvars[k])
    if len(used) != len(loops):
        raise _mismatch(intrin, "a tensorized loop drives no iterator of the block")
    m = _Matcher(intrin, set(dvars), an)
    target_body = substitute(r.block.body, vmap)
    m.match(dr.block.body, target_body)
    if dr.block.init is None and r.block.init is not None:
        raise _mismatch(intrin, "the block is a reduction, the description is not")
    # A reduction block without init is the update left by decompose_reduction: it matches
    # the description's body alone and gets no reset.
    decomposed = dr.block.init is not None and r.block.init is None
    if dr.block.init is not None and not decomposed:
        m.match(dr.block.init, substitute(r.block.init, vmap))
    views = {d: _view(d, t, m.offsets[d], intrin.name, an) for d, t in m.buffers.items()}
    ins = [views[p] for p in dfunc.params[:-1] if p in views]
    outs = [views[dfunc.params[-1]]]
    stmt = intrin.impl(ins, outs)
    if dr.block.init is not None and not decomposed:
        if intrin.reset is None:
            raise TensorizeError(f"intrinsic {intrin.name!r} describes a reduction but has no "
                                 f"reset; declare TensorIntrin(..., reset=...)")
        first = an.simplify(all_of(*(EQ(bases[iv.var], iv.min) for iv in r.block.iter_vars
                                     if iv.kind == IterKind.REDUCE)))
        reset = intrin.reset(outs)
        init = reset if isinstance(first, IntImm) and first.value else IfThenElse(first, reset)
        stmt = seq(init, stmt)
    block = Block(f"{r.block.name}_{intrin.name}", (), stmt)
    new = BlockRealize((), all_of(), block)
    return func.with_body(replace(func.body, loop, new))  # type: ignore[arg-type]


def _view(d: Buffer, t: Buffer, offsets: list[PrimExpr], tag: str, an: Analyzer) -> Buffer:
    """A view of ``t``'s trailing dimensions with ``d``'s shape, starting at ``offsets``."""
    return Buffer(t.data, f"{t.name}_{tag}", d.shape, t.dtype, t.effective_strides()[t.ndim - d.ndim:],
                  an.simplify(t.flat_index(tuple(offsets))), t.scope)
