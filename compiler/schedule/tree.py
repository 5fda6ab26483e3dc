"""Finding and replacing statements in a program (by identity) and per-block accesses."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from ..tir.functor import child_fields, collect, stmt_children, substitute
from ..tir.ir import (Allocate, AttrStmt, Block, BlockRealize, Buffer, BufferHandle, BufferLoad,
                      BufferStore, For, PrimExpr, SeqStmt, Stmt, Var, seq)

Path = list[Stmt]


def iter_stmts(root: Stmt, path: Path | None = None) -> Iterator[tuple[Stmt, Path]]:
    """Every statement in pre-order with its ancestors (outermost first)."""
    path = [] if path is None else path
    yield root, path
    for c in stmt_children(root):
        yield from iter_stmts(c, path + [root])


def find_loop(root: Stmt, var: Var) -> tuple[For, Path] | None:
    for s, path in iter_stmts(root):
        if isinstance(s, For) and s.loop_var is var:
            return s, path
    return None


def find_block(root: Stmt, name: str) -> tuple[BlockRealize, Path] | None:
    for s, path in iter_stmts(root):
        if isinstance(s, BlockRealize) and s.block.name == name:
            return s, path
    return None


def blocks_in(root: Stmt) -> list[tuple[BlockRealize, Path]]:
    return [(s, p) for s, p in iter_stmts(root) if isinstance(s, BlockRealize)]


def loops_of(path: Path) -> list[For]:
    return [s for s in path if isinstance(s, For)]


def replace(root: Stmt, old: Stmt, new: Stmt | None) -> Stmt | None:
    """``root`` with the statement ``old`` (by identity) replaced by ``new``; with ``new``
    None it is removed, and loops left empty by the removal disappear too."""
    if root is old:
        return new
    if isinstance(root, SeqStmt):
        parts = [replace(c, old, new) for c in root.stmts]
        if all(a is b for a, b in zip(parts, root.stmts)):
            return root
        kept = [p for p in parts if p is not None]
        return seq(*kept) if kept else None
    kids = stmt_children(root)
    if not kids:
        return root
    changed = False
    values = []
    for name in child_fields(type(root)):
        v = getattr(root, name)
        if isinstance(v, Stmt):
            nv = replace(v, old, new)
            if nv is None and name in ("body", "then_case", "block"):
                return None
            changed |= nv is not v
            values.append(nv)
        else:
            values.append(v)
    return type(root)(*values) if changed else root


def strip_root(body: Stmt) -> tuple[list[Stmt], list[Stmt]]:
    """Split the function body into its leading Allocate/AttrStmt wrappers and the list of
    top-level statements inside them."""
    wrappers: list[Stmt] = []
    while isinstance(body, (Allocate, AttrStmt)):
        wrappers.append(body)
        body = body.body
    return wrappers, list(body.stmts) if isinstance(body, SeqStmt) else [body]


def rewrap(wrappers: list[Stmt], stmts: list[Stmt]) -> Stmt:
    body = seq(*stmts)
    for w in reversed(wrappers):
        body = type(w)(*[body if n == "body" else getattr(w, n) for n in child_fields(type(w))])
    return body


@dataclass(frozen=True)
class Access:
    """One access of a block, indices in terms of the loop variables around the block
    (``indices`` is None for a whole-buffer access by an opaque call)."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...] | None
    write: bool


def block_accesses(r: BlockRealize) -> list[Access]:
    b: Block = r.block
    vmap = {iv.var: v for iv, v in zip(b.iter_vars, r.iter_values)}
    out: list[Access] = []
    for part in (b.init, b.body):
        if part is None:
            continue
        for n in collect(part, lambda n: isinstance(n, (BufferLoad, BufferStore, BufferHandle))):
            if isinstance(n, BufferHandle):
                out.append(Access(n.buffer, None, False))
                out.append(Access(n.buffer, None, True))
            else:
                idx = tuple(substitute(i, vmap) for i in n.indices)  # type: ignore[attr-defined]
                out.append(Access(n.buffer, idx, isinstance(n, BufferStore)))  # type: ignore
    return out


def _accumulators(r: BlockRealize, accesses: list[Access]) -> set[Buffer]:
    # A reduction block reading its own output (the accumulator) is not a consumer of it.
    if r.block.init is None:
        return set()
    return {a.buffer for a in accesses if a.write}


def read_buffers(r: BlockRealize) -> list[Buffer]:
    """Buffers the block consumes (its own accumulator excluded)."""
    acc = block_accesses(r)
    own = _accumulators(r, acc)
    out: list[Buffer] = []
    for a in acc:
        if not a.write and a.buffer not in out and a.buffer not in own:
            out.append(a.buffer)
    return out


def write_buffers(r: BlockRealize) -> list[Buffer]:
    out: list[Buffer] = []
    for a in block_accesses(r):
        if a.write and a.buffer not in out:
            out.append(a.buffer)
    return out


def reads(r: BlockRealize, buffer: Buffer) -> bool:
    return buffer in read_buffers(r)


def writes(r: BlockRealize, buffer: Buffer) -> bool:
    return buffer in write_buffers(r)


def contains(root: Stmt, target: Stmt) -> bool:
    return any(s is target for s, _ in iter_stmts(root))


def stmt_reads(root: Stmt, buffer: Buffer) -> bool:
    """Whether a block inside ``root`` reads ``buffer``."""
    return any(reads(r, buffer) for r, _ in blocks_in(root))
