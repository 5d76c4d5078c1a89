"""Where a shared sweep's wall time goes: the phases of ``seqheur.sweep.sweep`` run on the
same process pool, each task timed inside its worker (its process's CPU seconds and its
start and end on the wall clock).

    python bench/sweep_account.py TRACE GRID.toml [--workers 2]

Prints each worker's trace read, each table pass and each replay task (configurations,
CPU s, wall), then the breakdown: the wall of the whole, the read, the table-pass phase and
the replays; the replays' CPU seconds over the workers (what a perfect schedule would take)
against their phase's wall, and each worker's idle time at the end (the load imbalance).
Tasks run in the order ``sweep`` submits them (``--order grid``) or longest first by the
sweep's own estimate (``--order cost``, what ``sweep`` does: ``sweep.probe_cost``).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path


def _timed(fn, args):
    from seqheur.executors import guarded

    start = time.time()
    cpu = time.process_time()
    outcome = guarded(fn, args)
    return os.getpid(), start, time.time(), time.process_time() - cpu, outcome


def _unwrap(outcomes):
    for i, (status, value) in outcomes:
        assert status == "ok", value
        yield i, value


def read_trace(trace: str) -> int:
    from seqheur.sweep import load_stream, trace_file_sizes

    trace_file_sizes(trace)
    return len(load_stream(trace))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("grid")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--order", choices=("grid", "cost"), default="cost")
    args = ap.parse_args()

    from seqheur.executors import ExecutorSpec, open_pool
    from seqheur import sweep as sw

    trace = str(Path(args.trace).resolve())
    configs = sw.load_grid(args.grid)
    log: list[tuple[str, int, float, float, float]] = []  # (what, pid, start, end, cpu)
    t0 = time.time()
    with open_pool(ExecutorSpec("processes", args.workers)) as run:
        # The trace read, once per worker: each worker's first task (one per worker; a
        # worker that took two would have read once and the second is near zero).
        results = list(run(_timed, [(read_trace, (trace,))] * args.workers))
        for _, (_, (pid, s, e, cpu, outcome)) in results:
            log.append(("read", pid, s, e, cpu))
        read_end = time.time()
        tables = sw.tables_to_pass(configs)
        passes = {}
        for i, (pid, s, e, cpu, (status, value)) in _unwrap(run(
                _timed, [(sw.table_pass, (trace, t)) for t in tables])):
            log.append((f"pass {tables[i]}", pid, s, e, cpu))
            passes[tables[i]] = value
        pass_end = time.time()
        groups = sw.share_groups(configs, {t: p["fresh_digest"] for t, p in passes.items()})
        members = [[configs[i].as_dict() for i in g] for g in groups]
        order = list(range(len(members)))
        if args.order == "cost":
            costs = [0.0] * len(members)
            for i, (pid, s, e, cpu, (status, value)) in _unwrap(run(
                    _timed, [(sw.probe_cost, (trace, m)) for m in members])):
                log.append(("probe", pid, s, e, cpu))
                costs[i] = value
            order = sw.longest_first(costs)
        probe_end = time.time()
        tasks = [(sw.run_configs, (trace, members[g], {c["table"]: passes[c["table"]]
                                                      for c in members[g] if c["table"] in passes}))
                 for g in order]
        for i, (pid, s, e, cpu, (status, value)) in _unwrap(run(_timed, tasks)):
            m = members[order[i]]
            assert status == "ok" and all(o[0] == "ok" for o in value), value
            log.append((f"replay {m[0]['detector']} {m[0]['table']}{'+' if len(m) > 1 else ''} "
                        f"{m[0]['cache']}", pid, s, e, cpu))
    t_end = time.time()

    pids = sorted({p for _, p, *_ in log})
    for what, pid, s, e, cpu in sorted(log, key=lambda r: r[2]):
        if what == "probe":
            continue
        print(f"w{pids.index(pid)} {s - t0:7.2f} {e - t0:7.2f}  cpu {cpu:7.2f}  {what}")
    replays = [r for r in log if r[0].startswith("replay")]
    rep_cpu = sum(r[4] for r in replays)
    rep_start = min(r[2] for r in replays)
    ends = {p: max(r[3] for r in replays if r[1] == p) for p in pids}
    print(f"\nwall {t_end - t0:.2f} s; pool start + read {read_end - t0:.2f} s "
          f"(read CPU per worker: {', '.join(f'{r[4]:.2f}' for r in log if r[0] == 'read')}); "
          f"table passes {pass_end - read_end:.2f} s "
          f"(CPU {sum(r[4] for r in log if r[0].startswith('pass')):.2f}); "
          f"probes {probe_end - pass_end:.2f} s "
          f"(CPU {sum(r[4] for r in log if r[0] == 'probe'):.2f}); "
          f"replays {t_end - probe_end:.2f} s wall, {len(replays)} tasks, CPU {rep_cpu:.2f} s "
          f"(/ {args.workers} = {rep_cpu / args.workers:.2f}); idle tail per worker: "
          f"{', '.join(f'{max(ends.values()) - ends[p]:.2f}' for p in pids)} s; "
          f"replay phase start lag {rep_start - probe_end:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
