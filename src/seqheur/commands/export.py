"""Verb: export a request table (any readable trace) as nfsdump text."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json


def register(cli: click.Group) -> None:
    cli.add_command(export)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["nfsdump"]), default="nfsdump",
              show_default=True, help="output format")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="output text file (.gz/.bz2/.xz/.zst compress by suffix)")
@click.option("--json", "as_json", is_flag=True, help="print what was written as JSON")
def export(trace: Path, fmt: str, output: Path, as_json: bool) -> None:
    """Write a trace (request table, pcap, nfsdump, CSV, dataset) as nfsdump text in the
    anonymized style of the Harvard traces, for Ellard's tools or for read_nfsdump.

    Each row gives a call line and, if answered, a reply line, in time order. NFSv4 rows
    have no nfsdump form and are counted as skipped.

    \b
    Example:
      seqheur ingest capture.pcap -o req.parquet
      seqheur export req.parquet --format nfsdump -o capture.txt.gz --json
    """
    from ..export import export_nfsdump
    from ..ingest import read_trace

    table, _ = read_trace(trace)
    rep = export_nfsdump(table, output)
    if as_json:
        echo_json({"source": str(trace), "output": str(output), "format": fmt} | rep.to_dict())
        return
    d = rep.to_dict()
    click.echo(f"{trace}: {d['rows']} rows -> {d['lines']} lines ({d['call_lines']} calls, "
               f"{d['reply_lines']} replies) in {output}")
    for reason, n in sorted(rep.skipped.items()):
        click.echo(f"  skipped {n} rows: {reason}")
