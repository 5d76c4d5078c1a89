"""Replay: conservation laws over random traces and parameters (hypothesis), summary contract,
chunked replay == one-shot replay, inputs, and the CLI verb."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from floatcmp import SUMMARY_REL, assert_tree_close
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqheur.replay import SUMMARY_KEYS, Replayer, replay, replay_chunks, observed_file_sizes
from seqheur.streams import ReadStream

DETECTORS = ["freebsd4", "freebsd", "slowdown", "cursor", "zfetch", "always", "never",
             "linux-2.6.32", "linux-3.12"]
TABLES = ["freebsd4", "nfsheur:8x2", "ellard", "raparms:threads=2", "ideal"]
POLICIES = ["auto", "freebsd4-cluster", "freebsd-cluster", "fixed:3", "none",
            "freebsd4-cluster:bsize=8192", "freebsd-cluster:bsize=4096:read_min=2"]


@st.composite
def traces(draw):
    """Interleaved readers of a few files: sequential runs, reorders, jumps, odd sizes."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(1, 400))
    nfiles = draw(st.integers(1, 6))
    rng = np.random.default_rng(seed)
    f = rng.integers(0, nfiles, n)
    size = int(draw(st.sampled_from([4096, 8192, 32768, 5000])))
    pos = np.zeros(nfiles, np.int64)
    off = np.empty(n, np.int64)
    cnt = np.empty(n, np.int64)
    for i in range(n):
        r = rng.random()
        if r < 0.1:
            pos[f[i]] = int(rng.integers(0, 200)) * 4096  # jump
        elif r < 0.2 and pos[f[i]] >= size:
            pos[f[i]] -= size  # a reordered (swapped) request
        off[i] = pos[f[i]]
        cnt[i] = size if rng.random() > 0.05 else int(rng.integers(0, 3 * size))
        pos[f[i]] += size
    return ReadStream.from_arrays(f, off, cnt)


def check_laws(r, det: str, table: str, policy: str = "auto") -> None:
    s = r.to_dict()
    req = r.requests
    assert s["hits"] + s["misses"] == s["demand_blocks"]
    assert s["prefetched"] == s["prefetch_used"] + s["prefetch_wasted"]
    assert s["prefetch_wasted"] == s["prefetch_evicted"] + s["prefetch_unused_at_end"]
    lost = sum(s[k] for k in s if k.startswith("lost_"))
    assert lost == s["misses"]  # every miss has exactly one cause
    assert int(req["hit_blocks"].sum()) == s["hits"]
    assert int(req["miss_blocks"].sum()) == s["misses"]
    assert int(req["prefetch_blocks"].sum()) == s["prefetched"]
    assert s["requests"] == len(req)
    # a request has a cause iff it missed
    assert ((req["miss_blocks"] > 0) == req["cause"].is_not_null()).all()
    if det == "never" and "read_min" not in policy:  # read_min > 1 reads ahead regardless
        assert s["prefetched"] == 0
    if table == "ideal":
        assert s["lost_ejected"] == 0 and s["table_ejections"] == 0
    assert s["table_ejections"] <= s["table_fresh"]


#: One (detector, table, policy) per detector, together naming every table and policy above.
#: The engine's loop compiles once per such choice of steps (a few seconds each on a cold
#: numba cache), so the default run draws from these; the slow test draws the whole matrix.
COVERING = [("freebsd4", "freebsd4", "auto"),
            ("freebsd", "nfsheur:8x2", "freebsd-cluster:bsize=4096:read_min=2"),
            ("slowdown", "ellard", "fixed:3"),
            ("cursor", "raparms:threads=2", "freebsd4-cluster:bsize=8192"),
            ("zfetch", "ideal", "freebsd-cluster"), ("always", "freebsd4", "freebsd4-cluster"),
            ("never", "ideal", "none"), ("linux-2.6.32", "raparms:threads=2", "auto"),
            ("linux-3.12", "nfsheur:8x2", "auto")]
CACHES = [32768, 65536, 1 << 20, 64 << 20]


