"""The Schedule: an explicit loop program and the primitives that rewrite it.

``create_schedule`` lowers the tensor expressions to a PrimFunc right away; every primitive
replaces ``schedule.func`` by a rewritten program, so each step can be printed and run by
the interpreter. Blocks are named by the tensor they compute (or by name); loops are named
by their loop variable (the te axis variables at first, then whatever split/fuse return).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence, Union

from ..te.lower import lower_to_func
from ..te.tensor import Tensor
from ..tir.ir import Buffer, IterVar, PrimFunc, Var
from . import annotate, cache, compute_location, loop_transform
from .errors import AxisNotInStageError, BlockNotFoundError
from .tree import blocks_in, loops_of

BlockRef = Union[Tensor, str]
LoopRef = Union[Var, IterVar]


class Schedule:
    """A program being scheduled. See the module docstring."""

    def __init__(self, func: PrimFunc, blocks: dict[Tensor, str]):
        self._func = func
        self._blocks = dict(blocks)
        self.trace: list[str] = []

    # -- access
    @property
    def func(self) -> PrimFunc:
        """The current program."""
        return self._func

    @property
    def mod(self) -> PrimFunc:
        """Alias of :attr:`func`."""
        return self._func

    def __str__(self) -> str:
        return str(self._func)

    def __getitem__(self, block: BlockRef) -> Stage:
        return Stage(self, self.block_name(block))

    def block_name(self, block: BlockRef) -> str:
        """The name of the block computing ``block`` (a tensor or a block name)."""
        if isinstance(block, Stage):
            return block.name
        if isinstance(block, str):
            name = block
        else:
            name = self._blocks.get(block)  # type: ignore[arg-type]
            if name is None:
                raise BlockNotFoundError(f"{block!r} is not computed by this schedule (a "
                                         f"placeholder, or a tensor of another graph)")
        compute_location.get_block(self._func, name)
        return name

    def get_blocks(self) -> list[str]:
        """Names of all blocks in program order."""
        return [r.block.name for r, _ in blocks_in(self._func.body)]

    def get_loops(self, block: BlockRef) -> list[Var]:
        """Loop variables around a block, outermost first."""
        _, path = compute_location.get_block(self._func, self.block_name(block))
        return [loop.loop_var for loop in loops_of(path)]

    def _apply(self, text: str, fn: Callable[[PrimFunc], Any]) -> Any:
        out = fn(self._func)
        if isinstance(out, PrimFunc):
            self._func, rest = out, None
        else:
            self._func, rest = out[0], out[1:] if len(out) > 2 else out[1]
        self.trace.append(text)
        return rest

    # -- loop structure
    def split(self, loop: LoopRef, factor: int | None = None,
              nparts: int | None = None) -> tuple[Var, Var]:
        """Split a loop by inner ``factor`` or into ``nparts`` outer iterations; returns
        ``(outer, inner)``."""
        v = _var(loop)
        return self._apply(f"split({v.name}, factor={factor}, nparts={nparts})",
                           lambda f: loop_transform.split(f, v, factor, nparts))

    def fuse(self, *loops: LoopRef) -> Var:
        """Fuse consecutive nested loops (outermost first) into one."""
        vs = [_var(x) for x in loops]
        return self._apply(f"fuse({', '.join(v.name for v in vs)})",
                           lambda f: loop_transform.fuse(f, *vs))

    def reorder(self, *loops: LoopRef) -> None:
        """Reorder loops of one nest to the given order (outermost first)."""
        vs = [_var(x) for x in loops]
        self._apply(f"reorder({', '.join(v.name for v in vs)})",
                    lambda f: loop_transform.reorder(f, *vs))

    def tile(self, x: LoopRef, y: LoopRef, x_factor: int,
             y_factor: int) -> tuple[Var, Var, Var, Var]:
        """Split two nested loops and reorder to ``(xo, yo, xi, yi)``."""
        xo, xi = self.split(x, factor=x_factor)
        yo, yi = self.split(y, factor=y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    # -- compute location
    def compute_at(self, block: BlockRef, loop: LoopRef) -> None:
        """Compute ``block`` inside ``loop`` for the region its consumers there need."""
        name, v = self.block_name(block), _var(loop)
        self._apply(f"compute_at({name}, {v.name})",
                    lambda f: compute_location.compute_at(f, name, v))

    def compute_root(self, block: BlockRef) -> None:
        """Compute ``block`` over its whole domain at the top level."""
        name = self.block_name(block)
        self._apply(f"compute_root({name})", lambda f: compute_location.compute_root(f, name))

    def compute_inline(self, block: BlockRef) -> None:
        """Inline an element-wise stage into its consumers."""
        name = self.block_name(block)
        self._apply(f"compute_inline({name})",
                    lambda f: compute_location.compute_inline(f, name))

    # -- caches
    def cache_read(self, tensor: Tensor | Buffer, scope: str,
                   readers: Sequence[BlockRef] | None = None) -> str:
        """Stage ``tensor`` through a copy in ``scope`` for ``readers``; returns the copy
        block's name."""
        buf = tensor.buffer if isinstance(tensor, Tensor) else tensor
        names = None if readers is None else [self.block_name(r) for r in readers]
        return self._apply(f"cache_read({buf.name}, {scope!r})",
                           lambda f: cache.cache_read(f, buf, scope, names))

    def cache_write(self, block: BlockRef, scope: str) -> str:
        """Compute ``block`` into a buffer in ``scope`` and copy out; returns the name of
        the (renamed) computing block. The tensor now names the copy block."""
        name = self.block_name(block)
        return self._apply(f"cache_write({name}, {scope!r})",
                           lambda f: cache.cache_write(f, name, scope))

    # -- annotations
    def vectorize(self, loop: LoopRef) -> None:
        v = _var(loop)
        self._apply(f"vectorize({v.name})", lambda f: annotate.vectorize(f, v))

    def parallel(self, loop: LoopRef) -> None:
        v = _var(loop)
        self._apply(f"parallel({v.name})", lambda f: annotate.parallel(f, v))

    def unroll(self, loop: LoopRef) -> None:
        v = _var(loop)
        self._apply(f"unroll({v.name})", lambda f: annotate.unroll(f, v))

    def bind(self, loop: LoopRef, thread: str = "vthread") -> None:
        v = _var(loop)
        self._apply(f"bind({v.name}, {thread!r})", lambda f: annotate.bind(f, v, thread))

    def pragma(self, loop: LoopRef, key: str, value: Any = True) -> None:
        v = _var(loop)
        self._apply(f"pragma({v.name}, {key!r})", lambda f: annotate.pragma(f, v, key, value))

    def storage_align(self, block: BlockRef, axis: int, factor: int, offset: int) -> None:
        buf = self._written_buffer(block)
        self._apply(f"storage_align({buf}, {axis}, {factor}, {offset})",
                    lambda f: annotate.storage_align(f, buf, axis, factor, offset))

    def double_buffer(self, block: BlockRef) -> None:
        buf = self._written_buffer(block)
        self._apply(f"double_buffer({buf})", lambda f: annotate.double_buffer(f, buf))

    def decompose_reduction(self, block: BlockRef, loop: LoopRef) -> str:
        """Move ``block``'s reduction init into a new block before ``loop``; returns its name."""
        from .reduction import decompose_reduction
        name, v = self.block_name(block), _var(loop)
        return self._apply(f"decompose_reduction({name}, {v.name})",
                           lambda f: decompose_reduction(f, name, v))

    def compact_buffers(self) -> None:
        """Shrink every intermediate buffer to the region it uses, allocated at the innermost
        statement enclosing its uses (after compute_at; before tensorize, whose views keep
        the layout they were made with). Needed when buffers must fit an on-chip memory."""
        from ..tir.transform.compact_buffer import compact_buffer
        self._apply("compact_buffers()", compact_buffer)

    def tensorize(self, loop: LoopRef, intrin: Any) -> None:
        """Replace the loop nest rooted at ``loop`` by ``intrin``'s implementation."""
        from .tensorize import tensorize
        v = _var(loop)
        self._apply(f"tensorize({v.name}, {intrin.name})", lambda f: tensorize(f, v, intrin))

    def _written_buffer(self, block: BlockRef) -> str:
        from .tree import write_buffers
        r, _ = compute_location.get_block(self._func, self.block_name(block))
        return write_buffers(r)[0].name


