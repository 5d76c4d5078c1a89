"""Tune against a grid of the same budget: ``seqheur tune`` (TPE, the waste limit as an Optuna
constraint) and a ``seqheur sweep`` of a cartesian grid over the same space
(``Space.grid``), on the same synthetic trace, cache, disk profile and waste limit.

Must hold (issue: tune): tune's best feasible throughput >= the grid's best feasible, reached
in fewer evaluations than the grid's budget. Each tune seed is a separate study; the figures
are the worst seed (lowest best, most evaluations to reach the grid's best). Every paper
reader reads its whole file, so the sweep's file sizes (what the READs reach) and tune's (the
reply attributes, as ``seqheur replay``) are the same: both lay the disk out alike (checked).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from _common import WORK, parse_args, summarize, write_result

from seqheur import workloads
from seqheur.executors import ExecutorSpec
from seqheur.io import write_parquet
from seqheur.sweep import Config, sweep
from seqheur.tune import parse_space, tune

SPACE = "freebsd4,slowdown,cursor;table=nfsheur;policy=freebsd-cluster"
CACHE = "64MiB"
PROFILE = "ide-7200"
MAX_WASTE = 0.2
REORDER = 0.15


def feasible_best(rows: list[dict]) -> float:
    ok = [r["throughput_mbps"] for r in rows if r["waste"] <= MAX_WASTE]
    return max(ok) if ok else 0.0  # no feasible configuration: any feasible one beats it


def main() -> int:
    args = parse_args("tune")
    readers, total_mb = (128, 512) if args.quick else (128, 1024)
    budget = 24 if args.quick else 48
    seeds = (0, 1) if args.quick else (0, 1, 2)
    WORK.mkdir(parents=True, exist_ok=True)
    trace = WORK / f"tune-paper{readers}-{total_mb}-{REORDER}.parquet"
    if not trace.exists():
        write_parquet(workloads.paper(readers, total_mb, 8, reorder=REORDER, seed=1), trace)
    from seqheur.replay import observed_file_sizes
    from seqheur.streams import read_stream
    from seqheur.sweep import trace_file_sizes

    assert (trace_file_sizes(str(trace))[0] == observed_file_sizes(read_stream(trace))).all()
    space = parse_space(SPACE)
    grid = [Config(**c, cache=CACHE, profile=PROFILE) for c in space.grid(budget)]
    # warm numba's on-disk cache for every loop the space can compose, outside the timings
    sweep(trace, [Config(d, "nfsheur", "freebsd-cluster", CACHE, PROFILE)
                  for d in ("freebsd4", "slowdown", "cursor")], None, ExecutorSpec("serial"))
    t0 = time.perf_counter()
    frame = sweep(trace, grid, None, ExecutorSpec("serial"))
    grid_wall = time.perf_counter() - t0
    from seqheur.tune import waste

    rows = [dict(r, waste=waste(r)) for r in frame.to_dicts() if r["error"] is None]
    grid_best = feasible_best(rows)
    grid_row = max((r for r in rows if r["waste"] <= MAX_WASTE), key=lambda r: r["throughput_mbps"],
                   default={"detector": "none feasible", "table": "-", "policy": "-"})
    print(f"grid: {len(rows)} rows, waste {min(r['waste'] for r in rows):.3f}.."
          f"{max(r['waste'] for r in rows):.3f}, throughput "
          f"{min(r['throughput_mbps'] for r in rows):.3f}..{max(r['throughput_mbps'] for r in rows):.3f}")
    # a grid 4x the budget, for reference: how much grid search it takes to catch up
    big = [Config(**c, cache=CACHE, profile=PROFILE) for c in space.grid(4 * budget)]
    big_rows = [dict(r, waste=waste(r)) for r in sweep(trace, big, None, ExecutorSpec("serial"))
                .to_dicts() if r["error"] is None]
    big_best = feasible_best(big_rows)
    bests, to_match, walls, replays = [], [], [], []
    best_spec = None
    for seed in seeds:
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            res = tune(trace, SPACE, trials=budget, max_waste=MAX_WASTE, output=Path(d),
                       cache=CACHE, profile=PROFILE, seed=seed)
            walls.append(time.perf_counter() - t0)
            import polars as pl

            df = pl.read_parquet(Path(d) / "trials.parquet").sort("number")
        bests.append(res.best["throughput_mbps"])
        replays.append(res.replays)
        if best_spec is None or res.best["throughput_mbps"] >= max(bests):
            best_spec = res.best["replay_options"]
        # evaluations (replays, reused trials not counted) until a feasible trial >= grid best
        n, hit = 0, None
        for r in df.iter_rows(named=True):
            if r["state"] != "COMPLETE":
                continue
            n += 0 if r.get("reused") else 1
            if r["waste"] <= MAX_WASTE and r["throughput_mbps"] >= grid_best * (1 - 1e-9):
                hit = n
                break
        to_match.append(hit if hit is not None else float("inf"))
    worst_best, worst_match = min(bests), max(to_match)
    figures = [
        {"metric": f"tune best / grid best, {budget} evaluations", "unit": "x",
         "seqheur": summarize(bests), "peer": summarize([grid_best]),
         "peer_name": f"sweep of a {len(grid)}-config grid", "ratio": worst_best / grid_best if grid_best else None,
         "target": ">= 1 (worst seed)", "met": worst_best >= grid_best * (1 - 1e-9)},
        {"metric": "tune evaluations to reach the grid's best", "unit": "replays",
         "seqheur": summarize(to_match), "peer": summarize([float(len(grid))]),
         "peer_name": "grid budget", "ratio": len(grid) / worst_match,
         "target": f"< {len(grid)} (worst seed)", "met": worst_match < len(grid)},
        {"metric": f"tune best / best of a {len(big)}-config grid", "unit": "x",
         "seqheur": summarize(bests), "peer": summarize([big_best]),
         "peer_name": f"sweep of a {len(big)}-config grid (4x the budget)",
         "ratio": worst_best / big_best if big_best else None, "target": "report", "met": None},
        {"metric": "tune wall, whole study", "unit": "s", "seqheur": summarize(walls),
         "peer": summarize([grid_wall]), "peer_name": "grid sweep wall",
         "ratio": grid_wall / statistics_median(walls), "target": "report", "met": None},
    ]
    write_result("tune", args.out, figures=figures,
                 params={"trace": f"synth paper --readers {readers} --total-mb {total_mb} "
                                  f"--reorder {REORDER} --seed 1", "space": SPACE, "cache": CACHE,
                         "profile": PROFILE, "max_waste": MAX_WASTE, "budget": budget,
                         "grid": len(grid), "big_grid": len(big), "seeds": list(seeds)},
                 notes=(f"Throughput in MB/s (10^6 B/s), the best trial with waste <= "
                        f"{MAX_WASTE}. Grids: cell middles of each range on its scale, "
                        f"the default for a dimension given one level (Space.grid). "
                        f"Grid best {grid_best:.3f} MB/s "
                        f"({grid_row['detector']} / {grid_row['table']} / {grid_row['policy']}); "
                        f"{len(big)}-config grid best {big_best:.3f} MB/s; tune best per seed "
                        f"{', '.join(f'{b:.3f}' for b in bests)} MB/s (best: {best_spec}); "
                        f"replays per tune study {replays} (the rest of the {budget} trials "
                        f"asked for a configuration already replayed); evaluations to reach "
                        f"the grid's best per seed {to_match}."))
    return 0


def statistics_median(v: list[float]) -> float:
    import statistics

    return statistics.median(v)


if __name__ == "__main__":
    sys.exit(main())
