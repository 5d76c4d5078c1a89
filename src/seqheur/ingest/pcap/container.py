"""pcap and pcapng containers: file headers (Python) and record walks (numba).

pcap: either byte order, microsecond (a1b2c3d4) or nanosecond (a1b23c4d) timestamps.
pcapng: Section Header (byte order per section), Interface Description (link type, snaplen,
if_tsresol, if_tsoffset), Enhanced / Simple / obsolete Packet blocks; other blocks are
stepped over. A walk fills per-frame arrays (data offset, captured and wire length, time in
ns, link type) for the complete records in a buffer and says where it stopped and why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ._layout import NJ
from ._xdr import rd16, rd32

PCAP_MAGICS = {
    b"\xa1\xb2\xc3\xd4": (True, False), b"\xd4\xc3\xb2\xa1": (False, False),
    b"\xa1\xb2\x3c\x4d": (True, True), b"\x4d\x3c\xb2\xa1": (False, True),
}
PCAPNG_SHB = b"\x0a\x0d\x0d\x0a"
MAXIF = 256
MAXBLOCK = 1 << 26
LINK_BAD_IF = -1      # frame names an interface the section did not describe
LINK_CORRUPT = -2     # packet block whose lengths disagree

# walk stop reasons
NEED_MORE, CORRUPT, FULL = 0, 1, 2


@dataclass(frozen=True)
class PcapHeader:
    big_endian: bool
    nanosecond: bool
    snaplen: int
    linktype: int
    major: int
    minor: int


def parse_pcap_header(head: bytes) -> PcapHeader | None:
    """The pcap global header at the start of ``head`` (24 bytes), or None if not pcap."""
    if len(head) < 24 or head[:4] not in PCAP_MAGICS:
        return None
    big, ns = PCAP_MAGICS[head[:4]]
    order = "big" if big else "little"
    major = int.from_bytes(head[4:6], order)
    minor = int.from_bytes(head[6:8], order)
    snaplen = int.from_bytes(head[16:20], order)
    linktype = int.from_bytes(head[20:24], order) & 0x0FFFFFFF
    return PcapHeader(big, ns, snaplen, linktype & 0xFFFF, major, minor)


def is_pcapng(head: bytes) -> bool:
    return len(head) >= 12 and head[:4] == PCAPNG_SHB and head[8:12] in (
        b"\x1a\x2b\x3c\x4d", b"\x4d\x3c\x2b\x1a")


@njit(**NJ)
def walk_pcap(buf, pos, end, big, ns, maxcap, link, foff, fcap, fwire, fts, flink):
    """Walk pcap records in buf[pos:end]; (frames, new pos, stop reason)."""
    n = 0
    maxn = foff.shape[0]
    while n < maxn:
        if pos + 16 > end:
            return n, pos, NEED_MORE
        sec = rd32(buf, pos, big)
        frac = rd32(buf, pos + 4, big)
        cl = rd32(buf, pos + 8, big)
        wl = rd32(buf, pos + 12, big)
        if cl > maxcap:
            return n, pos, CORRUPT
        if pos + 16 + cl > end:
            return n, pos, NEED_MORE
        foff[n] = pos + 16
        fcap[n] = cl
        fwire[n] = wl
        fts[n] = sec * 1_000_000_000 + (frac if ns else frac * 1000)
        flink[n] = link
        n += 1
        pos += 16 + cl
    return n, pos, FULL


@njit(**NJ)
def _ticks_to_ns(ticks, kind, exp, tsoff):
    base = tsoff * 1_000_000_000
    if kind == 0:
        if exp <= 9:
            m = np.int64(1)
            for _ in range(9 - exp):
                m *= 10
            return base + ticks * m
        if exp > 27:  # 10**(exp-9) exceeds any tick count (and int64): no whole seconds
            return base
        d = np.int64(1)
        for _ in range(exp - 9):
            d *= 10
        return base + ticks // d
    if exp >= 62:
        return base
    sec = ticks >> exp
    frac = ticks & ((np.int64(1) << exp) - 1)
    if exp <= 32:
        return base + sec * 1_000_000_000 + ((frac * 1_000_000_000) >> exp)
    return base + sec * 1_000_000_000 + np.int64(np.float64(frac) * 1e9 / np.float64(2.0 ** exp))


@njit(**NJ)
def walk_pcapng(buf, pos, end, st, ifs, foff, fcap, fwire, fts, flink):
    """Walk pcapng blocks in buf[pos:end]. st = [big-endian, interfaces in section];
    ifs[i] = [link type, snaplen, tsresol kind (0 dec, 1 bin), tsresol exponent, tsoffset s]."""
    n = 0
    maxn = foff.shape[0]
    while n < maxn:
        if pos + 12 > end:
            return n, pos, NEED_MORE
        if buf[pos] == 0x0A and buf[pos + 1] == 0x0D and buf[pos + 2] == 0x0D and buf[pos + 3] == 0x0A:
            if buf[pos + 8] == 0x1A and buf[pos + 9] == 0x2B:
                big = 1
            elif buf[pos + 8] == 0x4D and buf[pos + 9] == 0x3C:
                big = 0
            else:
                return n, pos, CORRUPT
            blen = rd32(buf, pos + 4, big)
            if blen < 28 or blen % 4 != 0 or blen > MAXBLOCK:
                return n, pos, CORRUPT
            if pos + blen > end:
                return n, pos, NEED_MORE
            st[0] = big
            st[1] = 0
            pos += blen
            continue
        big = st[0]
        btype = rd32(buf, pos, big)
        blen = rd32(buf, pos + 4, big)
        if blen < 12 or blen % 4 != 0 or blen > MAXBLOCK:
            return n, pos, CORRUPT
        if pos + blen > end:
            return n, pos, NEED_MORE
        if btype == 1:  # Interface Description Block
            k = st[1]
            st[1] = k + 1
            if k < MAXIF and blen >= 20:
                ifs[k, 0] = rd16(buf, pos + 8, big)
                ifs[k, 1] = rd32(buf, pos + 12, big)
                ifs[k, 2] = 0
                ifs[k, 3] = 6
                ifs[k, 4] = 0
                o = pos + 16
                oend = pos + blen - 4
                while o + 4 <= oend:
                    code = rd16(buf, o, big)
                    ln = rd16(buf, o + 2, big)
                    if code == 0 or o + 4 + ln > oend:
                        break
                    if code == 9 and ln >= 1:
                        r = np.int64(buf[o + 4])
                        ifs[k, 2] = r >> 7
                        ifs[k, 3] = r & 0x7F
                    elif code == 14 and ln >= 8:
                        hi = rd32(buf, o + 4, big)
                        lo = rd32(buf, o + 8, big)
                        v = (hi << 32) | lo if big else (lo << 32) | hi
                        ifs[k, 4] = v
                    o += 4 + ((ln + 3) & ~3)
        elif btype == 6 or btype == 2 or btype == 3:
            if btype == 3:
                ifid = 0
                if blen < 16:
                    return n, pos, CORRUPT
                wl = rd32(buf, pos + 8, big)
                cl = min(wl, blen - 16)
                data = pos + 12
                ticks = np.int64(0)
            else:
                if blen < 32:
                    return n, pos, CORRUPT
                ifid = rd32(buf, pos + 8, big) if btype == 6 else rd16(buf, pos + 8, big)
                ticks = (rd32(buf, pos + 12, big) << 32) | rd32(buf, pos + 16, big)
                cl = rd32(buf, pos + 20, big)
                wl = rd32(buf, pos + 24, big)
                data = pos + 28
            foff[n] = data
            fwire[n] = wl
            if data + cl > pos + blen - 4:
                fcap[n] = 0
                fts[n] = 0
                flink[n] = LINK_CORRUPT
            elif ifid >= st[1] or ifid >= MAXIF:
                fcap[n] = cl
                fts[n] = 0
                flink[n] = LINK_BAD_IF
            else:
                if btype == 3 and ifs[ifid, 1] > 0:
                    cl = min(cl, ifs[ifid, 1])
                fcap[n] = cl
                fts[n] = 0 if btype == 3 else _ticks_to_ns(ticks, ifs[ifid, 2], ifs[ifid, 3],
                                                            ifs[ifid, 4])
                flink[n] = ifs[ifid, 0]
            n += 1
        pos += blen
    return n, pos, FULL
