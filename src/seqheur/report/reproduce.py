"""Run ``reproduce ellard2003`` and write its report (HTML + PNG + Parquet + JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import ellard2003 as E


@dataclass(frozen=True)
class ReproduceResult:
    readers: Any  # polars DataFrame
    strides: Any
    queues: Any  # Figure 2: concurrent readers on the server, tagged queue on and off
    finish: Any  # Figure 3: each process's finishing time
    findings: list[E.Finding]
    table1: list[dict[str, Any]]  # E.table1_cells: paper, disk model, end to end per cell
    figures: dict[str, Path]
    html: Path


def _summary(stream, **kw) -> dict[str, Any]:
    from ..replay import replay

    return replay(stream, **kw).summary.to_dicts()[0]


def reproduce_ellard2003(out_dir: str | Path, quick: bool = False) -> ReproduceResult:
    from ..io import write_json, write_parquet
    from ..progress import progress
    from . import figures as F
    from .html import Report

    setup = E.Setup(quick=quick)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with progress("reproducing Ellard & Seltzer 2003", total=E.n_replays(setup)) as bar:
        readers = E.run_readers(setup, _summary, bar)
        strides = E.run_strides(setup, _summary, bar)
        queues, finish = E.run_queues(setup, bar)
    write_parquet(readers, out / "readers.parquet")
    write_parquet(strides, out / "strides.parquet")
    write_parquet(queues, out / "queues.parquet")
    write_parquet(finish, out / "finish.parquet")
    found = [*E.findings(readers, strides, setup), E.queue_finding(queues),
             E.finish_finding(finish)]
    write_json([f.__dict__ for f in found], out / "findings.json")
    cells = E.table1_cells(strides)
    write_json(cells, out / "table1.json")

    figs: dict[str, Path] = {}
    p_main = 0.06 if 0.06 in setup.reorder else max(setup.reorder)
    for prof in setup.profiles:
        sub = readers.filter((readers["profile"] == prof) & (readers["reorder"] == p_main))
        best = sub.select("readers", "oracle_throughput_mbps").unique().sort("readers")
        figs[f"readers-{prof}"] = F.lines_by(
            "readers", "throughput_mbps", sub, ["detector", "table"], out / f"readers-{prof}.png",
            title=f"Concurrent readers, {p_main:.0%} reordered ({prof}) — cf. Figures 6–7",
            xlabel="concurrent readers", ylabel="MB/s (disk model)", logx=True,
            reference={"oracle (clairvoyant read-ahead)": (
                best["readers"].to_list(), best["oracle_throughput_mbps"].to_list())})
        sub = readers.filter((readers["profile"] == prof) & (readers["table"] == "freebsd4")
                             & (readers["detector"] == "freebsd4"))
        figs[f"reorder-{prof}"] = F.lines_by(
            "readers", "throughput_mbps", sub, ["reorder"], out / f"reorder-{prof}.png",
            title=f"Default heuristic, 64x4 table, by reorder rate ({prof})",
            xlabel="concurrent readers", ylabel="MB/s (disk model)", logx=True)
        sub = strides.filter(strides["profile"] == prof)
        ref = {f"paper: {det}": (list(E.TABLE1[(prof, det)].keys()), list(E.TABLE1[(prof, det)].values()))
               for det in ("freebsd4", E.CURSOR)}
        figs[f"stride-{prof}"] = F.lines_by(
            "stride", "throughput_mbps", sub, ["detector"], out / f"stride-{prof}.png",
            title=f"Stride readers of a 256 MB file ({prof}) — cf. Table 1", xlabel="stride",
            ylabel="MB/s", logx=True, reference=ref)
    ns = sorted(queues["readers"].unique().to_list())
    figs["queues"] = F.lines_by(
        "readers", "e2e_throughput_mbps", queues, ["scheduler"], out / "queues.png",
        title=f"Concurrent readers on the server, {E.QUEUE_PROFILE}: tagged queue on (tcq) "
              "and off (cscan) — cf. Figure 2",
        xlabel="concurrent readers", ylabel="MB/s (end to end)", logx=True,
        reference={f"paper: {sch} level": (ns, [level] * len(ns))
                   for sch, level in E.QUEUES.items()})
    finish_by = finish.with_columns(
        (finish["profile"] + ", " + finish["scheduler"]).alias("disk, queue"))
    figs["finish"] = F.lines_by(
        "rank", "done_s", finish_by, ["disk, queue"], out / "finish.png",
        title=f"{E.FINISH_READERS} processes of {E.FINISH_MB // E.FINISH_READERS} MB on the "
              "server: when each finishes — cf. Figure 3",
        xlabel="process, in the order they finish", ylabel="finished after (s)",
        reference={f"paper: {prof}, {sch}": (list(p), list(p.values()))
                   for (prof, sch), p in E.FINISH.items() if p})

    rep = Report("Reproducing Ellard & Seltzer 2003: NFS Tricks and Benchmarking Traps",
                 f"{'quick' if quick else 'full'} run: {E.n_replays(setup)} replays; cache {E.CACHE}; "
                 f"{E.REQUEST_KB} KiB READs; profiles {', '.join(setup.profiles)}")
    rep.heading("Findings")
    rep.paragraph("Each finding of the paper, checked against seqheur's replay. "
                  "<span class=ok>agrees</span> / <span class=partial>partly</span> / "
                  "<span class=no>disagrees</span>.", raw=True)
    cls = {"agrees": "ok", "partly": "partial", "disagrees": "no"}
    rep.table([{"where": f.where, "paper": f.claim,
                "verdict": f'<span class="{cls[f.verdict]}">{f.verdict}</span>',
                "seqheur": f.measured, "why": f.why or "–"} for f in found],
              raw_columns=("verdict",))
    rep.heading("Concurrent readers (§4, §6; Figures 6–7)")
    rep.paragraph(f"n readers each read their own 256/n MB file ({setup.total_mb} MB in total), "
                  "8 KiB READs, reordered by the client model (docs/formats.md). Lines: detector / table; "
                  "dashed: the clairvoyant read-ahead (oracle, docs/bound.md) through the same "
                  "cache and disk. readers.parquet has each row's oracle_throughput_mbps and "
                  "achievable_gain_fraction = (throughput - no read-ahead) / (the oracle's - no read-ahead).")
    for prof in setup.profiles:
        rep.figure(figs[f"readers-{prof}"], f"Throughput vs readers, {prof}")
        rep.figure(figs[f"reorder-{prof}"], f"The default heuristic at several reorder rates, {prof}")
    rep.heading("Stride readers (§7; Table 1, Figure 8)")
    for prof in setup.profiles:
        rep.figure(figs[f"stride-{prof}"], f"Stride readers, {prof}; dashed: the paper's Table 1")
    timings = "; ".join(f"{p}: {t}" for p, t in E.STRIDE_TIMING.items())
    rep.paragraph("Table 1 cell by cell: the paper's MB/s against the disk model's and the "
                  "end-to-end model's (closed-loop, testbed preset: one READ outstanding, "
                  "the SCSI drive's tagged queue in arrival order), with each one's error "
                  f"({timings}; docs/reproducing-ellard2003.md).")
    rep.table([{"profile": c["profile"], "heuristic": c["heuristic"], "stride": c["stride"],
                "paper MB/s": c["paper_mbps"], "disk model MB/s": c["disk_mbps"],
                "error (disk)": c["disk_error"], "end-to-end MB/s": c["e2e_mbps"],
                "error (end to end)": c["e2e_error"], "oracle MB/s": c["oracle_mbps"],
                "lower bound MB/s": c["lower_bound_mbps"],
                "share of the achievable gain": c["gain_fraction"]} for c in cells],
              formats={"disk model MB/s": ".2f", "end-to-end MB/s": ".2f",
                       "error (disk)": "+.0%", "error (end to end)": "+.0%",
                       "oracle MB/s": ".2f", "lower bound MB/s": ".2f",
                       "share of the achievable gain": ".0%"})
    rep.paragraph("Oracle, lower bound and the share of the achievable gain are the disk "
                  "model's (docs/bound.md): (throughput - no read-ahead) / (oracle - no "
                  "read-ahead) for the same reader, cache and profile.")
    rows = []
    for r in strides.iter_rows(named=True):
        paper = E.TABLE1.get((r["profile"], r["detector"]), {}).get(r["stride"])
        rows.append({"profile": r["profile"], "kind": r["kind"], "detector": r["detector"],
                     "stride": r["stride"],
                     "seqheur MB/s": r["throughput_mbps"],
                     "end-to-end MB/s": r["e2e_throughput_mbps"], "paper MB/s": paper,
                     "coverage": r.get("coverage"), "disk_ops": r.get("disk_ops")})
    rep.table(rows, formats={"seqheur MB/s": ".2f", "end-to-end MB/s": ".2f",
                             "coverage": ".1%"})
    rep.heading("How to read these numbers")
    rep.paragraph(
        "seqheur's throughput is the disk model's: the bytes read divided by the modelled disk "
        "busy time for the read-ahead and demand reads the server would issue; the stride runs "
        "are also timed end to end by the closed-loop model with the testbed preset (Table 1 "
        "above, cell by cell). The paper's are "
        "end-to-end NFS throughputs over gigabit Ethernet from real disks. Agreement is expected "
        "in shape (which heuristic wins, where lines diverge), not in absolute MB/s. The profiles "
        "are modelled from datasheets (every number and its source is in the profile JSON and "
        "docs/disk-bench.md).")
    rep.heading("Tagged queues (§5.2, Figure 2)")
    rep.paragraph(
        f"The concurrent readers run on the server itself (each a process of its own with one "
        f"read() outstanding, no network), on {E.QUEUE_PROFILE} with the drive's tagged queue "
        f"on (scheduler tcq: "
        "the drive serves what it holds in arrival order) and off (cscan: the kernel's cyclic "
        "elevator), timed end to end by the closed-loop model "
        f"({E.queue_timing(1, 'tcq').replace('nfsd=1:', 'nfsd=n:')}). Dashed: "
        "the levels the paper gives in words. queues.parquet has the rows.")
    rep.figure(figs["queues"], f"Tagged queue on and off, {E.QUEUE_PROFILE}")
    rep.paragraph(
        f"{E.FINISH_READERS} processes of {E.FINISH_MB // E.FINISH_READERS} MB each, started "
        "together on the server: when each one finishes, with the elevator on both disks and "
        "with the SCSI disk's tagged queue; crosses: the times the paper gives (§5.3). "
        "finish.parquet has the rows.")
    rep.figure(figs["finish"], "Finishing times (Figure 3)")
    html = rep.write(out / "index.html")
    return ReproduceResult(readers, strides, queues, finish, found, cells, figs, html)
