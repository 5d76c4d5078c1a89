"""Where the closed-loop model's time goes at the disk reads: its parts costed in place.

    python bench/timing_parts.py [--requests N] [--reps K] [--rounds R]

The model (``closed-loop:preset=paper-testbed``, a cscan queue) on the replay benchmark's
inputs (``bench_replay.py``'s configuration, N READs, default 2 M), run six ways in one
process, K times each (default 11), in R rounds (default 3), CPU time of the thread:

* ``model``: as it is;
* ``look-back looked up``: the tight loop over the cache's READs reads from a first run's
  record whether a READ's bytes are in flight instead of testing its file's span and
  walking its file's reads in flight;
* ``drive looked up``: each request's service time is read from the record instead of the
  drive model working it out (the same times: the run takes the same course);
* ``drive and queue looked up``: the queue also hands the drive the requests in the first
  run's order instead of its elevator choosing them (the queue keeps only a count);
* ``all three looked up``;
* ``no disk reads``: the same READs with none (every READ a cache hit; another result).

All but the last must give the same summary (checked): their differences are what those
parts cost in place, in the loop, with its branches and its state. The copy of
``src`` they run is this tree's, with ``closed_loop.py`` given a record (an array in
``Disk``) and the branches that use it, in a temporary folder with empty kernel caches (so it
is compiled afresh: docs/timing.md, "Speed", on compiled and loaded code). A change to the
functions it patches makes it stop with the text it did not find.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# (text in closed_loop.py, what it becomes): the record rec (float64[4, reads + READs + 1]):
# row 0 a request's service time by its first read, row 1 the order served, row 3 per READ
# whether the tight loop's look-back found a read in flight; rec[2, 0] the mode, a sum of
# flags (DRIVE, QUEUE, LOOKBACK: looked up; RECORD), rec[2, 1] a count
DRIVE, QUEUE, LOOKBACK, RECORD = 1, 2, 4, 8
PATCHES = [
    ("    gate: np.ndarray\n", "    gate: np.ndarray\n    rec: np.ndarray\n"),
    ("                model.iparams, np.array([1.0 if throttled else 0.0, 0.0]))\n",
     "                model.iparams, np.array([1.0 if throttled else 0.0, 0.0]), REC[0])\n"
     "REC = [None]\n"),
    ("    if not cscan:\n        d.dq[tail] = j\n        return tail + 1\n",
     "    if not cscan:\n        d.dq[tail] = j\n        return tail + 1\n"
     "    if np.int64(d.rec[2, 0]) & 2:\n        return tail + 1\n"),
    ("    elif head == tail:\n        return _idle(d, now, head, tail)\n    elif cscan:",
     "    elif head == tail:\n        return _idle(d, now, head, tail)\n"
     "    elif np.int64(d.rec[2, 0]) & 2:\n        k = np.int64(d.rec[2, 1])\n"
     "        d.rec[2, 1] += 1\n        j = np.int64(d.rec[1, k])\n"
     "        return j, d.rec[0, j], head, tail - 1, d.addr[j] + d.op_len[j]\n    elif cscan:"),
    ("    off, length, end = _extent(d, j)\n    service, _ = service_read(",
     "    off, length, end = _extent(d, j)\n    if np.int64(d.rec[2, 0]) & 1:\n"
     "        return j, d.rec[0, j], head, tail, end\n    service, _ = service_read("),
    ("                              d.zone_start, d.zone_rate, d.dstate)\n"
     "    return j, service, head, tail, end",
     "                              d.zone_start, d.zone_rate, d.dstate)\n"
     "    if np.int64(d.rec[2, 0]) & 8:\n        k = np.int64(d.rec[2, 1])\n        d.rec[2, 1] += 1\n"
     "        d.rec[1, k] = j\n        d.rec[0, j] = service\n"
     "    return j, service, head, tail, end"),
    ("                            or (_in_span(x, file, offset, nbytes, w) and _overlap_in_flight(\n"
     "                                x, op_ptr, w.file_ops[file[x]], w.live_tail[file[x]], file,\n"
     "                                offset, nbytes, op_off, op_len, w) != NO_LINK)):\n",
     "                            or _tight_lookback(d, x, op_ptr, file, offset, nbytes, op_off,\n"
     "                                               op_len, w)):\n"),
    ("@njit(cache=True, nogil=True, _nrt=False, inline=\"always\")\ndef _wait_for(",
     "@njit(cache=True, nogil=True, _nrt=False, inline=\"always\")\n"
     "def _tight_lookback(d, x, lo, file, offset, nbytes, op_off, op_len, w):\n"
     "    if np.int64(d.rec[2, 0]) & 4:\n        return d.rec[3, x] != 0.0\n"
     "    hit = _in_span(x, file, offset, nbytes, w) and _overlap_in_flight(\n"
     "        x, lo, w.file_ops[file[x]], w.live_tail[file[x]], file, offset, nbytes, op_off,\n"
     "        op_len, w) != NO_LINK\n"
     "    if np.int64(d.rec[2, 0]) & 8:\n        d.rec[3, x] = 1.0 if hit else 0.0\n"
     "    return hit\n\n\n"
     "@njit(cache=True, nogil=True, _nrt=False, inline=\"always\")\ndef _wait_for("),
]


def patched_tree(tmp: str) -> Path:
    """This tree's src, copied to ``tmp``, closed_loop.py patched (:data:`PATCHES`)."""
    src = Path(tmp) / "src"
    shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    path = src / "seqheur" / "timing" / "closed_loop.py"
    text = path.read_text()
    for old, new in PATCHES:
        if text.count(old) != 1:
            raise SystemExit(f"closed_loop.py has changed; not found once:\n{old}")
        text = text.replace(old, new)
    path.write_text(text)
    return src


