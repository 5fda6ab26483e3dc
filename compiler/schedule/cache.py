"""cache_read / cache_write: stage a buffer through a copy in another memory scope."""
from __future__ import annotations

from dataclasses import replace as dc_replace

from ..tir.functor import Mutator
from ..tir.ir import (Allocate, Block, BlockRealize, Buffer, BufferLoad, BufferStore, For,
                      ForKind, IntImm, IterKind, IterVar, PrimFunc, Stmt, Var, all_of,
                      decl_buffer, seq)
from .compute_location import check_order, get_block
from .errors import CacheError
from .tree import blocks_in, contains, read_buffers, replace, rewrap, strip_root, write_buffers


def unique_block_name(func: PrimFunc, base: str) -> str:
    names = {r.block.name for r, _ in blocks_in(func.body)}
    out, n = base, 0
    while out in names:
        n += 1
        out = f"{base}_{n}"
    return out


def copy_nest(src: Buffer, dst: Buffer, name: str) -> Stmt:
    """``for ax...: block name: dst[v...] = src[v...]`` over the whole shape."""
    ivs = tuple(IterVar(Var(f"v{k}"), IntImm(0), s, IterKind.SPATIAL)
                for k, s in enumerate(src.shape))
    idx = tuple(iv.var for iv in ivs)
    loops = tuple(Var(f"{name}_ax{k}") for k in range(len(ivs)))
    stmt: Stmt = BlockRealize(loops, all_of(),
                              Block(name, ivs, BufferStore(dst, BufferLoad(src, idx), idx)))
    for lv, iv in reversed(list(zip(loops, ivs))):
        stmt = For(lv, IntImm(0), iv.extent, ForKind.SERIAL, stmt)
    return stmt


class _SwapBuffer(Mutator):
    def __init__(self, old: Buffer, new: Buffer, loads_only: bool):
        self.old, self.new, self.loads_only = old, new, loads_only

    def visit_BufferLoad(self, e: BufferLoad) -> BufferLoad:
        idx = tuple(self.visit(i) for i in e.indices)
        return BufferLoad(self.new if e.buffer is self.old else e.buffer, idx)

    def visit_BufferStore(self, s: BufferStore) -> BufferStore:
        buf = self.new if s.buffer is self.old and not self.loads_only else s.buffer
        return BufferStore(buf, self.visit(s.value), tuple(self.visit(i) for i in s.indices))


def cache_read(func: PrimFunc, buffer: Buffer, scope: str,
               readers: list[str] | None = None) -> tuple[PrimFunc, str]:
    """Copy ``buffer`` into a new buffer in ``scope`` that the given reader blocks (default:
    all) read instead; returns the copy block's name (compute_at it to stage tiles)."""
    what = f"cache_read({buffer.name!r}, {scope!r})"
    all_readers = [r.block.name for r, _ in blocks_in(func.body) if buffer in read_buffers(r)]
    chosen = all_readers if readers is None else list(readers)
    for name in chosen:
        if name not in all_readers:
            raise CacheError(f"{what}: block {name!r} does not read {buffer.name}; its readers "
                             f"are {all_readers}")
    if not chosen:
        raise CacheError(f"{what}: no block reads {buffer.name}")
    name = unique_block_name(func, f"{buffer.name}_{scope}")
    cached = decl_buffer(buffer.shape, buffer.dtype, name, scope)
    body = func.body
    for rname in chosen:
        r, _ = get_block(func.with_body(body), rname)
        body = replace(body, r, _SwapBuffer(buffer, cached, True).visit(r))  # type: ignore
    wrappers, stmts = strip_root(body)  # type: ignore[arg-type]
    pos = next(k for k, s in enumerate(stmts)
               if any(r.block.name in chosen for r, _ in blocks_in(s)))
    if any(buffer in write_buffers(r) for r, _ in blocks_in(stmts[pos])):
        raise CacheError(f"{what}: {buffer.name} is produced inside the loops of its reader; "
                         f"call cache_read before compute_at of the producer")
    stmts.insert(pos, copy_nest(buffer, cached, name))
    new = rewrap(wrappers, [Allocate(cached, seq(*stmts))])
    check_order(new, name, what)
    return func.with_body(new), name


def cache_write(func: PrimFunc, block_name: str, scope: str) -> tuple[PrimFunc, str]:
    """Make block ``block_name`` compute into a new buffer in ``scope`` and add a block
    (taking the original name) that copies the result out. Returns the computing block's
    new name."""
    what = f"cache_write({block_name!r}, {scope!r})"
    r, _ = get_block(func, block_name)
    outs = write_buffers(r)
    if len(outs) != 1 or not r.block.iter_vars:
        raise CacheError(f"{what}: the block must be a stage writing exactly one buffer")
    buffer = outs[0]
    writers = [x.block.name for x, _ in blocks_in(func.body) if buffer in write_buffers(x)]
    if writers != [block_name]:
        raise CacheError(f"{what}: {buffer.name} is written by several blocks {writers}")
    new_name = unique_block_name(func, f"{block_name}_{scope}")
    cached = decl_buffer(buffer.shape, buffer.dtype, new_name, scope)
    swapped = _SwapBuffer(buffer, cached, False).visit(r)
    swapped = BlockRealize(swapped.iter_values, swapped.predicate,
                           dc_replace(swapped.block, name=new_name))
    body = replace(func.body, r, swapped)
    wrappers, stmts = strip_root(body)  # type: ignore[arg-type]
    pos = next(k for k, s in enumerate(stmts) if contains(s, swapped))
    stmts.insert(pos + 1, copy_nest(cached, buffer, block_name))
    new = rewrap(wrappers, [Allocate(cached, seq(*stmts))])
    return func.with_body(new), new_name
