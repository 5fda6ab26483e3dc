"""Where a stage is computed: compute_at, compute_root, compute_inline."""
from __future__ import annotations

from ..tir.arith import Analyzer, Interval
from ..tir.functor import Mutator, substitute
from ..tir.ir import (Allocate, Block, BlockRealize, Buffer, BufferHandle, BufferLoad,
                      BufferStore, For, ForKind, IntImm, IterKind, IterVar, PrimExpr, PrimFunc,
                      SeqStmt, Stmt, Var, all_of, seq)
from .errors import BlockNotFoundError, ComputeAtError, InlineError
from .loop_transform import get_loop
from .region import bind_loops, read_region
from .tree import (Path, blocks_in, find_block, find_loop, iter_stmts, loops_of, read_buffers,
                   reads, replace, rewrap, stmt_reads, strip_root, write_buffers)


def get_block(func: PrimFunc, name: str) -> tuple[BlockRealize, Path]:
    found = find_block(func.body, name)
    if found is None:
        names = [r.block.name for r, _ in blocks_in(func.body)]
        raise BlockNotFoundError(f"no block named {name!r}; the blocks are {names}")
    return found


def exclusive_nest(r: BlockRealize, path: Path) -> Stmt:
    """The outermost statement whose subtree holds nothing but ``r`` and its own loops."""
    top: Stmt = r
    for s in reversed(path):
        if isinstance(s, For) and s.body is top:
            top = s
        else:
            break
    return top


def output_dims(block: Block, what: str) -> tuple[Buffer, tuple[IterVar, ...]]:
    """The buffer a block writes and the iterator indexing each of its dimensions."""
    stores = [s for s, _ in iter_stmts(block.body) if isinstance(s, BufferStore)]
    by_var = {iv.var: iv for iv in block.iter_vars}
    if not stores:
        raise ComputeAtError(f"{what}: block {block.name!r} stores nothing")
    buf = stores[0].buffer
    dims: tuple[IterVar, ...] = ()
    for st in stores:
        ivs = tuple(by_var.get(i) for i in st.indices)  # type: ignore[call-overload]
        if st.buffer is not buf or None in ivs or len(set(map(id, ivs))) != len(ivs) or \
                any(iv.kind != IterKind.SPATIAL for iv in ivs):  # type: ignore[union-attr]
            raise ComputeAtError(
                f"{what}: block {block.name!r} must store one buffer at its own spatial "
                f"iterators (like a te.compute); this one is a scan, a tensorized region or "
                f"a hand-written block")
        dims = ivs  # type: ignore[assignment]
    return buf, dims


def _regenerate(r: BlockRealize, dims: tuple[IterVar, ...], region: list[Interval],
                an: Analyzer, what: str) -> Stmt:
    """New loops running ``r``'s block over ``region`` (spatial) and its full reduction."""
    block = r.block
    lo_ext: dict[Var, tuple[PrimExpr, int, PrimExpr | None]] = {}
    for iv, box in zip(dims, region):
        if box.min is None or box.max is None:
            raise ComputeAtError(f"{what}: cannot bound the region of {iv.var.name} the "
                                 f"consumers read; their indices are not affine in the loops")
        ext = an.simplify(box.max - box.min + 1)
        if isinstance(ext, IntImm):
            lo_ext[iv.var] = (box.min, max(ext.value, 1), None)
        else:
            hi = an.bound(ext)[1]
            if hi is None:
                raise ComputeAtError(f"{what}: the region of {iv.var.name} has no constant "
                                     f"upper bound ({ext}); compute at an inner loop")
            lo_ext[iv.var] = (box.min, hi, ext)
    loops: list[tuple[Var, PrimExpr, PrimExpr]] = []
    values: list[PrimExpr] = []
    preds: list[PrimExpr] = []
    for iv in block.iter_vars:
        name = iv.var.name
        base = name[1:] if name.startswith("v") and name[1:2].isalpha() else name
        t = Var(base + "_c", iv.var.dtype)
        if iv.var in lo_ext:
            lo, ext, sym_ext = lo_ext[iv.var]
            loops.append((t, IntImm(0, t.dtype), IntImm(ext, t.dtype)))
            value = an.simplify(lo + t)
            an.bind(t, 0, ext - 1)
            if sym_ext is not None:
                preds.append(t < sym_ext)
            for cond in (value >= iv.min, value < iv.min + iv.extent):
                if not an.can_prove(cond):
                    preds.append(an.simplify(cond))
        else:
            loops.append((t, iv.min, iv.extent))
            value = t
        values.append(value)
    order = [k for k, iv in enumerate(block.iter_vars) if iv.var in lo_ext] + \
            [k for k, iv in enumerate(block.iter_vars) if iv.var not in lo_ext]
    stmt: Stmt = BlockRealize(tuple(values), all_of(*preds), block)
    for k in reversed(order):
        t, lo_, ext_ = loops[k]
        stmt = For(t, lo_, ext_, ForKind.SERIAL, stmt)
    return stmt


