"""Sweep scaling: a 48-configuration grid over a 25 M-request trace (a sweep of over a minute
serially on this machine; 500 k with --quick), run serially in this process, on 1 and 2 local
worker processes, and on a Dask LocalCluster of 2 workers.

Targets: 2 workers >= 1.7x one worker on 2 cores; Dask with 2 workers >= 1.6x serial on a
sweep of >= 60 s, and within 10% of the process pool. Per-configuration overhead = (wall time
x workers - sum of in-process replay time) / configs.

Every sweep here shares work as ``seqheur sweep`` does (configurations that differ only in
their disk profile are one replay priced by each profile); the same grid with one replay per
configuration (``share=False``) runs in the same rounds, serially and on 2 workers, for the
speed-up of sharing side by side.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _common import WORK, parse_args, summarize, write_result

from seqheur import workloads
from seqheur.executors import ExecutorSpec
from seqheur.io import write_parquet
from seqheur.replay import replay_profiles
from seqheur.sweep import grid_from_dict, load_stream, share_groups, sweep, trace_file_sizes

GRID = {
    "detector": ["freebsd4", "slowdown", "cursor", "always"],
    "table": ["freebsd4", "ellard", "ideal"],
    "cache": ["64MiB", "256MiB"],
    "profile": ["ide-7200", "scsi-10k"],
}  # 4 x 3 x 2 x 2 = 48


def main() -> int:
    sized = argparse.ArgumentParser(add_help=False)
    sized.add_argument("--requests", type=int, default=None,
                       help="READs in the trace (default 25 M, 500 k with --quick)")
    size, rest = sized.parse_known_args()
    args = parse_args("sweep", rest)
    n_target = size.requests or (500_000 if args.quick else 25_000_000)
    reps = args.reps if not args.quick else 1
    WORK.mkdir(parents=True, exist_ok=True)
    trace = WORK / f"sweep-{n_target}.parquet"
    if not trace.exists():
        write_parquet(workloads.paper(32, n_target * 8 / 1024, 8, 0.06, seed=1), trace)
    configs = grid_from_dict(GRID)
    assert len(configs) == 48
    # warm numba's on-disk cache for every kernel, outside the timings
    sweep(trace, configs[:: len(configs) // 8], None, ExecutorSpec("serial"))
    specs = {"serial": ExecutorSpec("serial"), "1 worker": ExecutorSpec("processes", 1),
             "2 workers": ExecutorSpec("processes", 2),
             "dask 2 workers": ExecutorSpec("dask-local", 2)}
    unshared = {"serial, one replay each": "serial", "2 workers, one replay each": "2 workers"}
    runs = {name: (spec, True) for name, spec in specs.items()}
    runs.update({name: (specs[base], False) for name, base in unshared.items()})
    walls: dict[str, list[float]] = {k: [] for k in runs}
    frames = {}
    for spec in specs.values():  # warm-up of each executor (page cache, forkserver, imports)
        sweep(trace, configs[:4], None, spec, resume=False)
    for _ in range(reps):  # interleaved: serial, 1, 2, dask, unshared..., serial, 1, ...
        for name, (spec, share) in runs.items():
            with tempfile.TemporaryDirectory() as d:
                t0 = time.perf_counter()
                frames[name] = sweep(trace, configs, Path(d) / "o.parquet", spec, resume=False,
                                     share=share)
                walls[name].append(time.perf_counter() - t0)
    # the replays alone, in this process, as the sweeps run them (one replay per group of
    # configurations differing only in profile), for the per-configuration overhead
    stream = load_stream(str(trace))
    sizes = trace_file_sizes(str(trace))[0]
    compute = 0.0
    for group in share_groups(configs):
        first = configs[group[0]]
        t0 = time.perf_counter()
        replay_profiles(stream, [configs[i].profile for i in group], first.detector,
                        first.table, first.policy, first.cache, file_sizes=sizes)
        compute += time.perf_counter() - t0
    base = frames["1 worker"].drop("seconds", strict=False)
    for name, f in frames.items():  # shared or not, any executor: the same rows, bit for bit
        assert f.drop("seconds", strict=False).equals(base), f"{name} rows differ from 1 worker"
    med = {k: statistics.median(v) for k, v in walls.items()}
    speedup = med["1 worker"] / med["2 workers"]
    dask_vs_pool = med["2 workers"] / med["dask 2 workers"]
    dask_vs_serial = med["serial"] / med["dask 2 workers"]
    figures = [
        {"metric": "sweep 48 cfg: 2 workers vs 1 (speed-up)", "unit": "x",
         "seqheur": summarize(walls["2 workers"]), "peer": summarize(walls["1 worker"]),
         "peer_name": "same sweep on 1 worker", "ratio": speedup, "target": ">= 1.7",
         "met": speedup >= 1.7},
        {"metric": "sweep 48 cfg: Dask LocalCluster vs pool", "unit": "x",
         "seqheur": summarize(walls["dask 2 workers"]), "peer": summarize(walls["2 workers"]),
         "peer_name": "local process pool, 2 workers", "ratio": dask_vs_pool,
         "target": ">= 0.9 (within 10%)", "met": dask_vs_pool >= 0.9},
        {"metric": "sweep 48 cfg: Dask LocalCluster (2 workers) vs serial", "unit": "x",
         "seqheur": summarize(walls["dask 2 workers"]), "peer": summarize(walls["serial"]),
         "peer_name": "same sweep serially in one process", "ratio": dask_vs_serial,
         "target": ">= 1.6 on a sweep of >= 60 s serially",
         "met": bool(dask_vs_serial >= 1.6 and med["serial"] >= 60) if not args.quick else None},
        *({"metric": f"sweep 48 cfg ({base}): profiles from one replay vs one replay each",
           "unit": "x", "seqheur": summarize(walls[base]), "peer": summarize(walls[name]),
           "peer_name": f"same sweep, {name}", "ratio": statistics.median(walls[name])
           / med[base], "target": "> 1 (report)", "met": None}
          for name, base in unshared.items()),
        {"metric": "sweep per-configuration wall (1 worker)", "unit": "s",
         "seqheur": summarize([w / len(configs) for w in walls["1 worker"]]), "peer": None,
         "peer_name": None, "ratio": None, "target": "report", "met": None},
    ]
    workers = {"serial": 1, "1 worker": 1, "2 workers": 2, "dask 2 workers": 2}
    for name, k in workers.items():  # worker-seconds not spent replaying, per configuration
        figures.append({
            "metric": f"sweep per-configuration overhead ({name})", "unit": "s",
            "seqheur": summarize([(w * k - compute) / len(configs) for w in walls[name]]),
            "peer": None, "peer_name": None, "ratio": None, "target": "report", "met": None})
    write_result("sweep", args.out, figures=figures,
                 params={"requests": n_target, "configs": len(configs), "reps": reps},
                 notes=("wall seconds of the whole sweep; ratio = speed-up (higher is better). "
                        f"The {len(share_groups(configs))} shared replays alone (one per "
                        "group of configurations differing only in profile), one after another "
                        f"in one process: {compute:.1f} s; overhead = (wall x workers - that) / "
                        "48 (process start, imports, loading the trace in each worker, "
                        "scheduling, result transfer). 'one replay each': share=False."))
    return 0


if __name__ == "__main__":
    sys.exit(main())
