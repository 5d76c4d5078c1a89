"""Compiling replay loops cold: numba's own IR inliner against ``seqheur._inlining``.

Every combination of a replay's steps is a loop of its own, compiled on first use (then
loaded from numba's on-disk cache). Most of a cold compile was numba's inliner copying each
callee's IR block by block; ``seqheur._inlining`` copies it once (docs/architecture.md,
"Compiling a loop cold"). This benchmark compiles the same loops both ways, side by side:
each sample a fresh child process with an empty ``NUMBA_CACHE_DIR``, ``SEQHEUR_PLAIN_INLINING=1``
(numba as it is) and the default in turns. Per child, CPU seconds of:

* the first loop: a FreeBSD-policy replay (``slowdown``), which also compiles the step
  functions every loop shares;
* a second loop: the same policy with another detector (``cursor``), what each further
  configuration of a sweep costs;
* the closed-loop timing model on top of the first (``--timing``: it adds ~1 min a child).

``--reps`` rounds (default 5; ``--quick``: 1).

Peer: numba's own copy. ratio = its CPU seconds / ours (higher is better).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

from _common import figure, parse_args, run_measured, write_result

CHILD = r"""
import json, sys, time
import numpy as np
import seqheur
from seqheur import _inlining
stream = seqheur.ReadStream.from_arrays(np.array([0, 1, 0, 1, 0] * 20), np.arange(100) * 8192, 8192)
out = {"installed": _inlining.install()}
def timed(name, **kw):
    t0 = time.process_time()
    seqheur.replay(stream, table="nfsheur", policy="freebsd-cluster", cache="1MiB",
                   profile="ide-7200", **kw)
    out[name] = time.process_time() - t0
timed("first loop", detector="slowdown")
timed("second loop", detector="cursor")
if sys.argv[1] == "timing":
    timed("closed-loop model", detector="slowdown", timing="closed-loop:preset=paper-testbed")
print(json.dumps(out))
"""

SIDES = {"numba's copy": {"SEQHEUR_PLAIN_INLINING": "1"}, "seqheur._inlining": {}}


def child(plain_env: dict[str, str], timing: bool) -> dict[str, float]:
    cache = tempfile.mkdtemp(prefix="seqheur-compile-")
    env = {k: v for k, v in os.environ.items() if k != "SEQHEUR_PLAIN_INLINING"}
    env.update(plain_env, NUMBA_CACHE_DIR=cache, SEQHEUR_PROGRESS="0")
    try:
        r = run_measured([sys.executable, "-c", CHILD, "timing" if timing else "-"], env=env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if r["returncode"] != 0:
        raise SystemExit(f"compile child failed: {r['stderr'].decode()[-800:]}")
    return json.loads(r["stdout"].decode().strip().splitlines()[-1])


def main() -> int:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--timing", action="store_true",
                       help="also compile the closed-loop timing model (~1 min a child)")
    opts, rest = extra.parse_known_args()
    timing = opts.timing
    args = parse_args("compile", rest)
    reps = 1 if args.quick else args.reps  # each round ~75 s (two children)
    samples: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for rep in range(reps):
        for side, env in SIDES.items():  # in turns: the machine's load hits both alike
            got = child(env, timing)
            if got.pop("installed") != (side == "seqheur._inlining"):
                raise SystemExit(f"{side}: the inliner's copy is not as asked "
                                 "(numba changed? see seqheur/_inlining.py)")
            samples[side].append(got)
            print(f"round {rep + 1} {side}: " + ", ".join(f"{k} {v:.1f} s" for k, v in got.items()),
                  flush=True)
    figures = []
    ours, theirs = samples["seqheur._inlining"], samples["numba's copy"]
    for part in ours[0]:
        a = [s[part] for s in ours]
        b = [s[part] for s in theirs]
        figures.append(figure(f"compile cold, {part} (CPU s)", "s", a, b, "numba's own inliner copy",
                              target="> 1 (report)",
                              met=statistics.median(b) > statistics.median(a)))
    write_result("compile", args.out, figures=figures,
                 params={"reps": reps, "timing": timing, "loops": "freebsd-cluster: slowdown, cursor"},
                 notes="CPU seconds of a fresh child process per sample, empty numba cache, the two "
                       "sides in turns; ratio = numba's copy / ours (higher is better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
