"""The oracle on long traces, two revisions of the source: how much its disk time moves
(docs/bound.md, "Where the oracle loses": a change that wins a short counterexample must not
cost the oracle on long traces).

    python bench/oracle_long.py SRC_A SRC_B

Each SRC is a revision's ``src`` folder (e.g. ``git archive REV src | tar -x -C DIR``); each
runs in its own process (one PYTHONPATH each) over the same cases and prints the oracle's
disk seconds per case. Cases (30): the paper's workload (``workloads.paper``, seed 2, 8 KiB
READs, 16 KiB blocks) with 4, 32 and 128 readers (50 k, 100 k and 50 k READs; 0 %, 6 % and
15 % reordered), caches of 1, 8 and 64 MiB, on ``ide-7200``, ``scsi-10k`` and the fragmented
``ide-7200:extent=64KiB,seed=3`` (27 runs); bench_bound.py's workload (32 readers, 200 k
READs, 256 MiB, ``ide-7200``); the bundled demo capture at 256 MiB and at 1 MiB.
Printed: each case's disk seconds before and after, the change, and the sum over the 27 runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPER = [(4, 50_000, 0.0), (32, 100_000, 0.06), (128, 50_000, 0.15)]
CACHES = ["1MiB", "8MiB", "64MiB"]
PROFILES = ["ide-7200", "scsi-10k", "ide-7200:extent=64KiB,seed=3"]


def _cases():
    from bench_bound import COMMON, workload

    from seqheur import workloads
    from seqheur.replay import observed_file_sizes
    from seqheur.streams import reads

    for readers, n, reorder in PAPER:
        s = reads(workloads.paper(readers, n * 8 / 1024, 8, reorder, seed=2))
        sizes = observed_file_sizes(s)
        for cache in CACHES:
            for profile in PROFILES:
                yield f"paper{readers} {cache} {profile}", s, dict(
                    cache=cache, profile=profile, file_sizes=sizes)
    yield "bench 256MiB", workload(200_000), dict(COMMON)
    demo = str(ROOT / "traces" / "demo-v3.pcap.gz")
    yield "demo 256MiB", demo, dict(cache="256MiB", profile="ide-7200")
    yield "demo 1MiB", demo, dict(cache="1MiB", profile="ide-7200")


def child() -> None:
    import seqheur

    for name, s, kw in _cases():
        r = seqheur.bound(s, references=False, **kw)
        print(json.dumps([name, r["oracle_disk_seconds"]]), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", help="two revisions' src folders (their PYTHONPATH)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child()
        return 0
    if len(args.src) != 2:
        ap.error("name two revisions' src folders")
    outs = []
    for src in args.src:
        p = subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                           text=True, env=dict(os.environ, PYTHONPATH=src))
        if p.returncode:
            print(p.stderr[-3000:], file=sys.stderr)
            return 2
        outs.append([json.loads(line) for line in p.stdout.splitlines()])
    runs = len(PAPER) * len(CACHES) * len(PROFILES)
    print(f"{'case':45s} {'A (s)':>12s} {'B (s)':>12s} {'change':>9s}")
    for (name, a), (_, b) in zip(*outs):
        print(f"{name:45s} {a:12.4f} {b:12.4f} {(b - a) / a:+9.4%}")
    sa = sum(a for _, a in outs[0][:runs])
    sb = sum(b for _, b in outs[1][:runs])
    moved = sum(1 for (_, a), (_, b) in zip(outs[0][:runs], outs[1][:runs]) if a != b)
    print(f"the {runs} paper runs: sum {sa:.3f} -> {sb:.3f} s ({(sb - sa) / sa:+.4%}), "
          f"{moved} moved")
    return 0


if __name__ == "__main__":
    sys.exit(main())
