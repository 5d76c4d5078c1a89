"""`make demo`: the main job on the bundled sample trace.

    python -m seqheur.demo OUTDIR

Ingests the bundled trace, prints its stream statistics, and writes everything under OUTDIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "traces"
# First bundled trace that exists wins: a real capture from the lab, else the synthetic mix.
CANDIDATES = ("demo.pcap.gz", "synthetic-mix.parquet")


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
    con = Console()
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
    con.print(f"outputs in [cyan]{out}[/]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