def _replay_obeys_the_laws(stream, det, table, policy, cache, clip) -> None:
    if det.startswith("linux") and policy != "auto":
        policy = "linux"
    r = replay(stream, det, table, policy, cache=cache, profile=None,
               file_sizes="observed" if clip else None)
    check_laws(r, det, table, policy)


def test_the_covering_choices_name_every_detector_table_and_policy():
    assert {c[0] for c in COVERING} == set(DETECTORS)
    assert {c[1] for c in COVERING} == set(TABLES)
    assert {c[2] for c in COVERING} == set(POLICIES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from(COVERING), st.sampled_from(CACHES), st.booleans())
def test_conservation_laws(stream, choice, cache, clip):
    _replay_obeys_the_laws(stream, *choice, cache, clip)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.sampled_from(DETECTORS), st.sampled_from(TABLES), st.sampled_from(POLICIES),
       st.sampled_from(CACHES), st.booleans())
def test_conservation_laws_over_every_combination(stream, det, table, policy, cache, clip):
    _replay_obeys_the_laws(stream, det, table, policy, cache, clip)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 300), st.sampled_from([4096, 8192, 16384, 65536]),
       st.sampled_from(["freebsd4-cluster", "freebsd-cluster", "fixed:1", "fixed:16", "auto"]),
       st.sampled_from(["always", "linux-2.6.32", "linux-3.12"]))
def test_always_sequential_single_file_misses_only_first(n, size, policy, det):
    """A purely sequential single-file stream with read-ahead always on and an ample cache
    misses only in its first READ (fixed:N needs N blocks >= a request's blocks)."""
    if det.startswith("linux"):
        policy = "auto"
    elif policy.startswith("fixed") and int(policy.split(":")[1]) * 8192 < size:
        policy = "fixed:16"
    s = ReadStream.from_arrays(np.zeros(n, int), np.arange(n) * size, size)
    # no end-of-file clipping: cluster_read never reads ahead a partial last block (below)
    r = replay(s, det, "ideal", policy, cache="1GiB", profile=None, file_sizes=None)
    miss = r.requests["miss_blocks"].to_numpy()
    assert miss[0] > 0 and miss[1:].sum() == 0
    assert r["lost_cold"] == r["misses"]


def test_partial_last_block_is_not_read_ahead_by_cluster_read():
    """4.x cluster_read reads ahead only if (lbn+1)*size <= filesize (4.x vfs_cluster.c): a file of
    20 KiB on 16 KiB blocks gets its second (partial) block on demand."""
    s = ReadStream.from_arrays(np.zeros(5, int), np.arange(5) * 4096, 4096)
    r = replay(s, "always", "ideal", "freebsd4-cluster", profile=None)
    assert r.requests["miss_blocks"].to_list() == [1, 0, 0, 0, 1]
    assert r["prefetched"] == 0


def test_summary_contract_and_json():
    s = ReadStream.from_arrays([0, 1, 0, 1], [0, 0, 8192, 8192], 8192)
    r = replay(s, "freebsd4", "freebsd4", "freebsd4-cluster", "1MiB", "ide-7200")
    assert isinstance(r.summary, pl.DataFrame) and r.summary.height == 1
    cols = r.summary.columns
    assert [c for c in cols if c in SUMMARY_KEYS] == list(SUMMARY_KEYS)  # in the metrics schema order
    d = json.loads(r.to_json())
    assert d["detector"] == "freebsd4" and d["table"] == "nfsheur:64x4"
    assert d["policy"] == "freebsd4-cluster" and d["cache"] == "1MiB" and d["profile"] == "ide-7200"
    assert d["disk_ops"] > 0 and d["disk_seconds"] > 0 and d["throughput_mbps"] > 0
    assert d["requests"] == 4 and d["files"] == 2
    none = replay(s, "never", "ideal", "none", profile=None)
    dn = json.loads(none.to_json())
    assert dn["accuracy"] is None and dn["disk_seconds"] is None and dn["profile"] is None
    # sweeps concatenate summaries
    assert pl.concat([r.summary, r.summary]).height == 2


