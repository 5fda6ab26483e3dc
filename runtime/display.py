"""HTML tables for notebooks: the ``_repr_html_`` of modules, profiles, partition reports and run results.

Jupyter shows an object's ``_repr_html_()`` instead of its ``repr``; these render the same figures
the text tables show, escaped, with no dependency beyond the standard library.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any


def html_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], caption: str | None = None,
               footer: str | None = None) -> str:
    """A plain HTML table; every cell is escaped text, numbers right-aligned."""
    def cell(tag: str, v: Any) -> str:
        align = ' style="text-align:right"' if isinstance(v, (int, float)) and not isinstance(v, bool) else ""
        text = f"{v:,.3f}" if isinstance(v, float) else (f"{v:,}" if isinstance(v, int) and not isinstance(v, bool)
                                                          else ("-" if v is None else str(v)))
        return f"<{tag}{align}>{html.escape(text)}</{tag}>"

    out = ["<table>"]
    if caption:
        out.append(f"<caption style=\"text-align:left\"><b>{html.escape(caption)}</b></caption>")
    out.append("<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in headers) + "</tr>")
    out += ["<tr>" + "".join(cell("td", v) for v in row) + "</tr>" for row in rows]
    out.append("</table>")
    if footer:
        out.append(f"<p>{html.escape(footer)}</p>")
    return "\n".join(out)


__all__ = ["html_table"]
