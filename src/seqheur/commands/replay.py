"""Verb: replay (full read-ahead scoring of a trace)."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json
from ..config import DEFAULT


def register(cli: click.Group) -> None:
    cli.add_command(replay)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--detector", "det", default=DEFAULT.detector, show_default=True,
              help="detector spec NAME[:k=v,...] (see `seqheur detectors`)")
@click.option("--table", "table", default=DEFAULT.table, show_default=True,
              help="table spec (see `seqheur tables`)")
@click.option("--policy", default=DEFAULT.policy, show_default=True,
              help="read-ahead policy: freebsd4-cluster, freebsd-cluster, fixed:N, none "
                   "(options :bsize=N ...), or auto (by detector; linux-* imply linux)")
@click.option("--cache", default=DEFAULT.cache, show_default=True, help="buffer cache size")
@click.option("--profile", default=DEFAULT.profile, show_default=True,
              help="disk profile: bundled name (see `seqheur profiles`), a profile JSON file, "
                   "or 'none' for no disk time")
@click.option("--reorder-window", default=DEFAULT.reorder_window, show_default=True, type=int,
              help="bytes around the expected offset that count as a reordered READ (causes)")
@click.option("--no-eof", is_flag=True,
              help="do not clip read-ahead at the end of file (largest offset read per file)")
@click.option("--plugin", "plugins", multiple=True, metavar="MODULE|FILE.py",
              help="import a detector plug-in (repeatable; also $SEQHEUR_PLUGINS)")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=None,
              help="per-request results (Parquet; the summary is in its metadata)")
@click.option("--actions", "actions_out", type=click.Path(path_type=Path), default=None,
              help="write one row per read-ahead action (why each block was read) to this "
                   "Parquet file")
@click.option("--timing", "timing", default=None, metavar="SPEC",
              help="timing model: disk-only (the default: disk time only) or closed-loop"
                   "[:preset=paper-testbed|lab-loopback][:slots=N,rtt_us=X,...]; adds "
                   "e2e_seconds, e2e_throughput_mbps, READ latency percentiles, "
                   "disk_utilisation and disk_requests (docs/timing.md)")
@click.option("--json", "as_json", is_flag=True, help="print the summary as JSON")
@click.option("--chunk-rows", type=int, default=1 << 22, show_default=True,
              help="for a dataset directory: READs per chunk of the out-of-core replay")
def replay(trace: Path, det: str, table: str, policy: str, cache: str, profile: str,
           reorder_window: int, no_eof: bool, plugins: tuple[str, ...],
           output: Path | None, actions_out: Path | None, timing: str | None, as_json: bool,
           chunk_rows: int) -> None:
    """Replay a trace through a detector, table model, read-ahead policy, buffer cache and
    disk model, and score the read-ahead.

    TRACE is any trace format (nfsdump text, pcap/pcapng, CSV/Parquet request table), or a
    dataset directory made by `seqheur ingest DIR -o DATASET/`, which is replayed out of core,
    chunk by chunk, with the same result as in memory. The
    summary has hits, misses, prefetched/used/wasted blocks, coverage, accuracy, table
    ejections, why read-ahead was lost (lost_*), disk ops, disk seconds and throughput.

    \b
    Example:
      seqheur replay t.parquet --detector slowdown --table ellard \\
          --policy freebsd4-cluster --cache 256MiB --profile ide-7200 -o r.parquet --json
    """
    from ..heuristics.registry import load_plugins
    from ..replay import replay as run_replay
    from ..streams import read_stream

    from ..ingest.dataset import is_dataset

    load_plugins(plugins)
    prof = None if profile.strip().lower() == "none" else profile
    if timing is not None:
        from ..timing import parse_timing

        parse_timing(timing)  # a bad spec fails before the trace is read
    # per-request columns only when they are written (requests_to streams them step by step)
    if is_dataset(trace):
        from ..outofcore import replay_dataset

        if actions_out is not None:
            raise click.UsageError("--actions: replay the dataset's trace file, not the "
                                   "dataset directory (actions are kept in memory)")
        result = replay_dataset(trace, chunk_rows, detector=det, table=table, policy=policy,
                                cache=cache, profile=prof, reorder_window=reorder_window,
                                clip_eof=not no_eof, per_request=False, requests_to=output,
                                timing=timing)
    else:
        stream = read_stream(trace)
        if len(stream) == 0:
            from ..ingest import read_trace
            from ..streams import no_stream_hint

            click.echo(f"seqheur: note: {trace}: {no_stream_hint(read_trace(trace, warn_loss=False)[0])}",
                       err=True)
        result = run_replay(stream, det, table, policy, cache, prof, reorder_window=reorder_window,
                            clip_eof=not no_eof, progress=True, per_request=False,
                            requests_to=output, actions=actions_out is not None,
                            sizes_from=trace, timing=timing)
        if actions_out is not None:
            from ..io import atomic_path

            with atomic_path(actions_out) as tmp:
                result.actions.write_parquet(tmp)
    if as_json:
        echo_json(result.to_dict())
        return
    _print(result.to_dict())


def _print(summary: dict) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..report.text import THROUGHPUT_UNIT, UNITS_NOTE, UNDEFINED, WHY_UNDEFINED, is_undefined

    t = Table(title="replay summary", show_header=False)
    t.add_column("key")
    t.add_column("value", justify="right", overflow="fold")
    units = {"throughput_mbps": THROUGHPUT_UNIT, "disk_seconds": "s", "e2e_seconds": "s",
             "e2e_throughput_mbps": THROUGHPUT_UNIT, "read_latency_p50_ms": "ms",
             "read_latency_p95_ms": "ms", "read_latency_p99_ms": "ms"}
    for k, v in summary.items():
        label = f"{k} [{units[k]}]" if k in units else k
        if is_undefined(v):  # a ratio over 0, or no disk model: say why, never "nan"
            v = f"n/a ({WHY_UNDEFINED[k]})" if k in WHY_UNDEFINED else UNDEFINED
        elif isinstance(v, float):
            v = f"{v:,.4g}"
        t.add_row(Text(label), Text(str(v)))  # Text: "[s]" is a unit, not rich markup
    con = Console(width=None if sys.stdout.isatty() else 160)
    con.print(t)
    if "throughput_mbps" in summary:
        con.print(UNITS_NOTE, markup=False, highlight=False)
