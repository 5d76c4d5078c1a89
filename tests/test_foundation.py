"""Schema, I/O, generic ingest and the data verbs."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from click.testing import CliRunner

from seqheur.cli import cli
from seqheur.errors import IngestError, SchemaError
from seqheur.io import open_input, write_json, write_parquet
from seqheur.ingest import read_trace, sniff_format
from seqheur.schema import (REQUEST_SCHEMA, IngestReport, build_request_table, crc32_of,
                            file_id_of, validate)


def _small_table(n=3):
    return build_request_table({
        "time": np.arange(n, dtype=np.int64) * 1000, "op": ["read"] * n,
        "fh": [b"\x01\x02", b"\x01\x02", b"zz"][:n], "offset": np.arange(n, dtype=np.uint64) * 8192,
        "count": np.full(n, 8192, np.uint32), "source_index": np.arange(1, n + 1)})


def test_build_and_validate_schema():
    t = _small_table()
    assert t.schema == REQUEST_SCHEMA
    validate(t)
    assert t.column("file_id").to_pylist()[0] == file_id_of(b"\x01\x02")
    assert t.column("fh_crc32").to_pylist()[2] == crc32_of(b"zz")
    assert t.column("file_id").to_pylist()[0] == t.column("file_id").to_pylist()[1]


def test_file_id_is_the_documented_hash():
    import hashlib

    assert file_id_of(b"abc") == int.from_bytes(hashlib.blake2b(b"abc", digest_size=8).digest(), "little")


def test_validate_names_first_offending_column():
    t = _small_table()
    bad = t.set_column(t.schema.get_field_index("offset"), "offset", t.column("offset").cast(pa.int64()))
    with pytest.raises(SchemaError, match="'offset'"):
        validate(bad)
    with pytest.raises(SchemaError, match="'xid'.*missing"):
        validate(t.drop(["xid"]))
    validate(t.append_column("extra", pa.array([1, 2, 3])))  # extra columns allowed


def test_ingest_report_accounting_and_merge():
    r = IngestReport(source="a", records_total=5, parsed=3)
    r.skip("bad", 4, "x")
    r.skip("bad", 5)
    r.check()
    m = r.merge(IngestReport(source="b", records_total=2, parsed=1, skipped={"other": 1}))
    m.check()
    assert m.to_dict()["skipped"] == {"bad": 2, "other": 1}
    with pytest.raises(AssertionError):
        IngestReport(records_total=2, parsed=1).check()


@pytest.mark.parametrize("opener", [gzip.compress, bz2.compress, lzma.compress,
                                    lambda b: zstandard.ZstdCompressor().compress(b)])
def test_open_input_decompresses_by_content(tmp_path, opener):
    p = tmp_path / "trace.bin"  # no telling suffix
    p.write_bytes(opener(b"hello world\n" * 100))
    with open_input(p) as f:
        assert f.read() == b"hello world\n" * 100


def test_atomic_writes_leave_no_temp(tmp_path):
    write_parquet(_small_table(), tmp_path / "t.parquet")
    write_json({"a": np.int64(3)}, tmp_path / "r.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "t.parquet"]
    assert json.loads((tmp_path / "r.json").read_text()) == {"a": 3}
    assert pq.read_table(tmp_path / "t.parquet").num_rows == 3


def test_failed_atomic_write_keeps_old_file(tmp_path):
    from seqheur.io import atomic_path

    target = tmp_path / "x.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("boom")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


def test_csv_ingest_roundtrip(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("time,file,offset,count,op\n0.5,a,0,8192,read\n0.75,a,8192,8192,read\n\n1.0,b,0x10,4,write\n")
    assert sniff_format(p) == "csv"
    t, rep = read_trace(p)
    assert t.num_rows == 3 and rep.records_total == 4 and rep.skipped == {"blank_line": 1}
    assert t.column("offset").to_pylist() == [0, 8192, 16]
    assert t.column("op").cast(pa.string()).to_pylist() == ["read", "read", "write"]
    assert t.column("time").cast(pa.int64()).to_pylist()[0] == 500_000_000
    assert t.column("source_index").to_pylist() == [2, 3, 5]


def test_parquet_request_table_passes_through(tmp_path):
    write_parquet(_small_table(), tmp_path / "t.parquet")
    t, rep = read_trace(tmp_path / "t.parquet")
    assert t.equals(_small_table()) and rep.parsed == 3


def test_simple_parquet_trace(tmp_path):
    pq.write_table(pa.table({"time": [0.0, 1.0], "file": ["x", "y"], "offset": [0, 4096],
                             "count": [4096, 4096]}), tmp_path / "s.parquet")
    t, _ = read_trace(tmp_path / "s.parquet")
    validate(t)
    assert t.column("op").cast(pa.string()).to_pylist() == ["read", "read"]


@pytest.mark.parametrize("content,match", [
    ("time,file,count\n0,a,1\n", r"t.csv: line 1, column 'offset': header lacks"),
    ("time,file,offset,count\n0,a,0,1\n1,a,abc,1\n", r"t.csv: line 3, column 'offset': 'abc' is not an integer"),
    ("time,file,offset,count\n0,a,0,1\nzz,a,0,1\n", r"t.csv: line 3, column 'time': 'zz' is not a number"),
])
def test_bad_csv_names_file_line_column(tmp_path, content, match):
    p = tmp_path / "t.csv"
    p.write_text(content)
    with pytest.raises(IngestError, match=match):
        read_trace(p, format="csv")


def test_cli_bad_csv_one_line_exit_1(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("time,file,offset,count\n0,a,0,1\n1,a,12x,1\n")
    res = CliRunner().invoke(cli, ["ingest", str(p), "-o", str(tmp_path / "o.parquet")])
    assert res.exit_code == 1
    assert res.output.strip().count("\n") == 0  # one line, no traceback
    assert "line 3" in res.output and "'offset'" in res.output and "t.csv" in res.output
    assert not (tmp_path / "o.parquet").exists()


def test_cli_unknown_format_and_empty(tmp_path):
    p = tmp_path / "junk.bin"
    p.write_bytes(b"\x00\x01garbage")
    res = CliRunner().invoke(cli, ["ingest", str(p), "-o", str(tmp_path / "o.parquet")])
    assert res.exit_code == 1 and "unrecognised trace format" in res.output
    e = tmp_path / "empty"
    e.write_bytes(b"")
    res = CliRunner().invoke(cli, ["stats", str(e)])
    assert res.exit_code == 1 and "empty" in res.output


def test_cli_version_and_help():
    res = CliRunner().invoke(cli, ["--version"])
    assert res.exit_code == 0 and "seqheur" in res.output
    for verb in ("ingest", "stats", "synth"):
        res = CliRunner().invoke(cli, [verb, "--help"])
        assert res.exit_code == 0 and "Example" in res.output
