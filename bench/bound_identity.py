"""Every key of `seqheur bound`, two revisions of the source, on many cases: identical?

    python bench/bound_identity.py SRC_A SRC_B [--cases all|big|rand]

Each SRC is a revision's ``src`` folder (e.g. ``git archive REV src | tar -x -C DIR``); each
runs in its own process (one PYTHONPATH each) over the same cases and prints one JSON line
per case (floats as hex), and the two are compared key by key, to the last bit (docs/bound.md,
"Speed"). Cases (466): ``big``, bench_bound.py's workload at 200 k READs with 256 MiB and 1 MiB
caches (and without the reference schedules) and a nearly-all-miss workload (the paper's,
128 readers, 100 k READs, 15% reordered) at 1 MiB, with and without the references, and
unbounded; ``rand``, 400 random traces drawn as tests/test_bound.py draws its streams (1 to 6
files, 5 to 1000 READs, blocks of 4, 16 and 32 KiB, caches of 2 to 256 blocks, every bundled
test profile, contiguous and fragmented; a third without references, a fifth without the
oracle, a seventh unbounded) and 60 with 6000, 10000 and 12288-byte blocks (oracle off: it
needs a power of two). Exit status 1 if any case differs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

K4, K8 = 4096, 8192
PROFILES = ["ide-7200", "scsi-10k", "vm-virtio", "ide-7200:drive_cache=false",
            "scsi-10k:start=0.75", "ide-7200:extent=64KiB,seed=3"]


def _random_stream(rng):
    """A stream of tests/test_bound.py's kind: sequential runs, jumps, re-reads, zero-length
    and unaligned READs, over a few files."""
    from seqheur.streams import ReadStream

    nf = int(rng.integers(1, 7))
    n = int(rng.integers(5, 1001))
    files = rng.integers(0, nf, n)
    moves = rng.choice(["seq", "seq", "seq", "near", "far", "zero", "back"], n)
    counts = rng.choice([0, 512, K4, K8, 32768, 100_000], n)
    pos: dict[int, int] = {}
    offs = []
    for f, mv, c in zip(files.tolist(), moves.tolist(), counts.tolist()):
        p = pos.get(f, 0)
        o = {"seq": p, "near": p + 3 * K8 + 512, "far": p + (1 << 22), "zero": 0,
             "back": max(0, p - 5 * K8)}[mv]
        offs.append(o)
        pos[f] = o + c
    return ReadStream.from_arrays(files.tolist(), offs, counts.tolist())


def _cases(which: str):
    import numpy as np

    from bench_bound import COMMON, workload

    from seqheur import workloads
    from seqheur.replay import observed_file_sizes
    from seqheur.streams import reads

    if which in ("all", "big"):
        s = workload(200_000)
        yield "bench256", s, dict(COMMON)
        yield "bench1M", s, dict(COMMON, cache="1MiB")
        yield "bench1M-noref", s, dict(COMMON, cache="1MiB", references=False)
        m = reads(workloads.paper(128, 100_000 * 8 / 1024, 8, 0.15, seed=1))
        miss = dict(cache="1MiB", profile="ide-7200", file_sizes="observed")
        yield "miss1M", m, miss
        yield "miss1M-noref", m, dict(miss, references=False)
        yield "miss-unbounded", m, dict(miss, cache=None)
    if which in ("all", "rand"):
        rng = np.random.default_rng(20261127)
        for i in range(400):
            s = _random_stream(rng)
            bs = int(rng.choice([K4, 16384, 32768]))
            blocks = int(rng.choice([2, 3, 4, 8, 16, 64, 256]))
            kw = dict(cache=blocks * bs, profile=str(rng.choice(PROFILES)), block_size=bs,
                      file_sizes=observed_file_sizes(s))
            if i % 3 == 0:
                kw["references"] = False
            if i % 5 == 0:
                kw["oracle"] = False
            if i % 7 == 0:
                kw["cache"] = None
            yield f"rand{i}", s, kw
        for i in range(60):
            s = _random_stream(rng)
            bs = int(rng.choice([6000, 10000, 12288]))
            blocks = int(rng.choice([2, 4, 16, 64]))
            yield f"odd{i}", s, dict(cache=blocks * bs, profile=str(rng.choice(PROFILES)),
                                     block_size=bs, file_sizes=observed_file_sizes(s),
                                     oracle=False)


def child(which: str) -> None:
    """Print every case's ``bound`` as a JSON line (floats as hex, to compare exactly)."""
    import numpy as np

    import seqheur

    def enc(v):
        if isinstance(v, (float, np.floating)):
            return ["f", float(v).hex()]
        if isinstance(v, np.integer):
            return ["i", int(v)]
        return v

    for name, s, kw in _cases(which):
        r = seqheur.bound(s, **kw)
        print(json.dumps([name, {k: enc(v) for k, v in sorted(r.items())}]), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", nargs="*", help="two revisions' src folders (their PYTHONPATH)")
    ap.add_argument("--cases", choices=["all", "big", "rand"], default="all")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.cases)
        return 0
    if len(args.src) != 2:
        ap.error("name two revisions' src folders")
    outs = []
    for src in args.src:
        p = subprocess.run([sys.executable, __file__, "--child", "--cases", args.cases],
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=src))
        if p.returncode:
            print(p.stderr[-3000:], file=sys.stderr)
            return 2
        outs.append([json.loads(line) for line in p.stdout.splitlines()])
    differ = 0
    for (name, ra), (_, rb) in zip(*outs):
        if ra != rb:
            differ += 1
            print("differs:", name, {k: (ra.get(k), rb.get(k)) for k in sorted(set(ra) | set(rb))
                                     if ra.get(k) != rb.get(k)})
    print(f"{len(outs[0])} and {len(outs[1])} cases, {differ} differ")
    return 1 if differ or len(outs[0]) != len(outs[1]) else 0


if __name__ == "__main__":
    sys.exit(main())
