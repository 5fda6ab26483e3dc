"""A readable text form of a graph, one node per line (fused bodies indented)."""

from __future__ import annotations

from vdla.compiler.graph.ir import Attrs, ConstValue, Graph


def _attrs(attrs: Attrs) -> str:
    parts = []
    for k, v in attrs.items():
        if isinstance(v, Graph) or k == "value" and isinstance(v, ConstValue):
            continue
        parts.append(f"{k}={v}")
    return f" {{{', '.join(parts)}}}" if parts else ""


def format_graph(graph: Graph, indent: str = "") -> str:
    """``%name: type = op(%a, %b) {attrs}`` lines; constants are shown by type only."""
    lines = []
    for n in graph.nodes:
        if n.op == "input":
            lines.append(f"{indent}%{n.name}: {n.type} = input")
        elif n.op == "constant":
            lines.append(f"{indent}%{n.name}: {n.type} = constant")
        else:
            args = ", ".join(f"%{i}" for i in n.inputs)
            lines.append(f"{indent}%{n.name}: {n.type} = {n.op}({args}){_attrs(n.attrs)}")
            if n.op == "fused":
                lines.append(format_graph(n.attrs["body"], indent + "    "))
    lines.append(f"{indent}return {', '.join('%' + o for o in graph.outputs)}")
    return "\n".join(lines)
