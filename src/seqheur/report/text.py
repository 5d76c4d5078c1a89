"""Summary values for people (terminal tables, HTML, prose): undefined ratios, ties, units.

A ratio whose denominator is 0 is NaN in the data (null in JSON): shown as an em dash in a
table cell and as "n/a (why)" in prose, never as "nan" or "nan%". The best row is named only
when it is alone at the top; equal top rows are a tie. Throughput is in MB/s, decimal
(1 MB = 10^6 bytes), while sizes such as cache sizes are binary (1 MiB = 2^20 bytes): the
headers say so once.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

#: A table cell whose value is undefined (NaN or null).
UNDEFINED = "—"
#: The throughput heading, with its unit spelt out.
THROUGHPUT_UNIT = "MB/s (10^6 B/s)"
#: Said once under a table or summary that shows throughput next to binary sizes.
UNITS_NOTE = "MB/s: 10^6 bytes per second (1 MB = 10^6 B; sizes in MiB: 1 MiB = 2^20 B)"
#: Why each ratio of the summary can be undefined (its denominator is 0).
WHY_UNDEFINED = {
    "accuracy": "nothing prefetched",
    "coverage": "no misses and no read-ahead used",
    "hit_ratio": "no demand blocks",
    "throughput_mbps": "no disk model",
    "disk_seconds": "no disk model",
    "achievable_gain_fraction": "no oracle, or it gains nothing over no read-ahead",
}
#: Two throughputs this close (relative) are the same figure: replays of equivalent
#: configurations agree to the last bit, and float noise is ~1e-15.
TIE_REL = 1e-9


def is_undefined(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def cell(v: Any, spec: str | None = None) -> str:
    """A table cell: UNDEFINED for NaN or null, else ``format(v, spec)`` (or a default)."""
    if is_undefined(v):
        return UNDEFINED
    if spec:
        try:
            return format(v, spec)
        except (TypeError, ValueError):
            return str(v)
    if isinstance(v, float):
        return f"{v:,.3f}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def prose(name: str, v: Any, spec: str) -> str:
    """A value in a sentence: "n/a (nothing prefetched)" when undefined."""
    if is_undefined(v):
        return f"n/a ({WHY_UNDEFINED.get(name, 'undefined')})"
    return format(v, spec)


def undefined_note(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> str | None:
    """One line explaining the dashes, naming only the columns that have one."""
    rows = list(rows)
    why = [f"{c}: {WHY_UNDEFINED.get(c, 'undefined')}" for c in columns
           if any(is_undefined(r.get(c)) for r in rows) and c not in ("detector", "table")]
    return f"{UNDEFINED} = undefined ({'; '.join(why)})" if why else None


def json_safe(obj: Any) -> Any:
    """NaN floats as None (JSON null), in nested dicts and lists."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def top_rows(rows: Iterable[Mapping[str, Any]], key: str = "throughput_mbps") -> list[dict]:
    """The rows at the top of ``key`` (within TIE_REL), undefined values left out."""
    defined = [dict(r) for r in rows if not is_undefined(r.get(key))]
    if not defined:
        return []
    top = max(r[key] for r in defined)
    return [r for r in defined if math.isclose(r[key], top, rel_tol=TIE_REL, abs_tol=0.0)]


def best_sentence(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """"Best estimated throughput: ..." for a row alone at the top, "Tie for the best ...:
    a / t, b / t" when several rows share it, None when no row has a throughput. Rows timed
    by a timing model are ranked by what the clients see (``e2e_throughput_mbps``)."""
    rows = list(rows)
    e2e = any(not is_undefined(r.get("e2e_throughput_mbps")) for r in rows)
    key = "e2e_throughput_mbps" if e2e else "throughput_mbps"
    what = "end-to-end throughput" if e2e else "estimated throughput"
    top = top_rows(rows, key)
    if not top:
        return None
    b = top[0]
    mbps = f"{b[key]:.2f} MB/s"
    labels = list(dict.fromkeys(f"{r['detector']} / {r['table']}" for r in top))
    if len(top) > 1:
        same = ", ".join(labels) if len(labels) > 1 else f"{labels[0]} (given {len(top)} times)"
        return f"Tie for the best {what}, {mbps}: {same}."
    return (f"Best {what}: {b['detector']} with the {b['table']} table, {mbps} "
            f"(coverage {prose('coverage', b.get('coverage'), '.1%')}, "
            f"accuracy {prose('accuracy', b.get('accuracy'), '.1%')}).")
