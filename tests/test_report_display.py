"""What people read in compare and replay output: no "best" among equals, no "nan", units."""

from __future__ import annotations

import json
import math
import re

import pytest
from click.testing import CliRunner

from seqheur import workloads
from seqheur.cli import cli
from seqheur.io import write_parquet
from seqheur.report import text as T


def _row(det, table, mbps, coverage=0.5, accuracy=0.5):
    return {"detector": det, "table": table, "throughput_mbps": mbps, "coverage": coverage,
            "accuracy": accuracy}


def test_best_is_named_only_when_alone_at_the_top():
    rows = [_row("a", "ideal", 10.0), _row("b", "ideal", 12.5, accuracy=0.25), _row("c", "x", 3.0)]
    assert T.best_sentence(rows) == ("Best estimated throughput: b with the ideal table, "
                                     "12.50 MB/s (coverage 50.0%, accuracy 25.0%).")
    tied = rows + [_row("d", "x", 12.5)]
    assert T.best_sentence(tied) == "Tie for the best estimated throughput, 12.50 MB/s: b / ideal, d / x."
    # equal to float noise is still a tie; the same configuration twice says so
    noise = [_row("a", "t", 7.0), _row("a", "t", 7.0 * (1 + 1e-13))]
    assert T.best_sentence(noise) == "Tie for the best estimated throughput, 7.00 MB/s: a / t (given 2 times)."
    # undefined throughputs (no disk model) are never best; none defined: no sentence
    assert T.best_sentence([_row("a", "t", math.nan), _row("b", "t", 1.0)]).startswith(
        "Best estimated throughput: b ")
    assert T.best_sentence([_row("a", "t", math.nan), _row("b", "t", None)]) is None


def test_undefined_values_are_a_dash_in_cells_and_explained_in_prose():
    assert T.cell(math.nan, ".1%") == T.cell(None) == "—"
    assert T.cell(0.25, ".1%") == "25.0%" and T.cell(1234567) == "1,234,567"
    assert T.prose("accuracy", math.nan, ".1%") == "n/a (nothing prefetched)"
    best = T.best_sentence([_row("never", "ideal", 11.0, coverage=0.0, accuracy=math.nan)])
    assert "accuracy n/a (nothing prefetched)" in best and "nan" not in best
    assert T.undefined_note([{"accuracy": math.nan, "coverage": 0.1}], ["coverage", "accuracy"]) \
        == "— = undefined (accuracy: nothing prefetched)"
    assert T.undefined_note([{"accuracy": 0.5}], ["accuracy"]) is None
    assert T.json_safe([{"a": math.nan, "b": [1.5, math.nan]}]) == [{"a": None, "b": [1.5, None]}]


def _without_images(html: str) -> str:
    return re.sub(r'src="data:image/png;base64,[^"]*"', "", html)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("disp") / "t.parquet"
    write_parquet(workloads.paper(2, 2, seed=1), p)
    return p


def test_compare_output_ties_dashes_units(trace, tmp_path):
    """never prefetches nothing (accuracy undefined); always twice gives equal top rows."""
    args = ["compare", str(trace), "--detectors", "never,always,always", "--tables", "ideal",
            "-o", str(tmp_path / "r")]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    out = res.output
    assert "Tie for the best estimated throughput" in out and "always / ideal (given 2 times)" in out
    assert "Best estimated" not in out
    assert not re.search(r"\bnan\b", out, re.I)
    assert "—" in out and re.search(r"— = undefined \(accuracy: nothing prefetched[;)]", out)
    assert "throughput MB/s (10^6 B/s)" in out and "1 MiB = 2^20 B" in out
    html = _without_images((tmp_path / "r" / "index.html").read_text())
    assert "Tie for the best estimated throughput" in html and "Best estimated" not in html
    assert not re.search(r"\bnan\b", html, re.I)
    assert "<td class=\"\">—</td>" in html
    assert "throughput_mbps [MB/s (10^6 B/s)]" in html
    rows = [r for r in json.loads(CliRunner().invoke(cli, args + ["--json"]).output)
            if r["kind"] == "heuristic"]
    assert [r["accuracy"] for r in rows][0] is None  # JSON: null, not NaN
    assert all(isinstance(r["accuracy"], float) for r in rows[1:])


def test_compare_names_a_best_that_is_alone(trace, tmp_path):
    res = CliRunner().invoke(cli, ["compare", str(trace), "--detectors", "never,always",
                                   "--tables", "ideal", "-o", str(tmp_path / "r")])
    assert res.exit_code == 0, res.output
    assert "Best estimated throughput: always with the ideal table" in res.output
    assert "Tie" not in res.output


def test_replay_summary_says_why_a_ratio_is_undefined_and_its_units(trace):
    res = CliRunner().invoke(cli, ["replay", str(trace), "--detector", "never", "--profile", "none"])
    assert res.exit_code == 0, res.output
    assert re.search(r"accuracy\s+│\s+n/a \(nothing prefetched\)", res.output)
    assert re.search(r"throughput_mbps \[MB/s \(10\^6 B/s\)\]\s+│\s+n/a \(no disk model\)", res.output)
    assert "disk_seconds [s]" in res.output and "1 MB = 10^6 B" in res.output
    assert not re.search(r"\bnan\b", res.output, re.I)


def test_best_is_ranked_end_to_end_when_a_timing_model_ran():
    rows = [{**_row("a", "t", 20.0), "e2e_throughput_mbps": 9.0},
            {**_row("b", "t", 10.0), "e2e_throughput_mbps": 11.0}]
    assert T.best_sentence(rows).startswith("Best end-to-end throughput: b with the t table, 11.00 MB/s")
