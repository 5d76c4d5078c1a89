"""Verbs for results: compare, reproduce, sweep."""

from __future__ import annotations

import itertools
from pathlib import Path

import click

from ..config import DEFAULT

from . import echo_json
from .data import executor_options


def register(cli: click.Group) -> None:
    cli.add_command(compare)
    cli.add_command(reproduce)
    cli.add_command(sweep)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--detectors", default="freebsd4,slowdown,cursor,freebsd,linux-3.12,always",
              show_default=True, help="comma-separated detector specs")
@click.option("--tables", default="freebsd4,ellard,ideal", show_default=True,
              help="comma-separated table specs")
@click.option("--profile", default=DEFAULT.profile, show_default=True, help="disk profile name or JSON file")
@click.option("--cache", default=DEFAULT.cache, show_default=True, help="buffer-cache size")
@click.option("--policy", default=None, help="read-ahead policy (default: the detector's own)")
@click.option("--timing", default=None, metavar="SPEC",
              help="timing model (docs/timing.md), e.g. closed-loop:preset=paper-testbed: adds "
                   "end-to-end throughput, READ latency and disk utilisation to every row")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="report directory (index.html, results.parquet, *.png)")
@click.option("--no-references", is_flag=True,
              help="skip the reference rows (no read-ahead, oracle, lower bound: seqheur bound) "
                   "and each row's share of the achievable gain")
@click.option("--json", "as_json", is_flag=True,
              help="print the rows as JSON (kind: heuristic, then reference)")
def compare(trace: Path, detectors: str, tables: str, profile: str, cache: str,
            policy: str | None, timing: str | None, no_references: bool, output: Path,
            as_json: bool) -> None:
    """Replay every detector x table on TRACE and write a side-by-side report.

    \b
    Example:
      seqheur compare t.parquet --detectors freebsd4,slowdown,cursor,always \\
          --tables freebsd4,ellard,ideal --profile ide-7200 --cache 256MiB -o report/
    """
    from ..report.compare import SUMMARY_COLUMNS, compare as run

    from ..report.text import cell, json_safe

    if timing is not None:
        from ..timing import parse_timing

        parse_timing(timing)  # a bad spec fails before any replay
    res = run(trace, detectors, tables, profile=profile, cache=cache, policy=policy, out_dir=output,
              timing=timing, references=not no_references)
    refs = [] if res.references is None else res.references.to_dicts()
    if as_json:  # undefined ratios are null, not NaN
        echo_json(json_safe([{"kind": "heuristic", **r} for r in res.summary.to_dicts()]
                            + [{"kind": "reference", **r} for r in refs]))
        return
    _print_summary(res.summary, [c for c in ("detector", "table", "throughput_mbps",
                                             "e2e_throughput_mbps", "read_latency_p99_ms", "coverage",
                                             "accuracy", "achievable_gain_fraction", "misses",
                                             "prefetch_wasted", "table_ejections")
                                 if c in res.summary.columns])
    for block, group in itertools.groupby(refs, key=lambda r: r["table"]):
        figures = ", ".join(f"{r['detector']} {cell(r['throughput_mbps'], '.2f')} MB/s "
                            f"({cell(r['disk_seconds'], '.3f')} s)" for r in group)
        click.echo(f"references at {block}: {figures}")
    click.echo(f"report: {res.html}")


def _console():
    """Rich console: the terminal's width, or 160 columns when piped (so no cell is cut)."""
    import sys

    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


def _print_summary(df, cols) -> None:
    from rich.table import Table
    from rich.text import Text

    from ..report.text import THROUGHPUT_UNIT, UNITS_NOTE, best_sentence, cell, undefined_note

    rows = df.select(cols).to_dicts()
    heads = {"throughput_mbps": f"throughput {THROUGHPUT_UNIT}",
             "achievable_gain_fraction": "share of gain",
             "e2e_throughput_mbps": f"end to end {THROUGHPUT_UNIT}", "read_latency_p99_ms": "p99 ms"}
    t = Table(show_edge=False)
    for c in cols:
        t.add_column(heads.get(c, c), justify="left" if c in ("detector", "table") else "right",
                     overflow="fold")
    for r in rows:
        t.add_row(*[Text(cell(r[c], ".3f" if isinstance(r[c], float) else None)) for c in cols])
    con = _console()
    con.print(t)
    notes = [UNITS_NOTE if "throughput_mbps" in cols else None, undefined_note(rows, cols),
             best_sentence(df.to_dicts())]
    for line in notes:
        if line:
            con.print(line, markup=False, highlight=False)


