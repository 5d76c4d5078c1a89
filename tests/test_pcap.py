"""pcap/pcapng ingest: real captures, crafted captures with known answers, bad input."""

from __future__ import annotations

import gc
import gzip
import io
import random
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

from seqheur.errors import IngestError
from seqheur.ingest.pcap import read_pcap, scan_pcap, sniff
from seqheur.ingest.pcap import synth as S
from seqheur.schema import validate

CAPS = "captures"


def _plain(table: pa.Table) -> pa.Table:
    """Times as int64 ns (Python datetimes cannot hold nanoseconds)."""
    for name in ("time", "reply_time"):
        i = table.column_names.index(name)
        table = table.set_column(i, name, table.column(name).cast(pa.int64()))
    return table


def _rows(table: pa.Table, op: str | None = None) -> list[dict]:
    rows = _plain(table).to_pylist()
    return [r for r in rows if op is None or r["op"] == op]


# --- real captures ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "nfsv3-udp-wireshark-sample.pcap", "nfsv2-udp-sample.pcap", "zeek-nfs_write.pcap",
    "nfstrace-eth-ipv4-tcp-nfsv41.pcap", "nfstrace-eth-ipv4-udp-nfsv3-dup-retransm.pcap"])
def test_real_capture_accounting(shared_dir: Path, name: str) -> None:
    table, rep = read_pcap(shared_dir / CAPS / name)
    validate(table)
    rep.check()
    assert rep.records_total == rep.parsed + rep.skipped_total > 0
    assert rep.rows == table.num_rows > 0
    assert table.column("source_index").to_pylist() == sorted(table.column("source_index").to_pylist()) \
        or name.startswith("nfstrace-eth-ipv4-tcp")


def test_nfsv3_sample_read(shared_dir: Path) -> None:
    table, rep = read_pcap(shared_dir / CAPS / "nfsv3-udp-wireshark-sample.pcap")
    assert (rep.calls, rep.replies, rep.matched) == (58, 58, 58)
    assert rep.extra["rpc_programs"] == {"nfs": 58, "mount": 3, "portmap": 3}
    read = [r for r in _rows(table, "read") if r["xid"] == 0x5E1D0C02]
    assert len(read) == 1
    r = read[0]
    assert r["fh_crc32"] == 0xA5FCF973 and zlib.crc32(r["fh"]) == 0xA5FCF973
    assert (r["offset"], r["count"], r["ret_count"], r["eof"], r["status"], r["file_size"]) == \
        (0, 16384, 11, True, 0, 11)
    assert r["client"] == "139.25.22.2:1022" and r["server"] == "139.25.22.102:2049"
    assert r["transport"] == "udp" and r["vers"] == 3 and r["source_index"] == 87
    assert r["reply_time"] >= r["time"]
    ops = set(table.column("op").to_pylist())
    assert {"null", "getattr", "lookup", "read", "write", "readdir", "fsstat"} <= ops


def test_nfsv2_sample(shared_dir: Path) -> None:
    table, rep = read_pcap(shared_dir / CAPS / "nfsv2-udp-sample.pcap")
    assert rep.calls == 73 and rep.orphan_calls == 0
    assert set(table.column("vers").to_pylist()) == {2}
    w = [r for r in _rows(table, "write") if r["xid"] == 0x5E1D0BBC][0]
    assert (w["fh_crc32"], w["offset"], w["count"], w["status"]) == (0xB27328CE, 0, 6, 0)
    r = [r for r in _rows(table, "read") if r["xid"] == 0x5E1D0BC2][0]
    assert (r["fh_crc32"], r["offset"], r["count"], r["ret_count"]) == (0xA5FCF973, 0, 8192, 11)


def test_zeek_two_rpcs_in_one_segment(shared_dir: Path) -> None:
    table, rep = read_pcap(shared_dir / CAPS / "zeek-nfs_write.pcap")
    per_frame: dict[int, int] = {}
    for r in _plain(table).to_pylist():
        per_frame[r["source_index"]] = per_frame.get(r["source_index"], 0) + 1
    assert per_frame.get(67) == 2
    w = _rows(table, "write")
    assert len(w) == 1 and (w[0]["count"], w[0]["ret_count"], w[0]["status"]) == (13, 13, 0)
    assert rep.extra["rpc_programs"]["nfs_acl"] == 2  # counted, no rows
    assert rep.skipped == {"not_ip": 1, "tcp_no_payload": 42}


