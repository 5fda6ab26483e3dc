"""Readable, Python-like listing of IR nodes (``str(node)`` uses it).

Variables that share a name get numeric suffixes so the listing is unambiguous.
"""
from __future__ import annotations

from typing import Any

from . import dtype as dt
from .ir import (EQ, GE, GT, LE, LT, NE, Add, Allocate, And, AttrStmt, Block, BlockRealize,
                 Broadcast, Buffer, BufferHandle, BufferLoad, BufferStore, Call, Cast, Div,
                 Evaluate, FloatImm, FloorDiv, FloorMod, For, ForKind, IfThenElse, IntImm,
                 IterVar, LetStmt, Max, Min, Mul, Node, Not, Or, PrimFunc, Ramp, Select,
                 SeqStmt, Stmt, StringImm, Sub, Var)

_INFIX = {Add: "+", Sub: "-", Mul: "*", Div: "/", FloorDiv: "//", FloorMod: "%", EQ: "==",
          NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">=", And: "and", Or: "or"}


class _Printer:
    def __init__(self) -> None:
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        self.lines: list[str] = []

    def name(self, obj: Var | Buffer) -> str:
        # Views of one storage (e.g. a buffer and its flattened form) print alike.
        key = id(obj.data) if isinstance(obj, Buffer) else id(obj)
        if key not in self.names:
            base = obj.name.replace(" ", "_") or "v"
            name, n = base, 0
            while name in self.used:
                n += 1
                name = f"{base}_{n}"
            self.used.add(name)
            self.names[key] = name
        return self.names[key]

    # -- expressions
    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return self.name(e)
        if isinstance(e, IntImm):
            if dt.is_bool(e.dtype):
                return "True" if e.value else "False"
            return str(e.value) if e.dtype == "int32" else f"{e.dtype}({e.value})"
        if isinstance(e, FloatImm):
            return f"{e.value!r}f" if e.dtype == "float32" else f"{e.dtype}({e.value!r})"
        if isinstance(e, StringImm):
            return repr(e.value)
        op = _INFIX.get(type(e))
        if op is not None:
            return f"({self.expr(e.a)} {op} {self.expr(e.b)})"
        if isinstance(e, (Min, Max)):
            return f"{type(e).__name__.lower()}({self.expr(e.a)}, {self.expr(e.b)})"
        if isinstance(e, Not):
            return f"not {self.expr(e.a)}"
        if isinstance(e, Select):
            return (f"select({self.expr(e.condition)}, {self.expr(e.true_value)}, "
                    f"{self.expr(e.false_value)})")
        if isinstance(e, Cast):
            return f"{e.dtype}({self.expr(e.value)})"
        if isinstance(e, Call):
            return f"{e.op}({', '.join(self.expr(a) for a in e.args)})"
        if isinstance(e, BufferLoad):
            return f"{self.name(e.buffer)}[{', '.join(self.expr(i) for i in e.indices)}]"
        if isinstance(e, BufferHandle):
            return f"&{self.name(e.buffer)}"
        if isinstance(e, Ramp):
            return f"ramp({self.expr(e.base)}, {self.expr(e.stride)}, {e.lanes})"
        if isinstance(e, Broadcast):
            return f"broadcast({self.expr(e.value)}, {e.lanes})"
        if isinstance(e, Buffer):
            return self.name(e)
        if isinstance(e, tuple):
            return "(" + ", ".join(self.expr(x) for x in e) + ")"
        if isinstance(e, Node):
            # Nodes defined outside this module (e.g. te.Reduce) print their fields.
            from .functor import child_fields
            inner = ", ".join(self.expr(getattr(e, f)) for f in child_fields(type(e)))
            return f"{type(e).__name__}({inner})"
        return repr(e)

    def buffer_decl(self, b: Buffer) -> str:
        shape = ", ".join(self.expr(s) for s in b.shape)
        extra = ""
        if b.strides:
            extra += f", strides=({', '.join(self.expr(s) for s in b.strides)})"
        if not (isinstance(b.elem_offset, IntImm) and b.elem_offset.value == 0):
            extra += f", offset={self.expr(b.elem_offset)}"
        if b.scope != "global":
            extra += f", scope={b.scope!r}"
        return f"{self.name(b)}: {b.dtype}[{shape}]{extra}"

    # -- statements
    def emit(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def stmt(self, s: Stmt | None, depth: int) -> None:
        if s is None:
            return
        if isinstance(s, SeqStmt):
            for c in s.stmts:
                self.stmt(c, depth)
        elif isinstance(s, For):
            kind = "" if s.kind == ForKind.SERIAL else f" {s.kind.value}"
            ann = "".join(f" @{k}={v!r}" for k, v in s.annotations)
            lo, ext = self.expr(s.min), self.expr(s.extent)
            if lo == "0":
                rng = f"range({ext})"
            elif isinstance(s.min, IntImm) and isinstance(s.extent, IntImm):
                rng = f"range({lo}, {s.min.value + s.extent.value})"
            else:
                rng = f"range({lo}, {lo} + {ext})"
            self.emit(depth, f"for {self.name(s.loop_var)} in {rng}{kind}{ann}:")
            self.stmt(s.body, depth + 1)
        elif isinstance(s, BufferStore):
            idx = ", ".join(self.expr(i) for i in s.indices)
            self.emit(depth, f"{self.name(s.buffer)}[{idx}] = {self.expr(s.value)}")
        elif isinstance(s, Allocate):
            self.emit(depth, f"alloc {self.buffer_decl(s.buffer)}")
            self.stmt(s.body, depth)
        elif isinstance(s, IfThenElse):
            self.emit(depth, f"if {self.expr(s.condition)}:")
            self.stmt(s.then_case, depth + 1)
            if s.else_case is not None:
                self.emit(depth, "else:")
                self.stmt(s.else_case, depth + 1)
        elif isinstance(s, LetStmt):
            self.emit(depth, f"{self.name(s.var)}: {s.var.dtype} = {self.expr(s.value)}")
            self.stmt(s.body, depth)
        elif isinstance(s, Evaluate):
            self.emit(depth, self.expr(s.value))
        elif isinstance(s, AttrStmt):
            node = self.expr(s.node) if isinstance(s.node, (Var, Buffer)) else repr(s.node)
            self.emit(depth, f"attr [{node}] {s.key} = {self.expr(s.value)}")
            self.stmt(s.body, depth)
        elif isinstance(s, BlockRealize):
            self.block(s, depth)
        elif isinstance(s, Block):
            self.block(BlockRealize((), IntImm(1, "bool"), s), depth)
        else:
            self.emit(depth, repr(s))

    def block(self, r: BlockRealize, depth: int) -> None:
        b = r.block
        binds = []
        for iv, val in zip(b.iter_vars, r.iter_values):
            kind = "" if iv.kind.value == "spatial" else f"{iv.kind.value} "
            binds.append(f"{self.name(iv.var)}={kind}{self.expr(val)}")
        pred = "" if isinstance(r.predicate, IntImm) and r.predicate.value else \
            f" if {self.expr(r.predicate)}"
        self.emit(depth, f"block {b.name}({', '.join(binds)}){pred}:")
        if b.init is not None:
            self.emit(depth + 1, "init:")
            self.stmt(b.init, depth + 2)
        self.stmt(b.body, depth + 1)

    def func(self, f: PrimFunc) -> None:
        params = ", ".join(self.buffer_decl(b) for b in f.params)
        self.emit(0, f"def {f.name}({params}):")
        self.stmt(f.body, 1)


def to_text(node: Node | IterVar) -> str:
    """The listing of a function, statement, buffer or expression."""
    p = _Printer()
    if isinstance(node, PrimFunc):
        p.func(node)
    elif isinstance(node, Stmt):
        p.stmt(node, 0)
    elif isinstance(node, Buffer):
        return p.buffer_decl(node)
    elif isinstance(node, IterVar):
        return f"{p.expr(node.var)} in [{p.expr(node.min)}, +{p.expr(node.extent)}) {node.kind.value}"
    else:
        return p.expr(node)
    return "\n".join(p.lines)
