"""Numba kernels for the nfsdump text reader: a byte-level line tokenizer and a streaming
call/reply joiner. Private to ``ingest/nfsdump.py``; no Python objects cross the boundary.

Why bytes and not str: a per-line Python split costs ~2 µs; scanning the raw bytes of a whole
chunk in one jitted loop is what makes ~1 M lines/s per core possible. The hot kernels are
compiled without NRT reference counting (measured: half the run time went to atomic
incref/decref of the arrays handed to inlined helpers).

What the per-line parser (``_parse_line``) does for speed, each measured with perf: it is a
function of its own with few arguments (inside ``parse_chunk`` its loop variables were
spilled to the stack); the per-token work is written in place, with no helper call in the
key/value loop (LLVM left such calls un-inlined, and values live across them were spilled);
array indices are unsigned (``_U``: no negative-index wrap-around per byte); a token's end
is found 8 bytes at a time; hex digits go through a look-up table (``_HEXC``).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros
from .. import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

# array index cast: numba adds a negative-index wrap-around to every signed index; an
# unsigned one (positions here are never negative) indexes as is
_U = np.uint64

# byte classes: the value of a hex digit (0-15), 16 for the other bytes of a host token
# (. : [ ]), 255 for anything else. A look-up instead of range compares: the digit/letter
# branch of a random hex string is mispredicted every other byte
_HEXC = np.full(256, 255, dtype=np.uint8)
for _i, _ch in enumerate("0123456789abcdef"):
    _HEXC[ord(_ch)] = _i
    _HEXC[ord(_ch.upper())] = _i
for _ch in ".:[]":
    _HEXC[ord(_ch)] = 16

# ---- skip reasons (index into SKIP_REASONS) -------------------------------------------------
SKIP_REASONS = (
    "blank_line",           # 0: empty or white space only
    "diagnostic_line",      # 1: nfsdump/anonymizer diagnostics: "XX ..."
    "not_a_record",         # 2: does not start with a digit (other junk, NUL blocks, ...)
    "bad_time",             # 3
    "bad_host",             # 4
    "bad_transport",        # 5: not U / T
    "bad_direction",        # 6: not C2 C3 R2 R3
    "unsupported_version",  # 7: CU<n>/RU<n> (the printer breaks such lines)
    "bad_xid",              # 8
    "bad_proc",             # 9
    "unknown_op",           # 10
    "bad_status",           # 11
    "truncated",            # 12: fixed fields missing or no trailer (con = / status=)
    "overlong_line",        # 13: (set by the Python reader) line longer than the limit
)
N_REASONS = len(SKIP_REASONS)
N_EXAMPLES = 3  # examples kept per reason per chunk

# ---- op names as printed (token) -> canonical request-table op name ---------------------------
OP_TOKENS = (
    ("null", "null"), ("getattr", "getattr"), ("setattr", "setattr"), ("root", "root"),
    ("lookup", "lookup"), ("readlink", "readlink"), ("read", "read"),
    ("writecach", "writecache"), ("writecac", "writecache"), ("writecache", "writecache"),
    ("write", "write"), ("create", "create"), ("remove", "remove"), ("rename", "rename"),
    ("link", "link"), ("symlink", "symlink"), ("mkdir", "mkdir"), ("rmdir", "rmdir"),
    ("readdir", "readdir"), ("statfs", "statfs"), ("access", "access"), ("mknod", "mknod"),
    ("readdirp", "readdirplus"), ("readdirplus", "readdirplus"), ("fsstat", "fsstat"),
    ("fsinfo", "fsinfo"), ("pathconf", "pathconf"), ("commit", "commit"),
    ("unknown", "unknown"), ("ffffffff", "unknown"),
)
_OPW = 12
OP_BYTES = np.zeros((len(OP_TOKENS), _OPW), dtype=np.uint8)
OP_LEN = np.zeros(len(OP_TOKENS), dtype=np.int64)
for _i, (_tok, _) in enumerate(OP_TOKENS):
    OP_BYTES[_i, : len(_tok)] = np.frombuffer(_tok.encode(), dtype=np.uint8)
    OP_LEN[_i] = len(_tok)

# ---- per-record flag bits ---------------------------------------------------------------------
F_OFF = 1
F_CNT = 2
F_RET = 4
F_STATUS = 8
F_SIZE = 16
F_EOF = 32       # eof present
F_EOFV = 64      # eof value
F_SHORT = 128    # SHORT PACKET / +|+ / +/+ seen: fields after it were not decoded
F_FH = 256

# counters[...] of parse_chunk
C_BAD_VALUES = 0
C_SHORT = 1

# join counters
J_CALLS = 0
J_REPLIES = 1
J_MATCHED = 2
J_RETRANS = 3
J_DUP_REPLIES = 4
J_ORPHAN_REPLIES = 5

# key codes inside a line
_K_OTHER = 0
_K_FH = 1
_K_OFF = 2
_K_COUNT = 3
_K_TCOUNT = 4
_K_SIZE = 5
_K_EOF = 6



@njit(cache=True, nogil=True, _nrt=False)
def _tok(buf, n, q):
    """Next token at or after byte ``q`` of the current line: (start, end). Every byte
    <= 32 other than the newline separates tokens (blanks, CR, NUL and other control bytes);
    at the newline or the end of the buffer the token is empty and does not move on.
    """
    p = q
    while p < n:
        c = buf[_U(p)]
        if c <= 32 and c != 10:
            p += 1
        else:
            break
    s = p
    while p + 8 <= n:  # 8 bytes at a time, as in _parse_line's key/value loop
        u = _U(p)
        w = (_U(buf[u]) | (_U(buf[u + _U(1)]) << _U(8))
             | (_U(buf[u + _U(2)]) << _U(16)) | (_U(buf[u + _U(3)]) << _U(24))
             | (_U(buf[u + _U(4)]) << _U(32)) | (_U(buf[u + _U(5)]) << _U(40))
             | (_U(buf[u + _U(6)]) << _U(48)) | (_U(buf[u + _U(7)]) << _U(56)))
        z = (w - _U(0x2121212121212121)) & ~w & _U(0x8080808080808080)
        if z != 0:
            return s, p + (np.int64(trailing_zeros(z)) >> 3)
        p += 8
    while p < n and buf[_U(p)] > 32:
        p += 1
    return s, p


@njit(cache=True, nogil=True, _nrt=False, inline="always")  # two call sites, in the hot loop
def _hexval(buf, s, e, maxdigits):
    """(value, ok) of a hex token of at most ``maxdigits`` significant digits."""
    while e - s > maxdigits and buf[_U(s)] == 48:  # leading zeros do not count
        s += 1
    n = e - s
    if n <= 0 or n > maxdigits:
        return np.uint64(0), False
    v = np.uint64(0)
    for i in range(s, e):
        d = _HEXC[buf[_U(i)]]
        if d > 15:
            return np.uint64(0), False
        v = (v << np.uint64(4)) | np.uint64(d)
    return v, True


@njit(cache=True, nogil=True, _nrt=False)
def _ends_con(buf, s, e):
    return e - s >= 3 and buf[e - 3] == 99 and buf[e - 2] == 111 and buf[e - 1] == 110


@njit(cache=True, nogil=True, _nrt=False)
def _find_status_eq(buf, s, e):
    """Index just after ``status=`` inside [s, e), or -1."""
    # s t a t u s =
    for i in range(s, e - 6):
        if (buf[i] == 115 and buf[i + 1] == 116 and buf[i + 2] == 97 and buf[i + 3] == 116
                and buf[i + 4] == 117 and buf[i + 5] == 115 and buf[i + 6] == 61):
            return i + 7
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _starts_status_eq(buf, s, e):
    return (e - s >= 7 and buf[s] == 115 and buf[s + 1] == 116 and buf[s + 2] == 97
            and buf[s + 3] == 116 and buf[s + 4] == 117 and buf[s + 5] == 115
            and buf[s + 6] == 61)


@njit(cache=True, nogil=True, _nrt=False)
def _is_short_marker(buf, s, e):
    n = e - s
    if n == 3 and buf[s] == 43 and buf[s + 2] == 43 and (buf[s + 1] == 124 or buf[s + 1] == 47):
        return True  # +|+ (v2 call) / +/+ (v2 reply)
    # SHORT (the following PACKET is fused with the next token)
    return (n >= 5 and buf[s] == 83 and buf[s + 1] == 72 and buf[s + 2] == 79
            and buf[s + 3] == 82 and buf[s + 4] == 84)


@njit(cache=True, nogil=True, _nrt=False)
def _host_ok(buf, s, e):
    # anonymized "30.0801", raw "0a000001.0801", -v dotted quad "10.0.0.1.0801"; and the
    # "ip:port" / "[v6]:port" of tables exported from pcap captures
    if e - s == 0 or e - s > 64:
        return False
    for i in range(s, e):
        if _HEXC[buf[_U(i)]] > 16:  # hex digits . : [ ]
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False)
def _fnv(buf, s, e):
    h = np.uint64(1469598103934665603)
    for i in range(s, e):
        h = (h ^ np.uint64(buf[i])) * np.uint64(1099511628211)
    return h


@njit(cache=True, nogil=True, _nrt=False)
def _intern(buf, s, e, pool, offs, lens, slots, meta):
    """Dense id of the token buf[s:e] in a growable string table; -2 when the table is full
    (the caller grows it and resumes at the same line)."""
    mask = np.uint64(slots.shape[0] - 1)
    j = _fnv(buf, s, e) & mask
    n = e - s
    while True:
        idx = slots[j]
        if idx < 0:
            break
        if lens[idx] == n:
            o = offs[idx]
            same = True
            for k in range(n):
                if pool[o + k] != buf[s + k]:
                    same = False
                    break
            if same:
                return idx
        j = (j + np.uint64(1)) & mask
    cnt = meta[0]
    used = meta[1]
    if (cnt + 1) * 2 > slots.shape[0] or cnt >= offs.shape[0] or used + n > pool.shape[0]:
        return -2
    for k in range(n):
        pool[used + k] = buf[s + k]
    offs[cnt] = used
    lens[cnt] = n
    slots[j] = cnt
    meta[0] = cnt + 1
    meta[1] = used + n
    return cnt


@njit(cache=True, nogil=True, _nrt=False)
def rehash(pool, offs, lens, count, slots):
    """Fill an empty (all -1) ``slots`` from the first ``count`` interned strings."""
    mask = np.uint64(slots.shape[0] - 1)
    for idx in range(count):
        j = _fnv(pool, offs[idx], offs[idx] + lens[idx]) & mask
        while slots[j] >= 0:
            j = (j + np.uint64(1)) & mask
        slots[j] = idx


@njit(cache=True, nogil=True, _nrt=False)
def _skip(code, line_no, ls, le, skip_counts, ex_line, ex_start, ex_end):
    k = skip_counts[code]
    if k < N_EXAMPLES:
        ex_line[code, k] = line_no
        ex_start[code, k] = ls
        ex_end[code, k] = le
    skip_counts[code] = k + 1


@njit(cache=True, nogil=True, _nrt=False)
def _parse_line(buf, pos, fh_data, fhpos):
    """Parse the line starting at byte ``pos`` (tokenized in place; ``buf`` ends at a line
    end). A call is kept out of ``parse_chunk`` so that its loops run in registers: in the
    one big function (30+ array arguments live across the loop) the tokenizer's position
    was spilled to the stack and reloaded on every byte.

    Returns (code, line_end, fhpos, bad, time, client_start, client_end, server_start,
    server_end, kind, tr, vers, xid, op, off, cnt, ret, status, size, flags): ``code`` < 0
    for a record, else the skip reason; the handle (calls) is decoded into ``fh_data`` from
    ``fhpos`` and the returned ``fhpos`` is past it.
    """
    n = buf.shape[0]
    ls = pos
    q = pos
    code = -1
    bad = 0
    short = False
    # every field typed on every path (the block below leaves at its first failure)
    tns = np.int64(0)
    s1 = t1 = s2 = t2 = s3 = s4 = ls
    xid = np.uint64(0)
    op = -1
    is_reply = False
    flags = 0
    status = np.uint64(0)
    off = np.uint64(0)
    cnt = np.uint64(0)
    tcnt = np.uint64(0)
    have_tcnt = False
    ret = np.uint64(0)
    size = np.uint64(0)
    for _once in range(1):  # a block to break out of with a skip code
        s, t = _tok(buf, n, q)
        q = t
        if s == t:
            # nothing but separators: blank, or NUL/control bytes (hourly files with
            # NUL blocks) which are junk, not an empty line
            code = 0
            j = ls
            while j < n and buf[_U(j)] != 10:
                c = buf[_U(j)]
                if not (c == 32 or c == 9 or c == 13 or c == 11 or c == 12):
                    code = 2
                    break
                j += 1
            break
        c0 = buf[_U(s)]
        if c0 < 48 or c0 > 57:
            code = 1 if (c0 == 88 and t - s >= 2 and buf[_U(s + 1)] == 88) else 2
            break
        # the time: secs[.frac] (frac = decimal fraction, 1..9 digits). The per-line fields
        # are decoded in place, not by helpers: a call cost about as much as the work
        i = s
        sec = np.int64(0)
        nd = 0
        while i < t and 48 <= buf[_U(i)] <= 57:
            sec = sec * 10 + (buf[_U(i)] - 48)
            i += 1
            nd += 1
        # int64 nanoseconds end in 2262: later (garbage) times are rejected, not wrapped
        okt = nd > 0 and nd <= 10 and sec <= 9_223_372_035
        frac = np.int64(0)
        fd = 0
        if okt and i < t and buf[_U(i)] == 46:
            i += 1
            while i < t and 48 <= buf[_U(i)] <= 57:
                if fd >= 9:
                    okt = False
                    break
                frac = frac * 10 + (buf[_U(i)] - 48)
                fd += 1
                i += 1
            if fd == 0:
                okt = False
        if not okt or i != t:
            code = 3
            break
        while fd < 9:
            frac *= 10
            fd += 1
        tns = sec * 1000000000 + frac
        s1, t1 = _tok(buf, n, q)
        q = t1
        s2, t2 = _tok(buf, n, q)
        q = t2
        s3, t3 = _tok(buf, n, q)
        q = t3
        s4, t4 = _tok(buf, n, q)
        q = t4
        s5, t5 = _tok(buf, n, q)
        q = t5
        s6, t6 = _tok(buf, n, q)
        q = t6
        s7, t7 = _tok(buf, n, q)
        q = t7
        if s7 == t7:
            code = 12
            break
        if not _host_ok(buf, s1, t1) or not _host_ok(buf, s2, t2):
            code = 4
            break
        if not (t3 - s3 == 1 and (buf[_U(s3)] == 85 or buf[_U(s3)] == 84)):
            code = 5
            break
        if not (t4 - s4 == 2 and (buf[_U(s4)] == 67 or buf[_U(s4)] == 82)
                and (buf[_U(s4 + 1)] == 50 or buf[_U(s4 + 1)] == 51)):
            code = 7 if (t4 - s4 >= 2 and (buf[_U(s4)] == 67 or buf[_U(s4)] == 82)
                         and buf[_U(s4 + 1)] == 85) else 6
            break
        # xid and proc in hex, at most 8 significant digits
        for which in range(2):
            v, okx = _hexval(buf, s5 if which == 0 else s6, t5 if which == 0 else t6, 8)
            if not okx:
                code = 8 + which
                break
            if which == 0:
                xid = v
        if code >= 0:
            break
        # the op: its index in OP_TOKENS
        m7 = t7 - s7
        if m7 <= _OPW:
            for k in range(OP_LEN.shape[0]):
                if OP_LEN[k] != m7 or OP_BYTES[k, 0] != buf[_U(s7)]:
                    continue
                same = True
                for j in range(1, m7):
                    if OP_BYTES[k, j] != buf[_U(s7 + j)]:
                        same = False
                        break
                if same:
                    op = k
                    break
        if op < 0:
            code = 10
            break
        is_reply = buf[_U(s4)] == 82
        flags = 0
        status = np.uint64(0)
        trailer = False
        if is_reply:
            s8, t8 = _tok(buf, n, q)
            q = t8
            if s8 == t8:
                code = 12
                break
            if _starts_status_eq(buf, s8, t8):
                # null (and v2 root/writecache) replies have no status token: the
                # trailer's status= carries it (XXX in anonymized traces -> unknown)
                trailer = True
                status, ok = _hexval(buf, s8 + 7, t8, 8)
                if ok:
                    flags |= F_STATUS
            elif t8 - s8 == 2 and buf[_U(s8)] == 79 and buf[_U(s8 + 1)] == 75:  # OK
                flags |= F_STATUS
            elif _is_short_marker(buf, s8, t8):
                short = True
            else:
                status, ok = _hexval(buf, s8, t8, 8)
                if not ok:
                    code = 11
                    break
                flags |= F_STATUS
        # ---- key/value pairs up to the trailer
        off = np.uint64(0)
        cnt = np.uint64(0)
        tcnt = np.uint64(0)
        have_tcnt = False
        ret = np.uint64(0)
        size = np.uint64(0)
        key = -1
        ms = -1  # a SHORT / +|+ / +/+ marker token met by the loop below: [ms, mt)
        mt = -1
        # no helper calls in this loop (values live across a call get spilled to the stack)
        while not trailer and not short:
            # the next token, tokenized in place: this loop sees ~30 tokens a line, and a
            # helper call per token (LLVM does not inline it here) cost more than the scan
            while q < n:
                c = buf[_U(q)]
                if c <= 32 and c != 10:
                    q += 1
                else:
                    break
            s = q
            # the token's end 8 bytes at a time (most tokens are shorter: no loop exit to
            # mispredict): the lowest byte <= 32 of the little-endian word w is the lowest
            # set bit of (w - 0x21..21) & ~w & 0x80..80 (a borrow runs upwards only from a
            # byte that is itself <= 32); the last < 8 bytes of the buffer byte by byte
            while q + 8 <= n:
                u = _U(q)
                w = (_U(buf[u]) | (_U(buf[u + _U(1)]) << _U(8))
                     | (_U(buf[u + _U(2)]) << _U(16)) | (_U(buf[u + _U(3)]) << _U(24))
                     | (_U(buf[u + _U(4)]) << _U(32)) | (_U(buf[u + _U(5)]) << _U(40))
                     | (_U(buf[u + _U(6)]) << _U(48)) | (_U(buf[u + _U(7)]) << _U(56)))
                z = (w - _U(0x2121212121212121)) & ~w & _U(0x8080808080808080)
                if z != 0:
                    q += np.int64(trailing_zeros(z)) >> 3
                    break
                q += 8
            else:
                while q < n and buf[_U(q)] > 32:
                    q += 1
            t = q
            if s == t:
                break
            c = buf[_U(s)]
            m = t - s
            # cheap first-byte filters keep helper calls off the per-token path
            if not is_reply:
                if c == 99 and m == 3 and buf[_U(s + 1)] == 111 and buf[_U(s + 2)] == 110:  # con
                    trailer = True
                    break
            elif (c == 115 and m >= 7 and buf[_U(s + 1)] == 116 and buf[_U(s + 2)] == 97
                  and buf[_U(s + 3)] == 116 and buf[_U(s + 4)] == 117 and buf[_U(s + 5)] == 115
                  and buf[_U(s + 6)] == 61):  # status=
                trailer = True
                break
            # SHORT (PACKET) / +|+ / +/+ (as _is_short_marker): the rest of the line is left
            # to the loop after this one
            if c == 83:
                if (m >= 5 and buf[_U(s + 1)] == 72 and buf[_U(s + 2)] == 79
                        and buf[_U(s + 3)] == 82 and buf[_U(s + 4)] == 84):
                    short = True
            elif c == 43:
                if (m == 3 and buf[_U(s + 2)] == 43
                        and (buf[_U(s + 1)] == 124 or buf[_U(s + 1)] == 47)):
                    short = True
            if short:
                ms = s
                mt = t
                break
            if key < 0:
                # a switch on length and first byte: most keys (ftype, mode, nlink, uid,
                # ...) are rejected by the first compare
                key = _K_OTHER
                if m == 2:
                    if c == 102 and buf[_U(s + 1)] == 104:  # fh
                        key = _K_FH
                elif m == 3:
                    if c == 111 and buf[_U(s + 1)] == 102 and buf[_U(s + 2)] == 102:  # off
                        key = _K_OFF
                    elif c == 101 and buf[_U(s + 1)] == 111 and buf[_U(s + 2)] == 102:  # eof
                        key = _K_EOF
                elif m == 4:
                    if c == 115 and buf[_U(s + 1)] == 105 and buf[_U(s + 2)] == 122 and \
                            buf[_U(s + 3)] == 101:  # size
                        key = _K_SIZE
                    elif c == 102 and buf[_U(s + 1)] == 105 and buf[_U(s + 2)] == 108 and \
                            buf[_U(s + 3)] == 101:  # file
                        key = _K_FH
                elif m == 5:
                    if c == 99 and buf[_U(s + 1)] == 111 and buf[_U(s + 2)] == 117 and \
                            buf[_U(s + 3)] == 110 and buf[_U(s + 4)] == 116:  # count
                        key = _K_COUNT
                elif m == 6:
                    if c == 111 and buf[_U(s + 1)] == 102 and buf[_U(s + 2)] == 102 and \
                            buf[_U(s + 3)] == 115 and buf[_U(s + 4)] == 101 and \
                            buf[_U(s + 5)] == 116:
                        key = _K_OFF  # offset (v2)
                    elif c == 116 and buf[_U(s + 1)] == 99 and buf[_U(s + 2)] == 111 and \
                            buf[_U(s + 3)] == 117 and buf[_U(s + 4)] == 110 and \
                            buf[_U(s + 5)] == 116:
                        key = _K_TCOUNT  # tcount (v2)
                continue
            kc = key
            key = -1
            if kc == _K_OTHER:
                continue
            # which values this line keeps: calls fh, off, count, tcount; replies size,
            # count, eof (each first occurrence except tcount)
            if not is_reply:
                if kc == _K_FH:
                    if flags & F_FH:
                        continue
                    okh = m % 2 == 0 and m <= 512
                    if okh:
                        for i in range(0, m, 2):
                            hv = _HEXC[buf[_U(s + i)]]
                            lv = _HEXC[buf[_U(s + i + 1)]]
                            if (hv | lv) > 15:
                                okh = False
                                break
                            fh_data[_U(fhpos + (i >> 1))] = (hv << 4) | lv
                    if okh:
                        fhpos += m // 2
                        flags |= F_FH
                    else:
                        bad += 1
                    continue
                if kc == _K_OFF:
                    if flags & F_OFF:
                        continue
                elif kc == _K_COUNT:
                    if flags & F_CNT:
                        continue
                elif kc != _K_TCOUNT:
                    continue
            else:
                if kc == _K_SIZE:
                    # first occurrence = the object's post-op attributes (lookup replies
                    # repeat the group for the directory)
                    if flags & F_SIZE:
                        continue
                elif kc == _K_COUNT:
                    if flags & F_RET:
                        continue
                elif kc == _K_EOF:
                    if flags & F_EOF:
                        continue
                else:
                    continue
            # the value in hex (one site for all keys); offsets and sizes take 16
            # significant digits, the rest 8
            v, ok = _hexval(buf, s, t, 16 if (kc == _K_OFF or kc == _K_SIZE) else 8)
            if not ok:
                bad += 1
                continue
            if not is_reply:
                if kc == _K_OFF:
                    off = v
                    flags |= F_OFF
                elif kc == _K_COUNT:
                    cnt = v
                    flags |= F_CNT
                else:
                    tcnt = v
                    have_tcnt = True
            else:
                if kc == _K_SIZE:
                    size = v
                    flags |= F_SIZE
                elif kc == _K_COUNT:
                    ret = v
                    flags |= F_RET
                elif v != 0:
                    flags |= F_EOF | F_EOFV
                else:
                    flags |= F_EOF
        if short and not trailer:
            # after a marker nothing is decoded: only the trailer (con / status=) is looked
            # for, starting with the marker token itself
            if ms >= 0:
                if not is_reply:
                    if _ends_con(buf, ms, mt):
                        trailer = True
                elif _find_status_eq(buf, ms, mt) >= 0:
                    trailer = True
            while not trailer:
                s, t = _tok(buf, n, q)
                q = t
                if s == t:
                    break
                if not is_reply:
                    if _ends_con(buf, s, t):
                        trailer = True
                elif _find_status_eq(buf, s, t) >= 0:
                    trailer = True
        if not trailer:
            code = 12
            break
        if not is_reply and (flags & F_CNT) == 0 and have_tcnt:
            cnt = tcnt
            flags |= F_CNT
        if short:
            flags |= F_SHORT
    # ---- to the end of the line
    le = q
    while le < n and buf[_U(le)] != 10:
        le += 1
    kind = 0
    tr = 0
    vers = 0
    if is_reply:
        cs, ce, ss, se = s2, t2, s1, t1
    else:
        cs, ce, ss, se = s1, t1, s2, t2
    if code < 0:
        kind = 1 if is_reply else 0
        tr = 1 if buf[_U(s3)] == 84 else 0
        vers = buf[_U(s4 + 1)] - 48
    return (code, le, fhpos, bad, tns, cs, ce, ss, se, kind, tr, vers, xid, op, off, cnt, ret,
            status, size, flags)


# _nrt=False (here and on every kernel that allocates nothing): no reference counting. With
# it, every array passed to an (inlined) helper can cost an atomic incref/decref pair.
@njit(cache=True, nogil=True, _nrt=False)
def parse_chunk(buf, pos, max_lines, line_base, max_line,
                h_pool, h_offs, h_lens, h_slots, h_meta,
                r_kind, r_time, r_client, r_server, r_tr, r_vers, r_xid, r_op, r_line,
                r_off, r_cnt, r_ret, r_status, r_size, r_flags, fh_offs, fh_data,
                skip_counts, ex_line, ex_start, ex_end, counters):
    """Parse up to ``max_lines`` lines of ``buf`` from byte ``pos``; ``buf`` must end at a
    line end (the caller cuts it after the last newline, or at end of input).

    One pass over the bytes: the tokenizer stops at the newline, so the line end is found by
    finishing the line. Returns (next_pos, lines_done, records_done, fh_bytes, full):
    ``full`` is 1 when the host table ran out of room (grow it and call again from
    ``next_pos``, the start of the line not yet done).
    """
    n = buf.shape[0]
    nl = 0
    nr = 0
    fhpos = np.int64(0)
    fh_offs[0] = 0
    while nl < max_lines and pos < n:
        ls = pos
        line_no = line_base + nl + 1
        fh_start = fhpos
        (code, le, fhpos, bad, tns, cs, ce, ss, se, kind, tr, vers, xid, op, off, cnt, ret,
         status, size, flags) = _parse_line(buf, pos, fh_data, fhpos)
        if code < 0:
            # ---- accepted: intern hosts (client first as in the call); look-up inline (a
            # helper call per host costs more than the hashing), only a first sighting goes
            # to _intern
            cid = -1
            sid = -1
            mask = np.uint64(h_slots.shape[0] - 1)
            for which in range(2):
                hs = cs if which == 0 else ss
                he = ce if which == 0 else se
                hh = np.uint64(1469598103934665603)
                for i in range(hs, he):
                    hh = (hh ^ np.uint64(buf[_U(i)])) * np.uint64(1099511628211)
                j = hh & mask
                hid = -1
                hl = he - hs
                while True:
                    idx = h_slots[j]
                    if idx < 0:
                        break
                    if h_lens[idx] == hl:
                        o = h_offs[idx]
                        same = True
                        for i in range(hl):
                            if h_pool[o + i] != buf[_U(hs + i)]:
                                same = False
                                break
                        if same:
                            hid = idx
                            break
                    j = (j + np.uint64(1)) & mask
                if hid < 0:
                    hid = _intern(buf, hs, he, h_pool, h_offs, h_lens, h_slots, h_meta)
                if which == 0:
                    cid = hid
                else:
                    sid = hid
            if cid < 0 or sid < 0:
                fh_offs[nr] = fh_start
                return ls, nl, nr, fh_start, 1
            r_kind[nr] = kind
            r_time[nr] = tns
            r_client[nr] = cid
            r_server[nr] = sid
            r_tr[nr] = tr
            r_vers[nr] = vers
            r_xid[nr] = np.uint32(xid)
            r_op[nr] = op
            r_line[nr] = line_no
            r_off[nr] = off
            r_cnt[nr] = np.uint32(cnt)
            r_ret[nr] = np.uint32(ret)
            r_status[nr] = np.uint32(status)
            r_size[nr] = size
            r_flags[nr] = flags
        if le - ls > max_line:
            code = 13
        if code >= 0:
            fhpos = fh_start
            _skip(code, line_no, ls, le, skip_counts, ex_line, ex_start, ex_end)
        else:
            if flags & F_SHORT:
                counters[C_SHORT] += 1
            counters[C_BAD_VALUES] += bad
            nr += 1
            fh_offs[nr] = fhpos
        pos = le + 1 if le < n else n
        nl += 1
    return pos, nl, nr, fhpos, 0

# ---- call/reply join -------------------------------------------------------------------------

@njit(cache=True, nogil=True, _nrt=False)
def _key_hash(c, s, tr, x):
    h = np.uint64(c) * np.uint64(0x9E3779B97F4A7C15)
    h ^= np.uint64(s) * np.uint64(0xC2B2AE3D27D4EB4F)
    h ^= np.uint64(x) * np.uint64(0x165667B19E3779F9) + np.uint64(tr)
    h ^= h >> np.uint64(29)
    return h


@njit(cache=True, nogil=True, _nrt=False)
def _find(t_used, t_client, t_server, t_tr, t_xid, c, s, tr, x):
    mask = np.uint64(t_used.shape[0] - 1)
    j = _key_hash(c, s, tr, x) & mask
    while t_used[j]:
        if t_xid[j] == x and t_client[j] == c and t_server[j] == s and t_tr[j] == tr:
            return np.int64(j), True
        j = (j + np.uint64(1)) & mask
    return np.int64(j), False


@njit(cache=True, nogil=True, _nrt=False)
def join_records(kind, time, client, server, tr, xid, op, n_carry, window_ns,
                 t_used, t_client, t_server, t_tr, t_xid, t_replied, t_time, t_op, t_row,
                 row_call, row_reply, counters):
    """Join calls and replies in record order.

    Records [0, n_carry) are pending calls carried from the previous chunk; rows
    [0, n_carry) are theirs and the table already points at them. Returns the row count.
    A call with the key of a recent (``window_ns``) call of the same op is a retransmission
    and is dropped; so is a second reply. A reply matches a pending call of its key and op
    made at most ``window_ns`` before it (so the result does not depend on where chunks
    end); any other reply is an orphan and gets a row of its own. The table must have room for every new record.
    """
    nrow = n_carry
    for i in range(n_carry):
        row_call[i] = i
        row_reply[i] = -1
    for i in range(n_carry, kind.shape[0]):
        c = client[i]
        s = server[i]
        x = xid[i]
        r = tr[i]
        j, found = _find(t_used, t_client, t_server, t_tr, t_xid, c, s, r, x)
        if kind[i] == 0:
            counters[J_CALLS] += 1
            if found and t_op[j] == op[i] and abs(time[i] - t_time[j]) <= window_ns:
                counters[J_RETRANS] += 1
                continue
            row_call[nrow] = i
            row_reply[nrow] = -1
            t_used[j] = True
            t_client[j] = c
            t_server[j] = s
            t_tr[j] = r
            t_xid[j] = x
            t_replied[j] = False
            t_time[j] = time[i]
            t_op[j] = op[i]
            t_row[j] = nrow
            nrow += 1
        else:
            counters[J_REPLIES] += 1
            if found and t_op[j] == op[i]:
                if not t_replied[j] and t_row[j] >= 0 and time[i] - t_time[j] <= window_ns:
                    row_reply[t_row[j]] = i
                    t_replied[j] = True
                    counters[J_MATCHED] += 1
                    continue
                if t_replied[j] and abs(time[i] - t_time[j]) <= window_ns:
                    counters[J_DUP_REPLIES] += 1
                    continue
            row_call[nrow] = -1
            row_reply[nrow] = i
            counters[J_ORPHAN_REPLIES] += 1
            nrow += 1
    return nrow


@njit(cache=True, nogil=True)
def carry_and_rebuild(nrow, cutoff_ns, final,
                      t_used, t_client, t_server, t_tr, t_xid, t_replied, t_time, t_op, t_row,
                      n_used, n_client, n_server, n_tr, n_xid, n_replied, n_time, n_op, n_row):
    """End of a chunk: pick the rows to carry (pending calls newer than ``cutoff_ns``) and
    copy the still-recent entries into the new (empty) table ``n_*``, re-pointing carried
    rows to their new index and emitted ones to -1. Returns (carry mask over rows, entries)."""
    carry = np.zeros(nrow, dtype=np.bool_)
    if not final:
        for j in range(t_used.shape[0]):
            if t_used[j] and not t_replied[j] and t_row[j] >= 0 and t_time[j] >= cutoff_ns:
                carry[t_row[j]] = True
    newidx = np.full(nrow, -1, dtype=np.int64)
    k = 0
    for r in range(nrow):
        if carry[r]:
            newidx[r] = k
            k += 1
    kept = 0
    if final:
        return carry, kept
    mask = np.uint64(n_used.shape[0] - 1)
    for j in range(t_used.shape[0]):
        if not t_used[j] or t_time[j] < cutoff_ns:
            continue
        if not t_replied[j]:
            if t_row[j] < 0 or newidx[t_row[j]] < 0:
                continue  # its row is emitted as an orphan
            row = newidx[t_row[j]]
        else:
            row = -1
        q = _key_hash(t_client[j], t_server[j], t_tr[j], t_xid[j]) & mask
        while n_used[q]:
            q = (q + np.uint64(1)) & mask
        n_used[q] = True
        n_client[q] = t_client[j]
        n_server[q] = t_server[j]
        n_tr[q] = t_tr[j]
        n_xid[q] = t_xid[j]
        n_replied[q] = t_replied[j]
        n_time[q] = t_time[j]
        n_op[q] = t_op[j]
        n_row[q] = row
        kept += 1
    return carry, kept