def test_write_parquet_with_summary(tmp_path):
    import pyarrow.parquet as pq

    s = ReadStream.from_arrays(np.zeros(20, int), np.arange(20) * 8192, 8192)
    r = replay(s, "freebsd4", "ideal", profile=None)
    out = r.write(tmp_path / "r.parquet")
    t = pq.read_table(out)
    assert t.num_rows == 20
    assert {"seqcount", "slot_fresh", "prefetch_blocks", "hit_blocks", "miss_blocks",
            "cause"} <= set(t.column_names)
    meta = json.loads(pq.read_metadata(out).metadata[b"seqheur.replay.summary"])
    assert meta["misses"] == r["misses"]


def _interleaved(n_files=8, per_file=300, reorder=0.1, seed=1, size=8192):
    """Sequential readers (``size``-byte READs) of ``n_files`` files interleaved at random; a share
    ``reorder`` of neighbouring requests swapped (server-side reordering)."""
    rng = np.random.default_rng(seed)
    f = rng.permutation(np.repeat(np.arange(n_files), per_file))
    off = np.empty(len(f), np.int64)
    pos = np.zeros(n_files, np.int64)
    for i in range(len(f)):
        off[i] = pos[f[i]]
        pos[f[i]] += size
    for i in np.nonzero(rng.random(len(f) - 1) < reorder)[0]:
        f[i], f[i + 1] = f[i + 1], f[i]
        off[i], off[i + 1] = off[i + 1], off[i]
    return ReadStream.from_arrays(f, off, size)


@pytest.mark.parametrize("det,table,policy", [
    ("freebsd4", "freebsd4", "auto"),
    ("slowdown", "nfsheur:4x2", "freebsd-cluster"),
    ("linux-3.12", "raparms:threads=1", "auto"),
    ("zfetch", "ideal", "fixed:4"),
])
def test_chunked_replay_equals_one_shot(det, table, policy):
    s = _interleaved()
    sizes = observed_file_sizes(s)
    whole = replay(s, det, table, policy, "512KiB", "ide-7200", file_sizes=sizes)
    cuts = [0, 1, 17, 500, 501, 1900, len(s)]
    parts = (s.slice(a, b) for a, b in zip(cuts[:-1], cuts[1:]))
    chunked = replay_chunks(parts, det, table, policy, "512KiB", "ide-7200", file_sizes=sizes)
    # floats (disk seconds, throughput, ratios) to SUMMARY_REL: see tests/floatcmp.py
    assert_tree_close(chunked.to_dict(), whole.to_dict(), rel=SUMMARY_REL)
    assert chunked.requests.equals(whole.requests)  # integer columns: exact


def test_reordering_losses_are_attributed():
    """One reader whose neighbouring READs are swapped (a fifth of them): each swap drops the
    4.x seqcount to 1 and 0, and some of the READs that follow outrun the read-ahead. (Swaps
    in an interleaving of several readers mostly exchange READs of different files, which
    costs the reader nothing.)"""
    s = _interleaved(n_files=1, per_file=600, reorder=0.2)
    r = replay(s, "freebsd4", "ideal", "freebsd4-cluster", "64MiB", profile=None)
    assert r["lost_reordered"] > 0
    assert r["lost_ejected"] == 0
    cleaner = replay(_interleaved(n_files=1, per_file=600, reorder=0.0), "freebsd4", "ideal",
                     "freebsd4-cluster", "64MiB", profile=None)
    assert cleaner["lost_reordered"] == 0 and cleaner["misses"] < r["misses"]


def test_small_table_ejections_are_attributed():
    """40 interleaved readers of 32 KiB through a 4-slot table: every ejection resets the
    4.x seqcount, read-ahead falls behind, and the misses are blamed on the ejections; the
    ideal table has none (and fewer misses)."""
    s = _interleaved(n_files=40, per_file=50, reorder=0.0, size=32768)
    small = replay(s, "freebsd4", "nfsheur:4x1", "freebsd4-cluster", "64MiB", profile=None)
    ideal = replay(s, "freebsd4", "ideal", "freebsd4-cluster", "64MiB", profile=None)
    assert small["table_ejections"] > 0 and small["lost_ejected"] > small["misses"] // 2
    assert ideal["lost_ejected"] == 0 and ideal["misses"] < small["misses"]


