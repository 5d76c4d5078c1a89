"""``linux-2.6.32`` and ``linux-3.12``: Linux on-demand read-ahead
(``mm/readahead.c``; docs/replay.md, "The model, per READ", item 4).

Unlike the FreeBSD detectors, Linux read-ahead decides *what to read* itself and consults the
page cache: a PG_readahead mark on a cached page triggers the asynchronous path, a hole search
sizes the window of an interleaved stream, and context read-ahead counts the cached pages
just before a miss. So these detectors are replayed together with the cache model
(:mod:`seqheur.cache`, 4 KiB pages) by :func:`seqheur.replay`, which implies the ``linux``
read-ahead policy.

State per table slot (a ``struct file_ra_state``): ``[start, size, async_size, prev_pos, lo, hi,
mark]``; ``prev_pos`` starts at -1. The per-request ``seqcount`` a Linux detector reports is the
window size ``size`` in pages after the request (0 before any read-ahead), capped at
``ra_pages`` (32 = 128 KiB by default, ``VM_READAHEAD_PAGES``), where a long sequential stream
saturates (a merged first submit may briefly make ``size`` up to twice that).

Per READ of ``count`` bytes at ``pos`` (the buffered read path, ``generic_file_buffered_read``):
pages ``index = pos>>12`` up to ``last = (pos+count+4095)>>12`` (pages read stop at EOF; ``req``
uses the count asked for, as the kernel does); for each page: not cached →
synchronous ``ondemand(hit_marker=False, req=last-page)`` (then the page itself if still
missing); cached with PG_readahead → clear it, asynchronous ``ondemand(hit_marker=True, ...)``.
Afterwards ``prev_pos = (last-1)<<12 | (pos+count)&4095``. ``ondemand`` is
``ondemand_readahead`` (2.6.31–3.11, with ``get_init_ra_size``/``get_next_ra_size`` window
sizing); context read-ahead fires on *any* history page in ``linux-2.6.32`` and only when the
history exceeds the request (window ``min(h+req, max)``, ``async_size`` 1) in ``linux-3.12``
(commit 2cad4018 "readahead: make context readahead more conservative"). Not modelled:
``max_sane_readahead``, read congestion, writeback; the marker branch's hole search and the
history count look at the page cache model.

**Caller** (param ``caller``): ``splice`` (the default: nfsd reads through
``splice_direct_to_actor`` → ``__generic_file_splice_read`` whenever the RPC allows it, the
normal case for these kernels; :func:`splice_read`) or ``read`` (``do_generic_file_read``,
above; :func:`linux_read`).

In replay the serve step (``serve_2632``/``serve_312``) runs this read-ahead against the replay's
typed state (``engine.World``: cache, per-file history, counters by name, the request's scratch,
the disk-op buffer); the slot's words above are the detector's own.

**Without a cache** (``seqheur.detect``, which has no page cache) the same code runs against a
stand-in: the slot remembers one extent ``[lo, hi)`` of pages its stream has read or read
ahead since the slot was reset, and the page of the last PG_readahead mark; "cached" means
inside that extent. That is exact for a single sequential reader with an ample cache and an
approximation otherwise; :func:`seqheur.replay` always uses the real cache model.

Params: ``ra_kb`` (read_ahead_kb of the backing device, default 128).
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from .. import cache as C
from .. import readahead as R
from ..options import param
from .registry import detector
from .. import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

PAGE_SHIFT = 12
PAGE = 1 << PAGE_SHIFT

# state words
L_START = 0
L_SIZE = 1
L_ASYNC = 2
L_PREV = 3
L_LO = 4  # stand-in page cache (detect without a cache model): cached extent [lo, hi)
L_HI = 5
L_MARK = 6  # stand-in: page carrying PG_readahead (-1 none)
L_WORDS = 7

CALLERS = ("splice", "read")
PIPE_PAGES = 16  # PIPE_DEF_BUFFERS: pages one splice call handles


@dataclass(frozen=True)
class LinuxParams:
    ra_kb: int = param(128, unit="KiB", tune=(16, 4096),
                       doc="bdi read_ahead_kb, VM_MAX_READAHEAD / "
                       "VM_READAHEAD_PAGES; a multiple of 4 in 4..1048576")
    caller: str = param("splice", choices=CALLERS, doc="the read path that calls read-ahead: "
                        "splice (nfsd's default, __generic_file_splice_read: 16-page pipe "
                        "chunks, one sync read-ahead per chunk, prev_pos = the page after the "
                        "last one spliced) or read (read(2), do_generic_file_read)")

    def __post_init__(self) -> None:
        if not 4 <= self.ra_kb <= 1 << 20 or self.ra_kb % 4:
            raise ValueError("ra_kb must be a multiple of 4 in 4..1048576")

    @property
    def ra_pages(self) -> int:
        return self.ra_kb * 1024 // PAGE


# --------------------------------------------------------------------------------------------
# window sizing (get_init_ra_size, get_next_ra_size)


@njit(cache=True, nogil=True, _nrt=False)
def init_size(req, mx):
    n = 1
    while n < req:
        n <<= 1
    if n <= mx // 32:
        return 4 * n
    if n <= mx // 4:
        return 2 * n
    return mx


@njit(cache=True, nogil=True, _nrt=False)
def next_size(cur, mx):
    if cur < mx // 16:
        return 4 * cur
    n = 2 * cur
    return n if n < mx else mx


# --------------------------------------------------------------------------------------------
# page cache access: the real cache model (``ctx`` is the replay's ``engine.World``) or the
# slot's stand-in (``ctx`` None: detect); numba compiles each case apart, the other pruned


@njit(nogil=True, _nrt=False)
def _cached(ctx, f, p, row):
    if ctx is None:
        return row[L_LO] <= p and p < row[L_HI]
    return C.lookup(ctx.cache, C.make_key(f, p)) >= 0


@njit(nogil=True, _nrt=False)
def _read(ctx, f, start, n, mark, row, sync):
    """Read the uncached pages of [start, start+n); ``mark`` gets PG_readahead if newly read."""
    if n <= 0:
        return
    if ctx is None:
        if start <= row[L_HI] and start + n > row[L_HI] and start >= row[L_LO]:
            if mark >= row[L_HI]:
                row[L_MARK] = mark
            row[L_HI] = start + n
        elif start < row[L_LO] or start > row[L_HI]:
            row[L_LO] = start
            row[L_HI] = start + n
            row[L_MARK] = mark
        return
    req = ctx.req  # the request's stamp, demand pages and end of file (serve_linux)
    R.read_range(ctx.cache, f, start, n, mark, req.stamp, req.d_lo, req.d_hi, req.eof_blk, PAGE,
                 req.eof_bytes, ctx.ctr, req, ctx.ops, sync)


@njit(nogil=True, _nrt=False)
def _act(ctx, f, kind, start, n, mark, row):
    """Record a read-ahead action with the ra state after it (replay only)."""
    if ctx is not None:
        R.emit_action(ctx.acts, ctx.req.stamp, f, kind, start, n, mark, row[L_START],
                      row[L_SIZE], row[L_ASYNC], -1)


@njit(nogil=True, _nrt=False, inline='always')
def _submit(ctx, f, row, sync, kind):
    """``ra_submit``: read [start, start+size), PG_readahead on page start+size-async_size."""
    start = row[L_START]
    size = row[L_SIZE]
    asz = row[L_ASYNC]
    mark = start + size - asz if asz > 0 else -1
    _read(ctx, f, start, size, mark, row, sync)
    _act(ctx, f, kind, start, size, mark, row)


@njit(nogil=True, _nrt=False, inline='always')
def ondemand(ctx, f, row, mx, ver, hit_marker, index, req):
    """``ondemand_readahead``; ``ver`` 0 = 2.6.31–3.11 context rule, 1 = 3.12+ (commit 2cad4018)."""
    initial = index == 0
    submit = False
    kind = R.ACT_ASYNC if hit_marker else R.ACT_SYNC
    if not initial:
        start = row[L_START]
        size = row[L_SIZE]
        if index == start + size - row[L_ASYNC] or index == start + size:
            row[L_START] = start + size
            row[L_SIZE] = next_size(size, mx)
            row[L_ASYNC] = row[L_SIZE]
            submit = True
        elif hit_marker:
            s = -1
            for k in range(1, mx + 1):
                if not _cached(ctx, f, index + k, row):
                    s = index + k
                    break
            if s < 0:
                return
            row[L_START] = s
            row[L_SIZE] = next_size(s - index + req, mx)
            row[L_ASYNC] = row[L_SIZE]
            submit = True
        elif req > mx:
            initial = True
        else:
            prev = row[L_PREV] >> PAGE_SHIFT  # arithmetic: -1 for a fresh state
            d = index - prev
            if d == 0 or d == 1:  # unsigned (index - prev) <= 1
                initial = True
            else:
                h = 0
                p = index - 1
                while h < mx and p >= 0 and _cached(ctx, f, p, row):
                    h += 1
                    p -= 1
                if ver == 0:
                    if h > 0:
                        if h >= index:
                            h *= 2
                        row[L_START] = index
                        row[L_SIZE] = init_size(h + req, mx)
                        row[L_ASYNC] = row[L_SIZE]
                        submit = True
                        kind = R.ACT_CONTEXT
                else:
                    if h > req:
                        if h >= index:
                            h *= 2
                        row[L_START] = index
                        row[L_SIZE] = h + req if h + req < mx else mx
                        row[L_ASYNC] = 1
                        submit = True
                        kind = R.ACT_CONTEXT
                if not submit:
                    # random read: just the requested pages, no mark, state unchanged
                    _read(ctx, f, index, req, -1, row, True)
                    _act(ctx, f, R.ACT_PLAIN, index, req, -1, row)
                    return
    if initial:
        row[L_START] = index
        row[L_SIZE] = init_size(req, mx)
        row[L_ASYNC] = row[L_SIZE] - req if row[L_SIZE] > req else row[L_SIZE]
    if index == row[L_START] and row[L_SIZE] == row[L_ASYNC]:
        row[L_ASYNC] = next_size(row[L_SIZE], mx)
        row[L_SIZE] += row[L_ASYNC]
    _submit(ctx, f, row, not hit_marker, kind)


@njit(nogil=True, _nrt=False, inline='always')
def linux_read(ctx, f, row, mx, ver, off, cnt, cnt_req):
    """One buffered READ; returns the window size (the detector's seqcount).

    ``ctx``: the replay's ``engine.World`` (the cache model, the counters, the request's
    scratch with its stamp, demand pages and end of file, the op buffer), or None (detect:
    the slot's stand-in cache)."""
    if cnt <= 0:
        return window(row, mx)
    index = off >> PAGE_SHIFT
    last = (off + cnt + PAGE - 1) >> PAGE_SHIFT  # pages read: the count clipped at EOF
    last_req = (off + cnt_req + PAGE - 1) >> PAGE_SHIFT  # read-ahead sizes: the count asked
    for p in range(index, last):
        if ctx is None:
            if not _cached(ctx, f, p, row):
                ondemand(ctx, f, row, mx, ver, False, p, last_req - p)
                if not _cached(ctx, f, p, row):
                    _read(ctx, f, p, 1, -1, row, True)
            elif row[L_MARK] == p:
                row[L_MARK] = -1
                ondemand(ctx, f, row, mx, ver, True, p, last_req - p)
        else:
            c = ctx.cache
            req = ctx.req
            e = C.lookup(c, C.make_key(f, p))
            if e >= 0:
                if C.stamp(c, e) == req.stamp:  # read by this request already
                    R.count_miss(c, e, f, p, ctx.fs, ctx.ctr, ctx.lost, req)
                else:
                    ctx.ctr.hits += 1
                    req.hit_blocks += 1
            else:
                R.count_miss(c, -1, f, p, ctx.fs, ctx.ctr, ctx.lost, req)
            if e < 0:
                ondemand(ctx, f, row, mx, ver, False, p, last_req - p)
                e = C.lookup(c, C.make_key(f, p))
                if e < 0:  # beyond the window (or evicted at once by a tiny cache)
                    _read(ctx, f, p, 1, -1, row, True)
                    _act(ctx, f, R.ACT_PAGE, p, 1, -1, row)
                    e = C.lookup(c, C.make_key(f, p))
            elif (C.flags(c, e) & C.F_RAM) != 0:
                C.clear_flag(c, e, C.F_RAM)
                ondemand(ctx, f, row, mx, ver, True, p, last_req - p)
                e = C.lookup(c, C.make_key(f, p))
            if e >= 0:
                R.demand_use(c, e, ctx.ctr)
    row[L_PREV] = ((last - 1) << PAGE_SHIFT) | ((off + cnt) & (PAGE - 1))
    return window(row, mx)


@njit(nogil=True, _nrt=False)
def _take_mark(ctx, f, p, row):
    """Test and clear PG_readahead of cached page ``p``."""
    if ctx is None:
        if row[L_MARK] == p:
            row[L_MARK] = -1
            return True
        return False
    c = ctx.cache
    e = C.lookup(c, C.make_key(f, p))
    if e >= 0 and (C.flags(c, e) & C.F_RAM) != 0:
        C.clear_flag(c, e, C.F_RAM)
        return True
    return False


@njit(nogil=True, _nrt=False)
def _use(ctx, f, p):
    """Account demand page ``p`` after the request's reads: a hit when it was cached before
    this request, else a miss."""
    c = ctx.cache
    req = ctx.req
    e = C.lookup(c, C.make_key(f, p))
    if e >= 0 and C.stamp(c, e) != req.stamp:
        ctx.ctr.hits += 1
        req.hit_blocks += 1
    else:
        R.count_miss(c, e, f, p, ctx.fs, ctx.ctr, ctx.lost, req)
    if e >= 0:
        R.demand_use(c, e, ctx.ctr)


@njit(nogil=True, _nrt=False, inline='always')
def splice_read(ctx, f, row, mx, ver, off, cnt, cnt_req):
    """One READ through nfsd's splice path (``__generic_file_splice_read``, called by
    ``splice_direct_to_actor`` until the READ is done): per call a chunk of at most 16 pages;
    the resident prefix of the chunk is looked up, the sync read-ahead runs once at its first
    hole (req = pages still requested), the chunk's other holes are read page by page without
    read-ahead, then each page of the chunk with PG_readahead runs the async read-ahead; at
    the end ``prev_pos`` = the page after the last page spliced (a page-aligned position, so a
    READ that skips exactly one page after one ending on a page boundary is a sequential miss
    here and a random read on the read(2) path). Returns the window size."""
    if cnt <= 0:
        return window(row, mx)
    pos = off
    end = off + cnt  # clipped at EOF: the pages spliced
    end_req = off + cnt_req  # as asked: the read-ahead sizes (req_pages)
    while pos < end:
        index = pos >> PAGE_SHIFT
        loff = pos & (PAGE - 1)
        req_pages = (end_req - pos + loff + PAGE - 1) >> PAGE_SHIFT
        nr = req_pages if req_pages < PIPE_PAGES else PIPE_PAGES
        have = (end - pos + loff + PAGE - 1) >> PAGE_SHIFT  # pages before EOF
        if nr > have:
            nr = have
        k = 0
        while k < nr and _cached(ctx, f, index + k, row):
            k += 1
        if k < nr:
            ondemand(ctx, f, row, mx, ver, False, index + k, req_pages - k)
            for j in range(k, nr):
                if not _cached(ctx, f, index + j, row):
                    _read(ctx, f, index + j, 1, -1, row, True)
                    _act(ctx, f, R.ACT_PAGE, index + j, 1, -1, row)
        for j in range(nr):
            p = index + j
            if _take_mark(ctx, f, p, row):
                ondemand(ctx, f, row, mx, ver, True, p, req_pages - j)
            if ctx is not None:
                _use(ctx, f, p)
        step = nr * PAGE - loff
        pos = pos + step if pos + step < end else end
        row[L_PREV] = (index + nr) << PAGE_SHIFT
    return window(row, mx)


@njit(nogil=True, _nrt=False)
def window(row, mx):
    """The reported seqcount: the window size, capped at the maximum (a merged first submit
    may briefly hold up to twice the maximum)."""
    return row[L_SIZE] if row[L_SIZE] < mx else mx


# --------------------------------------------------------------------------------------------
# replay with the cache model


@njit(nogil=True, _nrt=False, inline='always')
def serve_linux(world, f, row, off, cnt, fresh, stamp, mx, ver, caller):
    """One READ through Linux read-ahead against the cache model; returns the window size.

    The request's stamp, demand pages and end of file go to ``world.req``: the reads deep in
    ``linux_read``'s call tree take them from there rather than through every call."""
    n = R.begin_block_request(world, f, off, cnt, fresh, stamp, PAGE_SHIFT)
    if n > 0:  # read-ahead sized from the count asked for, pages read up to EOF
        if caller == 0:
            splice_read(world, f, row, mx, ver, off, n, cnt)
        else:
            linux_read(world, f, row, mx, ver, off, n, cnt)
    elif caller == 1 and cnt > 0 and world.fsize[f] >= 0:
        read_past_eof(world, f, row, mx, ver, off, cnt, stamp)
    R.end_request(f, off, n, world.fs, world.req)
    return window(row, mx)


@njit(nogil=True, _nrt=False)
def read_past_eof(world, f, row, mx, ver, off, cnt, stamp):
    """A read(2) at or past EOF in 2.6.32/3.x: ``do_generic_file_read`` has no early return,
    so the missing page runs the sync read-ahead (which may reset the window, reading nothing
    past EOF) and is then instantiated (zero-filled, no disk read); nothing is copied and
    ``prev_pos`` stays. The splice path returns before all this."""
    index = off >> PAGE_SHIFT
    c = world.cache
    if C.lookup(c, C.make_key(f, index)) >= 0:
        return
    req = world.req
    req.stamp = stamp
    req.d_lo = index  # not read ahead: the request's own page
    req.d_hi = index
    req.eof_bytes = world.fsize[f]
    req.eof_blk = (req.eof_bytes + PAGE - 1) >> PAGE_SHIFT
    last_req = (off + cnt + PAGE - 1) >> PAGE_SHIFT
    ondemand(world, f, row, mx, ver, False, index, last_req - index)
    if C.lookup(c, C.make_key(f, index)) < 0:
        R.insert_block(c, f, index, stamp, index, index, 0, world.ctr, req)
        _act(world, f, R.ACT_PAGE, index, 1, -1, row)


@njit(nogil=True, _nrt=False, inline="always")
def serve_2632(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    """The engine's serve step for ``linux-2.6.32``: its own read-ahead, 2.6.31-3.11 rules."""
    return serve_linux(world, f, row, off, cnt, fresh, stamp, params[0] * 1024 // PAGE, 0,
                       params[1])


@njit(nogil=True, _nrt=False, inline="always")
def serve_312(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    """The engine's serve step for ``linux-3.12``: its own read-ahead, 3.12+ rules."""
    return serve_linux(world, f, row, off, cnt, fresh, stamp, params[0] * 1024 // PAGE, 1,
                       params[1])


def ops_bound(p: LinuxParams) -> int:
    """At most this many disk reads per demand page of a request (window and hole search)."""
    return 4 * p.ra_pages + 4


# --------------------------------------------------------------------------------------------
# detector contract (used by seqheur.detect with the stand-in cache)


@njit(nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    state[L_START] = 0
    state[L_SIZE] = 0
    state[L_ASYNC] = 0
    state[L_PREV] = -1
    state[L_LO] = 0
    state[L_HI] = 0
    state[L_MARK] = -1


@njit(nogil=True, _nrt=False)
def _standalone(state, params, ver, offset, count):
    mx = params[0] * 1024 // PAGE
    if params[1] == 0:
        return splice_read(None, 0, state, mx, ver, offset, count, count)
    return linux_read(None, 0, state, mx, ver, offset, count, count)


@njit(nogil=True, _nrt=False)
def update_2632(state, params, offset, count, time_ns):
    return _standalone(state, params, 0, offset, count)


@njit(nogil=True, _nrt=False)
def update_312(state, params, offset, count, time_ns):
    return _standalone(state, params, 1, offset, count)


@detector("linux-2.6.32", params=LinuxParams, state_words=L_WORDS, builtin=True,
          max_seqcount=lambda p: p.ra_pages, serve=serve_2632, ops_bound=ops_bound, policy="linux",
          block_size=PAGE,
          source="AndreiLux/ref-3.10 mm/readahead.c @ 147ee332 (2.6.31-3.11 rules)")
class Linux2632:
    """Linux 2.6.31-3.11 on-demand read-ahead: window ramp x4/x2 to ra_pages, PG_readahead
    async trigger, context read-ahead on any cached history page; seqcount = window (pages)."""

    reset = reset
    update = update_2632


@detector("linux-3.12", params=LinuxParams, state_words=L_WORDS, builtin=True,
          max_seqcount=lambda p: p.ra_pages, serve=serve_312, ops_bound=ops_bound, policy="linux",
          block_size=PAGE,
          source="commit 2cad4018 (v3.12); CachyOS/linux mm/readahead.c @ 4cbe8f83")
class Linux312:
    """Linux 3.12+ on-demand read-ahead: as 2.6.32, but context read-ahead only when more
    than req history pages are cached (window min(h+req, max), async 1)."""

    reset = reset
    update = update_312