def test_nfsv41_compounds(shared_dir: Path) -> None:
    table, rep = read_pcap(shared_dir / CAPS / "nfstrace-eth-ipv4-tcp-nfsv41.pcap")
    assert set(table.column("vers").to_pylist()) == {4}
    assert {r["minor"] for r in _plain(table).to_pylist() if r["op"] != "null"} == {1}
    reads = _rows(table, "read")
    first = [r for r in reads if r["xid"] == 0xA497EDC1][0]
    assert (first["fh_crc32"], first["offset"], first["count"], first["ret_count"], first["eof"],
            first["status"]) == (0xE876ECAE, 0, 1509, 1509, True, 0)
    writes = _rows(table, "write")
    assert writes and all(w["fh"] is not None and w["ret_count"] == w["count"] for w in writes)
    ops = set(table.column("op").to_pylist())
    assert {"read", "write", "getattr", "lookup", "open", "close"} <= ops
    assert rep.extra["rpc_programs"].get("nfs4_callback", 0) >= 1
    # EXCHANGE_ID, CREATE_SESSION, DESTROY_SESSION, SECINFO_NO_NAME, DESTROY_CLIENTID and
    # RECLAIM_COMPLETE are decoded: a clean v4.1 capture has no unknown op
    assert rep.extra["nfs4_unknown_ops"] == 0


def test_ip_fragments_and_retransmissions(shared_dir: Path) -> None:
    table, rep = read_pcap(shared_dir / CAPS / "nfstrace-eth-ipv4-udp-nfsv3-dup-retransm.pcap")
    w = _rows(table, "write")
    assert len(w) == 12 and len({r["xid"] for r in w}) == 12
    assert rep.retransmissions == 4 and rep.orphan_calls == 1
    first = [r for r in w if r["xid"] == 0xCD6B855E][0]
    assert (first["offset"], first["count"], first["ret_count"], first["fh_crc32"]) == \
        (52543488, 16384, 16384, 0xAB18836A)
    assert rep.extra["ip_datagrams_reassembled"] >= 12


# --- crafted captures ----------------------------------------------------------------------


def _write(tmp_path: Path, build, name: str = "c.pcap", **kw) -> Path:
    buf = io.BytesIO()
    cap = S.CaptureWriter(buf, **kw)
    build(cap)
    p = tmp_path / name
    p.write_bytes(buf.getvalue())
    return p


def _v3_reads(conv: S.Conversation, n: int, size: int, xid0: int = 100, fh: bytes = b"F" * 32,
              **send) -> list[tuple]:
    want = []
    for i in range(n):
        xid = xid0 + i
        conv.send(0, S.rpc_call(xid, 100003, 3, 6, S.nfs3_read_call(fh, i * size, size)), **send)
        conv.send(1, S.rpc_reply(xid, S.nfs3_read_reply(b"d" * size, i == n - 1, n * size)), **send)
        want.append((xid, i * size, size, size, i == n - 1, 0, n * size))
    return want


def _got(table: pa.Table) -> list[tuple]:
    return [(r["xid"], r["offset"], r["count"], r["ret_count"], r["eof"], r["status"],
             r["file_size"]) for r in _rows(table, "read")]


CLIENT = (bytes([192, 168, 0, 2]), 1001)
SERVER = (bytes([192, 168, 0, 1]), 2049)


@pytest.mark.parametrize("kw", [
    {}, {"big_endian": True}, {"nanosecond": True}, {"big_endian": True, "nanosecond": True},
    {"fmt": "pcapng"}, {"fmt": "pcapng", "big_endian": True},
    {"link": S.LINK_RAW}, {"link": S.LINK_NULL}, {"link": S.LINK_SLL}, {"link": S.LINK_SLL2}])
@pytest.mark.parametrize("transport", ["udp", "tcp"])
def test_containers_and_links(tmp_path: Path, kw: dict, transport: str) -> None:
    want: list = []

    def build(cap):
        c = S.Conversation(cap, transport, CLIENT, SERVER)
        if transport == "tcp":
            c.handshake()
        want.extend(_v3_reads(c, 5, 4096))

    p = _write(tmp_path, build, **kw)
    table, rep = read_pcap(p)
    assert _got(table) == want
    assert rep.orphan_calls == rep.orphan_replies == 0
    assert table.column("client").to_pylist()[0] == "192.168.0.2:1001"
    assert table.column("transport").to_pylist()[0] == transport
    t = table.column("time").cast(pa.int64()).to_pylist()
    assert t[0] > 10**18 and (t[0] % 1000 == 0 or kw.get("nanosecond") or kw.get("fmt"))