def recorded_run(n: int, rows: int):
    """In the patched tree: the closed-loop model run once over the benchmark's ``n`` READs
    with its record (``rows`` rows) on. Returns (params, inputs, record, summary)."""
    import numpy as np

    sys.path.insert(0, str(ROOT / "bench"))
    from ab_timing import testbed_replayer

    from seqheur.timing import closed_loop as CL

    CL.REC[0] = np.zeros((rows, 1))
    rp = testbed_replayer(n)
    params, inputs = rp.timing.params, rp.timing_inputs()
    m = inputs.op_request.size
    rec = np.zeros((rows, max(m, inputs.time_ns.size) + 1))
    CL.REC[0] = rec
    rec[2, 0] = RECORD
    summary = CL.run(params, inputs).summary(1)
    if rec[2, 1] != m:
        raise SystemExit(f"{rec[2, 1]:.0f} requests served, {m} reads: merging or a throttle?")
    return params, inputs, rec, summary


def child(n: int, reps: int, rounds: int) -> None:
    import dataclasses

    import numpy as np

    from seqheur.timing import closed_loop as CL

    params, inputs, rec, want = recorded_run(n, 4)
    m = inputs.op_request.size
    z = np.zeros(0, np.int64)
    hits = dataclasses.replace(inputs, op_request=z, op_sync=z, op_file=z, op_offset=z,
                               op_length=z)
    modes = {"model": (0, inputs), "look-back looked up": (LOOKBACK, inputs),
             "drive looked up": (DRIVE, inputs),
             "drive and queue looked up": (DRIVE | QUEUE, inputs),
             "all three looked up": (DRIVE | QUEUE | LOOKBACK, inputs),
             "no disk reads": (0, hits)}
    rec[2, 0] = 0
    CL.run(params, hits).summary(1)  # compiles the loop for empty reads
    print(f"{n} READs, {m} disk reads; least (median) of {reps} runs, ms:", flush=True)
    for r in range(rounds):
        line = []
        for name, (mode, inp) in modes.items():
            rec[2, 0] = mode
            cpu = []
            for _ in range(reps):
                rec[2, 1] = 0
                c = time.thread_time()
                got = CL.run(params, inp).summary(1)
                cpu.append(time.thread_time() - c)
            if inp is inputs and got != want:
                raise SystemExit(f"{name}: the summary differs from the model's")
            cpu = np.asarray(cpu) * 1e3
            line.append(f"{name} {cpu.min():.1f} ({np.median(cpu):.1f})")
        print(f"  round {r + 1}: " + ";  ".join(line), flush=True)
    print("summary digest", hashlib.md5(json.dumps(want, sort_keys=True).encode()).hexdigest())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.requests, args.reps, args.rounds)
        return 0
    with tempfile.TemporaryDirectory(prefix="timing_parts_") as tmp:
        src = patched_tree(tmp)
        env = dict(os.environ, PYTHONPATH=str(src), NUMBA_CACHE_DIR=f"{tmp}/numba",
                   SEQHEUR_CACHE_DIR=f"{tmp}/kernels")
        return subprocess.call([sys.executable, __file__, "--child", "--requests",
                                str(args.requests), "--reps", str(args.reps), "--rounds",
                                str(args.rounds)], env=env, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main())