class Stage:
    """TE-style view of one block: ``s[C].split(C.op.axis[0], 8)``."""

    def __init__(self, sch: Schedule, name: str):
        self.sch, self.name = sch, name

    @property
    def loops(self) -> list[Var]:
        """The current loops around this stage's block, outermost first."""
        return self.sch.get_loops(self.name)

    def _own(self, *loops: LoopRef) -> list[Var]:
        mine = self.loops
        vs = [_var(x) for x in loops]
        for v in vs:
            if v not in mine:
                raise AxisNotInStageError(
                    f"loop {v.name!r} does not belong to stage {self.name!r}, whose loops are "
                    f"{[x.name for x in mine]}; use an axis of this stage or of its result "
                    f"after split/fuse")
        return vs

    def split(self, loop: LoopRef, factor: int | None = None,
              nparts: int | None = None) -> tuple[Var, Var]:
        return self.sch.split(*self._own(loop), factor=factor, nparts=nparts)

    def fuse(self, *loops: LoopRef) -> Var:
        return self.sch.fuse(*self._own(*loops))

    def reorder(self, *loops: LoopRef) -> None:
        self.sch.reorder(*self._own(*loops))

    def tile(self, x: LoopRef, y: LoopRef, x_factor: int,
             y_factor: int) -> tuple[Var, Var, Var, Var]:
        return self.sch.tile(*self._own(x, y), x_factor, y_factor)

    def compute_at(self, other: Stage, loop: LoopRef) -> None:
        other._own(loop)
        self.sch.compute_at(self.name, loop)

    def compute_root(self) -> None:
        self.sch.compute_root(self.name)

    def compute_inline(self) -> None:
        self.sch.compute_inline(self.name)

    def vectorize(self, loop: LoopRef) -> None:
        self.sch.vectorize(*self._own(loop))

    def parallel(self, loop: LoopRef) -> None:
        self.sch.parallel(*self._own(loop))

    def unroll(self, loop: LoopRef) -> None:
        self.sch.unroll(*self._own(loop))

    def bind(self, loop: LoopRef, thread: str = "vthread") -> None:
        self.sch.bind(*self._own(loop), thread)

    def pragma(self, loop: LoopRef, key: str, value: Any = True) -> None:
        self.sch.pragma(*self._own(loop), key, value)

    def storage_align(self, axis: int, factor: int, offset: int) -> None:
        self.sch.storage_align(self.name, axis, factor, offset)

    def double_buffer(self) -> None:
        self.sch.double_buffer(self.name)

    def tensorize(self, loop: LoopRef, intrin: Any) -> None:
        self.sch.tensorize(*self._own(loop), intrin)


def _var(loop: LoopRef) -> Var:
    return loop.var if isinstance(loop, IterVar) else loop


def create_schedule(outputs: Tensor | Sequence[Tensor], args: Sequence[Tensor] | None = None,
                    name: str = "main") -> Schedule:
    """Lower the tensor expressions computing ``outputs`` to a loop program to schedule.

    ``args`` fixes the function's parameter order (default: inputs, then outputs).
    """
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    func, blocks = lower_to_func(outs, args, name)
    return Schedule(func, blocks)
