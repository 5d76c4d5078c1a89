"""A self-contained static HTML report: headings, prose, tables and embedded PNG figures."""

from __future__ import annotations

import base64
import datetime as _dt
import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ..io import write_text

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:1.8em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#666;font-size:.9em}table{border-collapse:collapse;font-size:.82em;margin:.8em 0}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}.ok{color:#1a7f37;font-weight:600}.no{color:#b3261e;font-weight:600}
.partial{color:#9a6700;font-weight:600}
"""


@dataclass
class Report:
    title: str
    subtitle: str = ""
    parts: list[str] = field(default_factory=list)

    def heading(self, text: str) -> None:
        self.parts.append(f"<h2>{html.escape(text)}</h2>")

    def paragraph(self, text: str, raw: bool = False) -> None:
        self.parts.append(f"<p>{text if raw else html.escape(text)}</p>")

    def figure(self, png: str | Path, caption: str = "") -> None:
        data = base64.b64encode(Path(png).read_bytes()).decode()
        self.parts.append(
            f'<figure><img alt="{html.escape(caption or Path(png).stem)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(caption)}</figcaption></figure>')

    def table(self, rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
              formats: dict[str, str] | None = None, raw_columns: Sequence[str] = ()) -> None:
        if not rows:
            self.paragraph("(no rows)")
            return
        columns = list(columns or rows[0].keys())
        formats = formats or {}
        head = "".join(f'<th class="{"l" if _is_text(rows, c) else ""}">{html.escape(c)}</th>' for c in columns)
        body = []
        for r in rows:
            cells = []
            for c in columns:
                v = r.get(c)
                text = _fmt(v, formats.get(c))
                cls = "l" if _is_text(rows, c) else ""
                cells.append(f'<td class="{cls}">{text if c in raw_columns else html.escape(text)}</td>')
            body.append("<tr>" + "".join(cells) + "</tr>")
        self.parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>")

    def render(self) -> str:
        when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        from .. import __version__

        return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
                f"<title>{html.escape(self.title)}</title><style>{_CSS}</style></head><body>"
                f"<h1>{html.escape(self.title)}</h1><p class=\"meta\">{html.escape(self.subtitle)} "
                f"&middot; seqheur {__version__} &middot; {when}</p>"
                + "\n".join(self.parts) + "</body></html>\n")

    def write(self, path: str | Path) -> Path:
        return write_text(self.render(), path)


def _is_text(rows: Sequence[dict[str, Any]], col: str) -> bool:
    return any(isinstance(r.get(col), str) for r in rows)


def _fmt(v: Any, spec: str | None) -> str:
    """A cell: an em dash for an undefined value (null or NaN: never "nan" or "nan%")."""
    from .text import cell

    return cell(v, spec)
