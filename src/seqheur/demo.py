"""`make demo`: the main job on the bundled sample trace.

    python -m seqheur.demo OUTDIR

Ingests the bundled real capture, prints its stream statistics, replays it through the paper's
detectors and tables, prints their summaries, and writes a compare report under OUTDIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"
# First bundled trace that exists wins: a real capture from the lab, else the synthetic mix.
CANDIDATES = ("demo-v3.pcap.gz", "synthetic-mix.parquet")
DETECTORS = ("freebsd4", "slowdown", "cursor", "always")
TABLES = ("freebsd4", "ellard")


def bundled_trace() -> Path:
    for name in CANDIDATES:
        p = TRACES / name
        if p.exists():
            return p
    raise SystemExit(f"no bundled trace under {TRACES} (looked for {', '.join(CANDIDATES)})")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = Path(argv[0] if argv else "demo-out")
    out.mkdir(parents=True, exist_ok=True)
    con = Console(width=None if sys.stdout.isatty() else 120)
    from .ingest import read_trace
    from .io import write_json, write_parquet
    from .streams import trace_stats

    trace = bundled_trace()
    con.rule(f"seqheur demo: {trace.name}")
    table, report = read_trace(trace)
    write_parquet(table, out / "requests.parquet")
    write_json(report.to_dict(), out / "ingest.json")
    con.print(f"ingest: {report.records_total} records, {report.parsed} parsed, "
              f"{report.skipped_total} skipped -> {table.num_rows} requests "
              f"([cyan]{out / 'requests.parquet'}[/])")

    st = trace_stats(table)
    write_json(st.summary, out / "stats.json")
    write_parquet(st.files, out / "stats-files.parquet")
    s = st.summary
    con.print(f"streams: {s['requests']} READs of {s['files']} files, {s['bytes'] / 2**20:.1f} MiB; "
              f"sequential {s['sequential_fraction']:.1%}, reordered {s['reordered_fraction']:.1%}, "
              f"{s['substreams']} sub-streams ({s['strided_files']} strided files)")

    from .report.compare import compare

    con.rule("replay: detectors x tables (disk profile ide-7200, cache 256MiB)")
    res = compare(table, DETECTORS, TABLES, profile="ide-7200", cache="256MiB",
                  out_dir=out / "report", title=f"seqheur demo: {trace.name}")
    from rich.table import Table

    from .report.text import UNITS_NOTE, best_sentence, cell, undefined_note

    t = Table(show_edge=False)
    cols = {"detector": "detector", "table": "table", "throughput_mbps": "MB/s (10^6 B/s)",
            "coverage": "coverage", "accuracy": "accuracy", "hits": "hits", "misses": "misses",
            "prefetch_wasted": "RA wasted", "table_ejections": "ejections",
            "lost_reordered": "lost: reordered", "lost_nonsequential": "lost: nonseq"}
    for c, head in cols.items():
        t.add_column(head, justify="left" if c in ("detector", "table") else "right")
    rows = res.summary.select(list(cols)).to_dicts()
    for r in rows:
        t.add_row(*[cell(v, ".3f" if isinstance(v, float) else None) for v in r.values()])
    con.print(t)
    for line in (UNITS_NOTE, undefined_note(rows, list(cols)), best_sentence(res.summary.to_dicts())):
        if line:
            con.print(line, markup=False, highlight=False)
    con.print(f"report: [cyan]{res.html}[/] (results.parquet and PNGs beside it)")
    con.print(f"outputs in [cyan]{out}[/]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
