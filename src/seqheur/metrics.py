"""The one metrics schema: every summary column of a replay, with its type, unit and meaning.

Summary rows (``ReplayResult.summary``), their JSON (``--json``), the compare and sweep
tables, the paper-reproduction deltas and the metrics table in docs/replay.md are all derived
from :data:`METRICS`; the ratios (coverage, accuracy, hit ratio, throughput) are computed in
one place, :func:`derive`. Units: MB = 10^6 bytes, MiB = 2^20 bytes; times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

#: Miss causes, in the order of their codes 1..6 (0 = no miss).
CAUSES = ("ejected", "reordered", "nonsequential", "cold", "evicted", "short")


@dataclass(frozen=True)
class Metric:
    """A summary column: ``kind`` is ``config`` (what was replayed), ``counter`` (an integer
    that adds up over chunks of a trace), ``ratio`` (derived from counters, null when
    undefined) or ``float`` (a measured quantity)."""

    name: str
    type: type
    unit: str
    description: str
    kind: str = "counter"


def _m(name: str, type_: type, unit: str, description: str, kind: str = "counter") -> Metric:
    return Metric(name, type_, unit, description, kind)


METRICS: tuple[Metric, ...] = (
    _m("detector", str, "", "detector spec (canonical)", "config"),
    _m("table", str, "", "table model spec (canonical)", "config"),
    _m("policy", str, "", "read-ahead policy spec (the detector's default with policy auto)",
       "config"),
    _m("cache", str, "", "buffer-cache size as given", "config"),
    _m("profile", str, "", "disk profile name (null: no disk model)", "config"),
    _m("file_sizes", str, "", "where the files' sizes came from: attributes (the trace's reply "
       "attributes), attributes+observed (some files had none), observed (each file ends at "
       "its last READ), given, none", "config"),
    _m("requests", int, "requests", "READs replayed"),
    _m("demand_blocks", int, "blocks", "blocks the READs asked for (after end-of-file "
       "clipping)"),
    _m("hits", int, "blocks", "demand blocks resident before their READ"),
    _m("misses", int, "blocks", "demand blocks read from disk by their own READ; hits + "
       "misses = demand_blocks"),
    _m("prefetched", int, "blocks", "blocks brought in by read-ahead"),
    _m("prefetch_used", int, "blocks", "read-ahead blocks a READ later used"),
    _m("prefetch_wasted", int, "blocks", "read-ahead blocks never used: prefetch_evicted + "
       "prefetch_unused_at_end"),
    _m("coverage", float, "fraction", "prefetch_used / (prefetch_used + misses): share of "
       "the misses without read-ahead that read-ahead removed", "ratio"),
    _m("accuracy", float, "fraction", "prefetch_used / prefetched (null when nothing was "
       "prefetched)", "ratio"),
    _m("table_ejections", int, "requests", "table slots taken over from another file"),
    *(_m(f"lost_{c}", int, "blocks", f"misses blamed on cause '{c}' (docs/replay.md); "
         f"the lost_* sum to misses") for c in CAUSES),
    _m("disk_ops", int, "reads", "disk reads issued (demand and read-ahead)"),
    _m("disk_seconds", float, "s", "modelled disk busy time (null without a profile)",
       "float"),
    _m("throughput_mbps", float, "MB/s (10^6 B/s)", "demand bytes / 10^6 / disk_seconds "
       "(null without a profile)", "ratio"),
    _m("block_size", int, "bytes", "cache block (policy) size", "config"),
    _m("cache_bytes", int, "bytes", "buffer-cache capacity", "config"),
    _m("files", int, "files", "distinct files in the trace", "config"),
    _m("demand_bytes", int, "bytes", "bytes the READs asked for (after end-of-file clipping)"),
    _m("zero_length_requests", int, "requests", "READs of zero bytes (or wholly past the end "
       "of file)"),
    _m("prefetch_evicted", int, "blocks", "read-ahead blocks evicted before any use"),
    _m("prefetch_unused_at_end", int, "blocks", "read-ahead blocks still unused at the end"),
    _m("table_fresh", int, "requests", "READs whose table slot was (re)allocated"),
    _m("table_cold", int, "requests", "fresh slots of files seen for the first time"),
    _m("disk_sync_ops", int, "reads", "disk reads a READ waited for (demand)"),
    _m("disk_bytes", int, "bytes", "bytes the disk reads transferred"),
    _m("disk_positionings", int, "reads", "disk reads that paid a seek (null without a "
       "profile)"),
    _m("disk_cache_hits", int, "reads", "disk reads served by the drive's cache (null "
       "without a profile)"),
    _m("reorder_window", int, "bytes", "distance from the expected offset within which a READ "
       "counts as reordered", "config"),
    _m("hit_ratio", float, "fraction", "hits / demand_blocks", "ratio"),
)

#: Columns a replay adds after :data:`METRICS` only when it runs a timing model other than
#: ``disk-only`` (:mod:`seqheur.timing`, docs/timing.md); without one the summary is exactly
#: :data:`METRICS`. ``throughput_mbps`` stays the disk's figure; what the clients see is
#: ``e2e_throughput_mbps``.
TIMING_METRICS: tuple[Metric, ...] = (
    _m("timing", str, "", "timing model spec (canonical; docs/timing.md)", "config"),
    _m("e2e_seconds", float, "s", "modelled end-to-end time: from the first READ's issue to "
       "the last reply's arrival at the client", "float"),
    _m("e2e_throughput_mbps", float, "MB/s (10^6 B/s)", "demand bytes / 10^6 / e2e_seconds: "
       "the throughput the clients see (null when e2e_seconds is 0)", "ratio"),
    _m("read_latency_p50_ms", float, "ms", "median READ latency at the client: issue to reply "
       "received (null without READs)", "float"),
    _m("read_latency_p95_ms", float, "ms", "95th percentile of the READ latency", "float"),
    _m("read_latency_p99_ms", float, "ms", "99th percentile of the READ latency", "float"),
    _m("disk_utilisation", float, "fraction", "disk busy time under the timing model / the "
       "run's span: e2e_seconds, or until the disk finished its last read if read-ahead "
       "outlasts the last reply (null when that is 0)", "ratio"),
    _m("disk_requests", int, "requests", "requests the disk served under the timing model: "
       "disk_ops after the block layer's merging of adjacent queued reads (equal to disk_ops "
       "without merging; docs/timing.md)"),
)

#: Columns ``seqheur compare`` and ``seqheur reproduce`` add to a row beside the heuristics'
#: references (:mod:`seqheur.report.gain`, docs/reports.md): what read-ahead could gain on the
#: trace, at the row's cache block size.
REFERENCE_METRICS: tuple[Metric, ...] = (
    _m("lower_bound_disk_seconds", float, "s", "disk time no schedule beats (seqheur.bound)",
       "float"),
    _m("oracle_disk_seconds", float, "s", "disk time of the clairvoyant read-ahead through the "
       "same cache and disk (seqheur.bound; null without one)", "float"),
    _m("oracle_throughput_mbps", float, "MB/s (10^6 B/s)", "demand bytes / 10^6 / "
       "oracle_disk_seconds", "ratio"),
    _m("no_readahead_throughput_mbps", float, "MB/s (10^6 B/s)", "throughput of demand reads "
       "only (policy none) at the row's block size", "ratio"),
    _m("achievable_gain_fraction", float, "fraction", "(throughput_mbps - no read-ahead) / "
       "(oracle - no read-ahead): the share of what read-ahead could gain that the row gets "
       "(null when the oracle gains nothing)", "ratio"),
)

BY_NAME: dict[str, Metric] = {m.name: m for m in METRICS + TIMING_METRICS + REFERENCE_METRICS}
SUMMARY_KEYS: tuple[str, ...] = tuple(m.name for m in METRICS)
TIMING_KEYS: tuple[str, ...] = tuple(m.name for m in TIMING_METRICS)
#: Counters: integers that add up over the chunks (or iterations) of a replay.
COUNTERS: tuple[str, ...] = tuple(m.name for m in METRICS if m.kind == "counter")

#: The counters the replay loop itself keeps (the table's, the cache's, the disk model's and
#: the per-cause ``lost_*`` are kept where they arise): one int64 field each, named as the
#: summary column it feeds, so the summary reads them by name.
LOOP_COUNTERS: tuple[str, ...] = ("requests", "demand_blocks", "hits", "misses", "prefetched",
                                  "prefetch_used", "disk_ops", "disk_bytes", "disk_sync_ops",
                                  "demand_bytes", "zero_length_requests")
assert set(LOOP_COUNTERS) <= set(COUNTERS)
#: The loop's counters as a numpy record (``world.ctr``; numba passes a record by reference,
#: so the jitted steps add to it in place). Aligned: every field is an int64 at a multiple of
#: 8, so numba emits aligned loads and stores.
COUNTER_DTYPE = np.dtype([(name, np.int64) for name in LOOP_COUNTERS], align=True)


def ratio(num: float, den: float) -> float:
    """num / den, NaN when the denominator is 0 (JSON: null; tables: n/a)."""
    return num / den if den else float("nan")


def derive(row: Mapping[str, Any]) -> dict[str, Any]:
    """The derived columns of a summary row from its counters (and disk seconds): the one
    place they are computed."""
    used, misses = row["prefetch_used"], row["misses"]
    disk_s = row.get("disk_seconds")
    has_disk = disk_s is not None and not (isinstance(disk_s, float) and math.isnan(disk_s))
    return {
        "prefetch_wasted": row["prefetch_evicted"] + row["prefetch_unused_at_end"],
        "coverage": ratio(used, used + misses),
        "accuracy": ratio(used, row["prefetched"]),
        "hit_ratio": ratio(row["hits"], row["demand_blocks"]),
        "throughput_mbps": (row["demand_bytes"] / 1e6 / disk_s if has_disk and disk_s > 0
                            else float("nan")),
    }


def delta(cur: Mapping[str, Any], prev: Mapping[str, Any]) -> dict[str, Any]:
    """One step's figures from running totals after and before it: counters and disk seconds
    subtracted, ratios derived afresh."""
    d: dict[str, Any] = {k: cur[k] - (prev.get(k) or 0) for k in COUNTERS
                         if cur.get(k) is not None}
    d["disk_seconds"] = cur["disk_seconds"] - prev.get("disk_seconds", 0.0)
    d.update(derive(d))
    return d


def summary_frame(rows: Iterable[Mapping[str, Any]]) -> Any:
    """A polars DataFrame of summary rows with the schema's column types (schema columns
    first, in order; any extra columns after them)."""
    import polars as pl

    rows = list(rows)
    dtypes = {str: pl.Utf8, int: pl.Int64, float: pl.Float64}
    schema: dict[str, Any] = {}
    for m in METRICS + TIMING_METRICS:
        if any(m.name in r for r in rows):
            schema[m.name] = dtypes[m.type]
    for r in rows:
        for k, v in r.items():
            if k not in schema:
                schema[k] = (pl.Float64 if isinstance(v, float) else pl.Int64
                             if isinstance(v, int) and not isinstance(v, bool) else pl.Utf8)
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)


def unit_label(name: str) -> str:
    """A column heading with its unit, e.g. ``throughput_mbps [MB/s (10^6 B/s)]``."""
    m = BY_NAME.get(name)
    return f"{name} [{m.unit}]" if m is not None and m.unit else name


def markdown_table() -> str:
    """The metrics table of docs/replay.md (a test keeps the page equal to this)."""
    lines = ["| column | unit | meaning |", "|---|---|---|"]
    lines += [f"| `{m.name}` | {m.unit} | {m.description} |" for m in METRICS]
    return "\n".join(lines)
