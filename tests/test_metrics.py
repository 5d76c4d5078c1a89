"""The one metrics schema: summaries, JSON and docs are derived from seqheur.metrics."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import seqheur
from seqheur import metrics as M
from seqheur.streams import ReadStream

DOCS = Path(__file__).resolve().parent.parent / "docs" / "replay.md"


def test_replay_summary_columns_are_the_schema_in_order_with_its_types() -> None:
    s = ReadStream.from_arrays([0] * 16, range(0, 16 * 8192, 8192), 8192)
    r = seqheur.replay(s, "freebsd4", "freebsd4")
    assert tuple(r.summary.columns) == M.SUMMARY_KEYS
    row = r.to_dict()
    for m in M.METRICS:
        v = row[m.name]
        assert v is None or isinstance(v, m.type), (m.name, v)
    assert row["hits"] + row["misses"] == row["demand_blocks"]
    assert sum(row[f"lost_{c}"] for c in M.CAUSES) == row["misses"]


def test_ratios_are_computed_once_and_undefined_ones_are_nan() -> None:
    row = {"prefetch_used": 0, "misses": 0, "prefetched": 0, "hits": 0, "demand_blocks": 0,
           "prefetch_evicted": 0, "prefetch_unused_at_end": 0, "demand_bytes": 0,
           "disk_seconds": float("nan")}
    d = M.derive(row)
    assert all(math.isnan(d[k]) for k in ("coverage", "accuracy", "hit_ratio", "throughput_mbps"))
    row.update(prefetch_used=3, misses=1, prefetched=4, hits=3, demand_blocks=4,
               prefetch_evicted=1, demand_bytes=2_000_000, disk_seconds=0.5)
    d = M.derive(row)
    # ratios of small counts: within 1e-12 of 3/4 (a wrong count moves them by >= 0.05)
    assert [d["coverage"], d["accuracy"], d["hit_ratio"]] == pytest.approx([0.75] * 3, rel=1e-12)
    assert math.isclose(d["throughput_mbps"], 4.0) and d["prefetch_wasted"] == 1


def test_delta_of_running_totals_is_the_replay_of_the_step() -> None:
    s = ReadStream.from_arrays([0] * 64, range(0, 64 * 8192, 8192), 8192)
    from seqheur.replay import Replayer, observed_file_sizes

    rp = Replayer(s.file_ids, file_sizes=observed_file_sizes(s), per_request=False)
    rp.feed(s.slice(0, 32))
    first = rp.summary()
    rp.feed(s.slice(32, 64))
    d = M.delta(rp.summary(), first)
    assert d["requests"] == 32 and d["hits"] + d["misses"] == d["demand_blocks"]


def test_docs_metrics_table_is_the_schema() -> None:
    text = DOCS.read_text()
    m = re.search(r"<!-- metrics-table[^>]*-->\n(.*?)\n<!-- /metrics-table -->", text, re.S)
    assert m is not None and m.group(1) == M.markdown_table()


def test_every_metric_states_a_unit_or_is_a_name() -> None:
    for m in M.METRICS:
        assert m.description
        assert m.unit or m.type is str, m.name


def test_report_columns_are_schema_columns() -> None:
    from seqheur.report import compare, ellard2003, figures

    for name in (*compare.SUMMARY_COLUMNS, *ellard2003._KEEP, *figures.CAUSES):
        assert name in M.BY_NAME, name
