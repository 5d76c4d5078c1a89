"""Golden sequences worked by hand from the kernel rules (docs/heuristics.md),
spec-string parsing and the plug-in API."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import seqheur
from seqheur.errors import SpecError
from seqheur.heuristics.registry import parse_detector, registered_detectors
from seqheur.streams import ReadStream

K8 = 8192


def seq(detector: str, offsets, counts=K8, files=None, table: str = "ideal") -> list[int]:
    files = [0] * len(offsets) if files is None else files
    r = seqheur.detect(ReadStream.from_arrays(files, offsets, counts), detector, table)
    return [int(x) for x in r.seqcount]


# ---- freebsd4 (§1.5)

def test_freebsd4_first_read_offset_zero_rule() -> None:
    assert seq("freebsd4", [0]) == [5]  # new entry 4, then sequential (+1)
    assert seq("freebsd4", [K8 * 3]) == [2]  # new entry 1, then +1


def test_freebsd4_ramp_drop_and_offset_zero() -> None:
    offs = [0, K8, 2 * K8, 10 * K8, 11 * K8, 50 * K8, 60 * K8, 0, 0, K8]
    # 5 6 7 | jump: 7>1 -> 1 | seq: 2 | jump: 2>1 -> 1 | jump: 1 -> 0 |
    # off 0 with seq 0 and nextoff != 0: not sequential -> 0 | off 0 again: nextoff is K8 -> 0
    # then K8 == nextoff -> 1
    assert seq("freebsd4", offs) == [5, 6, 7, 1, 2, 1, 0, 0, 0, 1]


def test_freebsd4_reread_from_start_keeps_ramp() -> None:
    assert seq("freebsd4", [0, K8, 0, K8]) == [5, 6, 7, 8]


def test_freebsd4_zero_count_keeps_nextoff_and_cap() -> None:
    assert seq("freebsd4", [0, 5 * K8, K8], counts=[K8, 0, K8]) == [5, 1, 2]
    s = seq("freebsd4", list(range(0, 200 * K8, K8)))
    assert s[122:] == [127] * 78 and s[121] == 126 and s[:3] == [5, 6, 7]


# ---- slowdown (§5.0)

def test_slowdown_window_edges_inclusive() -> None:
    base = [0, K8]  # seq 6, nextoff 2*K8
    nxt = 2 * K8
    assert seq("slowdown", base + [nxt + 65536]) == [5, 6, 6]
    assert seq("slowdown", base + [nxt + 65537]) == [5, 6, 3]
    assert seq("slowdown", [K8 * 20, K8 * 21, K8 * 22 - 65536]) == [2, 3, 3]
    assert seq("slowdown", [K8 * 20, K8 * 21, K8 * 22 - 65537]) == [2, 3, 1]
    assert seq("slowdown:window=0", base + [nxt + 1]) == [5, 6, 3]


def test_slowdown_halving_down_to_zero() -> None:
    far = [10**9 * (i + 1) for i in range(5)]
    # 5 6 7, then 7 -> 3 -> 1 -> 0 -> 0
    assert seq("slowdown", [0, K8, 2 * K8] + far[:4]) == [5, 6, 7, 3, 1, 0, 0]


def test_slowdown_nextoff_follows_every_read() -> None:
    # the in-window read moves nextoff: returning to the old position is a jump back
    assert seq("slowdown", [0, 3 * K8, K8]) == [5, 5, 5]  # both within 64 KiB: unchanged
    assert seq("slowdown", [0, 20 * K8, K8]) == [5, 2, 1]


# ---- freebsd current (§2.3)

def test_freebsd_ramp_by_size() -> None:
    assert seq("freebsd", [0, K8], counts=[K8, 32768]) == [5, 7]  # +1, +2
    assert seq("freebsd", [0, K8], counts=[K8, 16385]) == [5, 7]  # roundup4 16388 -> +2
    assert seq("freebsd", [0, K8], counts=[K8, 5]) == [5, 6]  # resid 8 -> +1
    assert seq("freebsd", [K8 * 4], counts=[65536]) == [5]  # 1 + ceil(64K/16K)


def test_freebsd_reorder_window_edges() -> None:
    # window = 16 * max(32768, resid) = 512 KiB for 8 KiB reads
    nxt = 2 * K8
    assert seq("freebsd", [0, K8, nxt + 524288]) == [5, 6, 6]
    assert seq("freebsd", [0, K8, nxt + 524289]) == [5, 6, 3]
    # with 64 KiB reads the window is 1 MiB
    # 4 + ceil(64K/16K) = 8; 1 MiB - 64 KiB away: unchanged; 1 MiB + 1 away: halved
    assert seq("freebsd", [0, 1 << 20, (1 << 21) + 65536 + 1], counts=65536) == [8, 8, 4]
    assert seq("freebsd:iosize=131072", [0, K8, nxt + (2 << 20)]) == [5, 6, 6]


def test_freebsd_halving_at_one() -> None:
    far = [10**9 * (i + 1) for i in range(3)]
    assert seq("freebsd", [K8] + far) == [2, 1, 0, 0]
    assert seq("freebsd", [0, K8, 2 * K8, far[0]]) == [5, 6, 7, 3]


def test_freebsd_zero_length_read_changes_nothing() -> None:
    assert seq("freebsd", [0, 10**9, K8], counts=[K8, 0, K8]) == [5, 5, 6]


# ---- cursor (§5.0)

def test_cursor_two_stride_streams() -> None:
    half = 1 << 27
    offs = []
    for i in range(6):
        offs += [i * K8, half + i * K8]
    s = seq("cursor", offs)
    assert s[0::2] == [5, 6, 7, 8, 9, 10]  # stream at 0: starts at 4+1
    assert s[1::2] == [2, 3, 4, 5, 6, 7]  # stream at half: new cursor 1+1
    assert seq("slowdown", offs)[-1] < 5  # one cursor cannot follow both


def test_cursor_lru_recycling_and_tie_break() -> None:
    gap = 1 << 30
    # 2 cursors; a third stream recycles the least recently used (stream A)
    offs = [0, gap, 2 * gap, K8]
    assert seq("cursor:cursors=2", offs) == [5, 2, 2, 2]  # A was recycled: K8 starts afresh
    assert seq("cursor:cursors=3", offs) == [5, 2, 2, 6]
    # in-window reads match (and move) the one cursor instead of opening another
    assert seq("cursor", [0, 3 * K8, K8]) == [5, 5, 5]


def test_cursor_match_prefers_nearest_then_most_recent() -> None:
    # A at 0..3K8 (next 4K8); 13K8 is 9 blocks away: cursor B; 12K8 is within 64 KiB of
    # both (A: 8 blocks, B: 2 blocks): the nearer B takes it, unchanged
    offs = [0, K8, 2 * K8, 3 * K8, 13 * K8, 12 * K8, 13 * K8, 14 * K8]
    assert seq("cursor", offs) == [5, 6, 7, 8, 2, 2, 3, 4]
    assert seq("slowdown", offs) == [5, 6, 7, 8, 4, 4, 5, 6]
    # equal distance (window 12 KiB): the most recently used cursor (B) wins
    assert seq("cursor:window=12288", [0, 3 * K8, 20480, K8]) == [5, 2, 2, 6]


# ---- zfetch (§5.2)

def test_zfetch_sequential_distance_doubling() -> None:
    rec = 1 << 17
    s = seq("zfetch", [i * rec for i in range(8)], counts=rec)
    # new stream (0), then pf_dist = 1 record, doubling: 2, 4, 8, 16, 32 (4 MiB), then stays
    assert s == [0, 1, 2, 4, 8, 16, 32, 32]
    s = seq("zfetch:assume_more=true", [i * rec for i in range(40)], counts=rec)
    assert s[7] == 36 and s[-1] == 127  # +1/8 per hit once at min_distance


def test_zfetch_reordered_block_is_stored_then_advanced() -> None:
    rec = 1 << 17
    # stream at 1 after the first read; block 2 arrives before block 1 (within 16 MiB)
    assert seq("zfetch", [0, 2 * rec, rec, 3 * rec], counts=rec) == [0, 0, 2, 4]


def test_zfetch_misaligned_and_behind() -> None:
    rec = 1 << 17
    # 8 KiB reads inside record 0: the first creates a stream at 1, the rest are "one behind"
    assert seq("zfetch", [0, K8, 2 * K8, rec], counts=K8) == [0, 0, 0, 1]
    # far behind a live stream: a new stream, seqcount 0
    assert seq("zfetch", [1 << 30, (1 << 30) + rec, 0], counts=rec) == [0, 1, 0]


def test_always_never() -> None:
    assert seq("always", [5, 10**9]) == [127, 127]
    assert seq("always:seqcount=9", [5]) == [9]
    assert seq("never", [0, K8]) == [0, 0]


# ---- specs and registry

def test_detector_specs() -> None:
    d = parse_detector("slowdown:window=64KiB")
    assert d.params.window == 65536 and d.spec == "slowdown"
    assert parse_detector("slowdown:window=1MiB,seqmax=64").spec == "slowdown:window=1048576:seqmax=64"
    # one size grammar with caches and policies: k/K/KiB binary, KB decimal
    assert parse_detector("slowdown:window=64k").params.window == 65536
    assert parse_detector("slowdown:window=64KB").params.window == 64000
    assert parse_detector("linux-3.12:ra_kb=1MiB").params.ra_kb == 1024  # unit KiB
    assert parse_detector("cursor:cursors=8:window=0").state_words == 2 + 3 * 8
    assert parse_detector("zfetch:assume_more=yes").params.assume_more is True
    np.testing.assert_array_equal(parse_detector("freebsd").param_array(), [32768, 16, 16384, 127])


@pytest.mark.parametrize("bad, words", [
    ("linux", "unknown detector"), ("slowdown:wndow=3", "window=65536"),
    ("slowdown:window=big", "integer"), ("freebsd4:seqmax=300", "seqmax"),
    ("zfetch:assume_more=2", "boolean"), ("never:x=1", "none"), ("", "non-empty"),
    ("freebsd4:seqmax=64k", "plain integer"), ("slowdown:window=1.2k", "whole number"),
    ("linux-3.12:ra_kb=1000B", "KiB"),
])
def test_bad_detector_specs(bad: str, words: str) -> None:
    with pytest.raises(SpecError, match=words):
        parse_detector(bad)


def test_builtins_registered_with_sources() -> None:
    regs = registered_detectors()
    assert set(regs) >= {"freebsd4", "slowdown", "cursor", "freebsd", "zfetch", "always", "never"}
    for name in ("freebsd4", "slowdown", "cursor", "freebsd", "zfetch"):
        assert regs[name].builtin and regs[name].source and regs[name].doc


@dataclass(frozen=True)
class EveryOther:
    step: int = 2


def test_plugin_registration_errors() -> None:
    def r(state, params, offset, count, time_ns):
        pass

    def u(state, params, offset, count, time_ns):
        return 1

    with pytest.raises(SpecError, match="already registered"):
        seqheur.register_detector("slowdown", params=EveryOther, state_words=1, reset=r, update=u)
    with pytest.raises(SpecError, match="frozen"):
        @dataclass
        class Loose:
            a: int = 1

        seqheur.register_detector("loose", params=Loose, state_words=1, reset=r, update=u)
    with pytest.raises(SpecError, match="built in"):
        seqheur.unregister_detector("freebsd4")
    with pytest.raises(SpecError, match="name"):
        seqheur.register_detector("Bad Name", params=EveryOther, state_words=1, reset=r, update=u)


def test_plugin_used_by_name_through_detect() -> None:
    def reset(state, params, offset, count, time_ns):
        state[0] = 0

    def update(state, params, offset, count, time_ns):
        state[0] += 1
        return min(state[0] // params[0], 127)

    seqheur.register_detector("every_other", params=EveryOther, state_words=1,
                              reset=reset, update=update, doc="counts requests")
    try:
        assert seq("every_other", [0] * 6) == [0, 1, 1, 2, 2, 3]
        assert seq("every_other:step=3", [0] * 6) == [0, 0, 1, 1, 1, 2]
        assert "every_other" in seqheur.registered_detectors()
    finally:
        seqheur.unregister_detector("every_other")
    with pytest.raises(SpecError, match="unknown detector"):
        parse_detector("every_other")


def test_docs_plugin_example_runs_from_api_and_cli(repo_root, tmp_path) -> None:
    """The worked example of docs/heuristics.md, loaded as a plug-in file, used by name."""
    import re

    from click.testing import CliRunner

    from seqheur.cli import cli
    from seqheur.heuristics.registry import load_plugins

    text = (repo_root / "docs" / "heuristics.md").read_text()
    code = re.search(r"<!-- plugin-example -->\s*```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "aiad.py"
    path.write_text(code)
    try:
        assert load_plugins([str(path)]) == ["aiad"]
        offs = [0, K8, 2 * K8, 10**9, 10**9 + K8, 5 * K8]
        assert seq("aiad", offs) == [2, 3, 4, 3, 4, 3]
        assert seq("aiad:down=4", offs) == [2, 3, 4, 0, 1, 0]
        # CLI: a fresh registry would import the file again; here it is already registered,
        # so --plugin must not fail on the second import of the same file
        table = tmp_path / "t.parquet"
        import pyarrow as pa

        from seqheur.io import write_parquet
        from seqheur.schema import REQUEST_SCHEMA

        n = len(offs)
        cols = {f.name: pa.nulls(n, f.type) for f in REQUEST_SCHEMA}
        cols["time"] = pa.array(range(n), pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
        cols["op"] = pa.array(["read"] * n).dictionary_encode()
        cols["file_id"] = pa.array([7] * n, pa.uint64())
        cols["offset"] = pa.array(offs, pa.uint64())
        cols["count"] = pa.array([K8] * n, pa.uint32())
        cols["source_index"] = pa.array(range(n), pa.uint64())
        tbl = pa.table({f.name: cols[f.name].cast(f.type) if cols[f.name].type != f.type else
                        cols[f.name] for f in REQUEST_SCHEMA})
        write_parquet(tbl, table)
        out = tmp_path / "seq.parquet"
        res = CliRunner().invoke(cli, ["detect", str(table), "--plugin", str(path), "--detector",
                                       "aiad:down=4", "--table", "ellard", "-o", str(out),
                                       "--json"])
        assert res.exit_code == 0, res.output
        import json

        summary = json.loads(res.output)
        assert summary["detector"] == "aiad:down=4" and summary["requests"] == n
        import pyarrow.parquet as pq

        assert pq.read_table(out).column("seqcount").to_pylist() == [2, 3, 4, 0, 1, 0]
    finally:
        seqheur.unregister_detector("aiad")


def test_real_campus_reads_golden(shared_dir) -> None:
    """The READs of the real CAMPUS nfsdump lines (../shared/nfsdump): file 0 reads 8 KiB at
    0, 24 KiB, 40 KiB, 48 KiB, 56 KiB — gaps of 16 KiB and 8 KiB, which 4.x treats as random
    (drop to 1, then 0) and SlowDown/FreeBSD 2011 tolerate (worked by hand from §1.5/§5.0)."""
    tbl, _ = seqheur.read_trace(shared_dir / "nfsdump" / "ellard-raw-data.txt")
    s = seqheur.reads(tbl)
    assert s.offset.tolist() == [0, 24576, 40960, 49152, 57344, 0]
    assert s.file.tolist() == [0, 0, 0, 0, 0, 1]
    expect = {"freebsd4": [5, 1, 0, 1, 2, 5], "slowdown": [5, 5, 5, 6, 7, 5],
              "freebsd": [5, 5, 5, 6, 7, 5], "cursor": [5, 5, 5, 6, 7, 5]}
    for det, want in expect.items():
        for table in ("freebsd4", "ellard", "ideal"):
            assert seqheur.detect(s, det, table).seqcount.tolist() == want, (det, table)


def test_zfetch_future_ranges_fill_by_hand() -> None:
    rec = 1 << 17
    # stream at 1; block 3 and 2 are stored ahead (holes 2, then 1 > end/4); block 1 hits
    # and swallows the merged range [2, 4): advances 3 records -> pf_dist 3 records
    assert seq("zfetch", [0, 3 * rec, 2 * rec, rec, 4 * rec], counts=rec) == [0, 0, 0, 3, 6]
    # a range 1 block beyond 3 stored ranges with holes <= 1/4: 0, then 8 ahead ... accepted
    offs = [0] + [b * rec for b in (2, 3, 4, 5, 6, 7, 8, 9)]
    # after block 2 (hole 1 > 2>>2=0), 3 (hole 1 > 3>>2=0), 4 (hole 1 <= 4>>2=1): advance
    assert seq("zfetch", offs, counts=rec)[:4] == [0, 0, 0, 4]


def test_zfetch_ten_ranges_drop_the_last() -> None:
    rec = 1 << 17
    # stream at 1, then 10 isolated blocks far enough apart that holes stay > 1/4: the 10th
    # insertion lands after the 9 stored ranges and is dropped; block 1 then hits only up to
    # the first range
    blocks = [0] + [10 + 10 * k for k in range(10)] + [1]
    s = seq("zfetch", [b * rec for b in blocks], counts=rec)
    assert s[1:11] == [0] * 10
    assert s[11] == 1  # hit of 1 record: the first stored range (10..11) is 9 blocks away


def test_zfetch_stream_limit_and_reuse_in_seconds() -> None:
    rec = 1 << 17
    sec = 1_000_000_000
    blocks = [0, 1000, 2000, 1001, 2000, 1, 2001, 1002]
    times = [0, 1, 2, 3, sec + sec // 2, sec + sec // 2 + 1, sec + sec // 2 + 2, sec + sec // 2 + 3]
    r = seqheur.detect(ReadStream.from_arrays([0] * 8, [b * rec for b in blocks], rec,
                                              time_ns=times), "zfetch:max_streams=2", "ideal")
    # 2000 at second 0: both streams are fresh (atime = now - 1 s, not older): no stream;
    # at second 1 the never-hit stream of block 0 is reused for 2000; block 1 then finds no
    # stream and none reusable; 2001 and 1002 hit (1002's distance doubles to 2 records)
    assert r.seqcount.tolist() == [0, 0, 0, 1, 0, 0, 1, 2]


def test_state_size_limit_is_a_clear_error(monkeypatch) -> None:
    monkeypatch.setenv("SEQHEUR_MAX_STATE_BYTES", "10000")
    s = ReadStream.from_arrays(np.arange(100), np.zeros(100, int), K8)
    with pytest.raises(seqheur.SeqheurError, match="GiB of state"):
        seqheur.detect(s, "zfetch", "ideal")  # 100 files x 193 words x 8 bytes
    assert len(seqheur.detect(s, "freebsd4", "nfsheur:64x4")) == 100  # 64 x 2 x 8 fits
