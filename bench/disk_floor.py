"""The check-model noise floor of a device, with every read's time kept for analysis.

``seqheur bench check-model --repeat`` reports the floor (a second pass of the same requests
against the first) as one figure. This script reads the same streams through the same
functions (``make_stream``, the bench's native read loop) and keeps both passes' per-read
times, so that the figure can be taken apart afterwards (docs/disk-bench.md, "Measured on
this machine (2026-11-27)")::

    python bench/disk_floor.py measure FILE --ops 60000 --seeds 21,22,23 --out DIR
    python bench/disk_floor.py analyse DIR/*.npz [--profile P] [--windows 60000]

``measure`` writes ``DIR/floor-N-sSEED.npz`` per seed and prints the floor with the load
average, the CPU pressure (``/proc/pressure/cpu``, share of the time some task waited for a
CPU) and the disk's write traffic during the run (``/sys/block/DISK/stat``, DISK from
``--disk``). ``analyse`` prints per run: the floor with the top 0.01 / 0.1 / 1 % of
quantiles left out, reads over 5 ms and their time clusters, the floor over consecutive
windows of the two passes (windows of a long run are minutes apart) and pass 1's windows
against later ones (other requests of the same mix), and, across runs, what
a per-request-size empirical service-time distribution fitted on one run gives on another
(``noise term, cross-run``): each read of size s drawn from the fitting run's size-s
quantile table at a golden-ratio sequence point of its index, a deterministic stand-in for
a noise term in the drive model. With ``--profile`` the profile's deterministic drive model
is scored on each run too.

Runs at normal priority: it measures latency. Read-only, like the bench.
"""

from __future__ import annotations

import argparse
import glob
import itertools
import time
from pathlib import Path

import numpy as np

from seqheur.disk.bench import open_target
from seqheur.disk.check import WARMUP_SECONDS, _measure, make_stream

GOLDEN = (np.sqrt(5.0) - 1.0) / 2.0
QUANTILES = np.linspace(0.0, 1.0, 1001)


def _psi_cpu_us() -> int:
    try:
        return int(Path("/proc/pressure/cpu").read_text().split("total=")[1].split()[0])
    except (OSError, IndexError, ValueError):
        return -1


def _disk_stat(disk: str) -> list[int]:
    try:
        return [int(x) for x in Path(f"/sys/block/{disk}/stat").read_text().split()]
    except OSError:
        return []


