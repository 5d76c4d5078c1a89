"""Paired A/B of the engine against an earlier commit: the same workloads, old and new
interleaved in one run, so the ratio does not depend on how busy the machine is this hour.

Workloads (each timed in a fresh child process by the CPU time of the timed part):

* ``replay``: full replay, freebsd4 + nfsheur:64x4 + freebsd4-cluster + 256 MiB cache +
  ide-7200 disk model, summary only, on the detector benchmark's stream (32 interleaved
  sequential readers, 6 % adjacent swaps);
* ``linux``: linux-3.12 + raparms on the same stream (4 KiB pages);
* ``detect``: ``seqheur.detect`` freebsd4 + nfsheur:64x4;
* ``cold``: import + the first replay and detect of a small stream with empty numba caches
  (compiles every loop they use).

The old side is ``git archive REV src`` unpacked under bench/work and put first on
``PYTHONPATH``. Ratio = old time / new time (> 1: the new engine is faster); the target is
>= 0.95 for each workload.

    python bench/bench_engine_ab.py [--old REV] [--only replay,linux,detect,cold] [--quick]
                                    [--reps N]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from _common import ROOT, WORK, parse_args, summarize, write_result

BASELINE = "ee2e4d9"  # the last commit before the engine redesign

CHILD = r'''
import os, sys, time
t0 = time.process_time()
sys.path.insert(0, {bench!r})
what, n = sys.argv[1], int(sys.argv[2])
import seqheur
from bench_detect import make_stream
if what == "cold":
    s = make_stream(n)
    t0 = time.process_time()
    seqheur.replay(s, "freebsd4", "nfsheur:64x4", per_request=False)
    seqheur.detect(s, "freebsd4", "nfsheur:64x4")
    print(time.process_time() - t0)
    raise SystemExit
s = make_stream(n)
small = s.slice(0, 10000)
if what == "replay":
    run = lambda st: seqheur.replay(st, "freebsd4", "nfsheur:64x4", per_request=False)
elif what == "linux":
    run = lambda st: seqheur.replay(st, "linux-3.12", "raparms", per_request=False)
else:
    run = lambda st: seqheur.detect(st, "freebsd4", "nfsheur:64x4")
run(small)  # compile or load from the cache
t0 = time.process_time()
run(s)
print(time.process_time() - t0)
'''

SIZES = {"replay": 4_000_000, "linux": 1_000_000, "detect": 20_000_000, "cold": 20_000}


def export(rev: str) -> Path:
    dest = WORK / f"ab-{rev}"
    if not (dest / "src" / "seqheur").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", rev, "src"], cwd=ROOT.parent, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "src"


def run_child(src: Path | None, what: str, n: int, quick: bool) -> float:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    tmp = None
    if what == "cold":
        tmp = tempfile.mkdtemp(prefix="seqheur-ab-")
        env["NUMBA_CACHE_DIR"] = f"{tmp}/numba"
        env["SEQHEUR_CACHE_DIR"] = f"{tmp}/kernels"  # the old engine's generated loops
    try:
        out = subprocess.run([sys.executable, "-c", CHILD.format(bench=str(ROOT)), what,
                              str(n // 4 if quick else n)], env=env, check=True,
                             capture_output=True, text=True, timeout=1800)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    argv = sys.argv[1:]
    old = BASELINE
    if "--old" in argv:
        i = argv.index("--old")
        old = argv[i + 1]
        del argv[i:i + 2]
    only = None
    if "--only" in argv:
        i = argv.index("--only")
        only = argv[i + 1].split(",")
        del argv[i:i + 2]
    args = parse_args("engine_ab", argv)
    old_src = export(old)
    figures = []
    for what, n in SIZES.items():
        if only and what not in only:
            continue
        times: dict[str, list[float]] = {"old": [], "new": []}
        reps = max(2, min(args.reps, 3)) if what == "cold" else args.reps
        for rep in range(reps):
            order = ("old", "new") if rep % 2 == 0 else ("new", "old")
            for side in order:
                times[side].append(run_child(old_src if side == "old" else None, what, n,
                                             args.quick))
        ratio = float(np.median(times["old"]) / np.median(times["new"]))
        figures.append({"metric": f"{what} CPU s (ratio old/new)", "unit": "s",
                        "seqheur": summarize(times["new"]), "peer": summarize(times["old"]),
                        "peer_name": f"seqheur @ {old}", "lower_is_better": True,
                        "ratio": ratio,
                        "target": ">= 0.95", "met": ratio >= 0.95})
        print(f"{what:7s} old {np.median(times['old']):8.3f} s  new "
              f"{np.median(times['new']):8.3f} s  ratio {ratio:.3f}", flush=True)
    write_result("engine_ab", args.out, figures=figures,
                 params={"old": old, "sizes": SIZES, "reps": args.reps, "quick": args.quick},
                 notes="CPU time of the timed part in fresh child processes, old and new "
                       "interleaved; cold = import + first replay + first detect with empty "
                       "numba caches.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