def test_pcapng_interfaces_and_resolution(tmp_path: Path) -> None:
    want: list = []

    def build(cap):
        a = S.Conversation(cap, "udp", CLIENT, SERVER, iface=0, link=S.LINK_ETHERNET)
        b = S.Conversation(cap, "tcp", (bytes([192, 168, 0, 3]), 1002), SERVER, iface=1,
                           link=S.LINK_RAW)
        a.t = b.t = 1_600_000_000_123_456_789
        b.handshake()
        want.extend(_v3_reads(a, 2, 1000, 10))
        want.extend(_v3_reads(b, 2, 1000, 20))

    p = _write(tmp_path, build, fmt="pcapng",
               interfaces=((S.LINK_ETHERNET, 9), (S.LINK_RAW, 0x80 | 20)))
    table, rep = read_pcap(p)
    assert sorted(_got(table)) == sorted(want)
    times = table.column("time").cast(pa.int64()).to_pylist()
    assert min(times) // 10**9 == 1_600_000_000
    assert rep.skipped == {"tcp_no_payload": 3 + 2}  # handshake + one ACK per two records


def test_ipv6_and_vlan(tmp_path: Path) -> None:
    want: list = []

    def build(cap):
        c = S.Conversation(cap, "tcp", (b"\x20\x01" + b"\0" * 13 + b"\x02", 700),
                           (b"\x20\x01" + b"\0" * 13 + b"\x01", 2049), vlan=5)
        c.handshake()
        want.extend(_v3_reads(c, 3, 9000))

    table, _ = read_pcap(_write(tmp_path, build))
    assert _got(table) == want
    assert table.column("client").to_pylist()[0] == "[2001::2]:700"


def test_tcp_record_marking_edge_cases(tmp_path: Path) -> None:
    """Multi-fragment records, several records per segment, records spanning segments."""
    want: list = []

    def build(cap):
        c = S.Conversation(cap, "tcp", CLIENT, SERVER)
        c.handshake()
        want.extend(_v3_reads(c, 2, 20000, 1, frag_sizes=(40, 8)))
        # three calls in one segment, then their replies in one stream of segments
        calls = b"".join(S.record(S.rpc_call(50 + i, 100003, 3, 6, S.nfs3_read_call(b"G" * 28, i, 7)))
                         for i in range(3))
        c._emit([c.tcp_segment(0, calls)])
        c.seq[0] += len(calls)
        reps = b"".join(S.record(S.rpc_reply(50 + i, S.nfs3_read_reply(b"x" * 7, False, 99)))
                        for i in range(3))
        c._emit([c.tcp_segment(1, p, seq=s) for s, p in c.segments(1, reps)])
        want.extend((50 + i, i, 7, 7, False, 0, 99) for i in range(3))

    table, rep = read_pcap(_write(tmp_path, build))
    assert _got(table) == want
    assert rep.extra["tcp_records_abandoned"] == 0


def test_tcp_out_of_order_retransmission_gap_and_midstream(tmp_path: Path) -> None:
    want: list = []

    def build(cap):
        c = S.Conversation(cap, "tcp", CLIENT, SERVER)
        # capture starts mid-stream: the tail of a reply nobody asked for, no SYN
        junk = S.record(S.rpc_reply(7, S.nfs3_read_reply(b"z" * 3000, False, 1)))
        segs = c.segments(1, junk)
        c._emit([c.tcp_segment(1, p, seq=s) for s, p in segs[1:]])
        # in order, then a reply whose segments arrive shuffled and with a duplicate
        want.extend(_v3_reads(c, 1, 100, 200))
        c.send(0, S.rpc_call(300, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 6000)))
        segs = c.segments(1, S.record(S.rpc_reply(300, S.nfs3_read_reply(b"q" * 6000, True, 6000))))
        order = [segs[i] for i in (0, 2, 1, 3, 1, 4)] + segs[5:]
        c._emit([c.tcp_segment(1, p, seq=s) for s, p in order])
        want.append((300, 0, 6000, 6000, True, 0, 6000))
        # a reply with a lost segment in the middle: the record is abandoned, stream resyncs
        c.send(0, S.rpc_call(400, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 6000)))
        segs = c.segments(1, S.record(S.rpc_reply(400, S.nfs3_read_reply(b"q" * 6000, True, 6000))))
        c._emit([c.tcp_segment(1, p, seq=s) for s, p in segs[:2] + segs[3:]])
        want.append((400, 0, 6000, None, None, None, None))
        want.extend(_v3_reads(c, 2, 100, 500))

    table, rep = read_pcap(_write(tmp_path, build))
    assert _got(table) == want
    assert rep.skipped["tcp_unsynced"] >= 1
    assert rep.skipped["tcp_retransmission"] == 1
    assert rep.extra["tcp_gaps"] == 1 and rep.extra["tcp_records_abandoned"] >= 1
    assert rep.orphan_calls == 1