def test_evicted_cause_with_a_tiny_cache():
    # 16 interleaved sequential readers and a cache far smaller than their read-ahead
    s = _interleaved(n_files=16, per_file=200, reorder=0.0)
    r = replay(s, "always", "ideal", "freebsd-cluster", "256KiB", profile=None)
    assert r["prefetch_evicted"] > 0 and r["lost_evicted"] > 0


def test_replayer_rejects_foreign_chunks():
    from seqheur.errors import SeqheurError

    a = ReadStream.from_arrays([5, 6], [0, 0], 8192)
    b = ReadStream.from_arrays([7], [0], 8192)
    rp = Replayer(a.file_ids, profile=None)
    rp.feed(a)
    with pytest.raises(SeqheurError):
        rp.feed(b)


def test_request_table_and_path_inputs(tmp_path):
    from seqheur.io import write_parquet
    from seqheur.workloads import paper

    table = paper(readers=4, total_mb=2, request_kb=8)
    r1 = replay(table, "freebsd4", "ideal", profile=None)
    path = tmp_path / "t.parquet"
    write_parquet(table, path)
    r2 = replay(str(path), "freebsd4", "ideal", profile=None)
    assert_tree_close(r1.to_dict(), r2.to_dict(), rel=SUMMARY_REL)
    assert r1["requests"] == 2 * 1024 * 1024 // 8192
    # a path is read as its READ rows only: other ops must not leak into the stream
    import pyarrow as pa

    ops = table.column("op").to_pylist()
    mixed = table.set_column(table.schema.get_field_index("op"), "op",
                             pa.array(["write" if i % 3 == 0 else o for i, o in enumerate(ops)],
                                      table.schema.field("op").type))
    write_parquet(mixed, tmp_path / "m.parquet")
    r3 = replay(str(tmp_path / "m.parquet"), "freebsd4", "ideal", profile=None)
    assert_tree_close(r3.to_dict(), replay(mixed, "freebsd4", "ideal", profile=None).to_dict(),
                      rel=SUMMARY_REL)
    assert r3["requests"] == sum(1 for i in range(len(ops)) if i % 3)


