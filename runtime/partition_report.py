"""The partition report of a compiled model: where every kernel runs and why a conv stays on the CPU.

``build_model`` writes it into the module description (``"partition"``, one entry per kernel in
execution order); :func:`read_partition` reads it back from a module or a loaded description and
:func:`format_partition` prints it (``vdla compile`` shows it).  The reasons are the compiler's own:
the VDLA rules (``vdla.compiler.graph.vdla_rules``) and the lowering's checks, never a copy of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from vdla.runtime.display import html_table


@dataclass(frozen=True)
class PartitionEntry:
    """One kernel: its name, device (``vdla`` or ``cpu``), operators, the conv2d/dense it is anchored
    on (None for other kernels) and, for such a kernel on the CPU, why."""

    name: str
    device: str
    ops: tuple[str, ...]
    anchor: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(asdict(self), ops=list(self.ops))


class PartitionReport(list[PartitionEntry]):
    """The entries of one module, in execution order; prints (and shows in a notebook) as the table."""

    def __repr__(self) -> str:
        return format_partition(self)

    def _repr_html_(self) -> str:
        rows = [(e.name, e.device, " ".join(e.ops), e.anchor, e.reason) for e in self]
        return html_table(("kernel", "device", "ops", "anchor", "why not vdla"), rows, caption="partition",
                          footer=format_partition(self).splitlines()[-1])


def read_partition(source: Any) -> PartitionReport:
    """The partition entries of a module (anything with a ``graph`` description, e.g. a
    :class:`~vdla.runtime.graph_executor.GraphModule`) or of a description itself."""
    description: Mapping[str, Any] = source if isinstance(source, Mapping) else source.graph
    return PartitionReport(PartitionEntry(e["name"], e["device"], tuple(e["ops"]), e.get("anchor"), e.get("reason"))
            for e in description.get("partition", []))


def format_partition(entries: Sequence[PartitionEntry]) -> str:
    """A table: one line per kernel, its device and ops, then the reason of each kernel on the CPU."""
    width = max((len(e.name) for e in entries), default=4)
    lines = [f"{'kernel':<{width}}  device  ops"]
    for e in entries:
        lines.append(f"{e.name:<{width}}  {e.device:<6}  {' '.join(e.ops)}")
        if e.reason:
            lines.append(f"{'':<{width}}    why not vdla: {e.reason}")
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.device] = counts.get(e.device, 0) + 1
    gemms = [e for e in entries if e.anchor is not None]
    on_vdla = sum(e.device == "vdla" for e in gemms)
    summary = (f"{len(entries)} kernels ({', '.join(f'{d} {c}' for d, c in sorted(counts.items()))}); "
               f"{on_vdla} of {len(gemms)} conv2d/dense/batch_matmul on the VDLA")
    for op, what in (("qadd", "residual adds"), ("qavg_pool2d", "average pools"),
                     ("max_pool2d", "max pools")):
        kernels = [e for e in entries if op in e.ops]
        if kernels:
            summary += f", {sum(e.device == 'vdla' for e in kernels)} of {len(kernels)} {what}"
    lines.append(summary)
    return "\n".join(lines)


__all__ = ["PartitionEntry", "PartitionReport", "format_partition", "read_partition"]
