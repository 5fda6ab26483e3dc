"""Generic traversal of IR trees: a functional mutator, a visitor and small helpers.

The mutator rebuilds only the nodes whose children changed, so an unchanged subtree is
returned as the very same object (cheap identity checks in passes).
"""
from __future__ import annotations

from dataclasses import fields
from typing import Any, Callable, Iterator

from .ir import Buffer, Node, PrimExpr, Stmt, Var

_FIELDS: dict[type, tuple[str, ...]] = {}
_MISSING = object()


def child_fields(cls: type) -> tuple[str, ...]:
    """Field names of a node class, in constructor order."""
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in fields(cls))
        _FIELDS[cls] = names
    return names


class Mutator:
    """Rebuild an IR tree bottom-up.

    Override ``visit_<ClassName>(self, node)`` for the node kinds to rewrite and call
    ``self.generic(node)`` inside to recurse into children. Buffers are left as they are
    unless ``visit_buffer`` is overridden.
    """

    _cache: dict[tuple[type, type], Any] = {}

    def visit(self, node: Any) -> Any:
        if isinstance(node, Node):
            if isinstance(node, Buffer):
                return self.visit_buffer(node)
            key = (type(self), type(node))
            cache = Mutator._cache
            method = cache.get(key, _MISSING)
            if method is _MISSING:
                method = getattr(type(self), "visit_" + type(node).__name__, None)
                cache[key] = method
            return method(self, node) if method is not None else self.generic(node)
        if isinstance(node, tuple):
            new = tuple(self.visit(x) for x in node)
            return node if all(a is b for a, b in zip(new, node)) else new
        return node

    def visit_buffer(self, buffer: Buffer) -> Buffer:
        return buffer

    def generic(self, node: Node) -> Node:
        if isinstance(node, Var):
            return node
        names = child_fields(type(node))
        old = [getattr(node, n) for n in names]
        new = [self.visit(v) for v in old]
        if all(a is b for a, b in zip(old, new)):
            return node
        return type(node)(*new)

    def expr(self, e: PrimExpr) -> PrimExpr:
        return self.visit(e)

    def stmt(self, s: Stmt) -> Stmt:
        return self.visit(s)


def _nodes_in(value: Any) -> Iterator[Node]:
    if isinstance(value, Node):
        yield value
    elif isinstance(value, tuple):
        for x in value:
            yield from _nodes_in(x)


def children(node: Any) -> Iterator[Node]:
    """Direct child nodes (Nodes inside fields and tuples), Buffers included."""
    if isinstance(node, tuple):
        yield from _nodes_in(node)
    elif isinstance(node, Node) and not isinstance(node, Var):
        for name in child_fields(type(node)):
            yield from _nodes_in(getattr(node, name))


def stmt_children(s: Stmt) -> list[Stmt]:
    """Direct child statements of a statement."""
    out: list[Stmt] = []
    for name in child_fields(type(s)):
        v = getattr(s, name)
        if isinstance(v, Stmt):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(x for x in v if isinstance(x, Stmt))
    return out


class _ReplaceNode(Mutator):
    def __init__(self, old: Node, new: Node):
        self.old, self.new = old, new

    def visit(self, n: Any) -> Any:
        return self.new if n is self.old else super().visit(n)


def replace_node(root: Any, old: Node, new: Node) -> Any:
    """``root`` with the node ``old`` (by identity) replaced by ``new``."""
    return _ReplaceNode(old, new).visit(root)


def walk(node: Any, fn: Callable[[Node], bool | None]) -> None:
    """Call ``fn`` on every node in pre-order; if it returns False, skip that subtree.

    Buffers are visited as nodes but their shape expressions are not entered."""
    stack = [node]
    while stack:
        n = stack.pop()
        if fn(n) is False or isinstance(n, Buffer):
            continue
        stack.extend(reversed(list(children(n))))


def collect(node: Any, pred: Callable[[Node], bool]) -> list[Node]:
    """All nodes satisfying ``pred`` in pre-order."""
    out: list[Node] = []
    walk(node, lambda n: out.append(n) if pred(n) else None)
    return out


class _PostOrderMap(Mutator):
    def __init__(self, fn: Callable[[Node], Node | None]):
        self.fn = fn

    def visit(self, n: Any) -> Any:
        out = super().visit(n)
        if isinstance(out, Node) and not isinstance(out, Buffer):
            repl = self.fn(out)
            return out if repl is None else repl
        return out


def post_order_map(node: Any, fn: Callable[[Node], Node | None]) -> Any:
    """Rebuild ``node`` bottom-up, replacing each rebuilt node ``n`` by ``fn(n)`` unless
    that returns None."""
    return _PostOrderMap(fn).visit(node)


class _Substitute(Mutator):
    def __init__(self, vmap: dict[Var, PrimExpr]):
        self.vmap = vmap
        self.buffers: dict[Buffer, Buffer] = {}

    def visit_Var(self, v: Var) -> PrimExpr:
        return self.vmap.get(v, v)

    def visit_buffer(self, b: Buffer) -> Buffer:
        # A view whose offset/shape/strides depend on a substituted variable (e.g. a
        # tensorize view inside a loop) must follow the substitution too.
        new = self.buffers.get(b)
        if new is None:
            fields_ = (b.shape, b.strides, b.elem_offset)
            if any(uses_var(f, set(self.vmap)) for f in fields_):
                new = Buffer(b.data, b.name, self.visit(b.shape), b.dtype, self.visit(b.strides),
                             self.visit(b.elem_offset), b.scope)
            else:
                new = b
            self.buffers[b] = new
        return new


def substitute(node: Any, vmap: dict[Var, PrimExpr]) -> Any:
    """Replace variables by expressions (Buffers are left alone)."""
    if not vmap:
        return node
    return _Substitute(vmap).visit(node)


def uses_var(node: Any, pred: Callable[[Var], bool] | set[Var]) -> bool:
    """Whether any variable in ``node`` satisfies ``pred`` (or is in the given set)."""
    test = pred.__contains__ if isinstance(pred, (set, frozenset, dict)) else pred
    found = False

    def visit(n: Node) -> bool:
        nonlocal found
        if found:
            return False
        if isinstance(n, Var) and test(n):
            found = True
        return True

    walk(node, visit)
    return found


def free_vars(node: Any) -> set[Var]:
    """All variables occurring in ``node`` (bound or not)."""
    return {n for n in collect(node, lambda n: isinstance(n, Var))}  # type: ignore[misc]


class _Freshen(_Substitute):
    def __init__(self) -> None:
        super().__init__({})

    def _fresh(self, v: Var) -> Var:
        new = Var(v.name, v.dtype)
        self.vmap[v] = new
        return new

    def generic(self, node: Node) -> Node:
        from .ir import For, LetStmt
        if isinstance(node, For):
            return For(self._fresh(node.loop_var), self.visit(node.min), self.visit(node.extent),
                       node.kind, self.visit(node.body), node.annotations)
        if isinstance(node, LetStmt):
            value = self.visit(node.value)
            return LetStmt(self._fresh(node.var), value, self.visit(node.body))
        return super().generic(node)


def fresh_copy(stmt: Stmt, vmap: dict[Var, PrimExpr] | None = None) -> Stmt:
    """A copy of ``stmt`` with ``vmap`` substituted and every loop/let variable bound inside
    it renamed to a fresh Var, so the copy can sit beside the original (unrolling, loop
    partitioning) without two loops sharing a variable."""
    f = _Freshen()
    f.vmap.update(vmap or {})
    return f.visit(stmt)
