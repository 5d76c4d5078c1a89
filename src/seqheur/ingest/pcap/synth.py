"""Write valid pcap/pcapng captures of NFS-over-RPC traffic (for tests and benchmarks).

A :class:`CaptureWriter` turns IP packets into frames of a chosen link type and container;
:class:`Conversation` speaks UDP or TCP (handshake, MSS segmentation, ACKs, IPv4 fragments)
between one client and one server; the ``nfs*`` helpers build RPC calls and replies. Each
exchange also records the row the decoder should produce, so tests compare against ground
truth. ``generate_read_capture`` writes the benchmark input: NFSv3 READs of several files
over UDP and TCP at MTU 1500.
"""

from __future__ import annotations

import gzip
import os
import random
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

# --- XDR / RPC -----------------------------------------------------------------------------


def u32(v: int) -> bytes:
    return struct.pack(">I", v & 0xFFFFFFFF)


def u64(v: int) -> bytes:
    return struct.pack(">Q", v)


def opaque(b: bytes) -> bytes:
    return u32(len(b)) + b + b"\0" * (-len(b) % 4)


def auth_sys(machine: bytes = b"client", uid: int = 0, gid: int = 0) -> bytes:
    body = u32(0x12345678) + opaque(machine) + u32(uid) + u32(gid) + u32(1) + u32(gid)
    return u32(1) + opaque(body)


def rpc_call(xid: int, prog: int, vers: int, proc: int, args: bytes,
             cred: bytes | None = None) -> bytes:
    cred = auth_sys() if cred is None else cred
    return (u32(xid) + u32(0) + u32(2) + u32(prog) + u32(vers) + u32(proc) + cred
            + u32(0) + u32(0) + args)


def rpc_reply(xid: int, results: bytes, accept: int = 0) -> bytes:
    return u32(xid) + u32(1) + u32(0) + u32(0) + u32(0) + u32(accept) + results


def fattr3(size: int) -> bytes:
    return (u32(1) + u32(0o644) + u32(1) + u32(0) + u32(0) + u64(size) + u64(size)
            + u32(0) + u32(0) + u64(1) + u64(7) + b"\0" * 24)


def nfs3_read_call(fh: bytes, offset: int, count: int) -> bytes:
    return opaque(fh) + u64(offset) + u32(count)


def nfs3_read_reply(data: bytes, eof: bool, size: int, status: int = 0) -> bytes:
    if status:
        return u32(status) + u32(0)
    return u32(0) + u32(1) + fattr3(size) + u32(len(data)) + u32(int(eof)) + opaque(data)


def nfs2_read_call(fh: bytes, offset: int, count: int) -> bytes:
    return fh + u32(offset) + u32(count) + u32(count)


def nfs2_read_reply(data: bytes, size: int) -> bytes:
    fattr = u32(1) + u32(0o644) + u32(1) + u32(0) + u32(0) + u32(size) + b"\0" * 44
    return u32(0) + fattr + opaque(data)


def nfs4_read_result(data: bytes, eof: bool, size: int) -> bytes:
    seq = u32(53) + u32(0) + b"S" * 16 + u32(1) + u32(0) + u32(0) + u32(0) + u32(0)
    getattr_ = u32(9) + u32(0) + u32(1) + u32(1 << 4) + opaque(u64(size))
    return (u32(0) + opaque(b"read") + u32(4) + seq + u32(22) + u32(0)
            + u32(25) + u32(0) + u32(int(eof)) + opaque(data) + getattr_)


def nfs4_read_compound_ga(fh: bytes, offset: int, count: int, minor: int = 1) -> bytes:
    """SEQUENCE, PUTFH, READ, GETATTR(size) — GETATTR lies after the READ data in the reply."""
    seq = u32(53) + b"S" * 16 + u32(1) + u32(0) + u32(0) + u32(0)
    return (opaque(b"read") + u32(minor) + u32(4) + seq + u32(22) + opaque(fh)
            + u32(25) + b"\0" * 16 + u64(offset) + u32(count) + u32(9) + u32(1) + u32(1 << 4))


# --- link + IP -----------------------------------------------------------------------------

LINK_ETHERNET, LINK_RAW, LINK_NULL, LINK_SLL, LINK_SLL2 = 1, 101, 0, 113, 276


def _csum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(src: bytes, dst: bytes, proto: int, payload: bytes, ident: int = 0,
         frag_off: int = 0, more: bool = False) -> bytes:
    flags = (0x2000 if more else 0) | (frag_off >> 3)
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), ident & 0xFFFF, flags, 64,
                      proto, 0, src, dst)
    hdr = hdr[:10] + struct.pack(">H", _csum(hdr)) + hdr[12:]
    return hdr + payload


def ipv6(src: bytes, dst: bytes, proto: int, payload: bytes) -> bytes:
    return struct.pack(">IHBB16s16s", 6 << 28, len(payload), proto, 64, src, dst) + payload


