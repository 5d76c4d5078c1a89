"""Offline run of the oracle's law (docs/bound.md, "Where the oracle loses"): on traces drawn
from tests/test_bound.py's own hypothesis strategies with a fixed seed, how often some
registered detector or policy has less disk time than the oracle, and by how much.

    python bench/oracle_losses.py --seed 11 -n 300 [--caches 2,3,4,8,16,64,1024]

Each trace is checked as the suite's law checks it (``check_bound_and_oracle``): every
registered detector (policy auto) and every registered policy, at its own block size, against
``seqheur.bound`` at that block size; ``lower_bound <= oracle`` and every lower-bound law is
asserted on the way (``check_bound_and_oracle(..., oracle_below_all=False)``). The detectors'
replays do not depend on the oracle, so they are kept in ``--store`` (default
bench/work/oracle_losses, a pickle keyed by seed, N and caches) and a second run re-prices
only the oracle: ``--oracle-only`` skips the laws and reuses the stored replays (the quick
loop while changing the oracle; without stored replays it makes them first).

Prints how many traces lose, the losing (trace, configuration) pairs, the worst loss, the
pairs by cache size and profile, and the worst pair of each losing trace.
"""

from __future__ import annotations

import argparse
import collections
import pickle
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import seqheur  # noqa: E402
from _common import WORK  # noqa: E402
from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from seqheur.bound import bound  # noqa: E402
from seqheur.replay import observed_file_sizes  # noqa: E402
from seqheur.streams import ReadStream  # noqa: E402
from test_bound import CONFIGS, K8, PROFILES, check_bound_and_oracle, streams  # noqa: E402


def draw(seed_: int, n: int, caches: list[int]) -> list[tuple]:
    """``n`` (stream, profile, cache_blocks, extra) drawn as the law draws them (its
    strategies), with the cache among ``caches``, deterministically for ``seed_``."""
    out: list[tuple] = []

    @seed(seed_)
    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(s=streams(), profile=st.sampled_from(PROFILES),
           cache_blocks=st.sampled_from(caches),
           extra=st.lists(st.sampled_from([0, 0, 100, K8 + 1, 1 << 20]), min_size=4,
                          max_size=4))
    def collect(s: ReadStream, profile: str, cache_blocks: int, extra: list[int]) -> None:
        out.append((s, profile, cache_blocks, extra))

    collect()
    return out


def replays(case: tuple) -> list[tuple[str, str, int, float]]:
    """(detector, policy, block size, disk seconds) of every configuration of the law."""
    s, profile, cache_blocks, extra = case
    sizes = observed_file_sizes(s) + np.array(extra[:s.n_files], np.int64)
    rows = []
    for det, pol in CONFIGS:
        probe = seqheur.replay(s, det, "ideal", pol, cache="1MiB", profile=None,
                               file_sizes=sizes, per_request=False)
        bs = int(probe["block_size"])
        r = seqheur.replay(s, det, "ideal", pol, cache=cache_blocks * bs, profile=profile,
                           file_sizes=sizes, per_request=False)
        rows.append((det, pol, bs, float(r["disk_seconds"])))
    return rows


def measure(cases: list[tuple], stored: list, laws: bool = True) -> dict:
    """Price the oracle on every case against its stored replays: the losing pairs (loss,
    case index, detector, policy, block size, profile, cache blocks), the traces with a
    loss, and how often the lower bound was above the oracle (asserting the lower-bound
    laws on the way with ``laws``)."""
    pairs = []
    losing = []
    low_above = 0
    oracle_s = 0.0
    for i, (case, rows) in enumerate(zip(cases, stored)):
        s, profile, cache_blocks, extra = case
        if laws:
            check_bound_and_oracle(s, profile, cache_blocks, extra, oracle_below_all=False)
        sizes = observed_file_sizes(s) + np.array(extra[:s.n_files], np.int64)
        best: dict[int, tuple[float, float]] = {}
        lost = False
        for det, pol, bs, disk in rows:
            if bs not in best:
                t1 = time.perf_counter()
                b = bound(s, cache=cache_blocks * bs, profile=profile, block_size=bs,
                          file_sizes=sizes, references=False)
                oracle_s += time.perf_counter() - t1
                best[bs] = (b["oracle_disk_seconds"], b["lower_bound_disk_seconds"])
                if best[bs][1] > best[bs][0] * (1 + 1e-9) + 1e-12:
                    low_above += 1
            orc = best[bs][0]
            if orc > disk * (1 + 1e-9) + 1e-12:
                lost = True
                pairs.append((orc / disk - 1, i, det, pol, bs, profile, cache_blocks))
        if lost:
            losing.append(i)
    return {"pairs": pairs, "losing": losing, "low_above": low_above, "bound_s": oracle_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("-n", type=int, default=300)
    p.add_argument("--caches", default="2,3,4,8,16,64,1024")
    p.add_argument("--store", type=Path, default=WORK / "oracle_losses")
    p.add_argument("--oracle-only", action="store_true",
                   help="reuse the stored replays, skip the lower-bound laws")
    p.add_argument("--show", type=int, default=10, help="print the N worst losing traces")
    args = p.parse_args()
    caches = [int(c) for c in args.caches.split(",")]
    args.store.mkdir(parents=True, exist_ok=True)
    cache_file = args.store / f"replays-{args.seed}-{args.n}-{args.caches}.pkl"
    cases = draw(args.seed, args.n, caches)
    stored = pickle.loads(cache_file.read_bytes()) if cache_file.exists() else None
    t0 = time.perf_counter()
    if stored is None:
        stored = [replays(c) for c in cases]
        cache_file.write_bytes(pickle.dumps(stored))
    t_replays = time.perf_counter() - t0
    m = measure(cases, stored, laws=not args.oracle_only)
    pairs, losing_traces, low_above = m["pairs"], len(m["losing"]), m["low_above"]
    by_cache = collections.Counter(x[6] for x in pairs)
    by_profile = collections.Counter(x[5] for x in pairs)
    n = len(cases)
    print(f"seed {args.seed}, {n} traces, caches {caches}: {losing_traces} "
          f"({100 * losing_traces / n:.1f}%) with some detector or policy below the oracle; "
          f"{len(pairs)} losing pairs of {sum(len(r) for r in stored)}")
    if pairs:
        worst = max(pairs)
        mean = float(np.mean([x[0] for x in pairs]))
        print(f"worst loss {100 * worst[0]:.1f}% (trace {worst[1]}), mean {100 * mean:.1f}%")
        print("pairs by cache:", dict(sorted(by_cache.items())))
        print("pairs by profile:", dict(by_profile.most_common()))
        worst_of = {}
        for x in pairs:
            worst_of[x[1]] = max(worst_of.get(x[1], x), x)
        print("the worst pair of each losing trace:")
        for x in sorted(worst_of.values(), reverse=True)[:args.show]:
            print(f"  {100 * x[0]:5.1f}%  trace {x[1]:4d}  {x[2]}/{x[3]} bs={x[4]} "
                  f"{x[5]} cache={x[6]}")
    print(f"lower bound above the oracle: {low_above}")
    print(f"replays {t_replays:.0f} s (stored: {cache_file}), bound calls {m['bound_s']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
