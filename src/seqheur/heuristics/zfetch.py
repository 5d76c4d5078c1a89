"""``zfetch``: OpenZFS 2.3 multi-stream prefetcher detection. (Rules and sources: docs/heuristics.md.)

Source: openzfs/zfs ``module/zfs/dmu_zfetch.c`` and ``include/sys/dmu_zfetch.h`` @ zfs-2.3.0
(bc06d816); reorder ranges from "Speculative prefetch for reordered requests" (5e5fd0a178).

Per file (dnode) up to ``max_streams`` streams, kept in list order (new streams at the head),
each {``blkid`` = next expected record, ``atime``, ``pf_dist``, data window
``[pf_start, pf_end)``, up to 9 future ranges}. A request covers records
``[off >> shift, (off + count - 1 >> shift) + 1)`` with ``recordsize = 1 << shift``:

* exact match (``blkid == s.blkid``) or one behind (misaligned read) → hit;
* ahead of a stream by at most ``R = min(max_reorder/recordsize + 1, 65535)`` records → the
  range is stored as a future range; the stream advances over stored ranges once the holes
  before a range end are at most 1/4 (``hole_shift = 2``) of the distance;
* overlapping the stream head → hit of the part beyond ``blkid``;
* behind within ``R`` and the stream used within ``max_sec_reap`` → ignored;
* otherwise a new stream at the end of the access (reaping streams idle ``max_sec_reap``,
  else recycling the oldest idle ``min_sec_reap``; a new stream's ``atime`` is
  ``now - min_sec_reap``). Stream times are whole seconds (``time_ns // 1e9``), as the
  kernel's ``gethrestime_sec()``.

On a hit of ``n > 0`` records: ``pf_dist := n·recordsize`` if smaller, else doubled while
below ``min_distance``, else grown by 1/8 if the stream's ``more`` flag is set, capped at
``max_distance``.

**seqcount** of a request = the matched stream's prefetch distance in records,
``min(seqmax, pf_dist >> shift)``; 0 for a new stream or an ignored access. zfetch's own
window (bytes) is therefore ``seqcount · recordsize`` until the cap.

Left out, because a ReadStream cannot know them (a replay with file sizes could add them): the file's
size (streams limit ``min(8, filesize/max_distance)``, end-of-file deletion, files under 3
records), the prefetch-I/O feedback ``more`` (set when an I/O finished after the stream
passed it; parameter ``assume_more`` sets it after every hit), pending-I/O checks when
reaping, the ARC-size throttle of doubling (assumed not limiting) and indirect-block
prefetch.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from ..options import param
from .registry import detector

NRANGES = 9  # ZFETCH_RANGES
# stream words
S_BLKID = 0
S_ATIME = 1
S_PFDIST = 2
S_PFSTART = 3
S_PFEND = 4
S_NR = 5
S_R0 = 6
SW = S_R0 + 2 * NRANGES

# params array layout (dataclass field order)
P_SHIFT, P_STREAMS, P_MINREAP, P_MAXREAP, P_MIND, P_MAXD, P_REORDER, P_HOLE, P_MORE, P_SEQMAX = range(10)

NS = 1_000_000_000


@dataclass(frozen=True)
class ZfetchParams:
    shift: int = param(17, unit="log2 bytes",
                       doc="log2 of the recordsize, 9..24; 17 = the 128 KiB default")
    max_streams: int = param(8, tune=(1, 64, "log"), doc="zfetch_max_streams, 1..64")
    min_sec_reap: int = param(1, unit="s", doc="zfetch_min_sec_reap")
    max_sec_reap: int = param(2, unit="s", doc="zfetch_max_sec_reap")
    min_distance: int = param(4 * 1024 * 1024, unit="bytes", tune=(1 << 18, 1 << 26),
                              doc="zfetch_min_distance")
    max_distance: int = param(64 * 1024 * 1024, unit="bytes", tune=(1 << 22, 1 << 28),
                              doc="zfetch_max_distance")
    max_reorder: int = param(16 * 1024 * 1024, unit="bytes", doc="zfetch_max_reorder")
    hole_shift: int = param(2, unit="log2", doc="zfetch_hole_shift: holes <= 1/4")
    assume_more: bool = param(False, doc="treat every hit as if prefetch I/O lagged: zfetch's more")
    seqmax: int = param(127, tune=(1, 127, "log"), doc="seqcount cap, IO_SEQMAX; 1..127")

    def __post_init__(self) -> None:
        if not 9 <= self.shift <= 24:
            raise ValueError("shift must be in 9..24 (512 B .. 16 MiB records)")
        if not 1 <= self.max_streams <= 64:
            raise ValueError("max_streams must be in 1..64")
        if self.min_distance < 0 or self.max_distance < self.min_distance:
            raise ValueError("need 0 <= min_distance <= max_distance")
        if not 1 <= self.seqmax <= 127:
            raise ValueError("seqmax must be in 1..127")


def _saturation(p: ZfetchParams) -> int:
    # a long sequential stream of records: pf_dist starts at one record and doubles until
    # >= min_distance (then grows by 1/8 to max_distance only when ``more`` is set)
    rec = 1 << p.shift
    d = rec
    while d < p.min_distance:
        d *= 2
    if p.assume_more:
        while d < p.max_distance:
            d += d // 8
    d = min(d, p.max_distance)
    return min(p.seqmax, d >> p.shift)


@njit(cache=True, nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    state[0] = 0


@njit(cache=True, nogil=True, _nrt=False)
def _hit(state, b, n):
    """Advance stream at base ``b`` by ``n`` records, swallowing ranges it reaches."""
    new_end = state[b + S_BLKID] + n
    nr = state[b + S_NR]
    k = 0
    while k < nr and state[b + S_R0 + 2 * k] <= new_end:
        e = state[b + S_R0 + 2 * k + 1]
        if e > new_end:
            new_end = e
        k += 1
    if k > 0:
        for j in range(k, nr):
            state[b + S_R0 + 2 * (j - k)] = state[b + S_R0 + 2 * j]
            state[b + S_R0 + 2 * (j - k) + 1] = state[b + S_R0 + 2 * j + 1]
        state[b + S_NR] = nr - k
    n = new_end - state[b + S_BLKID]
    state[b + S_BLKID] = new_end
    return n


@njit(cache=True, nogil=True, _nrt=False)
def _future(state, b, blkid, n, hole_shift):
    """Store [blkid, blkid+n) ahead of the stream; advance if holes <= 1/2**hole_shift."""
    start = blkid
    end = blkid + n
    nr = state[b + S_NR]
    # merge with every range it intersects or touches, else insert in order
    k = 0
    while k < nr and state[b + S_R0 + 2 * k + 1] < start:
        k += 1
    j = k
    while j < nr and state[b + S_R0 + 2 * j] <= end:
        if state[b + S_R0 + 2 * j] < start:
            start = state[b + S_R0 + 2 * j]
        if state[b + S_R0 + 2 * j + 1] > end:
            end = state[b + S_R0 + 2 * j + 1]
        j += 1
    merged = j - k
    if merged == 0:
        if k >= NRANGES:
            return 0  # no slot after the last range: the access is dropped, no fill check
        # insert at k; when all slots are used the last range falls off the end
        top = nr if nr < NRANGES else NRANGES - 1
        for q in range(top - 1, k - 1, -1):
            state[b + S_R0 + 2 * (q + 1)] = state[b + S_R0 + 2 * q]
            state[b + S_R0 + 2 * (q + 1) + 1] = state[b + S_R0 + 2 * q + 1]
        state[b + S_R0 + 2 * k] = start
        state[b + S_R0 + 2 * k + 1] = end
        nr = top + 1
    else:
        # ranges k..j-1 become one: shift the tail down by merged - 1
        state[b + S_R0 + 2 * k] = start
        state[b + S_R0 + 2 * k + 1] = end
        for q in range(j, nr):
            state[b + S_R0 + 2 * (q - merged + 1)] = state[b + S_R0 + 2 * q]
            state[b + S_R0 + 2 * (q - merged + 1) + 1] = state[b + S_R0 + 2 * q + 1]
        nr = nr - merged + 1
    state[b + S_NR] = nr
    if hole_shift >= 16:
        return 0
    # walk the ranges: the largest end whose preceding holes are <= end/2**hole_shift
    base = state[b + S_BLKID]
    holes = 0
    prev = base
    accept = 0
    for q in range(nr):
        rs = state[b + S_R0 + 2 * q]
        re = state[b + S_R0 + 2 * q + 1]
        holes += rs - prev
        prev = re
        if holes <= ((re - base) >> hole_shift):
            accept = re - base
    if accept > 0:
        return _hit(state, b, accept)
    return 0


@njit(cache=True, nogil=True, _nrt=False)
def _seq(state, b, params):
    s = state[b + S_PFDIST] >> params[P_SHIFT]
    return s if s < params[P_SEQMAX] else params[P_SEQMAX]


@njit(cache=True, nogil=True, _nrt=False)
def _create(state, params, nxt, now):
    """New stream at the head of the list (or nothing if every stream is busy); ``now`` in
    whole seconds, like gethrestime_sec()."""
    ns = state[0]
    # delete streams without a hit for max_sec_reap (one of them would be reused: the same)
    t = now - params[P_MAXREAP]
    w = 0
    for r in range(ns):
        rb = 1 + r * SW
        if state[rb + S_ATIME] < t:
            continue
        if w != r:
            wb = 1 + w * SW
            for q in range(SW):
                state[wb + q] = state[rb + q]
        w += 1
    ns = w
    if ns >= params[P_STREAMS]:
        # reuse the oldest stream without a hit for min_sec_reap (the last one on ties)
        t = now - params[P_MINREAP]
        old = -1
        for r in range(ns):
            rb = 1 + r * SW
            if state[rb + S_ATIME] < t:
                if old < 0 or state[1 + old * SW + S_ATIME] >= state[rb + S_ATIME]:
                    old = r
        if old < 0:
            state[0] = ns
            return
        for r in range(old + 1, ns):  # remove it
            for q in range(SW):
                state[1 + (r - 1) * SW + q] = state[1 + r * SW + q]
        ns -= 1
    for r in range(ns - 1, -1, -1):  # insert at head
        for q in range(SW):
            state[1 + (r + 1) * SW + q] = state[1 + r * SW + q]
    hb = 1
    state[hb + S_BLKID] = nxt
    state[hb + S_ATIME] = now - params[P_MINREAP]  # reusable until its first hit
    state[hb + S_PFDIST] = 0
    state[hb + S_PFSTART] = nxt
    state[hb + S_PFEND] = nxt
    state[hb + S_NR] = 0
    state[0] = ns + 1


@njit(cache=True, nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    if count <= 0:
        return 0
    shift = params[P_SHIFT]
    blkid = offset >> shift
    end = ((offset + count - 1) >> shift) + 1
    nblks = end - blkid
    now = time_ns // NS  # the kernel keeps stream times in whole seconds
    ns = state[0]
    b = -1
    mode = 0  # 1 hit, 2 future (already advanced)
    for r in range(ns):
        rb = 1 + r * SW
        if blkid == state[rb + S_BLKID]:
            b = rb
            mode = 1
            break
        if blkid + 1 == state[rb + S_BLKID]:  # misaligned reads
            blkid += 1
            nblks -= 1
            b = rb
            mode = 1
            break
    if b < 0:
        rr = (params[P_REORDER] >> shift) + 1
        if rr > 65535:
            rr = 65535
        for r in range(ns):
            rb = 1 + r * SW
            sb = state[rb + S_BLKID]
            if blkid > sb:
                if end <= sb + rr:
                    nblks = _future(state, rb, blkid, nblks, params[P_HOLE])
                    b = rb
                    mode = 2
                    break
            elif end >= sb:
                nblks -= sb - blkid
                blkid = sb
                b = rb
                mode = 1
                break
            elif end + rr > sb and state[rb + S_ATIME] >= now - params[P_MAXREAP]:
                state[rb + S_ATIME] = now
                return 0  # an access behind the stream: ignored
    if b < 0:
        _create(state, params, end, now)
        return 0
    if mode == 1:
        nblks = _hit(state, b, nblks)
    state[b + S_ATIME] = now
    if nblks <= 0:
        return _seq(state, b, params)
    nb = nblks << shift
    d = state[b + S_PFDIST]
    if d < nb:
        d = nb
    elif d < params[P_MIND]:
        d = d * 2
    elif params[P_MORE] != 0:
        d = d + d // 8
    if d > params[P_MAXD]:
        d = params[P_MAXD]
    state[b + S_PFDIST] = d
    if state[b + S_PFSTART] < state[b + S_BLKID]:
        state[b + S_PFSTART] = state[b + S_BLKID]
    pe = state[b + S_BLKID] + (d >> shift)
    if state[b + S_PFEND] < pe:
        state[b + S_PFEND] = pe
    return _seq(state, b, params)


@detector("zfetch", params=ZfetchParams,
          state_words=lambda p: 1 + SW * p.max_streams, builtin=True,
          max_seqcount=_saturation,
          source="openzfs/zfs module/zfs/dmu_zfetch.c @ zfs-2.3.0 (bc06d816)")
class Zfetch:
    """OpenZFS 2.3 zfetch: up to 8 streams per file, exact/±1 match, 16 MiB reorder ranges
    advanced at <= 25 % holes, distance doubling to 4 MiB (then +1/8 to 64 MiB)."""

    reset = reset
    update = update
