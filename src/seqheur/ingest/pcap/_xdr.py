"""XDR reads over a *message view*: an RPC message whose bytes may be only partly present.

A view is ``(src, md)`` with ``md = [head_start, head_len, tail_start, tail_len, msg_len]``:
message bytes ``[0, head_len)`` are at ``src[head_start:]`` and ``[msg_len - tail_len,
msg_len)`` at ``src[tail_start:]``. A UDP datagram or a TCP record found whole in one segment is
all head; a record reassembled from many segments keeps its first and last bytes only, which is
all an NFS decoder needs (data payloads are skipped by length). Reads of absent bytes return -1.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._layout import NJ


@njit(**NJ)
def at(md, p, n):
    """Index into src of message bytes [p, p+n), or -1 if they are not all present."""
    if p < 0 or n < 0:
        return -1
    if p + n <= md[1]:
        return md[0] + p
    tb = md[4] - md[3]
    if p >= tb and p + n <= md[4]:
        return md[2] + (p - tb)
    return -1


@njit(**NJ)
def u32(src, md, p):
    a = at(md, p, 4)
    if a < 0:
        return -1
    return ((np.int64(src[a]) << 24) | (np.int64(src[a + 1]) << 16)
            | (np.int64(src[a + 2]) << 8) | np.int64(src[a + 3]))


@njit(**NJ)
def u64(src, md, p):
    """64-bit value as int64 bits; callers check presence with ``at`` first."""
    a = at(md, p, 8)
    if a < 0:
        return -1
    v = np.int64(0)
    for i in range(8):
        v = (v << 8) | np.int64(src[a + i])
    return v


@njit(**NJ)
def pad4(n):
    return (n + 3) & ~3


@njit(**NJ)
def be16(buf, i):
    return (np.int64(buf[i]) << 8) | np.int64(buf[i + 1])


@njit(**NJ)
def be32(buf, i):
    return ((np.int64(buf[i]) << 24) | (np.int64(buf[i + 1]) << 16)
            | (np.int64(buf[i + 2]) << 8) | np.int64(buf[i + 3]))


@njit(**NJ)
def le16(buf, i):
    return (np.int64(buf[i + 1]) << 8) | np.int64(buf[i])


@njit(**NJ)
def le32(buf, i):
    return ((np.int64(buf[i + 3]) << 24) | (np.int64(buf[i + 2]) << 16)
            | (np.int64(buf[i + 1]) << 8) | np.int64(buf[i]))


@njit(**NJ)
def rd32(buf, i, big):
    if big:
        return be32(buf, i)
    return le32(buf, i)


@njit(**NJ)
def rd16(buf, i, big):
    if big:
        return be16(buf, i)
    return le16(buf, i)


@njit(**NJ)
def copy(dst, d0, src, s0, n):
    """dst[d0:d0+n] = src[s0:s0+n] without a temporary (slice assignment may allocate one)."""
    # views indexed from 0 let LLVM drop the negative-index wraparound test and vectorise
    dv = dst[d0:d0 + n]
    sv = src[s0:s0 + n]
    for i in range(n):
        dv[i] = sv[i]


@njit(**NJ)
def fh_store(src, md, p, n, fh, ctr, nfh_idx):
    """Copy n handle bytes at message position p into the fh arena; arena offset or -1."""
    a = at(md, p, n)
    if a < 0:
        return -1
    off = ctr[nfh_idx]
    copy(fh, off, src, a, n)
    ctr[nfh_idx] = off + n
    return off
