"""Reading a trace's stream into arrays on small pages (``seqheur._pages``) against numpy's own.

``read_stream`` fills arrays sized for the whole trace, once, front to back. numpy asks for
transparent huge pages for arrays of 4 MiB or more, and first-touching fresh huge pages can
cost the kernel several times the work of small ones (docs/architecture.md, "Large arrays on
small pages"). Each sample is a fresh child process that reads the month-like synthetic
trace of ``--requests`` READs (32 readers, 6 % reordering: ``bench_sweep.paper_trace``) with
``read_stream``; the peer's children allocate those arrays with ``np.empty`` instead (the
allocation ``_pages`` replaced), the two sides in turns. Reported: wall seconds and the
kernel's (system) CPU seconds of the read; ratio = numpy's / ours (higher is better).
"""

from __future__ import annotations

import argparse
import json
import sys

from _common import figure, parse_args, run_measured, write_result

CHILD = r"""
import json, resource, sys, time
import numpy as np
from seqheur import _pages
if sys.argv[2] == "numpy":
    _pages.empty = lambda n, dtype: np.empty(n, dtype)  # the allocation _pages replaced
from seqheur.streams import read_stream
r0 = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
s = read_stream(sys.argv[1], provenance=False)
wall = time.perf_counter() - t0
r1 = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": wall, "system": r1.ru_stime - r0.ru_stime,
                  "user": r1.ru_utime - r0.ru_utime, "requests": len(s)}))
"""

SIDES = ("seqheur._pages", "numpy")


def main() -> int:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--requests", type=int, default=None,
                       help="READs of the trace read (default 100 M, 8 M with --quick)")
    opts, rest = extra.parse_known_args()
    args = parse_args("pages", rest)
    n = opts.requests or (8_000_000 if args.quick else 100_000_000)
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
    from bench_sweep import paper_trace

    trace = paper_trace(n)
    samples: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
    for rep in range(args.reps):
        for side in SIDES:  # in turns: the machine's load hits both alike
            r = run_measured([sys.executable, "-c", CHILD, str(trace), side])
            if r["returncode"] != 0:
                raise SystemExit(f"{side} child failed: {r['stderr'].decode()[-800:]}")
            got = json.loads(r["stdout"].decode().strip().splitlines()[-1])
            samples[side].append(got)
            print(f"round {rep + 1} {side}: wall {got['wall']:.2f} s, system {got['system']:.2f} s, "
                  f"user {got['user']:.2f} s", flush=True)
    figures = []
    for key, what in (("wall", "wall s"), ("system", "system CPU s"), ("user", "user CPU s")):
        ours = [s[key] for s in samples["seqheur._pages"]]
        theirs = [s[key] for s in samples["numpy"]]
        figures.append(figure(f"read_stream of {n / 1e6:g} M requests, {what}", "s", ours, theirs,
                              "the same read into numpy's arrays (np.empty)"))
    write_result("pages", args.out, figures=figures,
                 params={"requests": n, "reps": args.reps, "trace": trace.name},
                 notes="a fresh child process per sample, the two sides in turns; the trace "
                       "in the page cache after the first read; ratio = numpy's / ours "
                       "(higher is better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
