"""`seqheur bound` against one full replay of the same trace (target: bound <= 3x replay).

Trace: the paper's benchmark workload (32 readers of their own file, 8 KiB READs, 6%
reordered), 2 M READs (quick: 200 k). Replay: the default configuration (freebsd4 detector
and table, freebsd4-cluster policy, 256 MiB cache, ide-7200), summary only. Bound: the same
cache and disk, everything (lower bound, Belady, LRU, the oracle's replay, aggressive and
conservative), and without the two reference schedules (``references=False``). Timed
interleaved after a warm-up round (compiles excluded).
"""

from __future__ import annotations

import sys

import numpy as np

from _common import interleaved, parse_args, summarize, write_result

import seqheur
from seqheur import workloads
from seqheur.streams import reads


#: The cache, disk and file sizes of the replay and of ``bound`` (bound_phases.py too).
COMMON = dict(cache="256MiB", profile="ide-7200", file_sizes="observed")


def workload(n_target: int):
    """The paper's benchmark workload with about ``n_target`` READs (bound_phases.py too)."""
    return reads(workloads.paper(32, n_target * 8 / 1024, 8, 0.06, seed=1))


def main() -> int:
    args = parse_args("bound")
    n_target = 200_000 if args.quick else 2_000_000
    stream = workload(n_target)
    n = len(stream)
    common = COMMON
    runners = {
        "replay": lambda: seqheur.replay(stream, per_request=False, **common),
        "bound": lambda: seqheur.bound(stream, **common),
        "bound_no_references": lambda: seqheur.bound(stream, references=False, **common),
    }
    samples = interleaved(runners, args.reps)
    med = {k: float(np.median(v)) for k, v in samples.items()}
    result = seqheur.bound(stream, **common)
    figures = []
    for name in ("bound", "bound_no_references"):
        figures.append({
            "metric": f"{name} seconds / replay seconds ({n // 1000} k READs)",
            "unit": "s", "seqheur": summarize(samples[name]),
            "peer": summarize(samples["replay"]), "peer_name": "one full replay (default "
            "configuration, summary only)",
            "ratio": med[name] / med["replay"], "target": "<= 3x one replay",
            "met": med[name] <= 3 * med["replay"]})
    write_result("bound", args.out, figures=figures, params={
        "requests": n, "reps": args.reps, **common,
        "oracle_disk_seconds": result["oracle_disk_seconds"],
        "lower_bound_disk_seconds": result["lower_bound_disk_seconds"]},
        notes="ratio: median bound time over median replay time, same process, interleaved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