def link_frame(link: int, ip: bytes, vlan: int | None = None) -> bytes:
    v6 = (ip[0] >> 4) == 6
    et = 0x86DD if v6 else 0x0800
    if link == LINK_ETHERNET:
        tag = struct.pack(">HH", 0x8100, vlan) if vlan is not None else b""
        return b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + tag + struct.pack(">H", et) + ip
    if link == LINK_RAW:
        return ip
    if link == LINK_NULL:
        return struct.pack("<I", 10 if v6 else 2) + ip
    if link == LINK_SLL:
        return struct.pack(">HHH8sH", 0, 1, 6, b"\x02\0\0\0\0\x01\0\0", et) + ip
    if link == LINK_SLL2:
        return struct.pack(">HHIHBB8s", et, 0, 1, 1, 0, 6, b"\x02\0\0\0\0\x01\0\0") + ip
    raise ValueError(f"unsupported link type {link}")


# --- containers ----------------------------------------------------------------------------


class CaptureWriter:
    """Write frames to a pcap (either byte order, µs or ns) or pcapng (several interfaces)."""

    def __init__(self, out: BinaryIO, *, fmt: str = "pcap", link: int = LINK_ETHERNET,
                 big_endian: bool = False, nanosecond: bool = False, snaplen: int = 262144,
                 interfaces: tuple[tuple[int, int], ...] = ()) -> None:
        self.out = out
        self.fmt = fmt
        self.link = link
        self.snaplen = snaplen
        self.e = ">" if big_endian else "<"
        self.ns = nanosecond
        self.frames = 0
        self.bytes = 0
        # pcapng: (link type, tsresol byte) per interface
        self.ifaces = interfaces or ((link, 9 if nanosecond else 6),)
        if fmt == "pcap":
            magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
            self._w(struct.pack(self.e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, link))
        elif fmt == "pcapng":
            shb = struct.pack(self.e + "IHHq", 0x1A2B3C4D, 1, 0, -1)
            self._block(0x0A0D0D0A, shb)
            for lt, res in self.ifaces:
                opts = struct.pack(self.e + "HHB3x", 9, 1, res) + struct.pack(self.e + "HH", 0, 0)
                self._block(1, struct.pack(self.e + "HHI", lt, 0, snaplen) + opts)
        else:
            raise ValueError(f"unknown container {fmt!r}")

    def _w(self, b: bytes) -> None:
        self.out.write(b)
        self.bytes += len(b)

    def _block(self, btype: int, body: bytes) -> None:
        body += b"\0" * (-len(body) % 4)
        n = len(body) + 12
        self._w(struct.pack(self.e + "II", btype, n) + body + struct.pack(self.e + "I", n))

    def frame(self, ts_ns: int, data: bytes, iface: int = 0, caplen: int | None = None) -> None:
        wire = len(data)
        cap = min(wire, self.snaplen if caplen is None else caplen)
        data = data[:cap]
        self.frames += 1
        if self.fmt == "pcap":
            sec, frac = divmod(ts_ns, 1_000_000_000)
            if not self.ns:
                frac //= 1000
            self._w(struct.pack(self.e + "IIII", sec, frac, cap, wire) + data)
            return
        res = self.ifaces[iface][1]
        ticks = ts_ns // (10 ** (9 - res)) if not res & 0x80 else (ts_ns << (res & 0x7F)) // 10**9
        self._block(6, struct.pack(self.e + "IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF,
                                   cap, wire) + data)


# --- conversations -------------------------------------------------------------------------


