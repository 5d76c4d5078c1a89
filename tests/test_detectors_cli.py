"""CLI verbs: seqheur detectors, tables, detect (errors exit 1 with one line)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from seqheur.cli import cli
from seqheur.io import write_parquet
from seqheur.schema import REQUEST_SCHEMA

K8 = 8192


def _trace(path: Path, files, offsets, counts=K8, ops=None) -> Path:
    n = len(offsets)
    counts = np.broadcast_to(np.asarray(counts), (n,))
    cols = {f.name: pa.nulls(n, f.type) for f in REQUEST_SCHEMA}
    cols["time"] = pa.array(np.arange(n) * 1000, pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
    cols["op"] = pa.array(ops or ["read"] * n).cast(REQUEST_SCHEMA.field("op").type)
    cols["file_id"] = pa.array(files, pa.uint64())
    cols["offset"] = pa.array(offsets, pa.uint64())
    cols["count"] = pa.array(counts, pa.uint32())
    cols["source_index"] = pa.array(range(n), pa.uint64())
    write_parquet(pa.table({f.name: cols[f.name] for f in REQUEST_SCHEMA},
                           schema=REQUEST_SCHEMA), path)
    return path


def test_detectors_and_tables_json() -> None:
    r = CliRunner().invoke(cli, ["detectors", "--json"])
    assert r.exit_code == 0, r.output
    rows = {d["name"]: d for d in json.loads(r.output)}
    assert rows["slowdown"]["params"] == {"window": 65536, "seqmax": 127}
    assert rows["cursor"]["state_words"] == 14 and rows["zfetch"]["max_seqcount"] == 32
    assert all(d["source"] for d in rows.values() if d["builtin"])
    r = CliRunner().invoke(cli, ["tables", "--json"])
    assert r.exit_code == 0
    names = {t["name"]: t for t in json.loads(r.output)}
    assert names["ellard"]["alias_of"] == "nfsheur:1017x32"
    assert names["raparms"]["params"]["threads"] == 8
    for verb in ("detectors", "tables"):
        r = CliRunner().invoke(cli, [verb])
        assert r.exit_code == 0 and "freebsd" in r.output


def test_detect_writes_parquet_and_json(tmp_path: Path) -> None:
    t = _trace(tmp_path / "t.parquet", [5, 5, 5, 9, 5], [0, K8, 2 * K8, 0, 10 * K8])
    out = tmp_path / "seq.parquet"
    r = CliRunner().invoke(cli, ["detect", str(t), "--detector", "freebsd4", "--table", "ellard",
                                 "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s["requests"] == 5 and s["files"] == 2 and s["table"] == "nfsheur:1017x32"
    assert s["fresh"] == 2 and s["table_ejections"] == 0
    tbl = pq.read_table(out)
    assert tbl.column("seqcount").to_pylist() == [5, 6, 7, 5, 1]
    assert tbl.column("slot_fresh").to_pylist() == [True, False, False, True, False]
    assert tbl.column("file_id").to_pylist() == [5, 5, 5, 9, 5]
    assert tbl.schema.field("seqcount").type == pa.int16()
    r = CliRunner().invoke(cli, ["detect", str(t), "--detector", "slowdown:window=64KiB"])
    assert r.exit_code == 0 and "mean seqcount" in r.output


def test_detect_ops_include_writes(tmp_path: Path) -> None:
    # FreeBSD since 2011 runs the heuristic for WRITEs on the same entry
    t = _trace(tmp_path / "t.parquet", [5, 5, 5], [0, K8, 2 * K8],
               ops=["read", "write", "read"])
    reads_only = CliRunner().invoke(cli, ["detect", str(t), "--detector", "freebsd", "--json"])
    both = CliRunner().invoke(cli, ["detect", str(t), "--detector", "freebsd", "--ops",
                                    "read,write", "--json"])
    assert json.loads(reads_only.output)["requests"] == 2
    assert json.loads(both.output)["requests"] == 3
    assert json.loads(both.output)["max_seqcount"] == 7


@pytest.mark.parametrize("args, words", [
    (["--detector", "nope"], "unknown detector 'nope'"),
    (["--detector", "slowdown:size=1"], "valid: window=65536 bytes"),
    (["--table", "nfsheur:64y4"], "SIZExPROBES"),
    (["--plugin", "/nonexistent/p.py"], "no such file"),
])
def test_detect_errors_are_one_line(tmp_path: Path, args: list[str], words: str) -> None:
    t = _trace(tmp_path / "t.parquet", [1], [0])
    r = CliRunner().invoke(cli, ["detect", str(t)] + args)
    assert r.exit_code == 1
    assert words in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1
