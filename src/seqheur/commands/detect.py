"""Verbs for detectors and table models: detectors, tables, detect."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json
from ..config import DEFAULT

_PLUGIN_HELP = ("import a detector plug-in (module name or .py file; repeatable; "
                "also $SEQHEUR_PLUGINS)")


def register(cli: click.Group) -> None:
    cli.add_command(detectors)
    cli.add_command(tables)
    cli.add_command(policies)
    cli.add_command(detect)


def _print_models(title: str, rows: list[dict], extra: tuple[str, ...] = ()) -> None:
    """One listing for every registry: grammar, options with default and unit, doc."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title)
    for col in ("spec", "options (default unit)", *extra, "description"):
        t.add_column(col)
    for r in rows:
        opts = "\n".join(f"{o['name']}={o['default']}" + (f" {o['unit']}" if o["unit"] else "")
                         for o in r.get("options", ()))
        doc = r["doc"] + (f" (= {r['alias_of']})" if "alias_of" in r else "")
        name = r.get("grammar") or r["name"]
        if r.get("builtin") is False:
            name += " (plug-in)"
        t.add_row(name, opts or "-", *(str(r.get(c, "")) for c in extra), doc)
    Console().print(t)


@click.command()
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE|FILE.py", help=_PLUGIN_HELP)
@click.option("--json", "as_json", is_flag=True, help="print as JSON")
def detectors(plugins: tuple[str, ...], as_json: bool) -> None:
    """List registered sequentiality detectors with their parameters and defaults.

    \b
    Example:
      seqheur detectors
      seqheur detectors --plugin my_detector.py --json
    """
    from ..heuristics.registry import load_plugins, registered_detectors

    load_plugins(plugins)
    from ..heuristics.registry import DETECTORS

    described = {r["name"]: r for r in DETECTORS.describe()}
    rows = []
    for name, info in registered_detectors().items():
        p = info.params()
        row = dict(described.get(name, {"name": name, "options": []}))
        row.update({"name": name, "params": info.defaults(), "state_words": info.words(p),
                    "max_seqcount": info.saturation(p), "builtin": info.builtin,
                    "policy": info.policy, "doc": " ".join(info.doc.split()),
                    "source": info.source})
        rows.append(row)
    if as_json:
        echo_json(rows)
        return
    _print_models("detectors (spec: NAME[:k=v,...])", rows,
                  ("state_words", "max_seqcount", "policy"))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="print as JSON")
def tables(as_json: bool) -> None:
    """List table models and aliases with their parameters and defaults.

    \b
    Example:
      seqheur tables
      seqheur tables --json
    """
    from ..tables import registered_tables

    rows = registered_tables()
    if as_json:
        echo_json(rows)
        return
    _print_models("table models (spec: NAME[:POSITIONAL][:k=v,...])", rows)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="print as JSON")
def policies(as_json: bool) -> None:
    """List read-ahead policies with their options and defaults.

    \b
    Example:
      seqheur policies
      seqheur replay t.parquet --policy fixed:8:bsize=4KiB
    """
    from ..readahead import registered_policies

    rows = registered_policies()
    if as_json:
        echo_json(rows)
        return
    _print_models("read-ahead policies (spec: NAME[:POSITIONAL][:k=v,...]; auto = the "
                  "detector's default)", rows)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--detector", "det", default=DEFAULT.detector, show_default=True,
              help="detector spec NAME[:k=v,...] (see `seqheur detectors`)")
@click.option("--table", "table", default=DEFAULT.table, show_default=True,
              help="table spec (see `seqheur tables`)")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="per-request seqcount/slot_fresh (Parquet)")
@click.option("--ops", default="read", show_default=True,
              help="ops fed to the detector, comma-separated (FreeBSD since 2011 also WRITEs)")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE|FILE.py", help=_PLUGIN_HELP)
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
def detect(trace: Path, det: str, table: str, output: Path | None, ops: str,
           plugins: tuple[str, ...], as_json: bool) -> None:
    """Seqcount of every READ of a trace under a detector and a table model.

    Requests are replayed in server order through one shared table; the output has one row
    per request (time, file_id, offset, count, seqcount, slot_fresh).

    \b
    Example:
      seqheur detect t.parquet --detector slowdown:window=65536 --table nfsheur:64x4 \\
          -o seq.parquet --json
    """
    import numpy as np
    import pyarrow as pa

    from ..detect import detect as run_detect
    from ..heuristics.registry import load_plugins, parse_detector
    from ..ingest import read_trace
    from ..io import write_parquet
    from ..streams import reads
    from ..tables import parse_table

    load_plugins(plugins)
    spec = parse_detector(det)  # fail on a bad spec before reading the trace
    model = parse_table(table)
    tbl, _ = read_trace(trace)
    stream = reads(tbl, ops=tuple(o.strip() for o in ops.split(",") if o.strip()))
    res = run_detect(stream, spec, model)
    summary = res.summary()
    summary["trace"] = str(trace)
    if output is not None:
        cols = {
            "time": pa.array(stream.time_ns, pa.int64()).cast(pa.timestamp("ns", tz="UTC")),
            "file": pa.array(stream.file, pa.int32()),
            "file_id": pa.array(stream.file_ids[stream.file] if len(stream) else
                                np.zeros(0, np.uint64), pa.uint64()),
            "offset": pa.array(stream.offset, pa.int64()),
            "count": pa.array(stream.count, pa.int32()),
            "seqcount": pa.array(res.seqcount, pa.int16()),
            "slot_fresh": pa.array(res.slot_fresh, pa.bool_()),
        }
        if stream.source_index is not None:
            cols["source_index"] = pa.array(stream.source_index, pa.uint64())
        write_parquet(pa.table(cols), output)
        summary["output"] = str(output)
    if as_json:
        echo_json(summary)
        return
    click.echo(f"{trace}: {summary['requests']:,} requests, {summary['files']:,} files; "
               f"{res.detector} on {res.table}: mean seqcount {summary['mean_seqcount']:.2f}, "
               f"{summary['zero_seqcount']:,} at 0, {summary['fresh']:,} fresh slots "
               f"({summary['table_ejections']:,} ejections)"
               + (f" -> {output}" if output else ""))
