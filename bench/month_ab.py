"""Paired A/B of one replay of the month's configurations: two source trees (``--old`` and
``--new``, each a folder holding the ``seqheur`` package) in child processes, in turns, each
timing the CPU seconds of ``sweep.run_configs`` on a month-like trace (as a sweep's worker
runs it; the trace read and the kernel load are not timed) and printing a digest of the
rows, so the two sides are checked bit-identical on every round.

    python bench/month_ab.py TRACE --old OLD/src --new src [--rounds 5]
        [--config freebsd4,ellard,64MiB --config linux-6,ellard,64MiB | --month]
        [--multiblock N]

``--month``: the month's 32 replays (its 8 detectors x tables ``ellard`` and ``freebsd4``, the
two classes of its three tables, x 64 and 256 MiB). The month-like trace's READs each fall in
one block, so its identical rows say nothing of a READ over several blocks (or pages);
``--multiblock N`` also replays every configuration, untimed, over a trace of ``N`` READs of
24 KiB (so one to three 16 KiB blocks, six or seven 4 KiB pages each; 32 readers, 6 %
reordering, made once under ``bench/work``) and compares those rows too, every round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r'''
import hashlib, json, sys, time
trace, reps = sys.argv[1], int(sys.argv[2])
configs = json.loads(sys.argv[3])
multi = sys.argv[4] if len(sys.argv) > 4 else ""
from seqheur import sweep as sw
from seqheur.replay import replay
stream = sw.load_stream(trace)
sizes = sw.trace_file_sizes(trace)[0]
for c in configs:  # load (or compile) each loop before timing
    replay(stream.slice(0, 10000), **c, per_request=False, file_sizes=sizes)
for c in configs:
    best = None
    for _ in range(reps):
        t0 = time.process_time()
        rows = sw.run_configs(trace, [c])
        dt = time.process_time() - t0
        best = dt if best is None else min(best, dt)
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True, default=str).encode()).hexdigest()
    if multi:  # rows over several blocks a READ: checked, not timed
        digest += hashlib.sha256(json.dumps(sw.run_configs(multi, [c]), sort_keys=True,
                                            default=str).encode()).hexdigest()
    print(json.dumps({"config": c, "cpu": best, "digest": digest[:16] + digest[64:80]}),
          flush=True)
'''

MONTH_DETECTORS = ("freebsd4", "slowdown", "cursor", "freebsd", "zfetch", "always", "never",
                   "linux-6")
MONTH_SPECS = [f"{d},{t},{c}" for d in MONTH_DETECTORS for t in ("ellard", "freebsd4")
               for c in ("64MiB", "256MiB")]


def multiblock_trace(n: int) -> str:
    """A month-like trace whose READs span several blocks: 32 readers, 24 KiB READs, 6 %
    reordering (made once, under bench/work)."""
    from pathlib import Path

    from seqheur import workloads
    from seqheur.io import write_parquet

    work = Path(__file__).resolve().parent / "work"
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"multiblock-{n}.parquet"
    if not path.exists():
        write_parquet(workloads.paper(32, n * 24 / 1024, 24, 0.06, seed=3), path)
    return str(path)


def run_side(src: str, trace: str, configs: list[dict], reps: int, multi: str = "") -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    out = subprocess.run([sys.executable, "-c", CHILD, trace, str(reps), json.dumps(configs),
                          multi],
                         env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", default="src")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=1, help="timed runs a child, least kept")
    ap.add_argument("--config", action="append", help="detector,table,cache (ide-7200)")
    ap.add_argument("--profile", default="ide-7200")
    ap.add_argument("--month", action="store_true", help="the month's 32 replays")
    ap.add_argument("--multiblock", type=int, default=0, metavar="N",
                    help="also check rows over N READs of 24 KiB (several blocks each)")
    args = ap.parse_args()
    specs = (args.config or []) + (MONTH_SPECS if args.month else [])
    specs = specs or ["freebsd4,ellard,64MiB", "linux-6,ellard,64MiB"]
    multi = multiblock_trace(args.multiblock) if args.multiblock else ""
    configs = []
    for s in specs:
        d, t, c = s.split(",")
        configs.append({"detector": d, "table": t, "policy": "auto", "cache": c,
                        "profile": args.profile, "timing": "disk-only"})
    trace = os.path.abspath(args.trace)
    times: dict[tuple[str, int], list[float]] = {}
    for r in range(args.rounds):
        digests = {}
        for side, src in (("old", args.old), ("new", args.new)) if r % 2 == 0 else \
                (("new", args.new), ("old", args.old)):
            for k, row in enumerate(run_side(src, trace, configs, args.reps, multi)):
                times.setdefault((side, k), []).append(row["cpu"])
                digests.setdefault(k, {})[side] = row["digest"]
        same = all(d["old"] == d["new"] for d in digests.values())
        if len(configs) > 4:
            each = (f"{len(configs)} configurations summed old "
                    f"{sum(times[('old', k)][-1] for k in range(len(configs))):.3f} new "
                    f"{sum(times[('new', k)][-1] for k in range(len(configs))):.3f}")
        else:
            each = "; ".join(
                f"{specs[k]} old {times[('old', k)][-1]:.3f} new {times[('new', k)][-1]:.3f}"
                for k in range(len(configs)))
        print(f"round {r + 1}: {each}; rows {'identical' if same else 'DIFFER'}", flush=True)
        if not same:
            return 1
    for k, s in enumerate(specs):
        o, n = min(times[("old", k)]), min(times[("new", k)])
        print(f"{s}: least CPU s old {o:.3f} new {n:.3f} ratio old/new {o / n:.3f}")
    if len(specs) > 1:
        o = sum(min(times[("old", k)]) for k in range(len(specs)))
        n = sum(min(times[("new", k)]) for k in range(len(specs)))
        print(f"summed least CPU s old {o:.3f} new {n:.3f} ratio old/new {o / n:.3f}"
              + (" (multi-block rows checked too)" if multi else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
