"""Verb: bound (lower bounds of a trace: Belady's MIN misses and the disk time no schedule
can beat)."""

from __future__ import annotations

from pathlib import Path

import click

from . import echo_json
from ..config import DEFAULT


def register(cli: click.Group) -> None:
    cli.add_command(bound)


@click.command()
@click.argument("trace", type=click.Path(path_type=Path))
@click.option("--cache", default=DEFAULT.cache, show_default=True,
              help="buffer cache size, or 'unbounded'")
@click.option("--profile", default=DEFAULT.profile, show_default=True,
              help="disk profile: bundled name (see `seqheur profiles`), a profile JSON file, "
                   "or 'none' for no disk time")
@click.option("--block-size", default=None,
              help="cache block size, e.g. 16KiB (default: the default replay policy's; give "
                   "the block_size of the replays you compare with, 4KiB for linux-*)")
@click.option("--timing", default=None,
              help="timing model for the oracle's end-to-end columns (e.g. closed-loop; "
                   "docs/timing.md)")
@click.option("--oracle/--no-oracle", default=True, show_default=True,
              help="replay the clairvoyant read-ahead (oracle_* keys)")
@click.option("--references/--no-references", default=True, show_default=True,
              help="Cao et al.'s aggressive and conservative schedules (aggressive_*, "
                   "conservative_* keys)")
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON")
def bound(trace: Path, cache: str, profile: str, block_size: str | None, timing: str | None,
          oracle: bool, references: bool, as_json: bool) -> None:
    """The best any schedule could do on TRACE: Belady's MIN demand misses at the cache size
    (with LRU's for reference), a lower bound of the disk model's busy time that no
    detector, policy or cache can beat, the clairvoyant read-ahead (oracle) replayed
    through the same cache and disk, and Cao et al.'s aggressive and conservative
    schedules (docs/bound.md).

    \b
    Example:
      seqheur bound t.parquet --cache 256MiB --profile ide-7200 --json
    """
    from ..bound import bound as run_bound
    from ..streams import read_stream

    prof = None if profile.strip().lower() == "none" else profile
    result = run_bound(read_stream(trace), cache=cache, profile=prof, block_size=block_size,
                       sizes_from=trace, timing=timing, oracle=oracle, references=references)
    if as_json:
        echo_json(result)
        return
    width = max(len(k) for k in result)
    for k, v in result.items():
        if isinstance(v, float):
            v = f"{v:,.6g}"
        elif v is None:
            v = "n/a"
        click.echo(f"{k:<{width}}  {v}")
