"""Lower a tensor-expression graph to one PrimFunc of blocks in default loop nests.

Each compute becomes ``for axes: for reduce axes: block``; the block has its own
iterators (fresh variables) bound to the loop variables, while the loops reuse the te
axis variables so ``C.op.axis[0].var`` names the first loop of C in a fresh schedule.
"""
from __future__ import annotations

from typing import Sequence

from ..tir.arith import Analyzer
from ..tir.functor import Mutator, substitute
from ..tir.ir import (Allocate, Block, BlockRealize, Buffer, BufferLoad, BufferStore, For,
                      ForKind, IfThenElse, IntImm, IterKind, IterVar, PrimExpr, PrimFunc, Stmt,
                      Var, all_of, seq)
from .reduce import Reduce
from .tensor import ComputeOp, ExternOp, Operation, PlaceholderOp, ScanOp, Tensor, TensorError


def topo_ops(outputs: Sequence[Tensor]) -> list[Operation]:
    """Operations reachable from ``outputs``, producers before consumers."""
    order: list[Operation] = []
    state: dict[int, int] = {}

    def visit(op: Operation) -> None:
        mark = state.get(id(op), 0)
        if mark == 2:
            return
        if mark == 1:
            raise TensorError(f"the tensor graph has a cycle through {op.name!r}")
        state[id(op)] = 1
        for t in op.input_tensors():
            visit(t.op)
        state[id(op)] = 2
        order.append(op)

    for t in outputs:
        visit(t.op)
    return order


class _ReplaceBuffer(Mutator):
    def __init__(self, old: Buffer, new: Buffer):
        self.old, self.new = old, new

    def visit_buffer(self, b: Buffer) -> Buffer:
        return self.new if b is self.old else b


class _Lowerer:
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.loop_vars: set[Var] = set()

    def unique(self, name: str) -> str:
        out, n = name, 0
        while out in self.names:
            n += 1
            out = f"{name}_{n}"
        self.names.add(out)
        return out

    def loop_var(self, v: Var) -> Var:
        # te axis vars become loop vars, unless a second stage shares the same axis object.
        if v in self.loop_vars:
            v = Var(v.name, v.dtype)
        self.loop_vars.add(v)
        return v

    def nest(self, name: str, axes: Sequence[IterVar], body: Stmt, init: Stmt | None,
             ) -> tuple[Stmt, str]:
        """Loops over ``axes`` around a block whose iterators replace the axis variables;
        returns the nest and the block's (unique) name."""
        ivs = tuple(IterVar(Var("v" + a.var.name, a.var.dtype), a.min, a.extent, a.kind)
                    for a in axes)
        vmap: dict[Var, PrimExpr] = {a.var: iv.var for a, iv in zip(axes, ivs)}
        block = Block(self.unique(name), ivs, substitute(body, vmap),
                      None if init is None else substitute(init, vmap))
        loops = [self.loop_var(a.var) for a in axes]
        stmt: Stmt = BlockRealize(tuple(loops), all_of(), block)
        for a, lv in reversed(list(zip(axes, loops))):
            stmt = For(lv, a.min, a.extent, ForKind.SERIAL, stmt)
        return stmt, block.name

    def compute_body(self, op: ComputeOp, buf: Buffer) -> tuple[Stmt, Stmt | None]:
        idx = tuple(a.var for a in op.axis)
        if not isinstance(op.body, Reduce):
            return BufferStore(buf, op.body, idx), None
        red = op.body
        cur = BufferLoad(buf, idx)
        value = substitute(red.combiner.result, {red.combiner.lhs: cur, red.combiner.rhs: red.source})
        update: Stmt = BufferStore(buf, value, idx)
        if not (isinstance(red.condition, IntImm) and red.condition.value):
            update = IfThenElse(red.condition, update)
        return update, BufferStore(buf, red.combiner.identity, idx)

    def lower_op(self, op: Operation) -> tuple[Stmt | None, str | None]:
        if isinstance(op, PlaceholderOp):
            return None, None
        if isinstance(op, ComputeOp):
            buf = op.outputs[0].buffer
            body, init = self.compute_body(op, buf)
            return self.nest(op.name, op.axis + op.reduce_axis, body, init)
        if isinstance(op, ScanOp):
            return self.lower_scan(op)
        if isinstance(op, ExternOp):
            name = self.unique(op.name)
            return BlockRealize((), all_of(), Block(name, (), op.body)), name
        raise TensorError(f"cannot lower operation {type(op).__name__}")

    def lower_scan(self, op: ScanOp) -> tuple[Stmt, str]:
        out = op.outputs[0].buffer
        update_op = op.update.op
        assert isinstance(update_op, ComputeOp)
        t0 = op.init.shape[0]
        init_axes = tuple(IterVar(Var(f"s{k}"), IntImm(0), s, IterKind.SPATIAL)
                          for k, s in enumerate(op.init.shape))
        init_idx = tuple(a.var for a in init_axes)
        copy, _ = self.nest(f"{op.name}_init", init_axes,
                            BufferStore(out, BufferLoad(op.init.buffer, init_idx), init_idx), None)
        time = update_op.axis[0]
        steps = Analyzer().simplify(out.shape[0] - t0)
        axes = (IterVar(time.var, t0, steps, IterKind.ORDERED),) + update_op.axis[1:] + \
            update_op.reduce_axis
        body, init = self.compute_body(update_op, out)
        swap = _ReplaceBuffer(op.state.buffer, out)
        body = swap.visit(body)
        init = None if init is None else swap.visit(init)
        update, name = self.nest(op.name, axes, body, init)
        return seq(copy, update), name


def lower_to_func(outputs: Sequence[Tensor], args: Sequence[Tensor] | None = None,
                  name: str = "main") -> tuple[PrimFunc, dict[Tensor, str]]:
    """The PrimFunc computing ``outputs`` and a map from each tensor to its block name.

    ``args`` fixes the parameter order (default: the placeholders in graph order, then the
    outputs); every other tensor becomes an allocation.
    """
    ops = topo_ops(outputs)
    if args is None:
        args = [op.outputs[0] for op in ops if isinstance(op, PlaceholderOp)] + list(outputs)
    arg_bufs = {id(t.buffer) for t in args}
    for op in ops:
        if isinstance(op, PlaceholderOp) and id(op.outputs[0].buffer) not in arg_bufs:
            raise TensorError(f"placeholder {op.name!r} is used but is not among the arguments")
    low = _Lowerer()
    stmts: list[Stmt] = []
    blocks: dict[Tensor, str] = {}
    for op in ops:
        stmt, block = low.lower_op(op)
        if stmt is not None:
            stmts.append(stmt)
            for t in op.outputs:
                blocks[t] = block  # type: ignore[assignment]
    body = seq(*stmts)
    for op in reversed(ops):
        for t in op.outputs:
            if id(t.buffer) not in arg_bufs and not isinstance(op, PlaceholderOp):
                body = Allocate(t.buffer, body)
    return PrimFunc(name, tuple(t.buffer for t in args), body), blocks
