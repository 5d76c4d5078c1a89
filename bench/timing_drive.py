"""The closed-loop model's drive alone: its reads in the order the model serves them.

    python bench/timing_drive.py [--requests N] [--reps K] [--builds B] [--src DIR ...]
                                 [--save NPZ | --reads NPZ]

Runs the model (``closed-loop:preset=paper-testbed``, a cscan queue) once on the replay
benchmark's inputs (N READs, default 2 M) in a copy of this tree patched as
``bench/timing_parts.py`` patches it, recording each request it hands the drive, in order,
with the host's idle time before it and its service time. Then B processes (default 3), each
compiling afresh, run ``seqheur.disk.model.service_read`` over those reads one at a time, as
the model calls it, K times (default 15), and print the least and median CPU time of the
thread, whether every service time equals the model's to the last bit, and how the drive
served them (positioned, streamed from the segment it was reading ahead into, or a hit in
another segment). ``--src`` (repeatable): the trees whose drive models are timed, a build
of each in turns (default this one's; e.g. ``--src /work/main/src --src src`` against
``main``); the record is always made with this tree's model (``--save``: kept in a file,
which ``--reads`` reuses instead of running the model again). The drive's own cost, without the queue
and the events around it: a change to it can be judged here in seconds, and several builds
show the spread between them (docs/timing.md, "Speed").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import timing_parts as TP  # noqa: E402

# the idle time before each request served, in a fifth row of the record
IDLE = ("        d.rec[1, k] = j\n        d.rec[0, j] = service\n",
        "        d.rec[1, k] = j\n        d.rec[0, j] = service\n        d.rec[4, k] = idle_s\n")


def record(out: str, n: int) -> None:
    """In the patched tree: run the model once and save the drive's reads in served order."""
    import numpy as np

    _, inputs, rec, _ = TP.recorded_run(n, 5)
    m = inputs.op_request.size
    order = rec[1, :m].astype(np.int64)
    model, place = inputs.disk, inputs.place
    _, fp, seek_d, seek_t, zone_start, zone_rate = model.kernel_args()
    np.savez(out, files=inputs.op_file[order].astype(np.int64),
             offset=inputs.op_offset[order].astype(np.int64),
             length=inputs.op_length[order].astype(np.int64), idle=rec[4, :m].copy(),
             service=rec[0, :m][order], ext_first=place.ext_first, ext_base=place.ext_base,
             extent_bytes=np.int64(place.extent_bytes), ip=model.drive_params(), fp=fp,
             seek_d=seek_d, seek_t=seek_t, zone_start=zone_start, zone_rate=zone_rate,
             state=model.new_state())


def time_drive(path: str, reps: int) -> None:
    """Time service_read over the recorded reads; compare the service times bit for bit."""
    import numpy as np
    from numba import njit

    from seqheur.disk import model as M

    @njit(nogil=True, _nrt=False)
    def serve(file, offset, length, idle, ext_first, ext_base, extent_bytes, ip, fp, seek_d,
              seek_t, zone_start, zone_rate, state, out, flags):
        for i in range(file.size):
            out[i], flags[i] = M.service_read(file[i], offset[i], length[i], True, idle[i],
                                              ext_first, ext_base, extent_bytes, ip, fp,
                                              seek_d, seek_t, zone_start, zone_rate, state)

    z = dict(np.load(path))
    out = np.empty(z["files"].size)
    flags = np.empty(z["files"].size, np.int64)
    args = [z[k] for k in ("files", "offset", "length", "idle", "ext_first", "ext_base",
                           "extent_bytes", "ip", "fp", "seek_d", "seek_t", "zone_start",
                           "zone_rate")]
    cpu = []
    for _ in range(reps + 1):  # the first compiles
        state = z["state"].copy()
        c = time.thread_time()
        serve(*args, state, out, flags)
        cpu.append(time.thread_time() - c)
    cpu = np.asarray(cpu[1:]) * 1e3
    same = np.array_equal(out.view(np.int64), z["service"].view(np.int64))
    kinds = {name: int(((flags & bit) != 0).sum()) for name, bit in
             (("positioned", M.POSITIONED), ("streamed", M.STREAM), ("hit", M.HIT))}
    print(f"  {cpu.min():.2f} ({np.median(cpu):.2f}) ms; the model's service times to the "
          f"last bit: {same}; {out.size} reads: {kinds}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--builds", type=int, default=3)
    ap.add_argument("--src", action="append")
    ap.add_argument("--save", metavar="NPZ", help="keep the record of the drive's reads")
    ap.add_argument("--reads", metavar="NPZ", help="a record kept with --save")
    ap.add_argument("--record", metavar="OUT", help=argparse.SUPPRESS)
    ap.add_argument("--time", metavar="NPZ", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.record:
        record(args.record, args.requests)
        return 0
    if args.time:
        time_drive(args.time, args.reps)
        return 0
    with tempfile.TemporaryDirectory(prefix="timing_drive_") as tmp:
        TP.PATCHES.append(IDLE)
        src = TP.patched_tree(tmp)
        env = dict(os.environ, PYTHONPATH=str(src), NUMBA_CACHE_DIR=f"{tmp}/numba",
                   SEQHEUR_CACHE_DIR=f"{tmp}/kernels")
        npz = str(Path(args.reads).resolve()) if args.reads else f"{tmp}/reads.npz"
        if not args.reads:
            subprocess.run([sys.executable, __file__, "--record", npz, "--requests",
                            str(args.requests)], env=env, cwd=tmp, check=True)
            if args.save:
                shutil.copyfile(npz, args.save)
        print(f"service_read over the disk reads of the model's {args.requests} READs in "
              f"served order, least (median) of {args.reps} runs a build:", flush=True)
        for _ in range(args.builds):
            for tree in args.src or [str(ROOT / "src")]:
                caches = tempfile.mkdtemp(dir=tmp)
                env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()),
                           NUMBA_CACHE_DIR=f"{caches}/numba",
                           SEQHEUR_CACHE_DIR=f"{caches}/kernels")
                print(f" {tree}:", end="", flush=True)
                subprocess.run([sys.executable, __file__, "--time", npz, "--reps",
                                str(args.reps)], env=env, cwd=tmp, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