def check_order(body: Stmt, name: str, what: str) -> None:
    """The block must run after the writers of its inputs and before its readers."""
    order = [r for r, _ in blocks_in(body)]
    pos = next(k for k, r in enumerate(order) if r.block.name == name)
    me = order[pos]
    outs = write_buffers(me)
    for r in order[pos + 1:]:
        for b in read_buffers(me):
            if b in write_buffers(r) and b not in outs:
                raise ComputeAtError(f"{what}: block {r.block.name!r} writes {b.name}, an input "
                                     f"of {name!r}, only after the new position; move "
                                     f"{r.block.name!r} first (compute_at it further out)")
    for r in order[:pos]:
        for b in outs:
            if reads(r, b):
                raise ComputeAtError(f"{what}: block {r.block.name!r} reads {b.name} before "
                                     f"{name!r} would compute it")


def _insert_before_reader(stmts: list[Stmt], nest: Stmt, buf: Buffer) -> list[Stmt]:
    pos = next((k for k, s in enumerate(stmts) if stmt_reads(s, buf)), len(stmts))
    return stmts[:pos] + [nest] + stmts[pos:]


def _take(func: PrimFunc, name: str, what: str) -> tuple[BlockRealize, Buffer,
                                                          tuple[IterVar, ...], Stmt, Stmt]:
    r, path = get_block(func, name)
    if not r.block.iter_vars:
        raise ComputeAtError(f"{what}: block {name!r} is opaque (extern or tensorized) and "
                             f"cannot be moved")
    buf, dims = output_dims(r.block, what)
    if any(buf is p for p in func.params):
        raise ComputeAtError(f"{what}: block {name!r} writes the function output {buf.name}; "
                             f"only intermediate stages can be moved (use cache_write to get "
                             f"a movable stage)")
    top = exclusive_nest(r, path)
    rest = replace(func.body, top, None)
    if rest is None:
        raise ComputeAtError(f"{what}: block {name!r} is the whole program")
    return r, buf, dims, top, rest


