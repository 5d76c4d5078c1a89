"""Paired A/B of one replay of the month's configurations: two source trees (``--old`` and
``--new``, each a folder holding the ``seqheur`` package) in child processes, in turns, each
timing the CPU seconds of ``sweep.run_configs`` on a month-like trace (as a sweep's worker
runs it; the trace read and the kernel load are not timed) and printing a digest of the
rows, so the two sides are checked bit-identical on every round.

    python bench/month_ab.py TRACE --old OLD/src --new src [--rounds 5]
        [--config freebsd4,ellard,64MiB --config linux-6,ellard,64MiB]
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
    print(json.dumps({"config": c, "cpu": best, "digest": digest[:16]}), flush=True)
'''


def run_side(src: str, trace: str, configs: list[dict], reps: int) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(src))
    out = subprocess.run([sys.executable, "-c", CHILD, trace, str(reps), json.dumps(configs)],
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
    args = ap.parse_args()
    specs = args.config or ["freebsd4,ellard,64MiB", "linux-6,ellard,64MiB"]
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
            for k, row in enumerate(run_side(src, trace, configs, args.reps)):
                times.setdefault((side, k), []).append(row["cpu"])
                digests.setdefault(k, {})[side] = row["digest"]
        same = all(d["old"] == d["new"] for d in digests.values())
        print(f"round {r + 1}: " + "; ".join(
            f"{specs[k]} old {times[('old', k)][-1]:.3f} new {times[('new', k)][-1]:.3f}"
            for k in range(len(configs))) + f"; rows {'identical' if same else 'DIFFER'}",
            flush=True)
        if not same:
            return 1
    for k, s in enumerate(specs):
        o, n = min(times[("old", k)]), min(times[("new", k)])
        print(f"{s}: least CPU s old {o:.3f} new {n:.3f} ratio old/new {o / n:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