@dataclass
class Conversation:
    """One client<->server endpoint pair over UDP or TCP, writing frames as it talks."""

    cap: CaptureWriter
    transport: str
    client: tuple[bytes, int]
    server: tuple[bytes, int]
    mtu: int = 1500
    iface: int = 0
    vlan: int | None = None
    link: int | None = None
    rng: random.Random = field(default_factory=lambda: random.Random(1))
    seq: list[int] = field(default_factory=lambda: [1000, 900000])
    ident: int = 1
    t: int = 1_000_000_000_000_000_000
    ack_every: int = 2
    _unacked: int = 0

    @property
    def v6(self) -> bool:
        return len(self.client[0]) == 16

    def _ip(self, d: int, proto: int, payload: bytes) -> list[bytes]:
        src, dst = (self.client[0], self.server[0]) if d == 0 else (self.server[0], self.client[0])
        if self.v6:
            return [ipv6(src, dst, proto, payload)]
        self.ident += 1
        if 20 + len(payload) <= self.mtu:
            return [ipv4(src, dst, proto, payload, self.ident)]
        step = (self.mtu - 20) & ~7
        out = []
        for off in range(0, len(payload), step):
            out.append(ipv4(src, dst, proto, payload[off:off + step], self.ident, off,
                            off + step < len(payload)))
        return out

    def _emit(self, packets: list[bytes], dt: int = 2000) -> None:
        for p in packets:
            self.t += dt
            self.cap.frame(self.t, link_frame(self.link or self.cap.link, p, self.vlan), self.iface)

    def _ports(self, d: int) -> tuple[int, int]:
        return (self.client[1], self.server[1]) if d == 0 else (self.server[1], self.client[1])

    def udp_packets(self, d: int, payload: bytes) -> list[bytes]:
        sp, dp = self._ports(d)
        return self._ip(d, 17, struct.pack(">HHHH", sp, dp, 8 + len(payload), 0) + payload)

    def tcp_segment(self, d: int, payload: bytes, flags: int = 0x18, seq: int | None = None
                    ) -> bytes:
        sp, dp = self._ports(d)
        s = self.seq[d] if seq is None else seq
        hdr = struct.pack(">HHIIBBHHH", sp, dp, s & 0xFFFFFFFF, self.seq[1 - d] & 0xFFFFFFFF,
                          5 << 4, flags, 65535, 0, 0)
        return self._ip(d, 6, hdr + payload)[0]

    def handshake(self) -> None:
        self._emit([self.tcp_segment(0, b"", 0x02)])
        self.seq[0] += 1
        self._emit([self.tcp_segment(1, b"", 0x12)])
        self.seq[1] += 1
        self._emit([self.tcp_segment(0, b"", 0x10)])

    def segments(self, d: int, stream: bytes) -> list[tuple[int, bytes]]:
        """(seq, payload) pieces of ``stream`` at the MSS, advancing the sequence number."""
        mss = self.mtu - (60 if self.v6 else 40)
        out = []
        for off in range(0, len(stream), mss):
            out.append((self.seq[d], stream[off:off + mss]))
            self.seq[d] += len(stream[off:off + mss])
        return out

    def send(self, d: int, msg: bytes, *, frag_sizes: tuple[int, ...] = ()) -> None:
        """Send one RPC message (record-marked on TCP, optionally as several fragments)."""
        if self.transport == "udp":
            self._emit(self.udp_packets(d, msg))
            return
        self._emit([self.tcp_segment(d, p, seq=s) for s, p in
                    self.segments(d, record(msg, frag_sizes))])
        self._unacked += 1
        if self._unacked >= self.ack_every:
            self._unacked = 0
            self._emit([self.tcp_segment(1 - d, b"", 0x10)])


def record(msg: bytes, frag_sizes: tuple[int, ...] = ()) -> bytes:
    """RPC record marking: the message as fragments of the given sizes (rest in the last)."""
    out = b""
    pos = 0
    for n in frag_sizes:
        out += u32(n) + msg[pos:pos + n]
        pos += n
    rest = msg[pos:]
    return out + u32(0x80000000 | len(rest)) + rest


def fh_for(i: int, n: int = 32) -> bytes:
    return (zlib.crc32(str(i).encode()).to_bytes(4, "big") * (n // 4 + 1))[:n]


# --- the benchmark capture ---------------------------------------------------------------


@dataclass(frozen=True)
class ReadCaptureParams:
    """NFSv3 sequential READs of ``files`` files by ``clients`` clients per transport."""

    target_bytes: int = 100 << 20
    udp_clients: int = 4
    tcp_clients: int = 4
    files: int = 16
    udp_read: int = 8192
    tcp_read: int = 65536
    mtu: int = 1500
    seed: int = 7


def generate_read_capture(path: str | os.PathLike[str], params: ReadCaptureParams = ReadCaptureParams()
                          ) -> dict[str, int]:
    """Write the benchmark capture (pcap, or gzip if the name ends in .gz); returns counts."""
    rng = random.Random(params.seed)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    opener = gzip.open if p.suffix == ".gz" else open
    reads = 0
    with opener(tmp, "wb") as raw:
        cap = CaptureWriter(raw)
        server = bytes([10, 0, 0, 1])
        convs = []
        for i in range(params.udp_clients):
            convs.append(Conversation(cap, "udp", (bytes([10, 0, 1, i + 1]), 800 + i),
                                      (server, 2049), mtu=params.mtu))
        for i in range(params.tcp_clients):
            c = Conversation(cap, "tcp", (bytes([10, 0, 2, i + 1]), 900 + i), (server, 2049),
                             mtu=params.mtu)
            convs.append(c)
        t = 1_700_000_000 * 10**9
        for c in convs:
            c.t = t
            if c.transport == "tcp":
                c.handshake()
        fsize = 64 << 20
        files = [fh_for(i) for i in range(params.files)]
        pos = {(ci, f): 0 for ci in range(len(convs)) for f in range(params.files)}
        payload = bytes(range(256)) * 256
        xid = rng.randrange(1 << 32)
        while cap.bytes < params.target_bytes:
            ci = rng.randrange(len(convs))
            c = convs[ci]
            f = rng.randrange(params.files)
            size = params.udp_read if c.transport == "udp" else params.tcp_read
            off = pos[(ci, f)]
            pos[(ci, f)] = (off + size) % fsize
            xid = (xid + 1) & 0xFFFFFFFF
            t += 50_000
            c.t = max(c.t, t)
            c.send(0, rpc_call(xid, 100003, 3, 6, nfs3_read_call(files[f], off, size)))
            c.send(1, rpc_reply(xid, nfs3_read_reply(payload[:size], off + size >= fsize, fsize)))
            reads += 1
        frames = cap.frames
        nbytes = cap.bytes
    os.replace(tmp, p)
    return {"frames": frames, "bytes": nbytes, "reads": reads}
