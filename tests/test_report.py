"""compare reports and reproduce ellard2003: files, figures, HTML, a real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from seqheur import workloads
from seqheur.cli import cli
from seqheur.io import write_parquet
from seqheur.report.compare import compare


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp")
    t = workloads.mix([workloads.paper(6, 12, reorder=0.06, seed=5), workloads.stride(4, 8)])
    write_parquet(t, out / "t.parquet")
    res = compare(out / "t.parquet", "freebsd4,slowdown,cursor:cursors=4,always",
                  "nfsheur:8x2,ideal", profile="ide-7200", cache="32MiB", out_dir=out / "r")
    return out, res


def test_compare_outputs(report_dir):
    out, res = report_dir
    r = out / "r"
    assert (r / "index.html").exists() and (r / "results.parquet").exists()
    df = pl.read_parquet(r / "results.parquet")
    assert df.height == 8
    assert set(df["detector"]) == {"freebsd4", "slowdown", "cursor:cursors=4", "always"}
    for k in ("throughput", "blocks", "causes", "seqcount", "ejections", "streams"):
        png = res.figures[k]
        assert png.exists() and png.stat().st_size > 10_000, k
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    html = (r / "index.html").read_text()
    assert html.count("data:image/png;base64,") == 6
    assert "src=\"http" not in html  # self-contained
    # laws visible in the report: never prefetches nothing; the ideal table never ejects
    never = compare(out / "t.parquet", "never", "ideal", profile="ide-7200", cache="32MiB").summary
    assert never["prefetched"][0] == 0
    assert df.filter(pl.col("table") == "ideal")["table_ejections"].sum() == 0
    assert df.filter(pl.col("table") == "nfsheur:8x2")["table_ejections"].sum() > 0


def test_compare_reports_the_oracle_and_the_bound(report_dir):
    """Every row carries the oracle's and the lower bound's throughput at its block size and
    its share of the achievable gain; the HTML lists the oracle and the bound as rows."""
    out, res = report_dir
    df = res.summary
    never = compare(out / "t.parquet", "never", "ideal", policy="none:bsize=16384",
                    profile="ide-7200", cache="32MiB").summary.row(0, named=True)
    assert never["gain_fraction"] == pytest.approx(0.0, abs=1e-12)
    for r in df.iter_rows(named=True):
        assert r["lower_bound_throughput_mbps"] >= r["oracle_throughput_mbps"] * (1 - 1e-9)
        assert r["oracle_throughput_mbps"] == pytest.approx(never["oracle_throughput_mbps"])
        want = (r["throughput_mbps"] - never["throughput_mbps"]) / (
            r["oracle_throughput_mbps"] - never["throughput_mbps"])
        assert r["gain_fraction"] == pytest.approx(want, rel=1e-9)
    html = (out / "r" / "index.html").read_text()
    assert ">oracle</td>" in html and ">lower bound</td>" in html


def test_compare_cli_json(tmp_path):
    write_parquet(workloads.paper(2, 2, seed=1), tmp_path / "t.parquet")
    res = CliRunner().invoke(cli, ["compare", str(tmp_path / "t.parquet"), "--detectors", "freebsd4,always",
                                   "--tables", "ideal", "-o", str(tmp_path / "r"), "--json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.output)
    assert [r["detector"] for r in rows] == ["freebsd4", "always"]


def test_compare_rejects_a_trace_without_reads(tmp_path):
    p = tmp_path / "w.csv"
    p.write_text("time,file,offset,count,op\n0,a,0,10,write\n")
    res = CliRunner().invoke(cli, ["compare", str(p), "-o", str(tmp_path / "r")])
    assert res.exit_code == 1 and "no READs" in res.output


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_report_renders_in_headless_chromium(report_dir, tmp_path):
    """A real browser loads the report without errors and every figure decodes (non-blank)."""
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    out, _ = report_dir
    html = out / "r" / "index.html"
    probe = tmp_path / "probe.html"
    # the report, plus a script that reports each image's decoded size into the page title
    text = html.read_text().replace("</body>", """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const ok = imgs.filter(i => i.complete && i.naturalWidth > 100 && i.naturalHeight > 100).length;
  document.title = 'IMAGES ' + ok + '/' + imgs.length;
});</script></body>""")
    probe.write_text(text)
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([exe, *flags, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r"<title>IMAGES (\d+)/(\d+)</title>", dom.stdout)
    assert m, dom.stderr[-2000:]
    assert m.group(1) == m.group(2) == "6"
    shot = tmp_path / "shot.png"
    subprocess.run([exe, *flags, "--window-size=1200,2400", f"--screenshot={shot}", html.as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists()
    import matplotlib.image as mpimg

    img = mpimg.imread(shot)
    assert img.std() > 0.05  # not blank: figures and tables drawn


@pytest.mark.slow
def test_reproduce_ellard2003_quick(tmp_path):
    res = CliRunner().invoke(cli, ["reproduce", "ellard2003", "--quick", "-o", str(tmp_path / "e"), "--json"])
    assert res.exit_code == 0, res.output
    found = json.loads(res.output)
    assert {f["where"] for f in found} >= {"§6.1, Figure 6", "§6.3", "§6.3, Figure 7", "§7, Table 1, Figure 8"}
    assert all(f["verdict"] in ("agrees", "partly", "disagrees") for f in found)
    assert all(f["measured"] for f in found)
    strides = pl.read_parquet(tmp_path / "e" / "strides.parquet")
    # the paper's cursor result in direction: cursors beat the default on every stride reader
    for prof in ("ide-7200", "scsi-10k"):
        for s in (2, 4, 8):
            sub = strides.filter((pl.col("profile") == prof) & (pl.col("stride") == s))
            d = sub.filter(pl.col("detector") == "freebsd4")["throughput_mbps"][0]
            c = sub.filter(pl.col("detector") == "cursor:cursors=8")["throughput_mbps"][0]
            assert c > d, (prof, s, c, d)
    assert (tmp_path / "e" / "index.html").read_text().count("data:image/png") == 6
    # Table 1 cell by cell: all 12 cells, the paper's figure against both models
    cells = json.loads((tmp_path / "e" / "table1.json").read_text())
    assert len(cells) == 12
    for c in cells:
        assert c["disk_mbps"] > 0 and c["e2e_mbps"] > 0
        assert c["e2e_error"] == pytest.approx(c["e2e_mbps"] / c["paper_mbps"] - 1)
