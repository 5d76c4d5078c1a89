"""``seqheur compare``: several heuristics replayed on one trace, side by side.

Writes ``DIR/index.html`` (self-contained, figures embedded), ``DIR/results.parquet`` (one
summary row per detector x table), ``DIR/*.png`` and ``DIR/stats.json``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..config import DEFAULT
from ..errors import SeqheurError

SUMMARY_COLUMNS = ("detector", "table", "throughput_mbps", "disk_seconds", "gain_fraction",
                   "coverage", "accuracy",
                   "hits", "misses", "prefetched", "prefetch_used", "prefetch_wasted",
                   "table_ejections", "lost_ejected", "lost_reordered", "lost_nonsequential",
                   "lost_cold", "lost_evicted", "disk_ops")
BUSIEST = 4


@dataclass(frozen=True)
class CompareResult:
    summary: Any  # polars DataFrame, one row per combination
    figures: dict[str, Path]
    html: Path | None
    stats: dict[str, Any]


def _split(spec: str | Sequence[str]) -> list[str]:
    if isinstance(spec, str):
        # detector specs may carry k=v,k=v parameters; split on commas not inside a spec's params
        parts, cur = [], ""
        for tok in spec.split(","):
            if cur and "=" in tok and ":" not in tok:
                cur += "," + tok
            else:
                if cur:
                    parts.append(cur)
                cur = tok
        if cur:
            parts.append(cur)
        return [p.strip() for p in parts if p.strip()]
    return list(spec)


def compare(trace, detectors: str | Sequence[str] = ("freebsd4", "slowdown", "cursor", "always"),
            tables: str | Sequence[str] = ("freebsd4", "ellard", "ideal"),
            profile: str | None = DEFAULT.profile, cache: str = DEFAULT.cache,
            policy: str | None = None,
            out_dir: str | Path | None = None, title: str | None = None) -> CompareResult:
    """Replay every detector x table on ``trace`` (a path or a request table)."""
    import polars as pl
    import pyarrow as pa

    from ..ingest import read_trace
    from ..io import write_json, write_parquet
    from ..progress import progress
    from ..replay import replay
    from ..streams import reads, stream_stats
    from ..metrics import unit_label
    from . import figures as F
    from .html import Report
    from .text import best_sentence, undefined_note

    dets, tabs = _split(detectors), _split(tables)
    if not dets or not tabs:
        raise SeqheurError("compare needs at least one detector and one table")
    name = str(trace) if not isinstance(trace, pa.Table) else "request table"
    table = trace if isinstance(trace, pa.Table) else read_trace(trace)[0]
    stream = reads(table)
    if len(stream) == 0:
        raise SeqheurError(f"{name}: no READs with a file handle, offset and count to replay")
    st = stream_stats(stream)
    rows, per_request = [], {}
    opts: dict[str, Any] = {"profile": profile, "cache": cache}
    if policy:
        opts["policy"] = policy
    with progress("replaying", total=len(dets) * len(tabs)) as bar:
        for d, t in itertools.product(dets, tabs):
            res = replay(stream, detector=d, table=t, **opts)
            row = res.summary.to_dicts()[0]
            row["detector"], row["table"] = d, t  # as the user wrote them
            rows.append(row)
            per_request[(d, t)] = _per_request(res, stream)
            bar.advance()
    references = achievable(stream, rows, opts, tabs[0]) if profile is not None else []
    summary = pl.DataFrame(rows, infer_schema_length=None)
    figs: dict[str, Path] = {}
    html_path = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_parquet(summary, out / "results.parquet")
        write_json(st.summary, out / "stats.json")
        figs["throughput"] = F.throughput_bars(summary, out / "throughput.png",
                                               title=f"Estimated throughput ({profile}, cache {cache})")
        figs["blocks"] = F.blocks_bars(summary, out / "blocks.png")
        figs["causes"] = F.causes_bars(summary, out / "causes.png")
        busiest = st.files.sort("requests", descending=True).head(BUSIEST)["file"].to_list()
        t0 = stream.time_ns.min()
        tsec = (stream.time_ns - t0) / 1e9
        seq_series = {}
        for d in dets:
            sc = per_request[(d, tabs[0])]["seqcount"]
            seq_series[f"{d} / {tabs[0]}"] = {f: (tsec[stream.file == f], sc[stream.file == f]) for f in busiest}
        labels = {f: f"file {f} ({int((stream.file == f).sum())} READs)" for f in busiest}
        figs["seqcount"] = F.seqcount_timeline(seq_series, labels, out / "seqcount.png")
        ej = {}
        for (d, t), pr in per_request.items():
            ej[f"{d} / {t}"] = (tsec, np.cumsum(pr["ejected"]))
        figs["ejections"] = F.ejections_timeline(ej, out / "ejections.png")
        figs["streams"] = F.stream_stats_figure(st, out / "streams.png")
        rep = Report(title or f"seqheur compare: {Path(name).name}",
                     f"{len(stream):,} READs of {stream.n_files:,} files; profile {profile}; cache {cache}")
        rep.heading("Summary")
        best = best_sentence(summary.to_dicts())  # None without throughput; a tie is a tie
        if best:
            rep.paragraph(best)
        cols = [c for c in SUMMARY_COLUMNS if c in summary.columns]
        shown = summary.select(cols).to_dicts() + [{c: r.get(c) for c in cols}
                                                   for r in references]
        heads = {c: unit_label(c) for c in ("throughput_mbps", "disk_seconds")}  # units, once
        rep.table([{heads.get(k, k): v for k, v in r.items()} for r in shown],
                  formats={"coverage": ".1%", "accuracy": ".1%", heads["throughput_mbps"]: ".2f",
                           heads["disk_seconds"]: ".2f", "gain_fraction": ".1%"})
        if references:
            rep.paragraph("Last rows: the clairvoyant read-ahead (oracle) replayed through the "
                          "same cache and disk, and the lower bound no schedule beats "
                          "(docs/bound.md), at each block size of the rows above. "
                          "gain_fraction: (throughput - never's) / (the oracle's - never's), "
                          "the share of what read-ahead could gain that each heuristic gets.")
        note = undefined_note(shown, cols)
        if note:
            rep.paragraph(note)
        captions = {
            "throughput": "Estimated throughput from the disk model, per table model and detector.",
            "blocks": "Demand hits and misses (left bar) and read-ahead blocks never used (right bar).",
            "causes": "Demand misses that read-ahead could have served, by why it was lost.",
            "seqcount": f"seqcount of the {len(busiest)} busiest files over time (table {tabs[0]}).",
            "ejections": "Cumulative table ejections: a file's heuristic state thrown away.",
            "streams": "The trace itself: per-file reordering and sequential run lengths.",
        }
        rep.heading("Figures")
        for k, p in figs.items():
            rep.figure(p, captions[k])
        rep.heading("Trace statistics")
        s = st.summary
        rep.table([{k: (v if not isinstance(v, dict) else ", ".join(f"{a}: {b}" for a, b in v.items()))
                    for k, v in s.items()}])
        html_path = rep.write(out / "index.html")
    return CompareResult(summary, figs, html_path, st.summary)


def achievable(stream: Any, rows: list[dict[str, Any]], opts: dict[str, Any],
               table: str) -> list[dict[str, Any]]:
    """Add to every row ``oracle_throughput_mbps``, ``lower_bound_throughput_mbps`` (demand
    bytes over the bound's disk seconds) and ``gain_fraction`` = (throughput - never's) /
    (the oracle's - never's), all at the row's block size; return the oracle and lower-bound
    rows (one pair per block size). ``never``: its replay with ``table`` and ``opts``."""
    from ..bound import bound
    from ..replay import replay

    by_size: dict[int, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for row in rows:
        bs = int(row["block_size"])
        if bs not in by_size:
            b = bound(stream, cache=opts["cache"], profile=opts["profile"], block_size=bs,
                      references=False)
            never = replay(stream, detector="never", table=table, per_request=False,
                           policy=f"none:bsize={bs}", cache=opts["cache"],
                           profile=opts["profile"]).to_dict()
            low = b["lower_bound_disk_seconds"]
            demand = float(row["demand_bytes"])
            by_size[bs] = {"oracle": b["oracle_throughput_mbps"], "never": never["throughput_mbps"],
                           "low": demand / 1e6 / low if low else None}
            label = f" ({bs // 1024} KiB blocks)" if len({int(r["block_size"]) for r in rows}) > 1 else ""
            out.append({"detector": f"oracle{label}", "table": "-",
                        "throughput_mbps": b["oracle_throughput_mbps"],
                        "disk_seconds": b["oracle_disk_seconds"], "gain_fraction": 1.0,
                        "misses": b["oracle_misses"], "prefetched": b["oracle_prefetched"],
                        "disk_ops": b["oracle_disk_ops"]})
            out.append({"detector": f"lower bound{label}", "table": "-",
                        "throughput_mbps": by_size[bs]["low"], "disk_seconds": low})
        ref = by_size[bs]
        row["oracle_throughput_mbps"] = ref["oracle"]
        row["lower_bound_throughput_mbps"] = ref["low"]
        span = (ref["oracle"] or 0.0) - (ref["never"] or 0.0)
        thr = row.get("throughput_mbps")
        row["gain_fraction"] = ((thr - ref["never"]) / span if span > 0 and thr is not None
                                and ref["never"] is not None else None)
    return out


def _per_request(result, stream) -> dict[str, np.ndarray]:
    """seqcount per request, and whether the request found its file's slot recycled (a table
    ejection: a fresh slot for a file already seen)."""
    req = result.requests
    sc = req["seqcount"].to_numpy()
    fresh = req["slot_fresh"].to_numpy().astype(bool)
    first = np.zeros(len(stream), bool)
    if len(stream):
        _, idx = np.unique(stream.file, return_index=True)
        first[idx] = True
    return {"seqcount": sc, "ejected": fresh & ~first}