def measure(target: str, ops: int, seeds: list[int], seconds: float, out: Path,
            disk: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        load0, psi0, w0 = Path("/proc/loadavg").read_text().split()[:3], _psi_cpu_us(), time.time()
        ds0 = _disk_stat(disk)
        t0 = time.strftime("%H:%M:%S", time.gmtime())
        with open_target(target) as t:
            span = t.size // t.align * t.align
            stream = make_stream(span, t.align, ops, seed)
            warm = make_stream(span, t.align, max(1, min(ops, 2000)), seed + 1)
            _measure(t, warm, WARMUP_SECONDS)
            first, wall = _measure(t, stream, seconds)
            second, _ = _measure(t, stream.head(first.size), seconds)
        load1, psi1, w1 = Path("/proc/loadavg").read_text().split()[:3], _psi_cpu_us(), time.time()
        ds1 = _disk_stat(disk)
        n = first.size
        np.savez(out / f"floor-{ops}-s{seed}.npz", lat=first, again=second,
                 off=stream.offset[:n], length=stream.length[:n], comp=stream.component[:n],
                 span=span, seed=seed, load0=np.array(load0, float),
                 load1=np.array(load1, float), wall=wall)
        a, b = first / 1e6, second[: n] / 1e6
        k = min(a.size, b.size)
        fl = 100 * np.sqrt(np.mean((np.sort(a[:k]) - np.sort(b[:k])) ** 2)) / a[:k].mean()
        psi = 100 * (psi1 - psi0) / 1e6 / (w1 - w0) if psi0 >= 0 else float("nan")
        wr = (ds1[6] - ds0[6]) * 512 / 1e6 if ds0 and ds1 else float("nan")
        print(f"{t0} seed {seed}: {n} reads, mean {a.mean():.4f} / {b.mean():.4f} ms, max "
              f"{a.max():.1f} / {b.max():.1f} ms, floor {fl:.1f} %, pass ratio "
              f"{b[:k].sum() / a[:k].sum():.3f}; load {' '.join(load0)} -> {' '.join(load1)}, "
              f"cpu pressure {psi:.0f} %, {disk} writes {wr:.0f} MB", flush=True)


def _dem_pct(measured: np.ndarray, predicted: np.ndarray) -> tuple[float, float]:
    m, p = np.sort(measured), np.sort(predicted)
    return 100 * float(np.sqrt(np.mean((m - p) ** 2))) / float(m.mean()), float(p.sum() / m.sum())


def _trimmed(m: np.ndarray, p: np.ndarray, keep: float) -> float:
    m, p = np.sort(m), np.sort(p)
    k = int(m.size * keep)
    return 100 * float(np.sqrt(np.mean((m[:k] - p[:k]) ** 2))) / float(m[:k].mean())


def _draw(length: np.ndarray, tables: dict[int, np.ndarray]) -> np.ndarray:
    """Each read's time from its size's quantile table at a golden-ratio point of its index."""
    u = (np.arange(length.size) * GOLDEN + 0.5) % 1.0
    out = np.empty(length.size)
    for s in np.unique(length):
        sel = length == s
        tab = tables.get(int(s))
        if tab is None:  # a size the fitting run lacks: the nearest size it has, by ratio
            tab = tables[min(tables, key=lambda x: abs(np.log2(x / int(s))))]
        out[sel] = np.interp(u[sel], QUANTILES, tab)
    return out


def analyse(paths: list[str], profile: str | None, windows: int) -> None:
    runs = {p: np.load(p) for p in sorted(paths)}
    model = None
    if profile:
        from seqheur.disk.check import resolve_model

        model = resolve_model(profile)
    for p, z in runs.items():
        a, b = z["lat"] / 1e6, z["again"] / 1e6
        k = min(a.size, b.size)
        a2, b2 = a[:k], b[:k]
        big = np.flatnonzero(a > 5.0)
        t = np.cumsum(a) / 1e3
        clusters = int(1 + np.sum(np.diff(t[big]) > 0.5)) if big.size else 0
        l0, l1 = (z["load0"], z["load1"]) if "load0" in z else (z["la0"], z["la1"])
        line = (f"{Path(p).name}: n {a.size}, load {l0[0]:.2f} -> {l1[0]:.2f}, "
                f"floor {_dem_pct(a2, b2)[0]:.1f} % (pass ratio {b2.sum() / a2.sum():.3f}); "
                f"without the top 0.01 / 0.1 / 1 %: {_trimmed(a2, b2, 0.9999):.1f} / "
                f"{_trimmed(a2, b2, 0.999):.1f} / {_trimmed(a2, b2, 0.99):.1f} %; reads > 5 ms "
                f"{big.size} in {clusters} clusters, max {a.max():.1f} ms")
        if model is not None:
            place = model.place(np.array([int(z["span"])], np.int64))
            pred = model.service(np.zeros(a.size, np.int64), z["off"], z["length"], place,
                                 model.new_state()).seconds * 1e3
            d, r = _dem_pct(a, pred)
            line += f"; model {model.spec}: {d:.1f} %, total ratio {r:.3f}"
        print(line)
        if windows and k >= 2 * windows:
            fl = [_dem_pct(a2[i:i + windows], b2[i:i + windows])[0]
                  for i in range(0, k - windows + 1, windows)]
            print(f"  floor over {len(fl)} windows of {windows}: median {np.median(fl):.1f} %, "
                  f"{min(fl):.1f}-{max(fl):.1f} %, {sum(f <= 15 for f in fl)} at or below 15 %")
            # other requests of the same mix: pass 1's windows against later ones of pass 1
            wins = [a[i:i + windows] for i in range(0, a.size - windows + 1, windows)]
            for lag in (1, 2, 4, 8):
                if lag < len(wins):
                    d = [_dem_pct(wins[i], wins[i + lag])[0] for i in range(len(wins) - lag)]
                    print(f"  pass 1, window against the one {lag} later: median "
                          f"{np.median(d):.1f} %, {min(d):.1f}-{max(d):.1f} %, "
                          f"{sum(x <= 15 for x in d)} of {len(d)} at or below 15 %")
    if len(runs) < 2:
        return
    got, floors = [], []
    for pa, pb in itertools.permutations(runs, 2):
        za, zb = runs[pa], runs[pb]
        la, lb = za["length"], zb["length"]
        ta = za["lat"] / 1e6
        tables = {int(s): np.quantile(ta[la == s], QUANTILES) for s in np.unique(la)}
        mb = zb["lat"] / 1e6
        d, r = _dem_pct(mb, _draw(lb, tables))
        got.append((d, r))
        print(f"noise term, cross-run: fitted on {Path(pa).name}, checked on {Path(pb).name}: "
              f"{d:.1f} %, total ratio {r:.3f}")
    for z in runs.values():
        k = min(z["lat"].size, z["again"].size)
        floors.append(_dem_pct(z["lat"][:k] / 1e6, z["again"][:k] / 1e6)[0])
    d = np.array([g[0] for g in got])
    r = np.array([g[1] for g in got])
    print(f"noise term, cross-run, {d.size} pairs: median {np.median(d):.1f} %, "
          f"{d.min():.1f}-{d.max():.1f} %, {int(np.sum(d <= 15))} at or below 15 %; total ratio "
          f"{r.min():.3f}-{r.max():.3f}; floors of these runs: median {np.median(floors):.1f} %")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("target")
    m.add_argument("--ops", type=int, default=60_000)
    m.add_argument("--seeds", default="1,2,3")
    m.add_argument("--time", type=float, default=60.0, help="budget per pass, s")
    m.add_argument("--out", type=Path, required=True)
    m.add_argument("--disk", default="vda", help="block device whose stat to record")
    a = sub.add_parser("analyse")
    a.add_argument("paths", nargs="+")
    a.add_argument("--profile")
    a.add_argument("--windows", type=int, default=0)
    args = ap.parse_args()
    if args.cmd == "measure":
        measure(args.target, args.ops, [int(s) for s in args.seeds.split(",")], args.time,
                args.out, args.disk)
    else:
        paths = [q for p in args.paths for q in (sorted(glob.glob(p)) or [p])]
        analyse(paths, args.profile, args.windows)


if __name__ == "__main__":
    main()
