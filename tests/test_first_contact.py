"""What a new user meets with damaged or surprising input: the real CLI, message and exit code."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

TRACES = Path(__file__).resolve().parent.parent / "traces"
DEMO = TRACES / "demo-v3.pcap.gz"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seqheur", *map(str, args)],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def pcap_bytes() -> bytes:
    return gzip.decompress(DEMO.read_bytes())


def test_a_cut_pcap_says_where_reading_stopped_and_strict_fails(tmp_path, pcap_bytes):
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(pcap_bytes[:300_000])
    r = cli("ingest", cut, "-o", tmp_path / "t.parquet")
    assert r.returncode == 0, r.stderr
    assert "reading stopped at byte" in r.stderr and "bytes left unread" in r.stderr
    assert "cut.pcap" in r.stderr and "truncated_record" in r.stdout
    strict = cli("ingest", cut, "-o", tmp_path / "t.parquet", "--strict")
    assert strict.returncode == 1 and "--strict" in strict.stderr
    whole = cli("ingest", DEMO, "-o", tmp_path / "w.parquet", "--strict")
    assert whole.returncode == 0 and "stopped" not in whole.stderr


def test_a_cut_gzip_is_the_same_kind_of_answer_not_an_abort(tmp_path):
    cut = tmp_path / "cut.pcap.gz"
    cut.write_bytes(DEMO.read_bytes()[:200_000])
    r = cli("ingest", cut, "-o", tmp_path / "t.parquet")
    assert r.returncode == 0 and "Traceback" not in r.stderr and "Aborted" not in r.stderr
    assert "reading stopped" in r.stderr and "damaged compressed stream" in r.stderr
    assert cli("ingest", cut, "-o", tmp_path / "t.parquet", "--strict").returncode == 1


def test_output_onto_a_directory_names_the_directory(tmp_path):
    out = tmp_path / "outdir"
    out.mkdir()
    r = cli("replay", DEMO, "-o", out)
    assert r.returncode == 1 and "is a directory" in r.stderr and ".tmp" not in r.stderr


def test_unknown_ops_are_an_error_listing_the_valid_ones(tmp_path):
    r = cli("stats", DEMO, "--ops", "bogus")
    assert r.returncode == 1 and "valid: read, write, commit" in r.stderr


def test_a_trace_without_reads_says_why(tmp_path):
    t = tmp_path / "t.parquet"
    assert cli("ingest", DEMO, "-o", t).returncode == 0
    table = pq.read_table(t)
    ops = table.column("op").cast(pa.string())
    pq.write_table(table.filter(pc.not_equal(ops, "read")), tmp_path / "noread.parquet")
    for verb in ("stats", "replay"):
        r = cli(verb, tmp_path / "noread.parquet")
        assert r.returncode == 0, r.stderr
        assert "no READ requests" in r.stderr and "getattr" in r.stderr


def test_a_table_filtered_with_polars_and_written_back_is_conformed(tmp_path):
    import polars as pl

    import seqheur
    from seqheur.ingest import read_trace

    t = tmp_path / "t.parquet"
    assert cli("ingest", DEMO, "-o", t).returncode == 0
    df = pl.read_parquet(t).filter(pl.col("op") == "read")
    df = df.with_columns(pl.col("time").dt.cast_time_unit("us"),
                         pl.col("reply_time").dt.cast_time_unit("ms"))
    back = tmp_path / "polars.parquet"
    df.write_parquet(back)
    assert pa.types.is_large_binary(pq.read_schema(back).field("fh").type)
    table, _ = read_trace(back)  # conformed to the exact request schema
    assert table.schema.field("fh").type == pa.binary()
    r = cli("stats", back, "--json")
    assert r.returncode == 0, r.stderr
    assert seqheur.replay(back)["misses"] == seqheur.replay(t)["misses"]


def test_every_verb_reading_a_damaged_trace_says_so_and_global_strict_fails(tmp_path):
    """replay/stats read traces too: a loss is a WARNING there as well, never silent, and
    `seqheur --strict VERB` exits 1 on it."""
    damaged = Path(__file__).resolve().parent / "data" / "damaged" / "cut.txt.gz"
    r = cli("replay", damaged, "--profile", "none")
    assert r.returncode == 0 and "WARNING" in r.stderr and "reading stopped at byte" in r.stderr
    assert "skipped 1 truncated" in r.stderr
    s = cli("--strict", "stats", damaged)
    assert s.returncode == 1 and "--strict" in s.stderr
    clean = cli("--strict", "stats", DEMO)
    assert clean.returncode == 0 and "WARNING" not in clean.stderr
