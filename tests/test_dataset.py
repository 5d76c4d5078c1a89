"""Multi-file ingest into a dataset, read back as one time-ordered trace; executors."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from floatcmp import SUMMARY_REL, assert_frames_close, assert_tree_close

from seqheur import workloads
from seqheur.cli import cli
from seqheur.executors import ExecutorSpec, executor_from_options, run_tasks
from seqheur.errors import SeqheurError
from seqheur.ingest import read_trace
from seqheur.ingest.dataset import ingest_many, scan_dataset
from seqheur.io import write_parquet


def _square(x):
    if x == 3:
        raise ValueError("three is bad")
    return x * x


@pytest.mark.parametrize("spec", [ExecutorSpec("serial"), ExecutorSpec("processes", 2)])
def test_run_tasks_reports_failures_per_task(spec):
    out = dict(run_tasks(_square, [(i,) for i in range(6)], spec))
    assert out[2] == ("ok", 4) and out[5] == ("ok", 25)
    assert out[3][0] == "error" and "three is bad" in out[3][1]


def test_executor_options_are_exclusive():
    with pytest.raises(SeqheurError):
        executor_from_options(workers=2, dask_local=2)
    assert executor_from_options(workers=2).kind == "processes"
    assert executor_from_options().kind == "serial"


def _split_hourly(tmp_path, n_parts=4):
    """A paper trace cut into consecutive time slices, written as separate files."""
    t = workloads.paper(4, 8, reorder=0.05, seed=2)
    n = t.num_rows
    bounds = np.linspace(0, n, n_parts + 1).astype(int)
    paths = []
    for i in range(n_parts):
        p = tmp_path / f"hour{i}.parquet"
        write_parquet(t.slice(bounds[i], bounds[i + 1] - bounds[i]), p)
        paths.append(p)
    return t, paths


@pytest.mark.parametrize("workers", [None, 2])
def test_dataset_roundtrip_time_ordered(tmp_path, workers):
    t, paths = _split_hourly(tmp_path)
    # give the inputs in reverse order: the dataset must still read back in time order
    manifest, report = ingest_many([str(p) for p in reversed(paths)], tmp_path / "ds",
                                   executor_from_options(workers=workers))
    report.check()
    assert report.rows == t.num_rows and not manifest["errors"]
    back, rep2 = read_trace(tmp_path / "ds")
    assert back.num_rows == t.num_rows
    assert back.column("time").equals(t.column("time"))
    assert back.column("offset").equals(t.column("offset"))
    chunks = list(scan_dataset(tmp_path / "ds"))
    assert len(chunks) == 4  # disjoint hours are read one at a time


def test_overlapping_parts_are_merged(tmp_path):
    t = workloads.paper(4, 4, seed=1)
    idx = np.arange(t.num_rows)
    write_parquet(t.take(pa.array(idx[::2])), tmp_path / "a.parquet")
    write_parquet(t.take(pa.array(idx[1::2])), tmp_path / "b.parquet")
    ingest_many(str(tmp_path / "*.parquet"), tmp_path / "ds")
    chunks = list(scan_dataset(tmp_path / "ds"))
    assert len(chunks) == 1
    assert chunks[0].column("time").equals(t.column("time"))


def test_cli_ingest_many_with_a_bad_file(tmp_path):
    _, paths = _split_hourly(tmp_path, 2)
    (tmp_path / "zz-bad.csv").write_text("time,file,offset,count\n1,a,x,1\n")
    res = CliRunner().invoke(cli, ["ingest", str(tmp_path), "-o", str(tmp_path / "ds"), "--json"])
    assert res.exit_code == 1
    doc = json.loads(res.output)
    assert doc["failed_files"][0]["source"].endswith("zz-bad.csv")
    assert "line 2" in doc["failed_files"][0]["error"]
    # the good parts landed and read back
    back, _ = read_trace(tmp_path / "ds")
    assert back.num_rows == sum(read_trace(p)[0].num_rows for p in paths)


def test_directory_that_is_not_a_dataset(tmp_path):
    res = CliRunner().invoke(cli, ["stats", str(tmp_path)])
    assert res.exit_code == 1 and "not a seqheur dataset" in res.output


@pytest.mark.dist
def test_dask_local_cluster_matches_serial(tmp_path):
    args = [(i,) for i in range(8)]
    serial = dict(run_tasks(_square, args, ExecutorSpec("serial")))
    dask = dict(run_tasks(_square, args, ExecutorSpec("dask-local", 2)))
    assert serial == dask


def test_scan_reads_matches_one_shot_file_numbering():
    from seqheur.streams import reads, scan_reads

    t = workloads.paper(6, 3, reorder=0.05, seed=4)
    one = reads(t)
    cuts = [0, 120, 121, 400, t.num_rows]
    chunks = list(scan_reads([t.slice(a, b - a) for a, b in zip(cuts, cuts[1:])], chunk_rows=53))
    assert all(len(c) <= 53 for c in chunks)
    assert np.array_equal(np.concatenate([c.file for c in chunks]), one.file)
    assert np.array_equal(np.concatenate([c.offset for c in chunks]), one.offset)
    assert np.array_equal(chunks[-1].file_ids, one.file_ids)


@pytest.mark.parametrize("detector,table", [("slowdown", "nfsheur:16x2"), ("cursor", "ideal"),
                                            ("linux-3.12", "ideal")])
def test_out_of_core_replay_equals_in_memory(tmp_path, detector, table):
    from seqheur.outofcore import replay_dataset
    from seqheur.replay import replay

    t = workloads.mix([workloads.paper(8, 8, reorder=0.06, seed=1), workloads.stride(4, 4),
                       workloads.random_reads(3, 4, 200)])
    cuts = np.linspace(0, t.num_rows, 7).astype(int)
    for i in range(6):
        write_parquet(t.slice(cuts[i], cuts[i + 1] - cuts[i]), tmp_path / f"h{i}.parquet")
    ingest_many(str(tmp_path / "h*.parquet"), tmp_path / "ds")
    a = replay(t, detector, table, cache="4MiB")
    b = replay_dataset(tmp_path / "ds", chunk_rows=97, detector=detector, table=table, cache="4MiB")
    assert_frames_close(a.summary, b.summary, rel=SUMMARY_REL)  # why: tests/floatcmp.py
    assert a.requests.equals(b.requests)  # integer columns: exact


def test_cli_replay_of_a_dataset_is_out_of_core_and_exact(tmp_path):
    from seqheur.replay import replay

    t = workloads.paper(4, 4, reorder=0.05, seed=9)
    cuts = np.linspace(0, t.num_rows, 4).astype(int)
    for i in range(3):
        write_parquet(t.slice(cuts[i], cuts[i + 1] - cuts[i]), tmp_path / f"h{i}.parquet")
    ingest_many(str(tmp_path / "h*.parquet"), tmp_path / "ds")
    res = CliRunner().invoke(cli, ["replay", str(tmp_path / "ds"), "--detector", "slowdown",
                                   "--table", "freebsd4", "--chunk-rows", "50", "--json"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    want = replay(t, "slowdown", "freebsd4").to_dict()
    assert_tree_close({k: got[k] for k in ("hits", "misses", "disk_seconds", "table_ejections",
                                           "prefetched")},
                      {k: want[k] for k in ("hits", "misses", "disk_seconds", "table_ejections",
                                            "prefetched")}, rel=SUMMARY_REL)


def _same_stream(a, b, provenance=True) -> None:
    for name in ("time_ns", "file", "offset", "count", "file_ids"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert (a.is_write is None) == (b.is_write is None)
    if a.is_write is not None:
        assert np.array_equal(a.is_write, b.is_write)
    if provenance:
        assert np.array_equal(a.source_index, b.source_index)


@pytest.mark.parametrize("batch_rows", [1, 97, 1 << 18])
def test_parquet_stream_batch_by_batch_equals_the_whole_table(tmp_path, batch_rows):
    """A request table in server order is read batch by batch into the stream's own arrays
    (bounded memory): the same stream as reading it whole, for any batch size, with other ops
    among the rows and with writes asked for; tables whose batches are out of order are
    read whole."""
    from seqheur.streams import _parquet_stream_in_order, read_stream, reads

    mixed = workloads.mix([workloads.paper(3, 2, reorder=0.1, seed=4),
                           workloads.random_reads(files=3, file_mb=1, requests=300, seed=2)])
    t = read_trace(_write(tmp_path / "m.parquet", mixed))[0]
    ops = pa.array(np.where(np.arange(t.num_rows) % 7 == 3, "write", "read"))
    t = t.set_column(t.schema.get_field_index("op"), "op", ops.dictionary_encode())
    p = _write(tmp_path / "t.parquet", t)
    for want in (("read",), ("read", "write")):
        whole = reads(t, ops=want)
        got = _parquet_stream_in_order(p, want, batch_rows=batch_rows)
        assert got is not None and len(got) == len(whole) > 0
        _same_stream(got, whole)
        _same_stream(read_stream(p, want, provenance=False), whole, provenance=False)
        assert read_stream(p, want, provenance=False).source_index is None
    # rows out of server order across batches: None here, read whole by read_stream
    shuffled = _write(tmp_path / "s.parquet", t.take(np.random.default_rng(1).permutation(t.num_rows)))
    if batch_rows < t.num_rows:
        assert _parquet_stream_in_order(shuffled, ("read",), batch_rows=batch_rows) is None
    _same_stream(read_stream(shuffled), whole_reads := reads(t))
    assert len(whole_reads) > 0


def _write(path, table):
    write_parquet(table, path)
    return path