def test_udp_fragments_overlap_and_duplicates(tmp_path: Path) -> None:
    def build(cap):
        c = S.Conversation(cap, "udp", CLIENT, SERVER, mtu=600)
        c.send(0, S.rpc_call(1, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 3000)))
        frags = c.udp_packets(1, S.rpc_reply(1, S.nfs3_read_reply(b"r" * 3000, True, 3000)))
        c._emit([frags[i] for i in (2, 0, 0, 1, 3, 4)] + frags[5:])
        c.send(0, S.rpc_call(2, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 3000, 10)))
        frags = c.udp_packets(1, S.rpc_reply(2, S.nfs3_read_reply(b"r" * 3000, False, 3000)))
        c._emit(frags[:-1])  # never completed

    table, rep = read_pcap(_write(tmp_path, build))
    got = _got(table)
    assert got[0] == (1, 0, 3000, 3000, True, 0, 3000)
    assert got[1][:3] == (2, 3000, 10) and got[1][3] is None
    assert rep.skipped["ip_fragment_duplicate"] == 1
    assert rep.skipped["ip_fragment_incomplete"] >= 5


def test_rpc_join_retransmission_orphans(tmp_path: Path) -> None:
    def build(cap):
        c = S.Conversation(cap, "udp", CLIENT, SERVER)
        call = S.rpc_call(9, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 10))
        c.send(0, call)
        c.send(0, call)  # retransmitted call
        rep = S.rpc_reply(9, S.nfs3_read_reply(b"x" * 10, True, 10))
        c.send(1, rep)
        c.send(1, rep)  # duplicate reply
        c.send(1, S.rpc_reply(77, S.nfs3_read_reply(b"x" * 10, True, 10)))  # orphan reply
        c.send(0, S.rpc_call(78, 100003, 3, 1, S.opaque(b"F" * 32)))       # orphan call
        c.send(0, S.rpc_call(79, 100005, 3, 1, b""))                       # MOUNT: counted
        c.send(1, S.rpc_reply(79, b"\0" * 4))
        d = S.Conversation(cap, "udp", CLIENT, (bytes([8, 8, 8, 8]), 53))
        d._emit(d.udp_packets(0, b"\x12\x34\x01\x00" + b"\0" * 20))        # DNS-like

    table, rep = read_pcap(_write(tmp_path, build))
    assert [r["xid"] for r in _plain(table).to_pylist()] == [9, 78]
    assert rep.retransmissions == 2 and rep.orphan_replies == 1 and rep.orphan_calls == 1
    assert rep.extra["rpc_programs"] == {"nfs": 2, "mount": 1}
    assert rep.skipped == {"udp_not_rpc": 1}
    assert _plain(table).to_pylist()[1]["op"] == "getattr" and _plain(table).to_pylist()[1]["status"] is None


