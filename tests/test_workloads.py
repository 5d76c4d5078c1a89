"""Synthetic workloads and stream statistics: the acceptance figures and coverage laws."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from click.testing import CliRunner
from hypothesis import example, given, settings
from hypothesis import strategies as st

from seqheur import workloads
from seqheur.cli import cli
from seqheur.streams import ReadStream, reads, stream_stats, trace_stats
from seqheur.schema import validate


def _coverage_exact(table: pa.Table) -> None:
    """Every byte of every file is read exactly once."""
    fid = table.column("file_id").to_numpy()
    off = table.column("offset").to_numpy().astype(np.int64)
    cnt = table.column("count").to_numpy().astype(np.int64)
    size = table.column("file_size").to_numpy().astype(np.int64)
    for f in np.unique(fid):
        m = fid == f
        order = np.argsort(off[m])
        o, c = off[m][order], cnt[m][order]
        assert o[0] == 0
        assert np.all(o[1:] == (o + c)[:-1]), "gap or overlap"
        assert o[-1] + c[-1] == size[m][0]


@settings(max_examples=30, deadline=None)
@given(readers=st.integers(1, 12), total_kb=st.integers(1, 600), request_kb=st.sampled_from([1, 4, 8, 32]),
       reorder=st.floats(0, 0.2), seed=st.integers(0, 2**31 - 1), disp=st.integers(1, 6))
def test_paper_covers_every_byte_once(readers, total_kb, request_kb, reorder, seed, disp):
    t = workloads.paper(readers, total_kb / 1024 * readers, request_kb, reorder, seed, disp)
    validate(t)
    assert len(np.unique(t.column("file_id").to_numpy())) == readers
    _coverage_exact(t)
    assert np.all(np.diff(t.column("time").cast(pa.int64()).to_numpy()) >= 0)


@settings(max_examples=30, deadline=None)
@given(stride=st.integers(1, 16), file_kb=st.integers(1, 2000), request_kb=st.sampled_from([1, 4, 8]),
       seed=st.integers(0, 1000))
def test_stride_covers_every_byte_once(stride, file_kb, request_kb, seed):
    t = workloads.stride(stride, file_kb / 1024, request_kb, seed)
    _coverage_exact(t)


def test_stride_order_is_interleaved_substreams():
    order = workloads.stride_order(8, 2)
    assert order.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]


def test_paper_acceptance_figures():
    t = workloads.paper(32, 256, 8, 0.06, seed=1)
    s = trace_stats(t).summary
    assert s["files"] == 32 and s["bytes"] == 256 * 2**20
    assert 0.04 <= s["reordered_fraction"] <= 0.08


@settings(max_examples=15, deadline=None)
@given(reorder=st.sampled_from([0.0, 0.02, 0.06, 0.1]), seed=st.integers(0, 10_000))
def test_reorder_model_hits_its_target(reorder, seed):
    s = trace_stats(workloads.paper(8, 64, 8, reorder, seed)).summary
    assert abs(s["reordered_fraction"] - reorder) < 0.015
    if reorder == 0:  # a ratio of counts: 1 within 1e-12 (one non-sequential read: <= 1 - 1e-5)
        assert s["sequential_fraction"] == pytest.approx(1.0, rel=1e-12)


def test_stride_substreams_detected():
    for s in (1, 2, 4, 8):
        summary = trace_stats(workloads.stride(s, 64)).summary
        assert summary["substreams"] == s, (s, summary)


def test_random_has_no_substreams_and_is_seeded():
    a = workloads.random_reads(4, 64, 5000, seed=3)
    b = workloads.random_reads(4, 64, 5000, seed=3)
    assert a.equals(b)
    assert trace_stats(a).summary["substreams"] == 0


def test_mix_keeps_all_requests_time_ordered():
    parts = [workloads.paper(4, 4), workloads.stride(2, 2), workloads.random_reads(2, 4, 300)]
    m = workloads.mix(parts)
    assert m.num_rows == sum(p.num_rows for p in parts)
    assert np.all(np.diff(m.column("time").cast(pa.int64()).to_numpy()) >= 0)
    validate(m)


def test_stats_definitions_on_hand_worked_stream():
    # file 0: 0,2,1,3 (one swap) ; file 1: 0, 10 (a seek), 0 (far back: not reordered)
    s = ReadStream.from_arrays(
        file=[0, 0, 1, 0, 0, 1, 1], offset=[0, 2, 0, 1, 3, 10, 0], count=1)
    st_ = stream_stats(s, reorder_depth=2)
    summ = st_.summary
    # predecessors: 7 - 2 files = 5 ; sequential: file0 read3(off3 after off1? no: prev end 2 -> 3? no)
    # file0: 0 | 2 (no) | 1 (no, reordered) | 3 (prev end 2: no) ; file1: 0 | 10 (no) | 0 (no)
    assert summ["sequential"] == 0
    assert summ["reordered"] == 1
    s2 = ReadStream.from_arrays(file=[0, 0, 0, 0], offset=[0, 1, 2, 3], count=1)
    assert stream_stats(s2).summary["sequential_fraction"] == pytest.approx(1.0, rel=1e-12)
    assert stream_stats(s2).summary["run_length_histogram"] == {"4-7": 1}


def test_reads_orders_by_server_time():
    t = workloads.paper(2, 1, reorder=0.0, seed=0)
    perm = np.random.default_rng(0).permutation(t.num_rows)
    shuffled = t.take(perm)
    a, b = reads(t), reads(shuffled)
    assert np.array_equal(a.offset, b.offset) and np.array_equal(a.time_ns, b.time_ns)
    assert np.array_equal(a.file_ids[a.file], b.file_ids[b.file])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from(
    ["read", "write", "getattr", None]), st.booleans()), max_size=40),
       st.sampled_from(["plain", "dictionary", "dictionary, two chunks"]),
       st.sampled_from([("read",), ("read", "write")]))
@example(rows=[(0, 0, "read", False)] * 40, op_kind="plain", ops=("read",))  # the longest list
def test_reads_keeps_the_rows_of_its_ops_in_server_order(rows, op_kind, ops):
    """Against a plain reference: rows of ``ops`` with a file, offset and count, sorted by
    (time, source index) stably; ties, rows already in order and nulls included."""
    base = workloads.paper(1, 0.5, reorder=0.0, seed=0)  # 64 rows: room for the longest list
    assert base.num_rows >= 40
    t = base.slice(0, len(rows))
    times = [r[0] for r in rows]
    src = [r[1] for r in rows]
    op = [r[2] for r in rows]
    offset = [None if not r[3] and i % 3 == 0 else i * 8192 for i, r in enumerate(rows)]
    t = t.set_column(t.schema.get_field_index("time"), "time",
                     pa.array([x * 1000 for x in times], t.schema.field("time").type))
    t = t.set_column(t.schema.get_field_index("source_index"), "source_index",
                     pa.array(src, t.schema.field("source_index").type))
    t = t.set_column(t.schema.get_field_index("offset"), "offset",
                     pa.array(offset, t.schema.field("offset").type))
    op_array = pa.array(op, pa.string())
    if op_kind == "plain":
        op_col = pa.chunked_array([op_array], pa.string())
    else:
        enc = op_array.dictionary_encode()
        cut = len(rows) // 2 if op_kind.endswith("two chunks") else len(rows)
        op_col = pa.chunked_array([enc.slice(0, cut), op_array.slice(cut).dictionary_encode()],
                                  enc.type)
    t = t.set_column(t.schema.get_field_index("op"), "op", op_col)
    want = sorted((times[i], src[i], i) for i in range(len(rows))
                  if op[i] in ops and offset[i] is not None)
    got = reads(t, ops=ops)
    assert got.offset.tolist() == [offset[i] for _, _, i in want]
    assert got.time_ns.tolist() == [x * 1000 for x, _, _ in want]


def test_cli_synth_and_stats(tmp_path):
    r = CliRunner()
    out = tmp_path / "t.parquet"
    res = r.invoke(cli, ["synth", "paper", "--readers", "32", "--reorder", "0.06", "--seed", "1",
                         "-o", str(out)])
    assert res.exit_code == 0, res.output
    res = r.invoke(cli, ["stats", str(out), "--json", "--files", str(tmp_path / "f.parquet")])
    s = json.loads(res.output)
    assert s["files"] == 32 and s["bytes"] == 268435456 and 0.04 <= s["reordered_fraction"] <= 0.08
    res = r.invoke(cli, ["synth", "stride", "--stride", "4", "-o", str(tmp_path / "s.parquet")])
    s = json.loads(r.invoke(cli, ["stats", str(tmp_path / "s.parquet"), "--json"]).output)
    assert s["substreams"] == 4
    for kind in (["random", "--requests", "500"], ["mix", "--total-mb", "4", "--stride-mb", "2"]):
        res = r.invoke(cli, ["synth", *kind, "-o", str(tmp_path / "x.parquet")])
        assert res.exit_code == 0, res.output


def test_paper_benchmark_loop_is_one_time_ordered_trace():
    t = workloads.paper_benchmark((1, 2, 4), total_mb=4, reorder=0.05, seed=3)
    validate(t)
    assert t.num_rows == 3 * 512
    assert len(np.unique(t.column("file_id").to_numpy())) == 7  # fresh files per iteration
    tn = t.column("time").cast(pa.int64()).to_numpy()
    it = t.column("iteration").to_numpy()
    assert np.all(np.diff(tn) > 0) or np.all(np.diff(tn) >= 0)
    assert np.all(np.diff(it) >= 0)  # iterations back to back, never interleaved
    _coverage_exact(t)


def test_handles_in_chunks_are_the_same_table(tmp_path, monkeypatch):
    """A month-long synthetic trace has more than 2 GiB of file handles, more than one binary
    array holds: the fh column is built in chunks. Chunked or not, the table (and its Parquet
    file, read back) is the same."""
    import pyarrow.parquet as pq

    from seqheur.io import write_parquet

    whole = workloads.paper(4, 2, 8, 0.06, seed=3)
    assert whole.column("fh").num_chunks == 1
    monkeypatch.setattr(workloads, "FH_CHUNK_ROWS", 100)
    chunked = workloads.paper(4, 2, 8, 0.06, seed=3)
    assert chunked.column("fh").num_chunks == -(-whole.num_rows // 100)
    assert chunked.equals(whole)
    write_parquet(chunked, tmp_path / "t.parquet")
    assert pq.read_table(tmp_path / "t.parquet").equals(whole.combine_chunks())
