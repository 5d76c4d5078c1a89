"""Scaling with input size (1x, 4x, 16x): time should grow linearly, ingest memory stay flat.

Each point is a fresh `seqheur` process (wall seconds and its own peak RSS via wait4), after a
warm-up run that fills numba's on-disk cache. Inputs: the project's synthetic NFSv3 UDP+TCP READ
capture (pcap ingest), and paper-benchmark traces (stats and replay of a request table).
Writes bench/results/scaling.json and docs/img/scaling.png.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from _common import ROOT, WORK, parse_args, run_measured, summarize, write_result

from seqheur import workloads
from seqheur.ingest.pcap.synth import ReadCaptureParams, generate_read_capture
from seqheur.io import write_parquet

FACTORS = (1, 4, 16)


def _inputs(quick: bool) -> dict[str, list[tuple[int, Path, float]]]:
    WORK.mkdir(parents=True, exist_ok=True)
    base_mb = 8 if quick else 32
    base_req = 250_000 if quick else 1_000_000
    pcaps, traces = [], []
    for f in FACTORS:
        p = WORK / f"scaling-{base_mb * f}MB.pcap"
        if not p.exists():
            generate_read_capture(p, ReadCaptureParams(target_bytes=base_mb * f << 20))
        pcaps.append((f, p, p.stat().st_size / 1e6))
        t = WORK / f"scaling-{base_req * f}.parquet"
        if not t.exists():
            write_parquet(workloads.paper(32, base_req * f * 8 / 1024, 8, 0.06, seed=1), t)
        traces.append((f, t, base_req * f))
    return {"pcap": pcaps, "trace": traces}


def main() -> int:
    args = parse_args("scaling")
    inputs = _inputs(args.quick)
    exe = [sys.executable, "-m", "seqheur"]
    jobs = {
        "ingest pcap": (inputs["pcap"], lambda p: exe + ["ingest", str(p), "-o", str(WORK / "scaling-out.parquet")], "MB"),
        "replay freebsd4/64x4": (inputs["trace"], lambda p: exe + ["replay", str(p), "--detector", "freebsd4",
                                                                     "--table", "freebsd4", "--json"], "requests"),
    }
    figures, points = [], {}
    for name, (items, cmd, unit) in jobs.items():
        run_measured(cmd(items[0][1]))  # warm numba's cache
        rows = []
        for factor, path, size in items:
            secs, rss = [], []
            for _ in range(args.reps):
                r = run_measured(cmd(path))
                if r["returncode"] != 0:
                    raise SystemExit(f"{name} failed: {r['stderr'].decode()[-800:]}")
                secs.append(r["seconds"])
                rss.append(r["rss_mb"])
            rows.append((factor, size, statistics.median(secs), statistics.median(rss)))
            figures.append({"metric": f"{name} x{factor} ({size:,.0f} {unit}) seconds", "unit": "s",
                            "seqheur": summarize(secs), "peer": None, "peer_name": None,
                            "ratio": None, "target": "linear", "met": None})
            figures.append({"metric": f"{name} x{factor} peak RSS (MB)", "unit": "MB",
                            "seqheur": summarize(rss), "peer": None, "peer_name": None,
                            "ratio": None, "target": "report", "met": None})
        t1, t16 = rows[0][2], rows[-1][2]
        figures.append({"metric": f"{name}: time x16 / x1 (16 = linear)", "unit": "x",
                        "seqheur": summarize([t16 / t1]), "peer": None, "peer_name": None,
                        "ratio": None, "target": "<= 16 (+startup)", "met": t16 / t1 <= 16 * 1.25})
        points[name] = rows
    _plot(points, ROOT.parent / "docs" / "img" / "scaling.png")
    write_result("scaling", args.out, figures=figures,
                 params={"factors": FACTORS, "reps": args.reps, "quick": args.quick},
                 notes="fresh process per point; includes interpreter and import start-up")
    return 0


def _plot(points, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.4))
    for name, rows in points.items():
        f = [r[0] for r in rows]
        a.plot(f, [r[2] for r in rows], marker="o", label=name)
        b.plot(f, [r[3] for r in rows], marker="o", label=name)
    a.plot(FACTORS, [points[next(iter(points))][0][2] * x for x in FACTORS], ls=":", color="grey",
           label="linear from x1")
    for ax, ylabel in ((a, "seconds"), (b, "peak RSS (MB)")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(FACTORS, [f"x{x}" for x in FACTORS])
        ax.set_xlabel("input size")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    a.set_yscale("log")
    a.set_title("Time")
    b.set_title("Memory")
    a.legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight", dpi=110)


if __name__ == "__main__":
    sys.exit(main())