def compute_at(func: PrimFunc, name: str, var: Var) -> PrimFunc:
    """Compute block ``name`` inside loop ``var``, for just the region its consumers under
    that loop read in one iteration."""
    what = f"compute_at({name!r}, {getattr(var, 'name', var)!r})"
    r, buf, dims, top, rest = _take(func, name, what)
    loop, _ = get_loop(func, var)
    if loop is top or any(s is loop for s, _ in iter_stmts(top)):
        raise ComputeAtError(f"{what}: the loop belongs to {name!r}'s own loop nest; pick a "
                             f"loop of a consumer")
    found = find_loop(rest, var)
    assert found is not None
    loop, lpath = found
    under = {rr.block.name for rr, _ in blocks_in(loop.body)}
    consumers = [rr.block.name for rr, _ in blocks_in(rest) if reads(rr, buf)]
    if not consumers:
        raise ComputeAtError(f"{what}: no block reads {buf.name}, so there is no region to "
                             f"compute; use compute_root or remove the stage")
    outside = [c for c in consumers if c not in under]
    if outside:
        raise ComputeAtError(
            f"{what}: this position cannot cover the region consumer {outside[0]!r} reads: "
            f"it reads {buf.name} outside loop {var.name!r}. Compute at a loop enclosing every "
            f"consumer, or give that consumer its own copy with cache_read")
    an = Analyzer()
    bind_loops(an, loops_of(lpath) + [loop])
    region = read_region(loop.body, buf, an)
    assert region is not None
    nest = _regenerate(r, dims, region, an, what)
    stmts = list(loop.body.stmts) if isinstance(loop.body, SeqStmt) else [loop.body]
    new_loop = For(loop.loop_var, loop.min, loop.extent, loop.kind,
                   seq(*_insert_before_reader(stmts, nest, buf)), loop.annotations)
    body = replace(rest, loop, new_loop)
    assert body is not None
    check_order(body, name, what)
    return func.with_body(body)


def compute_root(func: PrimFunc, name: str) -> PrimFunc:
    """Compute block ``name`` over its whole domain at the top level of the program, just
    before its first consumer."""
    what = f"compute_root({name!r})"
    r, buf, dims, _, rest = _take(func, name, what)
    an = Analyzer()
    region = [Interval.from_range(iv.min, iv.extent) for iv in dims]
    nest = _regenerate(r, dims, region, an, what)
    wrappers, stmts = strip_root(rest)
    body = rewrap(wrappers, _insert_before_reader(stmts, nest, buf))
    check_order(body, name, what)
    return func.with_body(body)


class _Inline(Mutator):
    def __init__(self, buf: Buffer, params: tuple[Var, ...], value: PrimExpr):
        self.buf, self.params, self.value = buf, params, value

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        if e.buffer is not self.buf:
            return self.generic(e)
        idx = tuple(self.visit(i) for i in e.indices)
        return substitute(self.value, dict(zip(self.params, idx)))

    def visit_BufferHandle(self, e: BufferHandle) -> PrimExpr:
        if e.buffer is self.buf:
            raise InlineError(f"{self.buf.name} is passed whole to an opaque call and cannot "
                              f"be inlined; keep it as a stage")
        return e


def drop_allocation(body: Stmt, buf: Buffer) -> Stmt:
    wrappers, stmts = strip_root(body)
    kept = [w for w in wrappers if not (isinstance(w, Allocate) and w.buffer is buf)]
    return rewrap(kept, stmts)


def compute_inline(func: PrimFunc, name: str) -> PrimFunc:
    """Substitute an element-wise stage's expression into its consumers and remove it."""
    what = f"compute_inline({name!r})"
    r, path = get_block(func, name)
    b = r.block
    if b.init is not None or any(iv.kind != IterKind.SPATIAL for iv in b.iter_vars):
        raise InlineError(f"{what}: {name!r} is a reduction or scan; only element-wise stages "
                          f"can be inlined (compute_at it instead)")
    st = b.body
    if not isinstance(st, BufferStore) or tuple(st.indices) != tuple(iv.var for iv in
                                                                   b.iter_vars):
        raise InlineError(f"{what}: {name!r} must be a single store at its own iterators")
    if any(st.buffer is p for p in func.params):
        raise InlineError(f"{what}: {name!r} writes the function output {st.buffer.name}; an "
                          f"output cannot be inlined")
    rest = replace(func.body, exclusive_nest(r, path), None)
    if rest is None:
        raise InlineError(f"{what}: nothing consumes {st.buffer.name}")
    params = tuple(iv.var for iv in b.iter_vars)
    body = _Inline(st.buffer, params, st.value).visit(rest)
    return func.with_body(drop_allocation(body, st.buffer))
