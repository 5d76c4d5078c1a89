"""Record (or check) the replay and detect outputs of every detector x table x policy
combination on the bundled traces, the lab captures and seeded random traces.

The engine must stay bit-exact across refactors: integer per-request columns are compared by
SHA-256 of their bytes, integer summary keys exactly, float summary keys (disk seconds,
throughput, ratios) to a relative 1e-9; summary columns added since the recording are allowed (the disk model's float sums may differ in the last
bit across CPUs and libm builds).

    python tests/golden/record.py            # write tests/golden/outputs.json.gz
    python tests/golden/record.py --check    # compare, print mismatches, exit 1 on any
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TRACES = HERE.parent.parent / "traces"
OUT = HERE / "outputs.json.gz"

DETECTORS = ("freebsd4", "slowdown", "cursor", "freebsd", "zfetch", "always", "never",
             "slowdown:window=16384", "cursor:cursors=2", "linux-2.6.32", "linux-3.12",
             "linux-3.12:ra_kb=512", "linux-3.12:caller=read", "linux-6", "linux-6:ra_kb=64")
TABLES = ("freebsd4", "ellard", "ideal", "raparms", "nfsheur:8x2:hash=dense")
POLICIES = ("auto", "none", "fixed:4", "freebsd4-cluster", "freebsd-cluster")
CACHES = ("256MiB", "1MiB")


def random_stream(seed: int):
    """A small adversarial trace: interleaved sequential, strided, re-read and random READs
    over a few files, some past the observed end of file, some zero-length."""
    from seqheur.streams import ReadStream

    rng = np.random.default_rng(seed)
    n = 3000
    nfiles = int(rng.integers(1, 40))
    file = rng.integers(0, nfiles, n)
    pos = np.zeros(nfiles, np.int64)
    size = rng.choice([4096, 8192, 32768, 65536], nfiles)
    offset = np.empty(n, np.int64)
    count = np.empty(n, np.int64)
    for i in range(n):
        f = file[i]
        r = rng.random()
        if r < 0.6:
            off = pos[f]
        elif r < 0.75:
            off = pos[f] + size[f] * int(rng.integers(-8, 9))
        elif r < 0.85:
            off = 0
        else:
            off = int(rng.integers(0, 1 << 24))
        off = max(0, int(off))
        c = int(size[f]) if rng.random() < 0.95 else int(rng.integers(0, 200000))
        offset[i] = off
        count[i] = c
        pos[f] = off + c
    time_ns = np.cumsum(rng.integers(0, 2_000_000, n))
    return ReadStream.from_arrays(file, offset, count, time_ns=time_ns)


def streams():
    from seqheur.streams import read_stream

    out = {}
    for p in sorted(TRACES.glob("*.pcap.gz")) + sorted(TRACES.glob("*.parquet")):
        out[p.name] = read_stream(str(p))
    for seed in (1, 2, 3):
        out[f"random-{seed}"] = random_stream(seed)
    return out


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:24]


def _cause_codes(col) -> np.ndarray:
    """The cause Enum's codes as int16, null -1: the same bytes whatever integer width a
    polars version gives an Enum's physical type (UInt32 in 1.x, UInt8 in 2.x)."""
    import polars as pl

    return col.to_physical().cast(pl.Int16).fill_null(-1).to_numpy()


def combos():
    for det in DETECTORS:
        linux = det.startswith("linux")
        for tab in TABLES:
            for pol in POLICIES:
                if linux and pol != "auto":
                    continue
                for cache in CACHES:
                    if cache != CACHES[0] and (tab != "freebsd4" or pol not in ("auto", "none")):
                        continue
                    yield det, tab, pol, cache


def record(keep=lambda key: True) -> dict:
    """Outputs of every combination whose key ``keep`` accepts (all by default)."""
    import seqheur

    result: dict = {}
    for name, s in streams().items():
        entry: dict = {}
        for det in DETECTORS:
            for tab in TABLES:
                if not keep(f"detect|{det}|{tab}"):
                    continue
                d = seqheur.detect(s, det, tab)
                entry[f"detect|{det}|{tab}"] = {
                    "seqcount": digest(d.seqcount), "slot_fresh": digest(d.slot_fresh),
                    "summary": d.summary()}
        for det, tab, pol, cache in combos():
            if not keep(f"replay|{det}|{tab}|{pol}|{cache}"):
                continue
            r = seqheur.replay(s, det, tab, pol, cache=cache)
            req = r.requests
            cols = {c: digest(req[c].to_numpy() if c != "cause" else
                              _cause_codes(req[c]))
                    for c in req.columns}
            entry[f"replay|{det}|{tab}|{pol}|{cache}"] = {"columns": cols,
                                                          "summary": r.to_dict()}
        result[name] = entry
        print(f"{name}: {len(entry)} outputs", file=sys.stderr)
    return result


def compare(old, new, path="") -> list[str]:
    bad = []
    if isinstance(old, dict) and isinstance(new, dict):
        for k in sorted(set(old) | set(new)):
            if k not in old and path.endswith("/summary"):
                continue  # a summary column added since the recording: allowed
            if k not in old or k not in new:
                bad.append(f"{path}/{k}: only in {'new' if k in new else 'golden'}")
                continue
            bad += compare(old[k], new[k], f"{path}/{k}")
        return bad
    if isinstance(old, float) or isinstance(new, float):
        if old is None or new is None:
            return [] if old is new else [f"{path}: {old!r} != {new!r}"]
        if math.isnan(old) and math.isnan(new):
            return []
        if not math.isclose(old, new, rel_tol=1e-9, abs_tol=1e-12):
            return [f"{path}: {old!r} != {new!r}"]
        return []
    return [] if old == new else [f"{path}: {old!r} != {new!r}"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    new = json.loads(json.dumps(record()))
    if a.check:
        old = json.loads(gzip.decompress(OUT.read_bytes()))
        bad = compare(old, new)
        for b in bad[:50]:
            print(b)
        print(f"{len(bad)} mismatches")
        return 1 if bad else 0
    OUT.write_bytes(gzip.compress(json.dumps(new, sort_keys=True).encode(), 9, mtime=0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
