"""KernelCache: the VDLA kernels one model build has compiled, so none is compiled twice.

:func:`~vdla.compiler.graph.passes.fuse_residual.fuse_residual_add` decides each fusion by compiling three
programs (the conv with the add fused, the conv alone, the add alone), and ``build_model`` then compiles every
kernel of the final graph -- which are, for each residual pair, either the fused one or the two alone: a ResNet
compiled each of them twice, and the fusion decisions were ~40 % of its compile time.

A kernel's program depends only on what :func:`~vdla.compiler.graph.lower_vdla.compile_kernel` reads: the
``fused`` node itself (its name, inputs, body and attributes: IR nodes are immutable and compare by content,
constants by a digest of their bytes), the kind and, for constants, the value of each outer value it reads, the
hardware (the config's digest) and the virtual threads. That tuple is the key. A cache lives for one build (the
tuning log in force is part of what a build compiles with), and remembers a kernel that cannot be lowered too,
raising the same error again.
"""

from __future__ import annotations

from collections.abc import Hashable

from vdla_hw.config import HwConfig
from vdla_hw.errors import UnsupportedError

from vdla.compiler.graph.errors import NotLoweredError
from vdla.compiler.graph.ir import Graph, Node
from vdla.compiler.graph.lower_vdla import compile_kernel
from vdla.compiler.graph.vdla_kernel import VdlaKernel


def kernel_key(node: Node, graph: Graph, cfg: HwConfig, virtual_threads: int) -> Hashable:
    """What the program of ``node`` (a ``fused`` node of ``graph`` placed on the VDLA) is compiled from."""
    outer = []
    for name in node.inputs:
        src = graph.node(name)
        outer.append((src.op, src.attrs["value"]) if src.op == "constant" else (src.op, src.type))
    return node, tuple(outer), cfg.digest, virtual_threads


class KernelCache:
    """Compiled VDLA kernels by :func:`kernel_key`; ``hits`` counts the compiles it saved."""

    def __init__(self) -> None:
        self._done: dict[Hashable, VdlaKernel | NotLoweredError | UnsupportedError] = {}
        self.hits = 0

    def compile(self, node: Node, graph: Graph, cfg: HwConfig, virtual_threads: int = 2) -> VdlaKernel:
        """:func:`compile_kernel` once per key; a kernel that could not be lowered raises its error again."""
        key = kernel_key(node, graph, cfg, virtual_threads)
        if key in self._done:
            self.hits += 1
            done = self._done[key]
        else:
            try:
                done = compile_kernel(node, graph, cfg, virtual_threads)
            except (NotLoweredError, UnsupportedError) as exc:
                done = exc
            self._done[key] = done
        if isinstance(done, Exception):
            raise done
        return done

    def __len__(self) -> int:
        return len(self._done)


__all__ = ["KernelCache", "kernel_key"]
