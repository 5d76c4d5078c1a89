"""Stream statistics throughput on a 10 M-request paper trace (32 readers, 6% reordering).

Peer: the same sequential/reordered flags written as plain polars window expressions
(`shift`/`cum_max` over the file groups) — what a user would write without seqheur. seqheur
computes more (runs, sub-streams) in one numba pass plus polars aggregation.
"""

from __future__ import annotations

import sys

import numpy as np
import polars as pl

from _common import interleaved, parse_args, summarize, write_result

from seqheur import workloads
from seqheur.streams import reads, stream_stats


def polars_flags(stream) -> dict:
    df = pl.DataFrame({"file": stream.file, "offset": stream.offset,
                       "end": stream.offset + stream.count})
    out = df.with_columns(
        prev_end=pl.col("end").shift(1).over("file"),
        max_end=pl.col("end").cum_max().shift(1).over("file"),
    ).select(
        sequential=(pl.col("offset") == pl.col("prev_end")).sum(),
        reordered=((pl.col("offset") < pl.col("max_end"))
                   & (pl.col("max_end") - pl.col("offset") <= 16 * (pl.col("end") - pl.col("offset")))).sum(),
    )
    return out.to_dicts()[0]


def main() -> int:
    args = parse_args("stats")
    n_target = 1_000_000 if args.quick else 10_000_000
    readers = 32
    total_mb = n_target * 8 / 1024
    table = workloads.paper(readers, total_mb, 8, 0.06, seed=1)
    stream = reads(table)
    n = len(stream)
    del table
    ours = stream_stats(stream).summary
    peer = polars_flags(stream)
    assert ours["sequential"] == peer["sequential"] and ours["reordered"] == peer["reordered"], (ours, peer)
    samples = interleaved({"seqheur": lambda: stream_stats(stream),
                           "polars": lambda: polars_flags(stream)}, args.reps)
    rate = {k: [n / s for s in v] for k, v in samples.items()}
    med = {k: float(np.median(v)) for k, v in rate.items()}
    figures = [{
        "metric": "stats rows/s (10M paper trace)" if not args.quick else "stats rows/s (1M paper trace)",
        "unit": "rows/s", "seqheur": summarize(rate["seqheur"]), "peer": summarize(rate["polars"]),
        "peer_name": "polars window expressions (sequential+reordered flags only)",
        "ratio": med["seqheur"] / med["polars"], "target": "report rows/s", "met": None,
    }]
    write_result("stats", args.out, figures=figures,
                 params={"requests": n, "readers": readers, "reorder": 0.06, "reps": args.reps})
    return 0


if __name__ == "__main__":
    sys.exit(main())
