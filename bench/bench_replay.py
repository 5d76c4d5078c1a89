"""Full replay throughput vs libcachesim's LRU, side by side on the same trace.

Trace: 20 M READs (2 M with --quick) of 8 KiB by 32 interleaved sequential readers with 6 %
adjacent swaps (``bench_detect.make_stream``, the same stream as the detector benchmark).

* seqheur: ``seqheur.replay`` end to end — detector ``freebsd4`` + table ``nfsheur:64x4`` +
  policy ``freebsd4-cluster`` (16 KiB blocks) + 256 MiB LRU buffer cache + prefetch/cause
  metrics + the ``ide-7200`` disk-time model; summary only (``per_request=False``). Extra
  figures: the same with per-request columns, Linux 3.12 and Linux 6 read-ahead with ``raparms``
  (and linux-6 against linux-3.12, target within 1.3x), the closed-loop timing model on top
  of the full replay (target: adds at most 30 %), the full
  replay without the disk model, and seqheur's LRU kernel alone (``cache.lru_misses``) on the
  peer's block trace — what the peer does, so the ratio of the last is LRU against LRU.
* peer: libcachesim (PyPI ``libcachesim``) LRU of 256 MiB, C ``process_trace`` over the demand
  block trace of the same stream (one 16 KiB block per READ, so block requests = READs),
  stored as an oracleGeneral binary file (page-cached after the first pass).

Rates use the calling thread's CPU time (the machine is shared; wall rates in ``notes``).
A correctness check runs first: with read-ahead off (policy ``none:bsize=16384``), seqheur's
miss count must equal libcachesim's on the block trace.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from _common import WORK, parse_args, summarize, write_result
from bench_detect import make_stream

BSIZE = 16384
CACHE = 256 << 20


def write_oracle_general(files: np.ndarray, blocks: np.ndarray, path) -> None:
    dt = np.dtype([("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec = np.zeros(len(files), dt)
    rec["t"] = np.arange(len(files)) // 1000
    rec["id"] = (files.astype(np.uint64) << np.uint64(40)) + blocks.astype(np.uint64) + 1
    rec["size"] = BSIZE
    rec["next"] = -1
    tmp = path.with_suffix(".tmp")
    rec.tofile(tmp)
    tmp.replace(path)


def main() -> int:
    args = parse_args("replay")
    n = 2_000_000 if args.quick else 20_000_000
    reps = args.reps
    import libcachesim as lcs

    import seqheur
    from seqheur.cache import lru_misses, new_cache
    from seqheur.replay import observed_file_sizes

    stream = make_stream(n)
    sizes = observed_file_sizes(stream)
    blocks = stream.offset // BSIZE  # every READ is 8 KiB aligned: exactly one block
    assert np.all((stream.offset + stream.count - 1) // BSIZE == blocks)
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"replay_blocks_{n}.oracleGeneral"
    if not path.exists():
        write_oracle_general(stream.file, blocks, path)

    def peer() -> float:
        reader = lcs.TraceReader(str(path), lcs.TraceType.ORACLE_GENERAL_TRACE)
        lru = lcs.LRU(cache_size=CACHE)
        miss_ratio, _ = lru.process_trace(reader)
        return miss_ratio

    # correctness: read-ahead off == LRU simulator
    check = seqheur.replay(stream, "freebsd4", "nfsheur:64x4", f"none:bsize={BSIZE}", CACHE,
                           None, file_sizes=sizes, per_request=False)
    peer_misses = int(round(peer() * n))
    if check["misses"] != peer_misses:
        raise SystemExit(f"LRU mismatch: seqheur {check['misses']} vs libcachesim {peer_misses}")

    configs = {
        "full": dict(detector="freebsd4", table="nfsheur:64x4", policy="freebsd4-cluster",
                     per_request=False),
        "full+per-request": dict(detector="freebsd4", table="nfsheur:64x4",
                                 policy="freebsd4-cluster", per_request=True),
        "linux-3.12+raparms": dict(detector="linux-3.12", table="raparms", policy="auto",
                                   per_request=False),
        "linux-6+raparms": dict(detector="linux-6", table="raparms", policy="auto",
                                per_request=False),
    }

    # the end-to-end timing model on top of the full pipeline (target: adds <= 30 %)
    configs["full+closed-loop"] = dict(detector="freebsd4", table="nfsheur:64x4",
                                       policy="freebsd4-cluster", per_request=False,
                                       timing="closed-loop:preset=paper-testbed")

    # where the time goes: the full pipeline without the disk model, and seqheur's LRU kernel
    # alone on the same block trace (the work libcachesim's process_trace does)
    configs["full, no disk model"] = dict(detector="freebsd4", table="nfsheur:64x4",
                                          policy="freebsd4-cluster", per_request=False,
                                          profile=None)
    lru_files = np.ascontiguousarray(stream.file, np.int64)
    lru_blocks = np.ascontiguousarray(blocks, np.int64)

    def lru_kernel() -> int:
        return lru_misses(lru_files, lru_blocks, new_cache(CACHE, BSIZE))

    if lru_kernel() != peer_misses:
        raise SystemExit("LRU kernel mismatch against libcachesim")

    def run(cfg):
        return seqheur.replay(stream, cache=CACHE, file_sizes=sizes,
                              **{"profile": "ide-7200", **cfg})

    last = {k: run(cfg) for k, cfg in configs.items()}  # warm-up (compiles, page faults)
    cpu: dict[str, list[float]] = {k: [] for k in list(configs) + ["lru kernel", "libcachesim"]}
    wall: dict[str, list[float]] = {k: [] for k in cpu}
    for _ in range(reps):  # interleaved: A B C peer, A B C peer, ...
        for k in cpu:
            c0, w0 = time.thread_time(), time.perf_counter()
            if k == "libcachesim":
                peer()
            elif k == "lru kernel":
                lru_kernel()
            else:
                last[k] = run(configs[k])
            c1, w1 = time.thread_time(), time.perf_counter()
            cpu[k].append(n / (c1 - c0) / 1e6)
            wall[k].append(n / (w1 - w0) / 1e6)

    peer_med = float(np.median(cpu["libcachesim"]))
    figures = []
    for k in list(configs) + ["lru kernel"]:
        med = float(np.median(cpu[k]))
        name = ("LRU kernel alone, same block trace" if k == "lru kernel" else f"replay {k}")
        fig = {"metric": f"{name} (M req/s/core)", "unit": "M requests/s",
               "seqheur": summarize(cpu[k]), "peer": summarize(cpu["libcachesim"]),
               "peer_name": "libcachesim LRU process_trace (C), same block trace",
               "ratio": med / peer_med}
        if k == "full":
            fig.update({"target": ">= 4x peer and >= 20 M/s",
                        "met": bool(med >= 4 * peer_med and med >= 20)})
        figures.append(fig)
    def within(name: str, base: str, metric: str, target: str) -> dict:
        """Configuration ``name`` against ``base`` of the same run: at most 1.3x slower."""
        a, b = float(np.median(cpu[name])), float(np.median(cpu[base]))
        return {"metric": f"{metric} (M req/s/core)", "unit": "M requests/s",
                "seqheur": summarize(cpu[name]), "peer": summarize(cpu[base]),
                "peer_name": f"seqheur replay {base}, same run", "ratio": a / b,
                "target": f">= 1/1.3 ({target})", "met": bool(a * 1.3 >= b)}

    figures.append(within("linux-6+raparms", "linux-3.12+raparms",
                          "replay linux-6 against linux-3.12, both with raparms",
                          "within 1.3x of linux-3.12"))
    figures.append(within("full+closed-loop", "full",
                          "replay full + closed-loop timing against full",
                          "timing adds <= 30 %"))
    full = last["full"].to_dict()
    notes = ("wall medians (M req/s): " + ", ".join(f"{k} {np.median(v):.1f}" for k, v in wall.items())
             + f". LRU check (policy none): {check['misses']} misses = libcachesim's. "
             + f"Full replay summary: hits {full['hits']}, misses {full['misses']}, "
             + f"prefetched {full['prefetched']}, disk ops {full['disk_ops']}, "
             + f"disk {full['disk_seconds']:.1f} s, {full['throughput_mbps']:.2f} MB/s.")
    write_result("replay", args.out, figures=figures,
                 params={"requests": n, "readers": 32, "request_bytes": 8192,
                         "block_bytes": BSIZE, "cache_bytes": CACHE, "profile": "ide-7200",
                         "reps": reps, "swap_fraction": 0.06},
                 notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