@click.group()
def reproduce() -> None:
    """Re-run a paper's experiments and compare with its findings.

    \b
    Example:
      seqheur reproduce ellard2003 -o ellard/ --quick
    """


@reproduce.command("ellard2003")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, help="report directory")
@click.option("--quick", is_flag=True, help="fewer points and 64 MB of files (about a minute)")
@click.option("--json", "as_json", is_flag=True, help="print the findings as JSON")
def reproduce_ellard(output: Path, quick: bool, as_json: bool) -> None:
    """Ellard & Seltzer 2003: concurrent readers (Figures 6-7) and stride readers (Table 1).

    \b
    Example:
      seqheur reproduce ellard2003 -o ellard/
    """
    from ..report.reproduce import reproduce_ellard2003

    res = reproduce_ellard2003(output, quick=quick)
    if as_json:
        echo_json([f.__dict__ for f in res.findings])
        return
    for f in res.findings:
        click.echo(f"[{f.verdict:9s}] {f.where}: {f.claim}\n             {f.measured}")
    from ..report.text import cell

    click.echo("Table 1, MB/s (MB = 10^6 bytes): paper | disk model (error) | end to end "
               "(error) | oracle, lower bound (disk model) | share of the achievable gain")
    for c in res.table1:
        click.echo(f"  {c['profile']:9s} {c['heuristic']:8s} stride {c['stride']}: "
                   f"{c['paper_mbps']:6.2f} | {c['disk_mbps']:6.2f} ({c['disk_error']:+.0%}) | "
                   f"{c['e2e_mbps']:6.2f} ({c['e2e_error']:+.0%}) | "
                   f"{cell(c['oracle_mbps'], '6.2f')}, {c['lower_bound_mbps']:6.2f} | "
                   f"{cell(c['gain_fraction'], '.0%')}")
    click.echo(f"report: {res.html}")


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--grid", type=click.Path(exists=True, path_type=Path), required=True,
              help="TOML grid (see docs/scaling.md)")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="results (Parquet), one row per configuration; resumed if it exists")
@click.option("--no-resume", is_flag=True, help="recompute configurations already in OUTPUT")
@click.option("--no-share", is_flag=True,
              help="one replay per configuration (default: one replay for configurations "
                   "that differ only in disk profile, or in tables that agree on the trace)")
@click.option("--json", "as_json", is_flag=True, help="print a run summary as JSON")
@executor_options
def sweep(trace: Path, grid: Path, output: Path, no_resume: bool, no_share: bool,
          as_json: bool, workers: int | None, dask_local: int | None,
          scheduler: str | None) -> None:
    """Replay the cartesian grid of a TOML file: locally, on processes, or on Dask.

    TRACE should be a request-table Parquet (or dataset) on storage every worker can read:
    workers read it themselves; it is never sent through the scheduler.

    \b
    Example:
      seqheur sweep t.parquet --grid grid.toml -o sweep.parquet --workers 2
      seqheur sweep t.parquet --grid grid.toml -o sweep.parquet --scheduler tcp://head:8786
    """
    from ..executors import executor_from_options
    from ..sweep import load_grid, sweep as run

    configs = load_grid(grid)
    df = run(trace, configs, output, executor_from_options(workers, dask_local, scheduler),
             resume=not no_resume, share=not no_share)
    failed = df.filter(df["error"].is_not_null())
    doc = {"configurations": len(configs), "rows": df.height, "failed": failed.height,
           "output": str(output)}
    if as_json:
        echo_json(doc)
    else:
        click.echo(f"{df.height} of {len(configs)} configurations in {output}; {failed.height} failed")
        for r in failed.select("config_id", "detector", "table", "error").iter_rows(named=True):
            click.echo(f"  FAILED {r['detector']} / {r['table']}: {r['error']}")