def test_nfsv2_and_v4_crafted(tmp_path: Path) -> None:
    def build(cap):
        c = S.Conversation(cap, "tcp", CLIENT, SERVER)
        c.handshake()
        c.send(0, S.rpc_call(1, 100003, 2, 6, S.nfs2_read_call(b"2" * 32, 512, 100)))
        c.send(1, S.rpc_reply(1, S.nfs2_read_reply(b"y" * 100, 612)))
        fh = b"4" * 40
        c.send(0, S.rpc_call(2, 100003, 4, 1, S.nfs4_read_compound_ga(fh, 4096, 30000)))
        c.send(1, S.rpc_reply(2, S.nfs4_read_result(b"w" * 30000, False, 123456)))

    table, rep = read_pcap(_write(tmp_path, build))
    rows = _plain(table).to_pylist()
    v2 = rows[0]
    assert (v2["vers"], v2["op"], v2["offset"], v2["count"], v2["ret_count"], v2["file_size"]) == \
        (2, "read", 512, 100, 100, 612)
    assert v2["fh_crc32"] == zlib.crc32(b"2" * 32)
    read, ga = rows[1], rows[2]
    assert (read["op"], read["minor"], read["offset"], read["count"], read["ret_count"],
            read["eof"], read["status"]) == ("read", 1, 4096, 30000, 30000, False, 0)
    assert read["fh"] == b"4" * 40 and ga["fh"] == b"4" * 40
    # GETATTR's result lies after 30000 bytes of READ data: read from the kept record tail
    assert (ga["op"], ga["status"], ga["file_size"]) == ("getattr", 0, 123456)


def test_snaplen_truncated_packets(tmp_path: Path) -> None:
    want: list = []

    def build(cap):
        for transport in ("udp", "tcp"):
            c = S.Conversation(cap, transport, CLIENT, (SERVER[0], 2049 if transport == "udp" else 2050))
            if transport == "tcp":
                c.handshake()
            want.extend(_v3_reads(c, 3, 1200, 10 if transport == "udp" else 20))

    table, rep = read_pcap(_write(tmp_path, build, snaplen=200))
    assert sorted(_got(table)) == sorted(want)
    assert rep.parsed > 0 and rep.skipped.get("truncated_headers", 0) == 0


# --- bad input -----------------------------------------------------------------------------


def _small(tmp_path: Path) -> bytes:
    def build(cap):
        c = S.Conversation(cap, "tcp", CLIENT, SERVER)
        c.handshake()
        _v3_reads(c, 4, 3000)
    return _write(tmp_path, build, "small.pcap").read_bytes()


def test_truncated_last_packet(tmp_path: Path) -> None:
    data = _small(tmp_path)
    p = tmp_path / "cut.pcap"
    p.write_bytes(data[:-100])
    table, rep = read_pcap(p)
    assert rep.skipped.get("truncated_record") == 1 and "cut short" in rep.extra["stopped"]
    assert table.num_rows == 4  # the last reply is lost, its call stays (orphan)
    assert rep.orphan_calls == 1


def test_wrong_magic_zero_length_and_short_header(tmp_path: Path) -> None:
    p = tmp_path / "x.pcap"
    p.write_bytes(b"hello world, not a capture at all")
    with pytest.raises(IngestError, match="not a pcap"):
        read_pcap(p)
    p.write_bytes(b"")
    with pytest.raises(IngestError, match="empty"):
        read_pcap(p)
    p.write_bytes(b"\xd4\xc3\xb2\xa1\x02\x00")
    with pytest.raises(IngestError, match="cut short"):
        read_pcap(p)
    with pytest.raises(IngestError, match="no such file"):
        read_pcap(tmp_path / "missing.pcap")


def test_garbage_after_valid_header(tmp_path: Path) -> None:
    data = _small(tmp_path)
    rng = random.Random(3)
    p = tmp_path / "g.pcap"
    p.write_bytes(data[:24] + bytes(rng.randrange(256) for _ in range(5000)))
    table, rep = read_pcap(p)
    rep.check()
    assert rep.records_total >= 1
    p.write_bytes(data + b"\xff" * 64)  # a valid capture followed by garbage
    table, rep = read_pcap(p)
    assert table.num_rows == 4 and rep.skipped.get("corrupt_record") == 1


def test_gzip_and_chunking(tmp_path: Path) -> None:
    data = _small(tmp_path)
    p = tmp_path / "s.pcap.gz"
    p.write_bytes(gzip.compress(data))
    whole, rep = read_pcap(tmp_path / "small.pcap")
    gz, rep2 = read_pcap(p)
    assert gz.equals(whole) and rep2.records_total == rep.records_total
    scan = scan_pcap(tmp_path / "small.pcap", chunk_bytes=1 << 16)
    parts = list(scan)
    assert sum(t.num_rows for t in parts) == whole.num_rows
    assert scan.report.check().records_total == rep.records_total


