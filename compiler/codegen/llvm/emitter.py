"""Translate one lowered PrimFunc body (loops, flat or N-D buffers, scalar or vector
code) into the body of an LLVM function.

Design choices that decide the speed of the generated code:

* integer ``+ - *`` in buffer indices and loop bounds carry ``nsw`` (index arithmetic
  never wraps), so LLVM can widen int32 loop variables and fold address arithmetic;
  integer arithmetic on data wraps, as the NumPy references and the accelerator do;
* float ``+ - *`` carry ``contract``, so the backend fuses ``a + b * c`` into FMA;
* a vector access whose index is ``base + lane`` is one vector load/store, a broadcast
  index is one scalar load and a splat; only other indices become per-lane accesses;
* ``Allocate`` of a constant size becomes an ``alloca`` in the entry block, which SROA and
  mem2reg turn into registers when every access is at a constant offset (unrolled
  accumulator tiles), and ``unrolled`` loops of constant extent are unrolled here.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import llvmlite.ir as ir

from ...tir import dtype as dt
from ...tir.functor import collect
from ...tir.ir import (EQ, GE, GT, LE, LT, NE, Add, Allocate, And, AttrStmt, Block,
                       BlockRealize, Broadcast, Buffer, BufferLoad, BufferStore, Call, Cast,
                       CmpOp, Div, Evaluate, FloatImm, FloorDiv, FloorMod, For, ForKind,
                       IfThenElse, IntImm, LetStmt, Max, Min, Mul, Not, Or, PrimExpr, Ramp,
                       Select, SeqStmt, Stmt, StringImm, Sub, Var)
from ..symbols import c_identifier
from .frame import align_vector_spills
from .intrinsics import FLOAT_FLAGS
from .lanes import affine_lanes, lane_of
from .types import (I8, I32, I64, CodegenError, elem_bytes, memory_type, opaque_alloca,
                    scalar_type, value_type)

if TYPE_CHECKING:
    from .module import ModuleContext

#: Unrolled loops longer than this stay loops (code size).
MAX_UNROLL = 128
#: Alignment of the heap allocations (a cache line, as the stack buffers get).
HEAP_ALIGN = 64
#: Local allocations up to this many bytes live on the stack; bigger ones use aligned_alloc.
MAX_STACK_BYTES = 256 * 1024

_ICMP = {EQ: "==", NE: "!=", LT: "<", LE: "<=", GT: ">", GE: ">="}


def _const(dtype: str, value: float | int) -> ir.Constant:
    ty = value_type(dtype)
    elem = scalar_type(dtype)
    c = ir.Constant(elem, float(value) if dt.is_float(dtype) else int(value))
    return c if dt.lanes(dtype) == 1 else ir.Constant(ty, [c] * dt.lanes(dtype))


# Loop bounds and induction variables never wrap.
NSW = ("nsw",)


class FunctionEmitter:
    """Emits statements into ``fn``; ``var_map`` binds TIR variables to LLVM values."""

    def __init__(self, ctx: ModuleContext, fn: ir.Function, var_map: dict[Var, ir.Value],
                 in_parallel: bool = False):
        self.ctx = ctx
        self.fn = fn
        self.vars = dict(var_map)
        self.in_parallel = in_parallel
        entry = fn.append_basic_block("entry")
        self.allocas = ir.IRBuilder(entry)
        # Vector spill slots aligned at every stack position (frame.py: a misaligned one can straddle
        # a page and slow a kernel up to 4x in some processes).
        align_vector_spills(self.allocas, ctx.target)
        self.body_start = fn.append_basic_block("body")
        self.b = ir.IRBuilder(self.body_start)
        self.heap: list[ir.Value] = []
        self.index_depth = 0  # > 0 while emitting a buffer index or a loop bound

    def finish(self, ret: ir.Value | None = None) -> None:
        """Close the function: jump from the alloca block to the body and return."""
        self.allocas.branch(self.body_start)
        if ret is None:
            self.b.ret_void()
        else:
            self.b.ret(ret)

    # ------------------------------------------------------------------ helpers
    def lookup(self, v: Var) -> ir.Value:
        try:
            return self.vars[v]
        except KeyError:
            raise CodegenError(f"variable {v.name} is used outside its scope (or the "
                               f"function has a symbolic shape; bind shapes to constants)") \
                from None

    def to_i64(self, value: ir.Value, dtype: str) -> ir.Value:
        if value.type == I64:
            return value
        if isinstance(value.type, ir.IntType) and value.type.width > 64:
            raise CodegenError(f"index of type {dtype} is wider than 64 bits")
        return self.b.zext(value, I64) if dt.is_uint(dtype) or dt.is_bool(dtype) \
            else self.b.sext(value, I64)

    def splat(self, value: ir.Value, lanes: int) -> ir.Value:
        vec_ty = ir.VectorType(value.type, lanes)
        one = self.b.insert_element(ir.Constant(vec_ty, ir.Undefined), value,
                                    ir.Constant(I32, 0))
        mask = ir.Constant(ir.VectorType(I32, lanes), [0] * lanes)
        return self.b.shuffle_vector(one, ir.Constant(vec_ty, ir.Undefined), mask)

    def index_expr(self, e: PrimExpr) -> ir.Value:
        """Emit an index or loop-bound expression, whose arithmetic may be marked ``nsw``."""
        self.index_depth += 1
        try:
            return self.expr(e)
        finally:
            self.index_depth -= 1

    def address(self, buf: Buffer, flat: PrimExpr) -> ir.Value:
        base = self.lookup(buf.data)
        idx = self.to_i64(self.index_expr(flat), flat.dtype)
        return self.b.gep(base, [idx], inbounds=True, source_etype=memory_type(buf.dtype))

    # ------------------------------------------------------------------ expressions
    def expr(self, e: PrimExpr) -> ir.Value:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            if isinstance(e, CmpOp):
                return self.compare(e)
            raise CodegenError(f"the LLVM backend cannot translate {type(e).__name__}: {e}")
        return method(e)

    def e_Var(self, e: Var) -> ir.Value:
        return self.lookup(e)

    def e_IntImm(self, e: IntImm) -> ir.Value:
        return ir.Constant(scalar_type(e.dtype), int(e.value))

    def e_FloatImm(self, e: FloatImm) -> ir.Value:
        return ir.Constant(scalar_type(e.dtype), float(e.value))

    def e_StringImm(self, e: StringImm) -> ir.Value:
        raise CodegenError(f"string {e.value!r} outside a packed call")

    def _int_flags(self, dtype: str) -> tuple[str, ...]:
        # Index arithmetic cannot overflow, and saying so lets LLVM widen and fold it;
        # data arithmetic must wrap like NumPy's, so it gets no flag.
        return ("nsw",) if self.index_depth and dt.is_int(dtype) and dt.bits(dtype) >= 32 else ()

    def e_Add(self, e: Add) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return self.b.fadd(a, b, flags=FLOAT_FLAGS)
        return self.b.add(a, b, flags=self._int_flags(e.dtype))

    def e_Sub(self, e: Sub) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return self.b.fsub(a, b, flags=FLOAT_FLAGS)
        return self.b.sub(a, b, flags=self._int_flags(e.dtype))

    def e_Mul(self, e: Mul) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return self.b.fmul(a, b, flags=FLOAT_FLAGS)
        return self.b.mul(a, b, flags=self._int_flags(e.dtype))

    def e_Div(self, e: Div) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            return self.b.fdiv(a, b, flags=FLOAT_FLAGS)
        return self.b.udiv(a, b) if dt.is_uint(e.dtype) else self.b.sdiv(a, b)

    def _floor_divmod(self, e: FloorDiv | FloorMod) -> tuple[ir.Value, ir.Value]:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_uint(e.dtype):
            return self.b.udiv(a, b), self.b.urem(a, b)
        if dt.is_float(e.dtype):
            raise CodegenError(f"floordiv/floormod of floats ({e}); use floor(a / b)")
        q, r = self.b.sdiv(a, b), self.b.srem(a, b)
        zero = _const(e.dtype, 0)
        # Truncated -> floored: when the remainder is non-zero and its sign differs from
        # the divisor's, step the quotient down and the remainder by one divisor.
        fix = self.b.and_(self.b.icmp_signed("!=", r, zero),
                          self.b.xor(self.b.icmp_signed("<", r, zero),
                                     self.b.icmp_signed("<", b, zero)))
        q = self.b.select(fix, self.b.sub(q, _const(e.dtype, 1)), q)
        r = self.b.select(fix, self.b.add(r, b), r)
        return q, r

    def e_FloorDiv(self, e: FloorDiv) -> ir.Value:
        return self._floor_divmod(e)[0]

    def e_FloorMod(self, e: FloorMod) -> ir.Value:
        return self._floor_divmod(e)[1]

    def _minmax(self, e: Min | Max, op: str) -> ir.Value:
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.dtype):
            cond = self.b.fcmp_ordered(op, a, b)
        elif dt.is_uint(e.dtype) or dt.is_bool(e.dtype):
            cond = self.b.icmp_unsigned(op, a, b)
        else:
            cond = self.b.icmp_signed(op, a, b)
        return self.b.select(cond, a, b)

    def e_Min(self, e: Min) -> ir.Value:
        return self._minmax(e, "<")

    def e_Max(self, e: Max) -> ir.Value:
        return self._minmax(e, ">")

    def compare(self, e: CmpOp) -> ir.Value:
        op = _ICMP[type(e)]
        a, b = self.expr(e.a), self.expr(e.b)
        if dt.is_float(e.a.dtype):
            return (self.b.fcmp_unordered if op == "!=" else self.b.fcmp_ordered)(op, a, b)
        if dt.is_uint(e.a.dtype) or dt.is_bool(e.a.dtype):
            return self.b.icmp_unsigned(op, a, b)
        return self.b.icmp_signed(op, a, b)

    def e_And(self, e: And) -> ir.Value:
        return self.b.and_(self.expr(e.a), self.expr(e.b))

    def e_Or(self, e: Or) -> ir.Value:
        return self.b.or_(self.expr(e.a), self.expr(e.b))

    def e_Not(self, e: Not) -> ir.Value:
        return self.b.not_(self.expr(e.a))

    def e_Select(self, e: Select) -> ir.Value:
        return self.b.select(self.expr(e.condition), self.expr(e.true_value),
                             self.expr(e.false_value))

    def e_Cast(self, e: Cast) -> ir.Value:
        return self.cast(self.expr(e.value), e.value.dtype, e.dtype)

    def cast(self, v: ir.Value, src: str, dst: str) -> ir.Value:
        if src == dst:
            return v
        to = value_type(dst)
        if dt.is_bool(dst):
            zero = _const(src, 0)
            return self.b.fcmp_unordered("!=", v, zero) if dt.is_float(src) \
                else self.b.icmp_unsigned("!=", v, zero)
        src_signed = dt.is_int(src)
        if dt.is_float(src) and dt.is_float(dst):
            return self.b.fpext(v, to) if dt.bits(dst) > dt.bits(src) else self.b.fptrunc(v, to)
        if dt.is_float(src):
            return self.b.fptosi(v, to) if dt.is_int(dst) else self.b.fptoui(v, to)
        if dt.is_float(dst):
            return self.b.sitofp(v, to) if src_signed else self.b.uitofp(v, to)
        sb, db = dt.bits(src), dt.bits(dst)
        if db == sb:
            return v
        if db < sb:
            return self.b.trunc(v, to)
        return self.b.sext(v, to) if src_signed else self.b.zext(v, to)

    def e_Ramp(self, e: Ramp) -> ir.Value:
        base = self.splat(self.expr(e.base), e.lanes)
        if isinstance(e.stride, IntImm):
            steps = ir.Constant(value_type(e.dtype),
                                [ir.Constant(scalar_type(e.dtype), i * e.stride.value)
                                 for i in range(e.lanes)])
            return self.b.add(base, steps, flags=self._int_flags(e.dtype))
        iota = ir.Constant(value_type(e.dtype),
                           [ir.Constant(scalar_type(e.dtype), i) for i in range(e.lanes)])
        stride = self.splat(self.expr(e.stride), e.lanes)
        return self.b.add(base, self.b.mul(iota, stride, flags=self._int_flags(e.dtype)),
                          flags=self._int_flags(e.dtype))

    def e_Broadcast(self, e: Broadcast) -> ir.Value:
        return self.splat(self.expr(e.value), e.lanes)

    def e_BufferLoad(self, e: BufferLoad) -> ir.Value:
        buf = e.buffer
        flat = buf.flat_index(e.indices)
        n = dt.lanes(flat.dtype)
        if n == 1:
            return self.from_memory(self.b.load(self.address(buf, flat),
                                                typ=memory_type(buf.dtype),
                                                align=elem_bytes(buf.dtype)), buf.dtype)
        lin = affine_lanes(flat)
        if lin is not None and lin[1] == 1:
            vec_ty = ir.VectorType(memory_type(buf.dtype), n)
            v = self.b.load(self.address(buf, lin[0]), typ=vec_ty, align=elem_bytes(buf.dtype))
            return self.from_memory(v, e.dtype)
        mem = memory_type(buf.dtype)
        align = elem_bytes(buf.dtype)
        if lin is not None and lin[1] == 0:
            scalar = self.b.load(self.address(buf, lin[0]), typ=mem, align=align)
            return self.from_memory(self.splat(scalar, n), e.dtype)
        # A gather: one scalar load per lane.
        idx = self.index_expr(flat)
        base = self.lookup(buf.data)
        out: ir.Value = ir.Constant(ir.VectorType(mem, n), ir.Undefined)
        for i in range(n):
            lane = ir.Constant(I32, i)
            p = self.b.gep(base, [self.to_i64(self.b.extract_element(idx, lane), flat.dtype)],
                           inbounds=True, source_etype=mem)
            out = self.b.insert_element(out, self.b.load(p, typ=mem, align=align), lane)
        return self.from_memory(out, e.dtype)

    def from_memory(self, v: ir.Value, dtype: str) -> ir.Value:
        return self.b.trunc(v, value_type(dtype)) if dt.is_bool(dtype) else v

    def to_memory(self, v: ir.Value, dtype: str) -> ir.Value:
        if not dt.is_bool(dtype):
            return v
        n = dt.lanes(dtype)
        return self.b.zext(v, I8 if n == 1 else ir.VectorType(I8, n))

    def e_Call(self, e: Call) -> ir.Value:
        if e.op == "if_then_else":
            return self.if_then_else(e)
        if e.op == "call_packed":
            raise CodegenError(f"call_packed({e.args[0]}) runs only in the interpreter: the "
                               f"LLVM backend cannot call Python functions")
        return self.ctx.math.call(self.b, e.op, e.dtype, [self.expr(a) for a in e.args])

    def if_then_else(self, e: Call) -> ir.Value:
        cond, t, f = e.args
        if dt.lanes(cond.dtype) > 1:
            if not _has_load(t) and not _has_load(f):
                return self.b.select(self.expr(cond), self.expr(t), self.expr(f))
            out: ir.Value = ir.Constant(value_type(e.dtype), ir.Undefined)
            for i in range(dt.lanes(e.dtype)):
                lane = lane_of(e, i)
                out = self.b.insert_element(out, self.if_then_else(lane), ir.Constant(I32, i))
            return out
        c = self.expr(cond)
        then_bb = self.fn.append_basic_block("ite.then")
        else_bb = self.fn.append_basic_block("ite.else")
        done_bb = self.fn.append_basic_block("ite.done")
        self.b.cbranch(c, then_bb, else_bb)
        self.b.position_at_end(then_bb)
        tv = self.expr(t)
        then_end = self.b.block
        self.b.branch(done_bb)
        self.b.position_at_end(else_bb)
        fv = self.expr(f)
        else_end = self.b.block
        self.b.branch(done_bb)
        self.b.position_at_end(done_bb)
        phi = self.b.phi(tv.type)
        phi.add_incoming(tv, then_end)
        phi.add_incoming(fv, else_end)
        return phi

    # ------------------------------------------------------------------ statements
    def stmt(self, s: Stmt) -> None:
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            raise CodegenError(f"the LLVM backend cannot translate {type(s).__name__}")
        method(s)

    def s_SeqStmt(self, s: SeqStmt) -> None:
        for c in s.stmts:
            self.stmt(c)

    def s_Evaluate(self, s: Evaluate) -> None:
        if not isinstance(s.value, (IntImm, FloatImm)):
            self.expr(s.value)

    def s_AttrStmt(self, s: AttrStmt) -> None:
        self.stmt(s.body)

    def s_LetStmt(self, s: LetStmt) -> None:
        self.vars[s.var] = self.expr(s.value)
        self.stmt(s.body)
        del self.vars[s.var]

    def s_BufferStore(self, s: BufferStore) -> None:
        buf = s.buffer
        flat = buf.flat_index(s.indices)
        n = dt.lanes(flat.dtype)
        value = self.expr(s.value)
        if dt.lanes(s.value.dtype) != n:
            if dt.lanes(s.value.dtype) != 1:
                raise CodegenError(f"store of {s.value.dtype} into {n} lanes of {buf.name}")
            value = self.splat(value, n) if n > 1 else value
        value = self.to_memory(value, dt.with_lanes(buf.dtype, n))
        align = elem_bytes(buf.dtype)
        lin = affine_lanes(flat) if n > 1 else None
        if n == 1 or (lin is not None and lin[1] == 1):
            self.b.store(value, self.address(buf, flat if n == 1 else lin[0]), align=align)
            return
        idx = self.index_expr(flat)
        base = self.lookup(buf.data)
        for i in range(n):
            lane = ir.Constant(I32, i)
            p = self.b.gep(base, [self.to_i64(self.b.extract_element(idx, lane), flat.dtype)],
                           inbounds=True, source_etype=memory_type(buf.dtype))
            self.b.store(self.b.extract_element(value, lane), p, align=align)

    def s_IfThenElse(self, s: IfThenElse) -> None:
        c = self.expr(s.condition)
        then_bb = self.fn.append_basic_block("if.then")
        done_bb = self.fn.append_basic_block("if.done")
        else_bb = self.fn.append_basic_block("if.else") if s.else_case is not None else done_bb
        self.b.cbranch(c, then_bb, else_bb)
        self.b.position_at_end(then_bb)
        self.stmt(s.then_case)
        self.b.branch(done_bb)
        if s.else_case is not None:
            self.b.position_at_end(else_bb)
            self.stmt(s.else_case)
            self.b.branch(done_bb)
        self.b.position_at_end(done_bb)

    def s_Allocate(self, s: Allocate) -> None:
        buf = s.buffer
        size = buf.size()
        mem = memory_type(buf.dtype)
        if isinstance(size, IntImm) and size.value * elem_bytes(buf.dtype) <= MAX_STACK_BYTES:
            ptr = opaque_alloca(self.allocas, ir.ArrayType(mem, max(1, size.value)), c_identifier(buf.name),
                                align=64)
            self.vars[buf.data] = ptr
            self.stmt(s.body)
        else:
            nbytes = self.b.mul(self.to_i64(self.expr(size), size.dtype),
                                ir.Constant(I64, elem_bytes(buf.dtype)))
            # Cache-line aligned like the stack buffers: malloc's 16-byte alignment makes every
            # 64-byte vector access of a big temporary (a conv's partial-sum plane) split two lines.
            # aligned_alloc wants a multiple of the alignment.
            nbytes = self.b.and_(self.b.add(nbytes, ir.Constant(I64, HEAP_ALIGN - 1)), ir.Constant(I64, -HEAP_ALIGN))
            ptr = self.b.call(self.ctx.libc("aligned_alloc"), [ir.Constant(I64, HEAP_ALIGN), nbytes],
                              name=c_identifier(buf.name))
            self.vars[buf.data] = ptr
            self.stmt(s.body)
            self.b.call(self.ctx.libc("free"), [ptr])
        del self.vars[buf.data]

    def s_For(self, s: For) -> None:
        if s.kind == ForKind.PARALLEL and not self.in_parallel:
            from .parallel import emit_parallel_for, runs_serially
            if not runs_serially(s):  # else the serial loop below: too little work to wake a thread for
                emit_parallel_for(self, s)
                return
        if s.kind == ForKind.UNROLLED and isinstance(s.extent, IntImm) \
                and s.extent.value <= MAX_UNROLL:
            lo = self.index_expr(s.min)
            for k in range(s.extent.value):
                self.vars[s.loop_var] = lo if k == 0 else self.b.add(lo, ir.Constant(lo.type, k), flags=NSW)
                self.stmt(s.body)
            del self.vars[s.loop_var]
            return
        lo = self.index_expr(s.min)
        hi = self.b.add(lo, self.index_expr(s.extent), flags=NSW)
        self.loop(s.loop_var, lo, hi, s.body)

    def loop(self, var: Var, lo: ir.Value, hi: ir.Value, body: Stmt) -> None:
        """``for var in [lo, hi): body`` as a canonical loop with a phi induction variable."""
        pre = self.b.block
        label = c_identifier(var.name)
        head = self.fn.append_basic_block(f"for.{label}")
        body_bb = self.fn.append_basic_block(f"for.{label}.body")
        done = self.fn.append_basic_block(f"for.{label}.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.phi(lo.type, name=label)
        i.add_incoming(lo, pre)
        signed = not dt.is_uint(var.dtype)
        cmp = self.b.icmp_signed if signed else self.b.icmp_unsigned
        self.b.cbranch(cmp("<", i, hi), body_bb, done)
        self.b.position_at_end(body_bb)
        self.vars[var] = i
        self.stmt(body)
        nxt = self.b.add(i, ir.Constant(lo.type, 1), flags=NSW if signed else ())
        i.add_incoming(nxt, self.b.block)
        self.b.branch(head)
        self.b.position_at_end(done)
        del self.vars[var]

    def s_Block(self, s: Block) -> None:
        raise CodegenError(f"block {s.name!r} is still in the program: lower the schedule "
                           f"(vdla.compiler.tir.pipeline.lower) before code generation")

    def s_BlockRealize(self, s: BlockRealize) -> None:
        self.s_Block(s.block)


def _has_load(e: PrimExpr) -> bool:
    return bool(collect(e, lambda n: isinstance(n, BufferLoad)))

