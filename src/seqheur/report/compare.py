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

# the end-to-end columns are there only when a timing model ran (seqheur.metrics.TIMING_METRICS)
SUMMARY_COLUMNS = ("detector", "table", "throughput_mbps", "disk_seconds", "e2e_throughput_mbps",
                   "e2e_seconds", "read_latency_p50_ms", "read_latency_p99_ms",
                   "disk_utilisation", "coverage", "accuracy",
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
    references: Any = None  # polars DataFrame: no read-ahead, oracle, lower bound (gain.py)


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
            out_dir: str | Path | None = None, title: str | None = None,
            timing: str | None = None, references: bool = True) -> CompareResult:
    """Replay every detector x table on ``trace`` (a path or a request table); ``timing``: a
    timing model spec whose end-to-end columns join each row (docs/timing.md).
    ``references`` (with a profile): rows for no read-ahead, the oracle and the lower bound
    at each block size, and each row's share of the achievable gain
    (:mod:`seqheur.report.gain`)."""
    import polars as pl
    import pyarrow as pa

    from ..ingest import read_trace
    from ..io import write_json, write_parquet
    from ..progress import progress
    from ..replay import file_sizes_for, replay
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
    # file sizes from the trace's reply attributes, as `seqheur replay` takes them, once for
    # every replay of the report
    sizes, size_source = file_sizes_for(table, stream, "auto")
    rows, per_request = [], {}
    opts: dict[str, Any] = {"profile": profile, "cache": cache}
    if policy:
        opts["policy"] = policy
    if timing:
        opts["timing"] = timing
    with progress("replaying", total=len(dets) * len(tabs)) as bar:
        for d, t in itertools.product(dets, tabs):
            res = replay(stream, detector=d, table=t, file_sizes=sizes, **opts)
            row = res.summary.to_dicts()[0]
            row["file_sizes"] = size_source  # as `seqheur replay` says it
            row["detector"], row["table"] = d, t  # as the user wrote them
            rows.append(row)
            per_request[(d, t)] = _per_request(res, stream)
            bar.advance()
    refs: list[dict[str, Any]] = []
    if references and profile is not None:
        from .gain import references as reference_rows

        with progress("bound and oracle", total=1) as bar:
            rows, refs = reference_rows(stream, rows, cache=cache, profile=profile,
                                        file_sizes=sizes)
            bar.advance()
    everything = pl.DataFrame([{"kind": "heuristic", **r} for r in rows] + refs,
                              infer_schema_length=None)
    summary = everything.filter(pl.col("kind") == "heuristic").drop("kind")
    ref_frame = (everything.filter(pl.col("kind") == "reference").select(list(refs[0]))
                 .drop("kind") if refs else None)
    figs: dict[str, Path] = {}
    html_path = None
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        write_parquet(everything, out / "results.parquet")  # kind: heuristic or reference
        write_json(st.summary, out / "stats.json")
        figs["throughput"] = F.throughput_bars(summary, out / "throughput.png",
                                               title=f"Estimated throughput ({profile}, cache {cache})")
        figs["blocks"] = F.blocks_bars(summary, out / "blocks.png")
        figs["causes"] = F.causes_bars(summary, out / "causes.png")
        if ref_frame is not None:
            figs["bound"] = F.bound_bars(summary, ref_frame, out / "bound.png")
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
        shown = summary.select(cols).to_dicts()
        timed = [c for c in cols if c.endswith(("_mbps", "_seconds", "_ms"))]
        heads = {c: unit_label(c) for c in timed}  # units, once
        fmt = {"coverage": ".1%", "accuracy": ".1%", "disk_utilisation": ".1%",
               **{heads[c]: ".2f" for c in timed}}
        rep.table([{heads.get(k, k): v for k, v in r.items()} for r in shown], formats=fmt)
        note = undefined_note(shown, cols)
        if note:
            rep.paragraph(note)
        if ref_frame is not None:
            rep.heading("How much is left on the table")
            rep.paragraph("Share of the achievable gain = (throughput - no read-ahead) / "
                          "(oracle - no read-ahead), each at the combination's block size: 0 "
                          "gains nothing over no read-ahead, 1 gains all the clairvoyant "
                          "oracle does (docs/bound.md).")
            rep.table([{"detector": r["detector"], "table": r["table"],
                        "share of the achievable gain": r["achievable_gain_fraction"],
                        heads.get("throughput_mbps", "throughput_mbps"): r["throughput_mbps"],
                        "disk s / lower bound": (r["disk_seconds"] / r["lower_bound_disk_seconds"]
                                                 if r["lower_bound_disk_seconds"] else None)}
                       for r in summary.to_dicts()],
                      formats={"share of the achievable gain": ".1%", "disk s / lower bound": ".2f",
                               heads.get("throughput_mbps", "throughput_mbps"): ".2f"})
            rep.table(ref_frame.select("detector", "table", "throughput_mbps", "disk_seconds",
                                       "misses").to_dicts(),
                      formats={"throughput_mbps": ".2f", "disk_seconds": ".3f"})
        captions = {
            "throughput": "Estimated throughput from the disk model, per table model and detector.",
            "blocks": "Demand hits and misses (left bar) and read-ahead blocks never used (right bar).",
            "causes": "Demand misses that read-ahead could have served, by why it was lost.",
            "bound": "Disk time of each combination against the references at its block size: "
                     "no read-ahead, the clairvoyant oracle (achievable) and the lower bound "
                     "no schedule beats (docs/bound.md).",
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
    return CompareResult(summary, figs, html_path, st.summary, ref_frame)


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
