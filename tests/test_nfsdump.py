"""nfsdump text ingest: real Harvard lines, every oddity of the format (docs/formats.md),
call/reply join, chunking, multi-file, compression."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

from seqheur.ingest import read_trace, sniff_format
from seqheur.ingest.nfsdump import read_nfsdump, scan_nfsdump, sniff
from seqheur.schema import file_id_of, validate

NS = 1_000_000_000


def ts(text: str) -> int:
    """'secs.usecs' -> ns, worked out digit by digit (not with the reader's code)."""
    sec, usec = text.split(".")
    assert len(usec) == 6
    return int(sec) * NS + int(usec) * 1000


@pytest.fixture(scope="module")
def ellard(shared_dir: Path) -> Path:
    return shared_dir / "nfsdump" / "ellard-raw-data.txt"


@pytest.fixture(scope="module")
def ellard_table(ellard: Path):
    return read_nfsdump(ellard)


def rows_by_line(table: pa.Table) -> dict[int, dict]:
    out = {}
    for r in table.to_pylist():
        out[r["source_index"]] = r
    return out


def as_ns(v) -> int | None:
    if v is None:
        return None
    return int(pa.scalar(v, type=pa.timestamp("ns", tz="UTC")).cast(pa.int64()).as_py())


def check_invariants(report) -> None:
    report.check()
    x = report.extra
    assert report.parsed == report.calls + report.replies
    assert report.rows == report.matched + report.orphan_calls + report.orphan_replies
    assert report.calls == report.matched + report.orphan_calls + report.retransmissions
    assert report.replies == report.matched + report.orphan_replies + x["duplicate_replies"]


# ---------------------------------------------------------------- the 176 real lines
def test_all_real_lines_accounted(ellard: Path, ellard_table) -> None:
    table, rep = ellard_table
    lines = ellard.read_text().splitlines()
    assert len(lines) == 176
    # independent count: field 5 is C2/C3/R2/R3
    calls = sum(1 for ln in lines if ln.split()[4][0] == "C")
    replies = sum(1 for ln in lines if ln.split()[4][0] == "R")
    assert (calls, replies) == (84, 92)
    assert rep.records_total == 176
    assert rep.parsed == 176 and rep.skipped == {}
    assert (rep.calls, rep.replies) == (84, 92)
    check_invariants(rep)
    assert rep.retransmissions == 0
    assert rep.extra["short_packets"] == 2  # lines 149 and 173
    assert rep.extra["bad_values"] == 0
    validate(table)
    assert table.num_rows == rep.rows
    t = table.column("time").cast(pa.int64()).to_pylist()
    assert t == sorted(t)


def test_read_v3_field_by_field(ellard: Path, ellard_table) -> None:
    table, _ = ellard_table
    lines = ellard.read_text().splitlines()
    # line 24: C3 read off 0 count 2000; line 25: its reply (size 72520, count 2000, eof 0)
    assert lines[23].startswith("1006231504.285023 32.03fd 30.0801 T C3 1cf0d105 6 read")
    assert lines[24].startswith("1006231504.294708 30.0801 32.03fd T R3 1cf0d105 6 read OK")
    r = rows_by_line(table)[24]
    fh = bytes.fromhex("cfbc65840a0000000c000000b6000500028000000c0000000200000001800000")
    assert len(fh) == 32
    assert as_ns(r["time"]) == 1006231504 * NS + 285023 * 1000
    assert as_ns(r["reply_time"]) == 1006231504 * NS + 294708 * 1000
    assert (r["client"], r["server"], r["transport"]) == ("32.03fd", "30.0801", "tcp")
    assert r["xid"] == 0x1CF0D105 == 485544197
    assert (r["vers"], r["minor"], r["op"]) == (3, None, "read")
    assert r["fh"] == fh
    assert r["file_id"] == file_id_of(fh)
    assert r["fh_crc32"] == zlib.crc32(fh)
    assert (r["offset"], r["count"]) == (0, 8192)
    assert (r["ret_count"], r["eof"], r["status"]) == (8192, False, 0)
    assert r["file_size"] == 0x72520 == 468256
    # line 44: off a000 -> 40960
    r = rows_by_line(table)[44]
    assert lines[43].split()[7:14] == [
        "read", "fh", "cfbc65840a0000000c000000b6000500028000000c0000000200000001800000",
        "off", "a000", "count", "2000"]
    assert (r["offset"], r["count"], r["ret_count"], r["eof"]) == (0xA000, 0x2000, 0x2000, False)
    assert as_ns(r["reply_time"]) == ts("1006231504.345883")


def test_write_v3_field_by_field(ellard: Path, ellard_table) -> None:
    table, _ = ellard_table
    lines = ellard.read_text().splitlines()
    assert lines[69].split()[5:8] == ["44acf2e4", "7", "write"]
    assert lines[71].split()[5:9] == ["44acf2e4", "7", "write", "OK"]
    r = rows_by_line(table)[70]
    fh = bytes.fromhex("cfbc65840a0000000c00000035770200788000000c0000000200000001800000")
    assert as_ns(r["time"]) == ts("1006231510.128200")
    assert as_ns(r["reply_time"]) == ts("1006231510.128901")
    assert (r["client"], r["server"], r["transport"], r["xid"]) == ("31.03f7", "30.0801", "tcp",
                                                                     0x44ACF2E4)
    assert (r["op"], r["vers"], r["fh"]) == ("write", 3, fh)
    assert (r["offset"], r["count"]) == (0, 0x2000)
    assert (r["ret_count"], r["status"], r["eof"]) == (0x2000, 0, None)
    assert r["file_size"] == 0x3046712 == 50620178
    # line 75: off 16000 (hex) -> 90112, answered on line 79
    r = rows_by_line(table)[75]
    assert (r["offset"], r["count"], r["ret_count"]) == (0x16000, 0x2000, 0x2000)
    assert as_ns(r["reply_time"]) == ts("1006231510.130256")


def test_v2_read_and_write_calls(ellard_table) -> None:
    table, _ = ellard_table
    rows = rows_by_line(table)
    # line 163: C2 read ... offset 0 count 2000 tcount 2000, never answered
    r = rows[163]
    assert (r["op"], r["vers"], r["transport"], r["client"]) == ("read", 2, "udp", "32.02d2")
    assert r["xid"] == 0x8200EEC5
    assert (r["offset"], r["count"]) == (0, 0x2000)
    assert r["fh"] == bytes.fromhex(
        "569a2e008bb9e53420000000003b1c82cf8c533564860000a0cf90002e303000")
    assert r["reply_time"] is None and r["status"] is None and r["ret_count"] is None
    # line 167: C2 write begoff 0 offset 0 tcount bba: the count is tcount
    r = rows[167]
    assert (r["op"], r["vers"], r["offset"], r["count"]) == ("write", 2, 0, 0xBBA)
    assert r["xid"] == 0x72CD8AC


def test_garbage_write_reply_is_an_orphan_row(ellard_table) -> None:
    table, _ = ellard_table
    r = rows_by_line(table)[170]  # count 11b10800, stable ?, 7-digit atime fraction
    assert r["op"] == "write" and r["vers"] == 3
    assert r["time"] == r["reply_time"]
    assert r["fh"] is None and r["offset"] is None and r["count"] is None
    assert (r["ret_count"], r["file_size"], r["status"]) == (0x11B10800, 0xEE62BC, 0)
    assert (r["client"], r["server"]) == ("31.03e4", "30.0801")


def test_lookup_reply_takes_the_object_size_not_the_directory(ellard_table) -> None:
    table, _ = ellard_table
    rows = rows_by_line(table)
    assert rows[3]["file_size"] == 0  # object size 0, then directory size 2000
    assert rows[7]["file_size"] == 0x2000  # object is a directory here (size 2000)
    assert rows[5]["status"] == 2 and rows[5]["file_size"] is None  # lookup 2 = NOENT


def test_null_short_packet_and_statuses(ellard_table) -> None:
    table, _ = ellard_table
    rows = rows_by_line(table)
    # line 139/140: null call + reply whose status is only in "status=0"
    r = rows[139]
    assert (r["op"], r["status"], r["client"]) == ("null", 0, "75.9c8b")
    assert as_ns(r["reply_time"]) == ts("1045476008.690179")
    # line 149: rename SHORT PACKETcon = ...: kept (fixed fields), fh unknown, answered on 150
    r = rows[149]
    assert (r["op"], r["fh"], r["status"]) == ("rename", None, 0)
    assert as_ns(r["reply_time"]) == ts("1037240674.976602")
    r = rows[173]
    assert (r["op"], r["fh"], r["reply_time"]) == ("lookup", None, None)
    # line 176: R2 null reply, no call: orphan with status 0
    r = rows[176]
    assert (r["op"], r["vers"], r["status"], r["time"]) == ("null", 2, 0, r["reply_time"])
    # commit uses "file", not "fh"
    r = rows[123]
    assert r["op"] == "commit" and r["fh"] is not None and (r["offset"], r["count"]) == (0, 0)
    assert r["file_size"] == 0x6000
    ops = set(table.column("op").to_pylist())
    assert {"readdirplus", "fsstat", "statfs", "symlink", "readlink", "link"} <= ops
    assert "readdirp" not in ops


# ---------------------------------------------------------------- synthetic oddities
ODD = b"""\
1000.000001 0a000001.03f7   0a000002.0801 U C3 a1       6 read     fh 0102 off 10 count 1000 con = 130 len = 170
1000.000002 0a000002.0801   0a000001.03f7 U R3       a1 6 read     OK ftype 1 size FF count 800 eof 1 status=0 pl = 120 con = 130 len = 400 LONGPKT-4
XX Not Auth_Unix (1)??
XX rh_len == 0, cnt = 3

junk line here
1000.100000 1.0001 0.0801 U C3 b2 6 read fh 0A0B off 0 count 2000 con = XXX len = XXX
1000.200000 1.0001 0.0801 U C3 b2 6 read fh 0a0b off 0 count 2000 con = XXX len = XXX
1000.300000 0.0801 1.0001 U R3 b2 6 read OK count 2000 eof 0 status=XXX pl = XXX con = XXX len = XXX
1000.300100 0.0801 1.0001 U R3 b2 6 read OK count 2000 eof 0 status=XXX pl = XXX con = XXX len = XXX
1000.400000 0.0801 1.0001 U R3 c3 6 read 46 status=XXX pl = XXX con = XXX len = XXX
1000.500000 1.0001 0.0801 U C2 d4 8 write fh 0c0d begoff 0 offset 2000 tcount 400 +|+ con = XXX len = XXX
1000.600000 1.0001 0.0801 U CU4 e5 1 getattr
euid 0 egid 0 con = 100 len = 200
1000.700000 1.0001 0.0801 X C3 f6 1 getattr fh 00 con = XXX len = XXX
10x0.800000 1.0001 0.0801 U C3 f7 1 getattr fh 00 con = XXX len = XXX
1000.900000 1.0001 0.0801 U C3 zz 1 getattr fh 00 con = XXX len = XXX
1001.000000 1.0001 0.0801 U C3 f8 1 frobnicate fh 00 con = XXX len = XXX
1001.100000 1.0001 0.0801 U C3 f9 6 read fh 0e0f off 0 count
1001.200000 0.0801 1.0001 U R3 fa 6 read WHAT status=XXX pl = XXX con = XXX len = XXX
1001.300000 1.0001 0.0801 U C3 fb 6 read fh 123 off zz count 100000000 con = XXX len = XXX
1001.400000 1.0001 0.0801 U Q3 fc 1 getattr fh 00 con = XXX len = XXX
1001.500000 1.0001 0.0801 U C3 fd 6 read fh 1f off 0 count 10 con = XXX len = XXX\r
\x00\x00\x001001.600000 1.0001 0.0801 U C3 fe 6 read fh 1f con = XXX len = XXX
1001.700000 0.0801 1.0001 U R3 fd 6 read OK count 10 eof 1 status=XXX pl = XXX con = XXX len = XXX"""


def test_oddities_accounted(tmp_path: Path) -> None:
    p = tmp_path / "odd.txt"
    p.write_bytes(ODD)
    table, rep = read_nfsdump(p)
    check_invariants(rep)
    assert rep.records_total == ODD.count(b"\n") + 1 == 25
    assert rep.skipped == {
        "diagnostic_line": 2, "blank_line": 1, "not_a_record": 2, "unsupported_version": 1,
        "bad_transport": 1, "bad_time": 1, "bad_xid": 1, "unknown_op": 1, "truncated": 1,
        "bad_status": 1, "bad_direction": 1}
    assert rep.parsed == 12
    assert {e[0] for e in rep.examples} == {3, 4, 5, 6, 13, 14, 15, 16, 17, 18, 19, 20, 22}
    assert rep.retransmissions == 1 and rep.extra["duplicate_replies"] == 1
    assert (rep.matched, rep.orphan_calls, rep.orphan_replies) == (3, 3, 1)
    assert rep.extra["short_packets"] == 1
    assert rep.extra["bad_values"] == 3  # fh 123 (odd), off zz, count 100000000 (> 32 bits)
    rows = rows_by_line(table)
    assert sorted(rows) == [1, 7, 11, 12, 21, 23, 24]
    r = rows[1]  # raw nfsdump: hex hosts, padding, real trailers, LONGPKT
    assert (r["client"], r["server"], r["xid"]) == ("0a000001.03f7", "0a000002.0801", 0xA1)
    assert (r["fh"], r["offset"], r["count"]) == (b"\x01\x02", 0x10, 0x1000)
    assert (r["ret_count"], r["eof"], r["status"], r["file_size"]) == (0x800, True, 0, 0xFF)
    r = rows[7]  # retransmitted on line 8 (upper/lower-case hex handle), dup reply on 10
    assert r["fh"] == b"\x0a\x0b" and as_ns(r["reply_time"]) == 1000 * NS + 300000 * 1000
    r = rows[11]  # orphan reply with an error status
    assert (r["status"], r["fh"], r["time"]) == (0x46, None, r["reply_time"])
    r = rows[12]  # v2 write with +|+: fields before the marker kept
    assert (r["offset"], r["count"], r["fh"], r["vers"]) == (0x2000, 0x400, b"\x0c\x0d", 2)
    r = rows[21]  # bad values -> nulls, line kept
    assert (r["fh"], r["offset"], r["count"]) == (None, None, None)
    r = rows[23]  # CRLF line, answered on 25
    assert (r["count"], r["ret_count"], r["eof"]) == (0x10, 0x10, True)
    r = rows[24]  # NUL bytes separate tokens like blanks: the line behind them is kept
    assert (r["xid"], r["fh"], r["offset"]) == (0xFE, b"\x1f", None)


def test_overlong_line_skipped(tmp_path: Path) -> None:
    p = tmp_path / "long.txt"
    good = b"1000.000001 1.0001 0.0801 U C3 a1 1 getattr fh 00 con = XXX len = XXX\n"
    p.write_bytes(good + b"\x00" * 5000 + b"\n" + good.replace(b"a1", b"a2") + b"\x00" * 100)
    for chunk in (1, 2, 1000):
        table, rep = read_nfsdump(p, max_line_bytes=200, chunk_lines=chunk)
        assert rep.records_total == 4
        assert rep.skipped == {"overlong_line": 1, "not_a_record": 1}
        assert table.num_rows == 2


def test_empty_and_whitespace_files(tmp_path: Path) -> None:
    p = tmp_path / "blank.txt"
    p.write_bytes(b"\n  \n")
    table, rep = read_nfsdump(p)
    assert table.num_rows == 0 and rep.records_total == 2 and rep.skipped == {"blank_line": 2}


# ---------------------------------------------------------------- chunking, files, formats
def _drop_index(t: pa.Table) -> pa.Table:
    return t.drop_columns(["source_index"])


@pytest.mark.parametrize("chunk", [1, 3, 7, 50])
def test_chunked_equals_whole(ellard: Path, ellard_table, chunk: int) -> None:
    whole, rep = ellard_table
    table, rep2 = read_nfsdump(ellard, chunk_lines=chunk)
    assert table.to_pylist() == whole.to_pylist()
    assert rep2.to_dict() | {"chunks": 0} == rep.to_dict() | {"chunks": 0}


def test_scan_yields_time_ordered_chunks(ellard: Path) -> None:
    scan = scan_nfsdump(ellard, chunk_lines=40)
    tables = list(scan)
    assert len(tables) >= 4
    for t in tables:
        validate(t)
        v = t.column("time").cast(pa.int64()).to_pylist()
        assert v == sorted(v)
    assert sum(t.num_rows for t in tables) == scan.report.rows == 105
    check_invariants(scan.report)


def test_directory_of_hourly_files(ellard: Path, ellard_table, tmp_path: Path) -> None:
    lines = ellard.read_bytes().splitlines(keepends=True)[:138]  # one hour, time-ordered-ish
    d = tmp_path / "hours"
    d.mkdir()
    # name order opposite to time order; a split between a call (70) and its reply (72)
    (d / "b-first.txt.gz").write_bytes(gzip.compress(b"".join(lines[:71])))
    (d / "a-second.txt").write_bytes(b"".join(lines[71:]))
    (d / "a-second.sum").write_text("getattr 12\nread 5\n")
    single = tmp_path / "one.txt"
    single.write_bytes(b"".join(lines))
    t1, r1 = read_nfsdump(single)
    t2, r2 = read_nfsdump(d)
    assert r2.extra["files"] == 2
    assert r2.records_total == r1.records_total == 138
    assert _drop_index(t2).to_pylist() == _drop_index(t1).to_pylist()
    assert (r2.matched, r2.orphan_calls, r2.orphan_replies) == (r1.matched, r1.orphan_calls,
                                                                 r1.orphan_replies)
    t3, _ = read_nfsdump([d / "a-second.txt", d / "b-first.txt.gz"])
    assert _drop_index(t3).to_pylist() == _drop_index(t1).to_pylist()


def test_sniff_and_read_trace(ellard: Path, tmp_path: Path) -> None:
    head = ellard.read_bytes()[:4096]
    assert sniff(head, ellard.name)
    assert not sniff(b"time,file,offset,count\n1,2,3,4\n", "x.csv")
    assert not sniff(b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00", "x.pcap")
    assert not sniff(b"", "empty")
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(ellard.read_bytes()))
    assert sniff_format(gz) == "nfsdump"
    table, rep = read_trace(gz)
    assert rep.records_total == 176 and table.num_rows == 105


def test_public_api_names() -> None:
    import seqheur

    assert seqheur.read_nfsdump is read_nfsdump
    assert seqheur.scan_nfsdump is scan_nfsdump


def test_times_beyond_int64_ns_are_bad_time(tmp_path: Path) -> None:
    # found by the fuzz test: 11-digit seconds overflowed int64 nanoseconds
    p = tmp_path / "t.txt"
    p.write_bytes(b"99999999999.000000 1.0001 0.0801 U C3 a1 1 getattr fh 00 con = XXX len = XXX\n"
                  b"9223372036.000000 1.0001 0.0801 U C3 a2 1 getattr fh 00 con = XXX len = XXX\n"
                  b"9223372035.999999 1.0001 0.0801 U C3 a3 1 getattr fh 00 con = XXX len = XXX\n")
    table, rep = read_nfsdump(p)
    assert rep.skipped == {"bad_time": 2}
    assert as_ns(table.column("time")[0].as_py()) == 9223372035 * NS + 999999 * 1000


def _call(t: str, xid: str, client: str = "1.0001", op: str = "read") -> bytes:
    return (f"{t} {client} 0.0801 U C3 {xid} 6 {op} fh 0a0b off 0 count 2000 "
            f"con = XXX len = XXX\n").encode()


def _reply(t: str, xid: str, client: str = "1.0001", op: str = "read") -> bytes:
    return (f"{t} 0.0801 {client} U R3 {xid} 6 {op} OK size 4000 count 2000 eof 0 "
            f"status=XXX pl = XXX con = XXX len = XXX\n").encode()


@pytest.mark.parametrize("chunk", [1, 2, 3, 100])
def test_retransmissions_across_chunks(tmp_path: Path, chunk: int) -> None:
    p = tmp_path / "r.txt"
    p.write_bytes(_call("10.000000", "a1") + _reply("10.001000", "a1")
                  + _call("11.000000", "a1") + _reply("11.001000", "a1")   # retransmission
                  + _call("12.000000", "a1", op="getattr")                  # same xid, new op
                  + _call("100.000000", "a1"))                              # beyond the window
    table, rep = read_nfsdump(p, chunk_lines=chunk, window=30.0)
    check_invariants(rep)
    assert (rep.retransmissions, rep.extra["duplicate_replies"]) == (1, 1)
    assert (rep.matched, rep.orphan_calls, rep.orphan_replies) == (1, 2, 0)
    assert table.column("source_index").to_pylist() == [1, 5, 6]
    assert as_ns(table.column("reply_time")[0].as_py()) == 10 * NS + 1_000_000


@pytest.mark.parametrize("chunk", [1, 4, 100])
def test_late_reply_after_window_is_an_orphan(tmp_path: Path, chunk: int) -> None:
    p = tmp_path / "late.txt"
    lines = [_call("10.000000", "b1")] + [_call(f"{20 + i}.000000", f"c{i}") for i in range(3)]
    lines += [_reply(f"{20 + i}.500000", f"c{i}") for i in range(3)]
    lines += [_reply("50.000000", "b1")]  # 40 s after its call: window is 5 s
    p.write_bytes(b"".join(lines))
    table, rep = read_nfsdump(p, chunk_lines=chunk, window=5.0)
    check_invariants(rep)
    # the same answer whatever the chunking
    assert (rep.matched, rep.orphan_calls, rep.orphan_replies) == (3, 1, 1)
    assert table.column("source_index").to_pylist() == [1, 2, 3, 4, 8]


def test_many_hosts_grow_the_host_table(tmp_path: Path) -> None:
    p = tmp_path / "hosts.txt"
    n = 5000  # the host table starts with room for 1024
    body = b"".join(_call(f"{1000 + i}.000000", f"{i + 1:x}", client=f"{i}.03ff")
                    + _reply(f"{1000 + i}.000500", f"{i + 1:x}", client=f"{i}.03ff")
                    for i in range(n))
    p.write_bytes(body)
    for chunk in (777, 1 << 18):
        table, rep = read_nfsdump(p, chunk_lines=chunk)
        check_invariants(rep)
        assert rep.matched == n and table.num_rows == n
        assert table.column("client").to_pylist() == [f"{i}.03ff" for i in range(n)]
        assert set(table.column("server").to_pylist()) == {"0.0801"}


def test_scan_twice_counts_once(ellard: Path) -> None:
    scan = scan_nfsdump(ellard, chunk_lines=50)
    first = sum(t.num_rows for t in scan)
    second = sum(t.num_rows for t in scan)
    assert first == second == scan.report.rows == 105
    assert scan.report.records_total == 176