def test_cli_replay(tmp_path):
    from seqheur.cli import cli
    from seqheur.io import write_parquet
    from seqheur.workloads import paper

    path = tmp_path / "t.parquet"
    write_parquet(paper(readers=4, total_mb=2, request_kb=8), path)
    out = tmp_path / "r.parquet"
    res = CliRunner().invoke(cli, ["replay", str(path), "--detector", "slowdown", "--table",
                                   "ellard", "--policy", "freebsd4-cluster", "--cache", "8MiB",
                                   "--profile", "ide-7200", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert set(SUMMARY_KEYS) <= set(d)
    assert d["requests"] == 256 and out.exists()
    bad = CliRunner().invoke(cli, ["replay", str(path), "--policy", "sometimes"])
    assert bad.exit_code == 1 and "unknown policy" in bad.output


def test_requests_streamed_to_parquet_equal_the_kept_ones(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    import seqheur.replay as R

    monkeypatch.setattr(R, "_STEP", 333)  # several steps, so several row groups and stamps
    s = _interleaved(reorder=0.1)
    kept = replay(s, "slowdown", "nfsheur:4x2", "auto", "512KiB", "ide-7200")
    path = tmp_path / "out" / "r.parquet"
    streamed = replay(s, "slowdown", "nfsheur:4x2", "auto", "512KiB", "ide-7200",
                      requests_to=path)
    assert streamed.requests is None and streamed.requests_path == path
    assert_tree_close(streamed.to_dict(), kept.to_dict(), rel=SUMMARY_REL)
    pf = pq.ParquetFile(path)
    assert pf.metadata.num_row_groups == -(-len(s) // 333)
    assert pl.read_parquet(path).equals(kept.requests)
    meta = json.loads(pf.metadata.metadata[b"seqheur.replay.summary"])
    assert meta["misses"] == kept["misses"] and meta["hits"] == kept["hits"]
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.parquet"]  # no temp file left
    copy = streamed.write(tmp_path / "copy.parquet")
    assert pl.read_parquet(copy).equals(kept.requests)
    # and the stepping itself changes nothing: one step of everything gives the same result
    monkeypatch.setattr(R, "_STEP", 1 << 22)
    assert replay(s, "slowdown", "nfsheur:4x2", "auto", "512KiB", "ide-7200").requests.equals(
        kept.requests)


def test_streamed_requests_leave_nothing_on_error(tmp_path):
    s = _interleaved()
    other = ReadStream.from_arrays([0, 1, 2], [0, 0, 0], 8192)  # a foreign file numbering
    path = tmp_path / "r.parquet"
    with pytest.raises(Exception, match="file numbering"):
        replay_chunks([s.slice(0, 100), other], "freebsd4", "freebsd4", requests_to=path,
                      profile=None, file_sizes=observed_file_sizes(s))
    assert list(tmp_path.iterdir()) == []


def test_streamed_requests_of_an_empty_trace(tmp_path):
    s = ReadStream.from_arrays(np.zeros(0, int), np.zeros(0, int), 8192)
    r = replay(s, "freebsd4", "freebsd4", profile=None, requests_to=tmp_path / "e.parquet")
    t = pl.read_parquet(r.requests_path)
    assert t.height == 0 and "cause" in t.columns


def test_op_buffer_size_changes_no_result():
    """The disk reads cut in batches of any size price the same (the running total is summed
    in order), and ``replay(config=...)`` passes the buffer size on."""
    from seqheur.config import ReplayConfig
    from seqheur.workloads import paper

    from seqheur.errors import SeqheurError
    from seqheur.replay import _stream_and_sizes

    s, _, _ = _stream_and_sizes(paper(readers=6, total_mb=4, request_kb=8), None, None)
    sizes = observed_file_sizes(s)
    rows = []
    for cap in (None, 1, 37):
        kw = {} if cap is None else {"ops_capacity": cap}
        rp = Replayer(s.file_ids, detector="freebsd4", table="ellard", cache="1MiB",
                      file_sizes=sizes, per_request=False, **kw)
        rp.feed(s)
        rows.append(rp.summary())
    assert rows[0]["disk_seconds"] > 0
    assert rows[1] == rows[0] and rows[2] == rows[0]
    r = replay(s, config=ReplayConfig(cache="1MiB", ops_capacity=5), file_sizes=sizes,
               per_request=False)
    assert r.to_dict() == replay(s, cache="1MiB", file_sizes=sizes, per_request=False).to_dict()
    with pytest.raises(SeqheurError):
        Replayer(s.file_ids, profile=None, ops_capacity=0)


def test_restart_replays_as_a_new_replayer() -> None:
    """A restarted replayer forgets everything fed: the same trace fed again gives the
    summary, the per-READ rows, the actions and the timing model's columns of a new one
    (its op buffer grown by a huge READ in the first run included)."""
    from seqheur.workloads import paper

    from seqheur.replay import _stream_and_sizes

    s, _, _ = _stream_and_sizes(paper(readers=6, total_mb=4, request_kb=8), None, None)
    count = s.count[:50].copy()
    count[-1] = 1 << 22  # a huge READ: the op buffer grows
    head = ReadStream(s.time_ns[:50], s.file[:50], s.offset[:50], count, s.file_ids)
    sizes = observed_file_sizes(s)
    kw = dict(detector="freebsd4", table="ellard", cache="1MiB", file_sizes=sizes,
              actions=True, timing="closed-loop", ops_capacity=64)

    def run(rp: Replayer) -> tuple:
        rp.feed(s)
        res = rp.result()
        return (res.summary.to_dicts(), res.requests.to_dicts(), res.actions.to_dicts())

    fresh = run(Replayer(s.file_ids, **kw))
    rp = Replayer(s.file_ids, **kw)
    rp.feed(head)  # another trace first: its state, counters and op buffer are dropped
    rp.restart()
    assert run(rp) == fresh
    rp.restart()
    assert run(rp) == fresh