def _walkers() -> int:
    import threading

    return sum(t.name == "seqheur-pcap-walk" for t in threading.enumerate())


def _windowed(tmp_path: Path) -> Path:
    """A capture of ~550 KB: many 64 KiB windows, READs answered in each."""
    def build(cap):
        _v3_reads(S.Conversation(cap, "udp", CLIENT, SERVER), 400, 1024)
    return _write(tmp_path, build, "windows.pcap")


def test_walk_thread_ends_with_an_abandoned_reader(tmp_path: Path, monkeypatch) -> None:
    """The thread walking ahead of the decoder stops when the reader stops mid-file."""
    from seqheur.ingest.pcap import _engine

    monkeypatch.setattr(_engine, "BATCH_ROWS", 1)  # a table after every window
    p = _windowed(tmp_path)
    whole, _ = read_pcap(p, chunk_bytes=1 << 16)
    batches = _engine.Decoder(p, 1 << 16).batches()
    first = next(batches)
    assert _walkers() == 1  # (it waits for arrays: it walks at most one batch ahead)
    batches.close()
    assert _walkers() == 0
    assert 0 < first.num_rows < whole.num_rows
    assert first.equals(whole.slice(0, first.num_rows))
    for table in scan_pcap(p, chunk_bytes=1 << 16):  # a loop left early drops its reader
        break
    del table
    gc.collect()
    assert _walkers() == 0


def test_walk_error_surfaces_in_its_place(tmp_path: Path, monkeypatch) -> None:
    """An error mapping a window reaches the reader after the earlier windows' rows, as it
    did when one thread walked and decoded."""
    from seqheur.ingest.pcap import _engine

    monkeypatch.setattr(_engine, "BATCH_ROWS", 1)
    p = _windowed(tmp_path)
    whole, _ = read_pcap(p, chunk_bytes=1 << 16)
    mapped = []
    real = _engine._prefault

    def prefault(mm):
        mapped.append(len(mm))
        if len(mapped) == 3:
            raise OSError("injected: third window")
        real(mm)

    monkeypatch.setattr(_engine, "_prefault", prefault)
    got = []
    with pytest.raises(OSError, match="third window"):
        for table in _engine.Decoder(p, 1 << 16).batches():
            got.append(table)
    assert len(got) == 2 and len(mapped) == 3
    assert pa.concat_tables(got).equals(whole.slice(0, sum(t.num_rows for t in got)))
    assert _walkers() == 0


def test_sniff() -> None:
    assert sniff(b"\xd4\xc3\xb2\xa1" + b"\0" * 20, "x")
    assert sniff(b"\xa1\xb2\x3c\x4d" + b"\0" * 20, "x")
    assert sniff(b"\x0a\x0d\x0d\x0a\x1c\0\0\0\x4d\x3c\x2b\x1a", "x")
    assert not sniff(b"0.000 1.0 2.0 C3 abc", "trace.txt")
    assert not sniff(b"\x0a\x0d\x0d\x0a\x1c\0\0\0xxxx", "x")


