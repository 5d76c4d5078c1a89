"""Verbs for traces: ingest, synth, stats."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import echo_json, skip_teardown


def register(cli: click.Group) -> None:
    cli.add_command(ingest)
    cli.add_command(synth)
    cli.add_command(stats)


def executor_options(fn):
    """--workers / --dask-local / --scheduler, shared by verbs that fan out."""
    fn = click.option("--scheduler", default=None, metavar="tcp://HOST:PORT",
                      help="run on an existing Dask scheduler")(fn)
    fn = click.option("--dask-local", type=int, default=None, metavar="N",
                      help="run on a Dask LocalCluster of N worker processes")(fn)
    fn = click.option("--workers", type=int, default=None, metavar="N",
                      help="run on N local processes")(fn)
    return fn


@click.command()
@click.argument("traces", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
              help="request table (Parquet) for one trace; a dataset directory for several")
@click.option("--format", "fmt", default=None,
              help="force the input format (pcap, nfsdump, parquet, csv); default: sniffed")
@click.option("--json", "as_json", is_flag=True, help="print the ingest report as JSON")
@click.option("--strict", is_flag=True,
              help="exit 1 if any record was skipped or reading stopped before the end")
@executor_options
def ingest(traces: tuple[str, ...], output: Path, fmt: str | None, as_json: bool, strict: bool,
           workers: int | None, dask_local: int | None, scheduler: str | None) -> None:
    """Read traces (pcap/pcapng, nfsdump text, CSV, Parquet; gz/bz2/xz/zst) into the
    request table.

    One file gives one Parquet table. A directory, a glob or several files give a
    partitioned dataset directory (one part per input, ingested in parallel), which every
    verb then reads as one time-ordered trace.

    \b
    Example:
      seqheur ingest capture.pcap.gz -o requests.parquet --json
      seqheur ingest 'traces/anon-*.txt.gz' -o campus/ --workers 2
    """
    if "numpy" not in sys.modules:
        # numpy's OpenBLAS starts a thread per core as numpy is imported, and those threads
        # spin for a while: 0.06 s of CPU in a fresh process, with no linear algebra on this
        # path to use them (a value the user set is kept; in-process callers have numpy
        # already, and for them this would come too late to matter)
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    single = len(traces) == 1 and Path(traces[0]).is_file()
    if single:
        # (the executors and the dataset writer are imported only for several traces: their
        # imports are a measurable share of a one-file ingest)
        from ..ingest import ingest_file

        rows, report = ingest_file(traces[0], output, format=fmt)  # losses reported below
        errors: list[dict[str, str]] = []
    else:
        if fmt:
            from ..errors import SeqheurError

            raise SeqheurError("--format applies to a single trace; several are sniffed one by one")
        from ..executors import executor_from_options
        from ..ingest.dataset import ingest_many

        manifest, report = ingest_many(list(traces), output,
                                       executor_from_options(workers, dask_local, scheduler))
        rows, errors = report.rows, manifest["errors"]
    if as_json:
        d = report.to_dict()
        if errors:
            d["failed_files"] = errors
        echo_json(d)
    else:
        click.echo(f"{', '.join(traces)}: {report.records_total} records, {report.parsed} parsed, "
                   f"{report.skipped_total} skipped -> {rows} rows in {output}")
        for reason, n in sorted(report.skipped.items()):
            click.echo(f"  skipped {n}: {reason}")
        for record, reason, detail in report.examples[:5]:
            click.echo(f"    e.g. record {record}: {reason}" + (f" ({detail})" if detail else ""))
        programs = report.extra.get("rpc_programs") or {}
        if rows == 0 and report.parsed and "nfs" not in programs:
            # parsed frames that made no rows: say what they were, not just "0 rows"
            seen = ", ".join(f"{name} {n}" for name, n in sorted(programs.items()))
            click.echo("  no NFS in the parsed records" + (f" (RPC programs: {seen})"
                                                            if seen else ""))
        for e in errors:
            click.echo(f"  FAILED {e['source']}: {e['error']}")
    stopped = report.extra.get("stopped")
    if stopped:
        click.echo(f"WARNING: {report.stopped_line(', '.join(traces))}", err=True)
    if errors:
        raise SystemExit(1)
    lost = report.lost()
    if strict and (stopped or lost):
        click.echo("seqheur: error: --strict: " + "; ".join(
            (["reading stopped before the end"] if stopped else [])
            + [f"{n} records skipped: {k}" for k, n in sorted(lost.items())]), err=True)
        raise SystemExit(1)
    if single:
        skip_teardown()  # everything is written and printed: nothing left to clean up


@click.group()
def synth() -> None:
    """Generate synthetic request tables (seeded, reproducible).

    \b
    Example:
      seqheur synth paper --readers 32 --reorder 0.06 --seed 1 -o t.parquet
      seqheur synth stride --stride 4 -o s.parquet
    """


_out = click.option("-o", "--output", type=click.Path(path_type=Path), required=True,
                    help="request table to write (Parquet)")
_seed = click.option("--seed", type=int, default=0, show_default=True)
_req = click.option("--request-kb", type=float, default=8, show_default=True, help="READ size")


def _write(table, output: Path) -> None:
    from ..io import write_parquet

    write_parquet(table, output)
    click.echo(f"{table.num_rows} requests -> {output}")


@synth.command("paper")
@click.option("--readers", type=int, default=32, show_default=True)
@click.option("--total-mb", type=float, default=256, show_default=True)
@_req
@click.option("--reorder", type=float, default=0.0, show_default=True,
              help="target fraction of out-of-order READs (client nfsiod model)")
@click.option("--max-displacement", type=int, default=3, show_default=True,
              help="a held READ is overtaken by 1..this many successors")
@_seed
@_out
def synth_paper(readers: int, total_mb: float, request_kb: float, reorder: float,
                max_displacement: int, seed: int, output: Path) -> None:
    """Ellard & Seltzer's benchmark: N readers of their own total/N MB file.

    \b
    Example:
      seqheur synth paper --readers 8 --reorder 0.06 -o paper8.parquet
    """
    from .. import workloads

    _write(workloads.paper(readers, total_mb, request_kb, reorder, seed, max_displacement), output)


@synth.command("stride")
@click.option("--stride", type=int, default=2, show_default=True, help="number of sub-streams")
@click.option("--file-mb", type=float, default=256, show_default=True)
@_req
@_seed
@_out
def synth_stride(stride: int, file_mb: float, request_kb: float, seed: int, output: Path) -> None:
    """One reader visiting S sequential sub-streams of one file in turn.

    \b
    Example:
      seqheur synth stride --stride 4 -o stride4.parquet
    """
    from .. import workloads

    _write(workloads.stride(stride, file_mb, request_kb, seed), output)


@synth.command("random")
@click.option("--files", type=int, default=4, show_default=True)
@click.option("--file-mb", type=float, default=64, show_default=True)
@click.option("--requests", type=int, default=10_000, show_default=True)
@_req
@_seed
@_out
def synth_random(files: int, file_mb: float, requests: int, request_kb: float, seed: int,
                 output: Path) -> None:
    """Uniformly random READs over several files.

    \b
    Example:
      seqheur synth random --files 8 --requests 50000 -o random.parquet
    """
    from .. import workloads

    _write(workloads.random_reads(files, file_mb, requests, request_kb, seed), output)


@synth.command("mix")
@click.option("--readers", type=int, default=4, show_default=True, help="paper readers (0: none)")
@click.option("--total-mb", type=float, default=64, show_default=True)
@click.option("--reorder", type=float, default=0.05, show_default=True)
@click.option("--stride", type=int, default=2, show_default=True, help="stride reader (0: none)")
@click.option("--stride-mb", type=float, default=32, show_default=True)
@click.option("--random", "random_requests", type=int, default=2000, show_default=True,
              help="random READs (0: none)")
@_req
@_seed
@_out
def synth_mix(readers: int, total_mb: float, reorder: float, stride: int, stride_mb: float,
              random_requests: int, request_kb: float, seed: int, output: Path) -> None:
    """Paper readers, a stride reader and random READs interleaved in time.

    \b
    Example:
      seqheur synth mix --readers 4 --stride 2 --random 2000 -o mix.parquet
    """
    from .. import workloads
    from ..errors import SeqheurError

    parts = []
    if readers:
        parts.append(workloads.paper(readers, total_mb, request_kb, reorder, seed))
    if stride:
        parts.append(workloads.stride(stride, stride_mb, request_kb, seed + 1))
    if random_requests:
        parts.append(workloads.random_reads(4, 64, random_requests, request_kb, seed + 2))
    if not parts:
        raise SeqheurError("mix needs at least one of --readers, --stride, --random")
    _write(workloads.mix(parts, seed), output)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="print the trace summary as JSON")
@click.option("--files", "files_out", type=click.Path(path_type=Path), default=None,
              help="write per-file statistics (Parquet)")
@click.option("--ops", default="read", show_default=True, help="ops forming the streams")
@click.option("--reorder-depth", type=int, default=16, show_default=True,
              help="a late READ within this many of its lengths counts as reordered")
def stats(trace: Path, as_json: bool, files_out: Path | None, ops: str, reorder_depth: int) -> None:
    """Stream statistics: sequential and reordered fractions, runs, sub-streams.

    \b
    Example:
      seqheur stats t.parquet --json
    """
    from ..ingest import read_trace
    from ..io import write_parquet
    from ..streams import trace_stats

    table, _ = read_trace(trace)
    op_list = tuple(o.strip().lower() for o in ops.split(",") if o.strip())
    st = trace_stats(table, ops=op_list, reorder_depth=reorder_depth)
    if st.summary["requests"] == 0:
        from ..streams import no_stream_hint

        click.echo(f"seqheur: note: {trace}: {no_stream_hint(table, op_list)}", err=True)
    if files_out:
        write_parquet(st.files, files_out)
    if as_json:
        echo_json(st.summary)
        return
    from rich.console import Console
    from rich.table import Table

    s = st.summary
    t = Table(title=f"{trace}", show_header=False)
    for key in ("requests", "files", "bytes", "sequential_fraction", "reordered_fraction",
                "reread_fraction", "runs", "mean_run_length", "substreams", "max_substreams_per_file",
                "strided_files", "duration_s"):
        v = s[key]
        t.add_row(key, f"{v:.4f}" if isinstance(v, float) else f"{v:,}")
    t.add_row("run lengths", ", ".join(f"{k}: {v}" for k, v in s["run_length_histogram"].items()))
    Console().print(t)
