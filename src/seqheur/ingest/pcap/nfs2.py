"""NFSv2 (RFC 1094) call arguments and reply results -> request-table row fields.

Handles are a fixed 32 bytes; offsets and counts are 32-bit. READ's count is the call's
``count``; WRITE's is the length of the data (what tshark shows as ``nfs.write.totalcount`` on
real clients). Replies give the status, the returned data length of READ and ``file_size``
from the ``fattr`` of attrstat replies (GETATTR, SETATTR, WRITE, READ).
"""

from __future__ import annotations

from numba import njit

from ._layout import (M_COUNT, M_FH, M_FSIZE, M_OFFSET, M_RET, M_STATUS, NJ, C_NFH, R_COUNT,
                      R_FHLEN, R_FHOFF, R_FSIZE, R_OFFSET, R_RETCOUNT, R_STATUS)
from ._xdr import at, fh_store, pad4, u32
from .nfs3 import put

FHSIZE2 = 32


@njit(**NJ)
def nfs2_call(src, md, p, proc, rows, r, fh, ctr):
    if proc == 0 or proc == 3 or proc == 7 or proc > 17:  # NULL, ROOT, WRITECACHE: no handle
        return proc <= 17
    off = fh_store(src, md, p, FHSIZE2, fh, ctr, C_NFH)
    if off < 0:
        return False
    put(rows, r, R_FHOFF, M_FH, off)
    rows[r, R_FHLEN] = FHSIZE2
    p += FHSIZE2
    if proc == 6:  # READ: offset, count, totalcount
        o = u32(src, md, p)
        c = u32(src, md, p + 4)
        if o < 0 or c < 0:
            return False
        put(rows, r, R_OFFSET, M_OFFSET, o)
        put(rows, r, R_COUNT, M_COUNT, c)
    elif proc == 8:  # WRITE: beginoffset, offset, totalcount, data<>
        o = u32(src, md, p + 4)
        n = u32(src, md, p + 12)
        if o < 0 or n < 0:
            return False
        put(rows, r, R_OFFSET, M_OFFSET, o)
        put(rows, r, R_COUNT, M_COUNT, n)
    return True


@njit(**NJ)
def nfs2_reply(src, md, p, proc, rows, r):
    if proc == 0 or proc == 3 or proc == 7:
        return True
    st = u32(src, md, p)
    if st < 0:
        return False
    put(rows, r, R_STATUS, M_STATUS, st)
    if st != 0:
        return True
    p += 4
    if proc == 1 or proc == 2 or proc == 8 or proc == 6:  # attrstat (+ READ data)
        if at(md, p, 68) < 0:
            return False
        put(rows, r, R_FSIZE, M_FSIZE, u32(src, md, p + 20))
        if proc == 6:
            n = u32(src, md, p + 68)
            if n < 0:
                return False
            put(rows, r, R_RETCOUNT, M_RET, n)
    return True