def test_pcapng_simple_and_obsolete_blocks(tmp_path: Path) -> None:
    """SPB (no timestamp, interface 0) and OPB packets, NRB and unknown blocks stepped over."""
    import struct

    frames: list[bytes] = []
    out = io.BytesIO()
    cap = S.CaptureWriter(out)  # used only to build Ethernet frames below
    c = S.Conversation(cap, "udp", CLIENT, SERVER)
    call = S.rpc_call(5, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 10))
    reply = S.rpc_reply(5, S.nfs3_read_reply(b"x" * 10, True, 10))
    for d, msg in ((0, call), (1, reply)):
        frames += [S.link_frame(S.LINK_ETHERNET, p) for p in c.udp_packets(d, msg)]

    def block(btype: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", btype, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    data = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    data += block(1, struct.pack("<HHI", 1, 0, 0))
    data += block(4, b"\0" * 8)                       # name resolution block
    data += block(0xBAD, b"custom")                   # unknown block type
    data += block(3, struct.pack("<I", len(frames[0])) + frames[0])               # SPB
    data += block(2, struct.pack("<HHIIII", 0, 0, 0, 1000, len(frames[1]), len(frames[1]))
                  + frames[1])                                                    # OPB
    data += block(6, struct.pack("<IIIII", 3, 0, 0, 4, 4) + b"\0" * 4)           # bad iface
    p = tmp_path / "blocks.pcapng"
    p.write_bytes(data)
    table, rep = read_pcap(p)
    assert _got(table) == [(5, 0, 10, 10, True, 0, 10)]
    assert rep.records_total == 3 and rep.skipped == {"bad_interface": 1}


def test_cli_ingest(tmp_path: Path, shared_dir: Path) -> None:
    import json

    from click.testing import CliRunner

    from seqheur.cli import cli

    out = tmp_path / "z.parquet"
    gz = tmp_path / "z.pcap.gz"
    gz.write_bytes(gzip.compress((shared_dir / CAPS / "zeek-nfs_write.pcap").read_bytes()))
    res = CliRunner().invoke(cli, ["ingest", str(gz), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output[res.output.index("{"):])
    assert doc["records_total"] == 153 and doc["rows"] == 45
    import pyarrow.parquet as pq
    assert pq.read_table(out).num_rows == 45


def test_rpcsec_gss_integrity_and_privacy(tmp_path: Path) -> None:
    def gss_cred(service: int, proc: int = 0) -> bytes:
        body = S.u32(1) + S.u32(proc) + S.u32(7) + S.u32(service) + S.opaque(b"handle")
        return S.u32(6) + S.opaque(body)

    def build(cap):
        c = S.Conversation(cap, "tcp", CLIENT, SERVER)
        c.handshake()
        args = S.nfs3_read_call(b"F" * 32, 8192, 4096)
        wrapped = S.u32(4 + len(args)) + S.u32(7) + args + S.opaque(b"mic")
        c.send(0, S.rpc_call(1, 100003, 3, 6, wrapped, cred=gss_cred(2)))
        res = S.nfs3_read_reply(b"x" * 4096, False, 1 << 20)
        c.send(1, S.u32(1) + S.u32(1) + S.u32(0) + S.u32(6) + S.opaque(b"cksum") + S.u32(0)
               + S.u32(4 + len(res)) + S.u32(7) + res + S.opaque(b"mic"))
        c.send(0, S.rpc_call(2, 100003, 3, 6, b"\x99" * 64, cred=gss_cred(3)))   # privacy
        c.send(0, S.rpc_call(3, 100003, 3, 0, b"", cred=gss_cred(1, proc=1)))    # INIT

    table, rep = read_pcap(_write(tmp_path, build))
    assert _got(table) == [(1, 8192, 4096, 4096, False, 0, 1 << 20)]
    assert rep.extra["rpcsec_gss_privacy"] == 1 and rep.extra["rpcsec_gss_control"] == 1


def test_reply_window_and_large_scan(tmp_path: Path) -> None:
    """70 000 calls answered out of order across row batches; a reply 200 s late is orphaned."""
    n = 70_000

    def build(cap):
        c = S.Conversation(cap, "udp", CLIENT, SERVER)
        for i in range(n):
            fh = S.fh_for(i // 1000)
            c.send(0, S.rpc_call(i, 100003, 3, 6, S.nfs3_read_call(fh, i * 512, 512)))
            if i >= 50:
                j = i - 50
                c.send(1, S.rpc_reply(j, S.nfs3_read_reply(b"", False, j)))
        for j in range(n - 50, n - 1):
            c.send(1, S.rpc_reply(j, S.nfs3_read_reply(b"", False, j)))
        c.t += 200 * 10**9
        c.send(1, S.rpc_reply(n - 1, S.nfs3_read_reply(b"", False, n - 1)))

    p = _write(tmp_path, build)
    scan = scan_pcap(p, chunk_bytes=1 << 20)
    parts = list(scan)
    assert len(parts) >= 2  # rows left in more than one batch
    table = pa.concat_tables(parts)
    rep = scan.report.check()
    assert table.num_rows == n and rep.orphan_calls == 1 and rep.orphan_replies == 1
    xs = table.column("xid").to_pylist()
    assert xs == list(range(n))
    crc = table.column("fh_crc32").to_pylist()
    assert all(crc[i] == zlib.crc32(S.fh_for(i // 1000)) for i in range(0, n, 997))
    fs = table.column("file_size").to_pylist()
    assert fs[:-1] == list(range(n - 1)) and fs[-1] is None


@pytest.mark.parametrize("tsresol", [100, 27, 28, 0x80 | 70, 0xFF])
def test_pcapng_extreme_timestamp_resolution(tmp_path: Path, tsresol: int) -> None:
    """if_tsresol up to 10^-127 or 2^-127 (found by the fuzzer: once a division by zero)."""
    import struct

    out = io.BytesIO()
    c = S.Conversation(S.CaptureWriter(out), "udp", CLIENT, SERVER)
    frame = S.link_frame(S.LINK_ETHERNET, c.udp_packets(
        0, S.rpc_call(5, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 10)))[0])

    def block(btype: int, body: bytes) -> bytes:
        body += b"\0" * (-len(body) % 4)
        return struct.pack("<II", btype, len(body) + 12) + body + struct.pack("<I", len(body) + 12)

    opts = struct.pack("<HHB3x", 9, 1, tsresol) + struct.pack("<HH", 0, 0)
    data = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    data += block(1, struct.pack("<HHI", 1, 0, 0) + opts)
    data += block(6, struct.pack("<IIIII", 0, 0xFFFFFFFF, 0xFFFFFFFF, len(frame), len(frame)) + frame)
    p = tmp_path / "res.pcapng"
    p.write_bytes(data)
    table, rep = read_pcap(p)
    assert table.num_rows == 1 and rep.records_total == 1


def test_nfsv41_session_ops_are_stepped_over(tmp_path: Path) -> None:
    """A COMPOUND of the v4.1 session set-up ops before SEQUENCE, PUTFH, READ: every op's
    arguments are skipped exactly, so the READ after them is found and none is unknown."""
    u32, opq = S.u32, S.opaque
    exchange_id = (u32(42) + b"V" * 8 + opq(b"client-owner") + u32(0x1)
                   + u32(1) + u32(2) + u32(7) + u32(0) + u32(1) + u32(3)  # SP4_MACH_CRED
                   + u32(1) + opq(b"kernel.org") + opq(b"Linux 6.18") + b"\0" * 12)
    chan = u32(0) + u32(1 << 20) * 2 + u32(4096) + u32(8) + u32(64) + u32(0)
    create_session = (u32(43) + b"C" * 8 + u32(1) + u32(3) + chan + chan + u32(0x40000000)
                      + u32(2) + u32(1) + u32(0) + opq(b"host") + u32(0) + u32(0)
                      + u32(2) + u32(1) + u32(2) + u32(0))
    rest = (u32(58) + u32(0) + u32(52) + u32(0) + u32(53) + b"S" * 16 + u32(1) * 4
            + u32(22) + opq(b"F" * 28) + u32(25) + b"\0" * 16 + S.u64(81920) + u32(8192))
    args = opq(b"setup") + u32(1) + u32(7) + exchange_id + create_session + rest

    def build(cap):
        c = S.Conversation(cap, "tcp", CLIENT, SERVER)
        c.handshake()
        c.send(0, S.rpc_call(5, 100003, 4, 1, args))

    table, rep = read_pcap(_write(tmp_path, build))
    read = [r for r in _plain(table).to_pylist() if r["op"] == "read"]
    assert len(read) == 1 and (read[0]["offset"], read[0]["count"]) == (81920, 8192)
    assert read[0]["fh"] == b"F" * 28 and read[0]["minor"] == 1
    assert rep.extra["nfs4_unknown_ops"] == 0


def test_skipped_frames_come_with_examples(tmp_path: Path) -> None:
    """As nfsdump ingest shows the first lines it skipped, pcap ingest names the first frames
    skipped for each reason (frame numbers count from 1), in the human output and the JSON."""
    def build(cap):
        c = S.Conversation(cap, "udp", CLIENT, SERVER)
        c.send(0, S.rpc_call(1, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, 0, 100)))
        # frame 2: an Ethernet frame of IPv4 cut inside its IP header
        cap.frame(5_000_000, b"\x00" * 12 + b"\x08\x00" + b"\x45" + b"\x00" * 9)
        c.send(1, S.rpc_reply(1, S.nfs3_read_reply(b"x" * 100, True, 100)))

    table, rep = read_pcap(_write(tmp_path, build))
    assert rep.skipped and rep.examples
    frame, reason, _ = rep.examples[0]
    assert frame == 2 and reason in rep.skipped
    assert rep.to_dict()["skipped_examples"][0]["record"] == 2
