"""``seqheur kernel-check``: the linux-6 model against the running kernel, page for page."""

from __future__ import annotations

import sys
from typing import Any

import click

from . import echo_json


def register(cli: click.Group) -> None:
    cli.add_command(kernel_check)


@click.command("kernel-check")
@click.argument("source", required=False, default="all")
@click.option("--ra-kb", "ra_kb", default="default", show_default=True,
              help="read_ahead_kb values to check, comma-separated; 'default' = the device's "
                   "own (a loop device comes up at 2560, a virtio disk at 8192)")
@click.option("--dir", "where", type=click.Path(file_okay=False, exists=True), default=None,
              help="put the scratch files here and use this directory's device (no root "
                   "needed unless --ra-kb changes it; the value is restored afterwards); "
                   "default: a scratch ext4 on a loop device of our own (root)")
@click.option("--reps", type=int, default=3, show_default=True,
              help="runs of each pattern on the kernel; all must agree")
@click.option("--size", default="64MiB", show_default=True,
              help="file size of the built-in patterns")
@click.option("--keep", type=int, default=10, show_default=True,
              help="mismatches listed with both page sets")
@click.option("--record", type=click.Path(file_okay=False), default=None,
              help="also write the kernel's pages per request to this directory (one gzipped "
                   "JSON per read_ahead_kb; the test suite replays such recordings)")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def kernel_check(source: str, ra_kb: str, where: str | None, reps: int, size: str, keep: int,
                 record: str | None, as_json: bool) -> None:
    """Replay SOURCE's per-file READs with pread on scratch files on this machine's kernel,
    record the pages each request made resident, and compare them request by request with
    linux-6 on the same requests.

    SOURCE: 'all' (every built-in pattern), a built-in pattern name (comma-separated for
    several), or a trace (its per-file read requests; scratch files as large as the largest
    byte read of each file). Exit status 1 when any request differs."""
    from ..errors import SeqheurError
    from ..kernelcheck import KernelCheckError, builtin_patterns, run_check, trace_pattern
    from ..options import parse_size

    try:
        patterns = _patterns(source, parse_size(size), builtin_patterns, trace_pattern)
        kbs = [None if k.strip() == "default" else int(k) for k in ra_kb.split(",")]
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from exc

    def progress(ra: int, row: dict[str, Any]) -> None:
        if not as_json:
            click.echo(f"  ra {ra:>5} KiB  {row['pattern']:<18} {row['exact']:>6}/"
                       f"{row['requests']:<6} exact"
                       + (f"  ({row['evicted_reruns']} reruns after reclaim)"
                          if row["evicted_reruns"] else "")
                       + ("" if row["deterministic"] else "  NOT deterministic"), err=True)

    try:
        res = run_check(patterns, kbs, where=where, reps=reps, keep=keep, progress=progress,
                        record=record)
    except (KernelCheckError, SeqheurError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(res)
    else:
        click.echo(f"kernel {res['kernel']} on {res['device']} ({res['filesystem']}), "
                   f"io_pages {res['io_pages']}, {reps} reps")
        click.echo(f"{res['exact_requests']} of {res['requests']} requests page-exact "
                   f"({res['mismatched_requests']} differ; {res['evicted_reruns']} runs redone "
                   "after reclaim)")
        if res["kernel_note"]:
            click.echo(f"note: {res['kernel_note']}")
        for m in res["mismatches"]:
            click.echo(f"  {m['pattern']} ra {m['read_ahead_kb']} request {m['request']} "
                       f"(file {m['file']}, {m['count']} B at {m['offset']}): kernel "
                       f"{m['kernel_pages']} model {m['model_pages']}")
    if res["mismatched_requests"] or not res["deterministic"]:
        sys.exit(1)


def _patterns(source: str, size: int, builtin_patterns: Any, trace_pattern: Any) -> list[Any]:
    import os

    if os.path.exists(source):
        return [trace_pattern(source)]
    known = builtin_patterns(size)
    if source == "all":
        return list(known.values())
    names = [s.strip() for s in source.split(",")]
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"no trace and no built-in pattern named {', '.join(bad)}; patterns: "
                         f"all, {', '.join(known)}")
    return [known[n] for n in names]
