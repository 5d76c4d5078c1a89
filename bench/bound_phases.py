"""`seqheur bound` phase by phase, two revisions of the source interleaved (docs/bound.md,
"Speed"): CPU seconds of the measuring thread, least of the repetitions.

    python bench/bound_phases.py SRC_A SRC_B [--requests 2000000] [--reps 5]

Each SRC is a revision's ``src`` folder (e.g. a ``git archive`` of another revision, unpacked);
each runs in its own process (one PYTHONPATH each) on bench_bound.py's workload and settings
(the paper's, 32 readers, 8 KiB READs, 6% reordered; 256 MiB, ide-7200), after a warm-up
round, the two in turns. A phase is timed around its call as ``bound`` makes it (the
functions are wrapped in their modules); the replay (the default configuration, summary
only) follows each ``bound``.
CPU time (``time.thread_time``) because the machine may be shared: wall time then measures
the other jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

# (module, function, phase): the calls bound makes, in its order; a phase named twice adds up
PHASES = [("seqheur.oracle", "refs_of", "numbering"),
          ("seqheur.bound", "longest_reuse", "lru"),
          ("seqheur.cache", "lru_misses", "lru"),
          ("seqheur.bound", "first_references", "belady"),
          ("seqheur.bound", "first_references_of", "belady"),
          ("seqheur.bound", "belady_runs", "belady"),
          ("seqheur.oracle", "future_of", "future"),
          ("seqheur.oracle", "run_oracle", "oracle"),
          ("seqheur.oracle", "reference_schedules", "references"),
          ("seqheur.bound", "disk_bound", "disk_bound")]
ROWS = ["numbering", "belady", "lru", "future", "oracle_replay", "references", "disk_bound",
        "bound", "bound_no_references", "replay"]


def child(n_target: int) -> None:
    """Serve one timed round per line read on stdin, as a JSON line of phase seconds."""
    import importlib

    from bench_bound import COMMON, workload

    import seqheur

    acc: dict[str, float] = {}

    def timed(fn, phase):
        def run(*a, **k):
            t = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                acc[phase] = acc.get(phase, 0.0) + time.thread_time() - t
        return run

    for mod_name, name, phase in PHASES:
        mod = importlib.import_module(mod_name)
        if hasattr(mod, name):  # a revision may not have every step
            setattr(mod, name, timed(getattr(mod, name), phase))
    stream = workload(n_target)
    common = COMMON
    seqheur.bound(stream, **common)
    seqheur.replay(stream, per_request=False, **common)
    for _ in sys.stdin:
        acc.clear()
        t = time.thread_time()
        seqheur.bound(stream, **common)
        acc["bound"] = time.thread_time() - t
        # the oracle's replay without its future (timed apart)
        acc["oracle_replay"] = acc.pop("oracle") - acc.get("future", 0.0)
        t = time.thread_time()
        seqheur.replay(stream, per_request=False, **common)
        acc["replay"] = time.thread_time() - t
        row = dict(acc)  # the phases of the full bound only
        t = time.thread_time()
        seqheur.bound(stream, references=False, **common)
        row["bound_no_references"] = time.thread_time() - t
        print(json.dumps(row), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", help="a revision's src folder (its PYTHONPATH)")
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.requests)
        return 0
    if not args.src:
        ap.error("name at least one revision's src folder")
    procs = [subprocess.Popen([sys.executable, __file__, "--child", "--requests",
                               str(args.requests)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True,
                              env=dict(os.environ, PYTHONPATH=src)) for src in args.src]
    samples: list[list[dict]] = [[] for _ in procs]
    for _ in range(args.reps):
        for proc, got in zip(procs, samples):
            proc.stdin.write("go\n")
            proc.stdin.flush()
            got.append(json.loads(proc.stdout.readline()))
    for proc in procs:
        proc.stdin.close()
        proc.wait()
    print(f"CPU seconds, least of {args.reps}, {args.requests} READs")
    print(f"{'phase':20s}" + "".join(f"{os.path.basename(os.path.dirname(s.rstrip('/'))):>16s}"
                                     for s in args.src))
    for row in ROWS:
        print(f"{row:20s}" + "".join(f"{min(x.get(row, 0.0) for x in got):16.4f}"
                                     for got in samples))
    for row in ("bound", "bound_no_references"):
        print(f"{row.replace('_no_references', ' no refs') + ' / replay':20s}" + "".join(
            f"{statistics.median(x[row] / x['replay'] for x in got):15.2f}x"
            for got in samples) + "  (median of the rounds' ratios)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
