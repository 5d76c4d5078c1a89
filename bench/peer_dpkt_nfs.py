"""The dpkt peer for bench_pcap: decode NFSv3 READ/WRITE from a pcap with dpkt + struct.

What a careful Python user would write: dpkt for Ethernet/IP/UDP/TCP headers, a dict for
IPv4 fragment reassembly, per-direction TCP byte buffers with RPC record marking (in-order
and buffered out-of-order segments), struct for RPC and NFSv3, a dict join of calls and
replies. It produces the same fields as seqheur (xid, fh CRC-32, offset, count, status,
returned count, eof) for READ and WRITE.

    python bench/peer_dpkt_nfs.py CAPTURE   # prints rows and a checksum
"""

from __future__ import annotations

import struct
import sys
import zlib

import dpkt

_U32 = struct.Struct(">I")


def decode(path: str) -> list[tuple]:
    frags: dict[tuple, dict] = {}
    streams: dict[tuple, list] = {}  # (src, sport, dst, dport) -> [next_seq, buffer, ooo]
    pending: dict[tuple, list] = {}
    rows: list[tuple] = []

    def rpc(msg: bytes, src: tuple, dst: tuple, proto: str) -> None:
        if len(msg) < 12:
            return
        xid, mtype = struct.unpack_from(">II", msg, 0)
        if mtype == 0:
            if len(msg) < 40:
                return
            rpcvers, prog, vers, proc, _, clen = struct.unpack_from(">6I", msg, 8)
            if rpcvers != 2 or prog != 100003 or vers != 3:
                return
            key = (src, dst, proto, xid)
            if key in pending:
                return  # retransmission
            p = 32 + ((clen + 3) & ~3)
            vlen = _U32.unpack_from(msg, p + 4)[0]
            p += 8 + ((vlen + 3) & ~3)
            row = [xid, proc, None, None, None, None, None, None]
            if proc in (6, 7):
                n = _U32.unpack_from(msg, p)[0]
                fh = msg[p + 4:p + 4 + n]
                p += 4 + ((n + 3) & ~3)
                off, cnt = struct.unpack_from(">QI", msg, p)
                row[2:5] = [zlib.crc32(fh), off, cnt]
            pending[key] = row
            rows.append(row)
        elif mtype == 1:
            row = pending.get((dst, src, proto, xid))
            if row is None or row[5] is not None or len(msg) < 24:
                return
            vlen = _U32.unpack_from(msg, 16)[0]
            p = 20 + ((vlen + 3) & ~3)
            if _U32.unpack_from(msg, p)[0] != 0:
                return
            p += 4
            status = _U32.unpack_from(msg, p)[0]
            row[5] = status
            p += 4
            if row[1] == 6:
                if _U32.unpack_from(msg, p)[0]:
                    p += 84
                p += 4
                if status == 0:
                    row[6], eof = struct.unpack_from(">II", msg, p)
                    row[7] = bool(eof)
            elif row[1] == 7:
                if _U32.unpack_from(msg, p)[0]:
                    p += 24
                p += 4
                if _U32.unpack_from(msg, p)[0]:
                    p += 84
                p += 4
                if status == 0:
                    row[6] = _U32.unpack_from(msg, p)[0]

    def tcp_data(key: tuple, seg: dpkt.tcp.TCP, src: tuple, dst: tuple) -> None:
        st = streams.get(key)
        if seg.flags & dpkt.tcp.TH_SYN:
            streams[key] = [(seg.seq + 1) & 0xFFFFFFFF, bytearray(), {}]
            return
        data = seg.data
        if not data:
            return
        if st is None:
            st = streams[key] = [seg.seq, bytearray(), {}]
        if seg.seq != st[0]:
            if ((seg.seq - st[0]) & 0xFFFFFFFF) < (1 << 31):
                st[2][seg.seq] = bytes(data)  # ahead: wait for the hole
            return
        st[1] += data
        st[0] = (st[0] + len(data)) & 0xFFFFFFFF
        while st[0] in st[2]:
            more = st[2].pop(st[0])
            st[1] += more
            st[0] = (st[0] + len(more)) & 0xFFFFFFFF
        buf = st[1]
        pos = 0
        msg = b""
        while len(buf) - pos >= 4:
            mark = _U32.unpack_from(buf, pos)[0]
            n = mark & 0x7FFFFFFF
            if len(buf) - pos < 4 + n:
                break
            # whole records only: gather fragments up to the last one
            q, parts, complete = pos, [], False
            while len(buf) - q >= 4:
                m = _U32.unpack_from(buf, q)[0]
                ln = m & 0x7FFFFFFF
                if len(buf) - q < 4 + ln:
                    break
                parts.append(bytes(buf[q + 4:q + 4 + ln]))
                q += 4 + ln
                if m & 0x80000000:
                    complete = True
                    break
            if not complete:
                break
            msg = b"".join(parts)
            rpc(msg, src, dst, "tcp")
            pos = q
        if pos:
            del buf[:pos]

    with open(path, "rb") as f:
        for _ts, raw in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(raw)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP):
                continue
            if ip.mf or ip.offset:
                key = (ip.src, ip.dst, ip.id, ip.p)
                parts = frags.setdefault(key, {})
                payload = bytes(ip)[ip.hl * 4:ip.len]
                parts[ip.offset] = payload
                if not ip.mf:
                    parts[-1] = ip.offset + len(payload)
                total = parts.get(-1)
                if total is None or sum(len(v) for k, v in parts.items() if k >= 0) < total:
                    continue
                del frags[key]
                data = b"".join(parts[k] for k in sorted(k for k in parts if k >= 0))
                if ip.p != dpkt.ip.IP_PROTO_UDP:
                    continue
                l4 = dpkt.udp.UDP(data)
            else:
                l4 = ip.data
            if isinstance(l4, dpkt.udp.UDP):
                rpc(bytes(l4.data), (ip.src, l4.sport), (ip.dst, l4.dport), "udp")
            elif isinstance(l4, dpkt.tcp.TCP):
                src, dst = (ip.src, l4.sport), (ip.dst, l4.dport)
                tcp_data((src, dst), l4, src, dst)
    return [tuple(r) for r in rows]


def main() -> None:
    rows = decode(sys.argv[1])
    reads = [r for r in rows if r[1] == 6]
    print(len(reads), sum(r[4] or 0 for r in reads), sum(r[6] or 0 for r in reads))


if __name__ == "__main__":
    main()
