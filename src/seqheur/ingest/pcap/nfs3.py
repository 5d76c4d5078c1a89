"""NFSv3 (RFC 1813) call arguments and reply results -> request-table row fields.

Every procedure's first argument is a file handle (the object, or the directory for
name-based procedures); READ/WRITE/COMMIT add offset and count. Replies give the status, READ's
eof and returned count, WRITE's written count, and ``file_size`` from the post-op attributes of
the object the row's handle names (the directory's for LOOKUP/CREATE/REMOVE/...).
"""

from __future__ import annotations

from numba import njit

from ._layout import (M_COUNT, M_EOF, M_FH, M_FSIZE, M_OFFSET, M_RET, M_STATUS, NJ, C_NFH,
                      R_COUNT, R_EOF, R_FHLEN, R_FHOFF, R_FSIZE, R_MASK, R_OFFSET, R_RETCOUNT,
                      R_STATUS)
from ._xdr import at, fh_store, pad4, u32, u64

FHSIZE3 = 64


@njit(**NJ)
def put(rows, r, col, bit, v):
    rows[r, col] = v
    rows[r, R_MASK] |= bit


@njit(**NJ)
def nfs3_call(src, md, p, proc, rows, r, fh, ctr):
    """Decode the arguments of call ``proc`` at message position p; False if cut short."""
    if proc == 0 or proc > 21:
        return proc == 0
    n = u32(src, md, p)
    if n < 0 or n > FHSIZE3:
        return False
    off = fh_store(src, md, p + 4, n, fh, ctr, C_NFH)
    if off < 0:
        return False
    put(rows, r, R_FHOFF, M_FH, off)
    rows[r, R_FHLEN] = n
    p += 4 + pad4(n)
    if proc == 6 or proc == 7 or proc == 21:  # READ, WRITE, COMMIT: offset3, count3
        if at(md, p, 12) < 0:
            return False
        put(rows, r, R_OFFSET, M_OFFSET, u64(src, md, p))
        put(rows, r, R_COUNT, M_COUNT, u32(src, md, p + 8))
    return True


@njit(**NJ)
def post_op_attr(src, md, p, rows, r, take):
    """Skip a post_op_attr at p (recording its size when ``take``); new position or -1."""
    follows = u32(src, md, p)
    if follows < 0:
        return -1
    if follows == 0:
        return p + 4
    if at(md, p + 4, 84) < 0:
        return -1
    if take:
        put(rows, r, R_FSIZE, M_FSIZE, u64(src, md, p + 4 + 20))
    return p + 4 + 84


@njit(**NJ)
def wcc_data(src, md, p, rows, r, take):
    pre = u32(src, md, p)
    if pre < 0:
        return -1
    p += 4
    if pre != 0:
        p += 24
    return post_op_attr(src, md, p, rows, r, take)


@njit(**NJ)
def nfs3_reply(src, md, p, proc, rows, r):
    """Decode the results of ``proc`` at message position p; False if cut short."""
    if proc == 0:
        return True
    st = u32(src, md, p)
    if st < 0:
        return False
    put(rows, r, R_STATUS, M_STATUS, st)
    p += 4
    ok = st == 0
    if proc == 1:  # GETATTR: fattr3
        if not ok:
            return True
        if at(md, p, 84) < 0:
            return False
        put(rows, r, R_FSIZE, M_FSIZE, u64(src, md, p + 20))
        return True
    if proc == 2 or proc == 12 or proc == 13 or proc == 14 or proc == 21:
        # SETATTR/REMOVE/RMDIR/RENAME(from dir)/COMMIT: wcc_data first
        return wcc_data(src, md, p, rows, r, True) >= 0
    if proc == 3:  # LOOKUP: ok -> object fh, obj attrs, dir attrs; fail -> dir attrs
        if ok:
            n = u32(src, md, p)
            if n < 0 or n > FHSIZE3:
                return False
            p = post_op_attr(src, md, p + 4 + pad4(n), rows, r, False)
            if p < 0:
                return False
        return post_op_attr(src, md, p, rows, r, True) >= 0
    if proc == 4 or proc == 5 or proc == 16 or proc == 17 or proc == 18 or proc == 19 \
            or proc == 20:
        return post_op_attr(src, md, p, rows, r, True) >= 0
    if proc == 6:  # READ: post_op_attr, count, eof, data
        p = post_op_attr(src, md, p, rows, r, True)
        if p < 0:
            return False
        if not ok:
            return True
        c = u32(src, md, p)
        e = u32(src, md, p + 4)
        if c < 0 or e < 0:
            return False
        put(rows, r, R_RETCOUNT, M_RET, c)
        put(rows, r, R_EOF, M_EOF, 1 if e != 0 else 0)
        return True
    if proc == 7:  # WRITE: wcc_data, count, committed, verf
        p = wcc_data(src, md, p, rows, r, True)
        if p < 0:
            return False
        if not ok:
            return True
        c = u32(src, md, p)
        if c < 0:
            return False
        put(rows, r, R_RETCOUNT, M_RET, c)
        return True
    if proc == 8 or proc == 9 or proc == 10 or proc == 11:
        # CREATE/MKDIR/SYMLINK/MKNOD: ok -> post_op_fh3, obj attrs, dir wcc; fail -> dir wcc
        if ok:
            f = u32(src, md, p)
            if f < 0:
                return False
            p += 4
            if f != 0:
                n = u32(src, md, p)
                if n < 0 or n > FHSIZE3:
                    return False
                p += 4 + pad4(n)
            p = post_op_attr(src, md, p, rows, r, False)
            if p < 0:
                return False
        return wcc_data(src, md, p, rows, r, True) >= 0
    if proc == 15:  # LINK: file attrs, dir wcc
        return post_op_attr(src, md, p, rows, r, True) >= 0
    return True
