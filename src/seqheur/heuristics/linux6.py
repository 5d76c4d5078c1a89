"""``linux-6``: Linux on-demand read-ahead as in 6.16-6.18 (``mm/readahead.c``,
``mm/filemap.c``), with large folios; checked page for page against the running kernel
(docs/fidelity.md).

Per open file (a table slot: ``struct file_ra_state``): ``start``, ``size``, ``async_size``,
``order``, ``prev_pos`` (-1 at open), ``ra_pages`` (``ra_kb``/4 at open, doubled by
``fadvise=sequential``) and FMODE_RANDOM (``fadvise=random``). The page cache is the replay's
cache model (4 KiB pages); a page also carries the order of its folio (folios are naturally
aligned, so the folio of page ``p`` starts at ``p`` rounded down to its size) and a folio's
PG_readahead mark is on its first page.

One READ of ``count`` bytes at ``pos`` (``filemap_read``), with ``last`` = the page after the
request (not clipped at EOF):

1. Nothing if ``pos`` is at or past EOF (``prev_pos`` unchanged). Else, while bytes remain
   below EOF: take the *batch* of consecutive cached folios from ``pos``'s page up to
   ``last - 1``, ending at a hole or at a marked folio. Empty: ``sync_ra(index, last -
   index)``, then batch again; still empty: read that one page. If the batch's last folio is
   marked: ``async_ra(folio, last - folio)``. Copy through the batch. At the end ``prev_pos``
   = the byte after the last byte copied.
2. ``max`` = ``ra_pages``, raised to ``min(req, io_pages)`` when ``req > ra_pages`` and
   ``io_pages > ra_pages``.
3. ``sync_ra(index, req)``: ``ra_pages`` 0 reads one page; FMODE_RANDOM reads ``min(req,
   max(io_pages, ra_pages))`` pages, no mark, state untouched. Otherwise, with ``prev_index =
   (unsigned) prev_pos >> 12``: at page 0, for ``req > max`` or ``index - prev_index`` in
   {0, 1}: ``start = index``, ``size = init(req, max)``, ``async = size - req`` if ``size >
   req`` else ``size / 2``. Else ``contig = index - 1 - prev_miss(index - 1, max)``: ``contig
   <= req`` reads the ``req`` pages plainly (no mark, state untouched); else (doubled when the
   history reaches page 0) ``size = min(contig + req, max)``, ``async = 1``. Then ``order = 0``
   and ``ra_order``.
4. ``async_ra(folio, req)``: clear the mark; if the folio is where the window's mark was
   expected (``round_down(start + size - async, folio pages)``): ``start += size``, ``size =
   max(size, next(size))``; else ``start = next_miss(index + 1, max)`` (no read-ahead if 0 or
   more than ``max`` pages on), ``size = next(start - index + req)``. Then ``order += 2``, the
   window's end is trimmed down to a multiple of ``2^min(order, ctz(max))`` when that leaves
   it non-empty, ``async = size``, ``ra_order``.
5. ``ra_order``: ``mark = start + size - async``, limit = min(EOF page, window end); without
   large folios: order-0 pages. Else ``order = min(order, max_order, log2 size)``; folios of
   that order from ``start`` (smaller where the index is not aligned or the folio would pass
   the limit); the folio containing ``mark`` (rounded down to its size) gets PG_readahead. A
   folio that overlaps a cached page stops the walk, and the rest of the window is read as
   order-0 pages around the cached ones, the mark still at ``start + size - async``.
6. ``init``/``next``: as since 2.6.x (``next``: x4 below max/16, x2 up to max/2, else max).
7. ``prev_miss``/``next_miss`` walk the page cache's xarray (64-slot nodes; folios of order
   < 6 as a canonical slot and sibling slots in a leaf, orders 6-9 in the level above) with
   ``xas_prev``/``xas_next``. Started at an index inside a multi-page folio, the walk keeps
   the requested index but continues from the folio's first slot, so it examines slots
   shifted from the index it reports until it crosses a node boundary, where it resyncs
   (skipping or repeating slots). The live kernel shows the effect (a context window one page
   short, a history under-counted by a whole node); :func:`_walk_load`, :func:`_walk_next`
   and :func:`_walk_prev` follow those semantics on a virtual tree, which gives the same
   answers as the kernel's real tree whose height depends on the largest cached index.

Params: ``ra_kb`` (bdi read_ahead_kb), ``io_kb`` (the device's max_sectors_kb: ``io_pages``),
``large_folios`` (the file system allocates large folios: ext4, xfs on 6.x), ``max_order``
(largest folio order: 9 on x86-64), ``fadvise`` (the hint every file is opened with).

Without a cache model (``seqheur.detect``) the same code runs against a stand-in: one extent of
pages per slot, folios of order 0; the replay always uses the cache model.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from .. import cache as C
from .. import readahead as R
from ..options import param
from .linux import init_size, next_size
from .registry import detector
from .. import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

PAGE_SHIFT = 12
PAGE = 1 << PAGE_SHIFT
XA_SHIFT = 6  # xarray: 64 slots a node
XA_TOP = 54  # virtual root's shift: covers page indices below 2**60

# state words (one table slot = one open file)
S_START = 0
S_SIZE = 1
S_ASYNC = 2
S_ORDER = 3
S_PREV = 4  # prev_pos, bytes (-1 at open)
S_RA_PAGES = 5
S_RANDOM = 6  # FMODE_RANDOM
S_LO = 7  # stand-in page cache of detect(): cached extent [lo, hi) and the marked page
S_HI = 8
S_MARK = 9
WORDS = 10

# params, in field order
P_RA_KB = 0
P_IO_KB = 1
P_LARGE = 2
P_MAX_ORDER = 3
P_FADVISE = 4
FADVISE = ("normal", "sequential", "random")


@dataclass(frozen=True)
class Linux6Params:
    ra_kb: int = param(128, unit="KiB", tune=(16, 4096),
                       doc="bdi read_ahead_kb (ra_pages = ra_kb/4); a "
                       "multiple of 4 in 0..1048576")
    io_kb: int = param(1280, unit="KiB", doc="the device's max_sectors_kb (io_pages = io_kb/4;"
                       " 1280 is the 6.x default cap); a multiple of 4 in 4..1048576")
    large_folios: bool = param(True, doc="the file system allocates large folios (ext4 and "
                               "xfs on 6.x); off: every folio is one page")
    max_order: int = param(9, doc="largest folio order of the mapping (9 on x86-64: 2 MiB)")
    fadvise: str = param("normal", choices=FADVISE, doc="posix_fadvise hint every file is "
                         "opened with: sequential doubles ra_pages, random reads only what "
                         "is asked")

    def __post_init__(self) -> None:
        if not 0 <= self.ra_kb <= 1 << 20 or self.ra_kb % 4:
            raise ValueError("ra_kb must be a multiple of 4 in 0..1048576")
        if not 4 <= self.io_kb <= 1 << 20 or self.io_kb % 4:
            raise ValueError("io_kb must be a multiple of 4 in 4..1048576")
        if not 0 <= self.max_order <= 9:
            raise ValueError("max_order must be in 0..9")

    @property
    def ra_pages(self) -> int:
        return self.ra_kb * 1024 // PAGE * (2 if self.fadvise == "sequential" else 1)


# --------------------------------------------------------------------------------------------
# window sizing: get_init_ra_size and get_next_ra_size are unchanged since 2.6.x
# (heuristics.linux.init_size, next_size)


@njit(nogil=True, _nrt=False)
def _ilog2(n):
    k = -1
    while n > 0:
        n >>= 1
        k += 1
    return k


@njit(nogil=True, _nrt=False)
def _ctz(n):
    k = 0
    while n > 0 and (n & 1) == 0:
        n >>= 1
        k += 1
    return k


# --------------------------------------------------------------------------------------------
# page cache access: the cache model (``world``: the replay's engine.World) or the slot's
# stand-in (``world`` None: detect); numba compiles each case apart, the other pruned


@njit(nogil=True, _nrt=False, inline='always')
def _order_at(world, f, p, row):
    """The order of the folio holding page ``p``, or -1 when ``p`` is not cached."""
    if p < 0:
        return -1
    if world is None:
        return 0 if row[S_LO] <= p and p < row[S_HI] else -1
    e = C.lookup(world.cache, C.make_key(f, p))
    if e < 0:
        return -1
    return C.flags(world.cache, e) >> C.F_ORDER_SHIFT


@njit(nogil=True, _nrt=False, inline='always')
def _find(world, f, p, row):
    """Page ``p``'s cache entry (the stand-in: 0), -1 when not cached."""
    if world is None:
        return 0 if row[S_LO] <= p and p < row[S_HI] else -1
    return C.lookup(world.cache, C.make_key(f, p))


@njit(nogil=True, _nrt=False, inline='always')
def _flags(world, e, p, row):
    """The cache flags of entry ``e`` (page ``p``): its folio's order, and PG_readahead on a
    folio's first page."""
    if world is None:
        return C.F_RAM if row[S_MARK] == p else 0
    return C.flags(world.cache, e)


@njit(nogil=True, _nrt=False, inline='always')
def _account(world, f, e, p):
    """Demand page ``p`` (entry ``e``, -1 if a tiny cache evicted it) reached by the copy: a
    hit when it was cached before this request, else a miss; LRU touch."""
    c = world.cache
    req = world.req
    if e >= 0 and C.stamp(c, e) != req.stamp:
        world.ctr.hits += 1
        req.hit_blocks += 1
    else:  # read by this request (or already evicted)
        R.count_miss(c, e, f, p, world.fs, world.ctr, world.lost, req)
    if e >= 0:
        R.demand_use(c, e, world.ctr)


@njit(nogil=True, _nrt=False)
def _clear_mark(world, f, head, row):
    if world is None:
        if row[S_MARK] == head:
            row[S_MARK] = -1
        return
    e = C.lookup(world.cache, C.make_key(f, head))
    if e >= 0:
        C.clear_flag(world.cache, e, C.F_RAM)


@njit(nogil=True, _nrt=False, inline='always')
def _overlaps(world, f, index, n, row):
    """Any page of [index, index+n) cached (``filemap_add_folio`` fails with -EEXIST)."""
    if world is not None:
        return C.any_resident(world.cache, C.make_key(f, index), n)
    for p in range(index, index + n):
        if _order_at(world, f, p, row) >= 0:
            return True
    return False


@njit(nogil=True, _nrt=False, inline='always')
def _insert_folio(world, f, index, order, marked, row):
    """Add the folio [index, index + 2**order) (none of it cached)."""
    n = 1 << order
    if world is None:
        if index == row[S_HI] and index >= row[S_LO]:
            row[S_HI] = index + n
        elif index < row[S_LO] or index > row[S_HI]:
            row[S_LO] = index
            row[S_HI] = index + n
        if marked:
            row[S_MARK] = index
        return
    req = world.req
    fl = order << C.F_ORDER_SHIFT
    for k in range(n):
        b = index + k
        R.insert_block(world.cache, f, b, req.stamp, req.d_lo, req.d_hi,
                       fl | (C.F_RAM if marked and k == 0 else 0), world.ctr, req)


@njit(nogil=True, _nrt=False, inline='always')
def _emit(world, f, lo, hi, sync):
    """One disk read of the newly added pages [lo, hi)."""
    if world is None or hi <= lo:
        return
    req = world.req
    R.emit_op(world.ops, world.ctr, f, lo * PAGE, R.op_bytes(lo, hi - lo, PAGE, req.eof_bytes),
              sync, req.stamp)


# --------------------------------------------------------------------------------------------
# the xarray walk of page_cache_next_miss / page_cache_prev_miss (rule 7 of the docstring)
# A walk state is (shift, base, offset, index): the node's level and first page, the slot the
# walk is at, and the index it reports. The tree is virtual: a node exists wherever the walk
# goes (an empty region answers NULL either way), a slot of a level-6 node holds a folio of
# order >= 6 when the region's first page is in one, and the root is at level XA_TOP.


@njit(nogil=True, _nrt=False, inline='always')
def _slot(world, f, shift, base, k, row):
    """What slot ``k`` of node (shift, base) holds: -1 nothing, -2 a node below, else the slot
    of the entry (itself, or the canonical slot a sibling points to)."""
    if shift == 0:
        o = _order_at(world, f, base + k, row)
        if o < 0:
            return -1
        c = ((base + k) >> o << o) - base
        return c if c >= 0 else 0
    if shift == XA_SHIFT:
        first = base + (k << XA_SHIFT)
        o = _order_at(world, f, first, row)
        if o >= XA_SHIFT:
            return ((first >> o << o) - base) >> XA_SHIFT
    return -2


@njit(nogil=True, _nrt=False)
def _descend(world, f, shift, base, offset, index, row):
    """From slot ``offset`` of node (shift, base), go down while the slot holds a node
    (``xas_set_offset`` from the index at each level). Returns (shift, base, offset, present):
    the slot's entry is returned as is (a sibling counts as present)."""
    while True:
        r = _slot(world, f, shift, base, offset, row)
        if r != -2:
            return shift, base, offset, r >= 0
        base = base + (offset << shift)
        shift -= XA_SHIFT
        offset = (index >> shift) & 63


@njit(nogil=True, _nrt=False)
def _walk_load(world, f, index, row):
    """``xas_load``: descends to ``index`` and resolves a sibling to its canonical slot (the
    index stays as asked). Returns (shift, base, offset, present). The levels above 6 only
    ever hold nodes here, so the descent starts at the level-6 node of ``index``."""
    shift = XA_SHIFT
    base = index >> (2 * XA_SHIFT) << (2 * XA_SHIFT)
    while True:
        k = (index >> shift) & 63
        r = _slot(world, f, shift, base, k, row)
        if r == -2:
            base = base + (k << shift)
            shift -= XA_SHIFT
            continue
        return shift, base, (r if r >= 0 else k), r >= 0


@njit(nogil=True, _nrt=False)
def _walk_next(world, f, shift, base, offset, index, row):
    """``xas_next``. Returns (shift, base, offset, index, present); shift -1: out of bounds."""
    if shift == 0 and offset != 63:
        r = _slot(world, f, 0, base, offset + 1, row)
        return 0, base, offset + 1, index + 1, r >= 0
    index += 1
    if offset != ((index >> shift) & 63):
        offset += 1
    while offset == 64:
        if shift >= XA_TOP:
            return -1, base, offset, index, False
        offset = ((base >> (shift + XA_SHIFT)) & 63) + 1
        shift += XA_SHIFT
        base = base >> (shift + XA_SHIFT) << (shift + XA_SHIFT)
    shift, base, offset, present = _descend(world, f, shift, base, offset, index, row)
    return shift, base, offset, index, present


@njit(nogil=True, _nrt=False)
def _walk_prev(world, f, shift, base, offset, index, row):
    """``xas_prev``. Returns (shift, base, offset, index, present); shift -1: out of bounds."""
    if shift == 0 and offset != 0:
        r = _slot(world, f, 0, base, offset - 1, row)
        return 0, base, offset - 1, index - 1, r >= 0
    index -= 1
    if offset != ((index >> shift) & 63):
        offset -= 1
    while offset == -1:
        if shift >= XA_TOP:
            return -1, base, offset, index, False
        offset = ((base >> (shift + XA_SHIFT)) & 63) - 1
        shift += XA_SHIFT
        base = base >> (shift + XA_SHIFT) << (shift + XA_SHIFT)
    shift, base, offset, present = _descend(world, f, shift, base, offset, index, row)
    return shift, base, offset, index, present


@njit(nogil=True, _nrt=False)
def next_miss(world, f, index, max_scan, row):
    """``page_cache_next_miss``: the index where the walk finds a hole (by its own reckoning),
    0 if it wraps, else ``index + max_scan``."""
    shift, base, offset, present = _walk_load(world, f, index, row)
    at = index
    for k in range(max_scan):
        if k > 0:
            shift, base, offset, at, present = _walk_next(world, f, shift, base, offset, at,
                                                          row)
        if not present:
            return at
        if at == 0:
            return 0
    return index + max_scan


@njit(nogil=True, _nrt=False)
def prev_miss(world, f, index, max_scan, row):
    """``page_cache_prev_miss``: the index where the walk backwards finds a hole, -1
    (ULONG_MAX) if it wraps past page 0, else the last index it examined (not one below it:
    the 6.4 change that returned ``index - max_scan`` was reverted; measured on 6.18, a
    history of exactly ``max_scan`` pages counts one short)."""
    shift, base, offset, present = _walk_load(world, f, index, row)
    at = index
    for k in range(max_scan):
        if k > 0:
            shift, base, offset, at, present = _walk_prev(world, f, shift, base, offset, at,
                                                          row)
        if not present or at == -1:
            break
    return at


# --------------------------------------------------------------------------------------------
# read-ahead


@njit(nogil=True, _nrt=False, inline='always')
def _act(world, f, kind, start, count, mark, row):
    """Record a read-ahead action with the ra state after it (replay only)."""
    if world is not None:
        R.emit_action(world.acts, world.req.stamp, f, kind, start, count, mark, row[S_START],
                      row[S_SIZE], row[S_ASYNC], row[S_ORDER])


@njit(nogil=True, _nrt=False, inline='always')
def _eof_page(world):
    """The last page of the file (``(i_size - 1) >> 12``), -1 for an empty file; a large
    number when the size is unknown."""
    if world is None:
        return 1 << 60
    eof = world.req.eof_bytes
    if eof < 0:
        return 1 << 60
    return (eof - 1) >> PAGE_SHIFT


@njit(nogil=True, _nrt=False, inline='always')
def _unbounded(world, f, index, nr, lookahead, row, sync):
    """``do_page_cache_ra``: order-0 pages of [index, index+nr) (clipped at EOF), skipping
    cached ones; page ``index + nr - lookahead`` gets the mark (none when lookahead > nr)."""
    end_index = _eof_page(world)
    if index > end_index:
        return
    if nr > end_index - index:
        nr = end_index - index + 1
    mark = index + nr - lookahead if lookahead <= nr else -1
    run = -1
    for p in range(index, index + nr):
        if _order_at(world, f, p, row) >= 0:
            if run >= 0:
                _emit(world, f, run, p, sync)
                run = -1
            continue
        _insert_folio(world, f, p, 0, p == mark, row)
        if run < 0:
            run = p
    if run >= 0:
        _emit(world, f, run, index + nr, sync)


@njit(nogil=True, _nrt=False)
def _ra_order(world, f, row, large, max_order, sync):
    """``page_cache_ra_order``: the window [start, start+size) as folios."""
    start = row[S_START]
    size = row[S_SIZE]
    mark = start + size - row[S_ASYNC]
    index = start
    err = False
    if large == 0:
        row[S_ORDER] = 0
    else:
        limit = _eof_page(world)
        if start + size - 1 < limit:
            limit = start + size - 1
        new_order = row[S_ORDER]
        if new_order > max_order:
            new_order = max_order
        lg = _ilog2(size)
        if new_order > lg:
            new_order = lg
        if new_order < 0:
            new_order = 0
        row[S_ORDER] = new_order
        run = -1
        while index <= limit:
            order = new_order
            if index & ((1 << order) - 1):
                order = _ctz(index)
            while order > 0 and index + (1 << order) - 1 > limit:
                order -= 1
            if _overlaps(world, f, index, 1 << order, row):
                err = True
                break
            _insert_folio(world, f, index, order, index == (mark >> order << order), row)
            if run < 0:
                run = index
            index += 1 << order
        if run >= 0:
            _emit(world, f, run, index, sync)
        if not err:
            return
    if size > index - start:
        _unbounded(world, f, index, size - (index - start), row[S_ASYNC], row, sync)


@njit(nogil=True, _nrt=False)
def _max_pages(row, io_pages, req):
    mx = row[S_RA_PAGES]
    if req > mx and io_pages > mx:
        mx = req if req < io_pages else io_pages
    return mx


@njit(nogil=True, _nrt=False)
def sync_ra(world, f, row, params, index, req):
    """``page_cache_sync_ra``."""
    io_pages = params[P_IO_KB] // 4
    if row[S_RA_PAGES] == 0 or row[S_RANDOM] != 0:
        if row[S_RA_PAGES] == 0:
            req = 1
        n = io_pages if io_pages > row[S_RA_PAGES] else row[S_RA_PAGES]
        if req < n:
            n = req
        k = 0
        while k < n:  # force_page_cache_ra: 2 MiB chunks
            chunk = n - k if n - k < 512 else 512
            _unbounded(world, f, index + k, chunk, 0, row, True)
            k += chunk
        _act(world, f, R.ACT_FORCED, index, n, -1, row)
        return
    mx = _max_pages(row, io_pages, req)
    prev = row[S_PREV]
    prev_index = prev >> PAGE_SHIFT if prev >= 0 else (1 << 52) - 1  # (unsigned) prev_pos
    d = index - prev_index
    kind = R.ACT_SYNC
    if index == 0 or req > mx or d == 0 or d == 1:
        size = init_size(req, mx)
        row[S_START] = index
        row[S_SIZE] = size
        row[S_ASYNC] = size - req if size > req else size >> 1
    else:
        miss = prev_miss(world, f, index - 1, mx, row)
        contig = index - miss - 1
        if contig <= req:
            _unbounded(world, f, index, req, 0, row, True)
            _act(world, f, R.ACT_PLAIN, index, req, -1, row)
            return
        if miss == -1:
            contig *= 2
        row[S_START] = index
        row[S_SIZE] = contig + req if contig + req < mx else mx
        row[S_ASYNC] = 1
        kind = R.ACT_CONTEXT
    row[S_ORDER] = 0
    _ra_order(world, f, row, params[P_LARGE], params[P_MAX_ORDER], True)
    _act(world, f, kind, row[S_START], row[S_SIZE], row[S_START] + row[S_SIZE] - row[S_ASYNC],
         row)


@njit(nogil=True, _nrt=False)
def async_ra(world, f, row, params, head, order, req):
    """``page_cache_async_ra`` for the marked folio [head, head + 2**order)."""
    if row[S_RA_PAGES] == 0:
        return
    _clear_mark(world, f, head, row)
    io_pages = params[P_IO_KB] // 4
    mx = _max_pages(row, io_pages, req)
    start = row[S_START]
    size = row[S_SIZE]
    expected = (start + size - row[S_ASYNC]) >> order << order
    if head == expected:
        row[S_START] = start + size
        nxt = next_size(size, mx)
        row[S_SIZE] = size if size > nxt else nxt
    else:
        s = next_miss(world, f, head + 1, mx, row)
        if s == 0 or s - head > mx:
            return
        row[S_START] = s
        row[S_SIZE] = next_size(s - head + req, mx)
    row[S_ORDER] += 2
    o = row[S_ORDER]
    z = _ctz(mx)
    align = 1 << (o if o < z else z)
    end = row[S_START] + row[S_SIZE]
    aligned_end = end // align * align
    if aligned_end > row[S_START]:
        row[S_SIZE] -= end - aligned_end
    row[S_ASYNC] = row[S_SIZE]
    _ra_order(world, f, row, params[P_LARGE], params[P_MAX_ORDER], False)
    _act(world, f, R.ACT_ASYNC, row[S_START], row[S_SIZE], row[S_START], row)


@njit(nogil=True, _nrt=False, inline='always')
def filemap_read(world, f, row, params, pos, count, isize):
    """One ``read``/``pread`` of ``count`` bytes at ``pos`` (``isize``: the file size in bytes,
    negative when unknown). Returns the window size (the detector's seqcount)."""
    if count <= 0 or (isize >= 0 and pos >= isize):
        return row[S_SIZE]
    end = pos + count
    last = (end + PAGE - 1) >> PAGE_SHIFT
    d_hi = world.req.d_hi if world is not None else -1  # last demand page (EOF-clipped)
    while pos < end and (isize < 0 or pos < isize):
        index = pos >> PAGE_SHIFT
        e = _find(world, f, index, row)
        if e < 0:
            sync_ra(world, f, row, params, index, last - index)
            e = _find(world, f, index, row)
            if e < 0:
                _insert_folio(world, f, index, 0, False, row)
                _emit(world, f, index, index + 1, True)
                _act(world, f, R.ACT_PAGE, index, 1, -1, row)
                e = _find(world, f, index, row)
        # the batch: consecutive folios up to page last - 1, ending at a hole or a mark (the
        # first page of a folio carries its order and mark); its demand pages are accounted
        # as the copy reaches them, with the same cache lookups
        p = index
        stop = index + 1  # a page a cache smaller than the window has evicted: still copied
        done = index  # demand pages below this one are accounted
        while e >= 0:
            fl = _flags(world, e, p, row)
            o = fl >> C.F_ORDER_SHIFT
            head = p >> o << o
            if head != p:  # the request starts inside a folio: its first page has the mark
                he = _find(world, f, head, row)
                if he < 0:
                    break
                fl = _flags(world, he, head, row)
            nxt = head + (1 << o)
            stop = nxt
            if world is not None and p <= d_hi:
                _account(world, f, e, p)
                done = p + 1
                while done < nxt and done <= d_hi:
                    _account(world, f, _find(world, f, done, row), done)
                    done += 1
            if fl & C.F_RAM:
                async_ra(world, f, row, params, head, o, last - head)
                break
            if nxt > last - 1:
                break
            p = nxt
            e = _find(world, f, p, row)
        if world is not None:
            while done < stop and done <= d_hi:  # pages evicted before the copy reached them
                _account(world, f, _find(world, f, done, row), done)
                done += 1
        stop <<= PAGE_SHIFT
        if stop > end:
            stop = end
        if isize >= 0 and stop > isize:
            stop = isize
        pos = stop
    row[S_PREV] = pos
    return row[S_SIZE]


# --------------------------------------------------------------------------------------------
# the engine's serve step (replay, against the cache model)


@njit(nogil=True, _nrt=False, inline="always")
def serve_6(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    """One READ through 6.x read-ahead against the cache model. The request's accounting
    (hits, misses by cause, demand blocks) is as every policy's: a demand page is a hit when
    it was cached before the request."""
    n = R.begin_block_request(world, f, off, cnt, fresh, stamp, PAGE_SHIFT)
    if n > 0:  # the kernel sizes read-ahead from the count asked for, not the EOF-clipped one
        filemap_read(world, f, row, params, off, cnt, world.req.eof_bytes)
    R.end_request(f, off, n, world.fs, world.req)
    return window(row)


@njit(nogil=True, _nrt=False)
def window(row):
    """The reported seqcount: the window size, capped at ra_pages."""
    return row[S_SIZE] if row[S_SIZE] < row[S_RA_PAGES] else row[S_RA_PAGES]


def ops_bound(p: Linux6Params) -> int:
    """At most this many disk reads per demand page of a request: every window is read as
    runs between cached pages."""
    return 4 * max(p.ra_pages, p.io_kb // 4) + 8


# --------------------------------------------------------------------------------------------
# detector contract (seqheur.detect runs the same code against the stand-in cache)


@njit(nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    state[S_START] = 0
    state[S_SIZE] = 0
    state[S_ASYNC] = 0
    state[S_ORDER] = 0
    state[S_PREV] = -1
    fadvise = params[P_FADVISE]
    state[S_RA_PAGES] = params[P_RA_KB] // 4 * (2 if fadvise == 1 else 1)
    state[S_RANDOM] = 1 if fadvise == 2 else 0
    state[S_LO] = 0
    state[S_HI] = 0
    state[S_MARK] = -1


@njit(nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    filemap_read(None, 0, state, params, offset, count, -1)
    return window(state)


@detector("linux-6", params=Linux6Params, state_words=WORDS, builtin=True,
          max_seqcount=lambda p: p.ra_pages, serve=serve_6, ops_bound=ops_bound, policy="linux",
          block_size=PAGE,
          source="torvalds/linux v6.16-v6.18 mm/readahead.c, mm/filemap.c, lib/xarray.c; "
                 "checked against Linux 6.18.44 (seqheur kernel-check)")
class Linux6:
    """Linux 6.16-6.18 on-demand read-ahead with large folios: initial window, marker-driven
    ramp with the folio-order alignment trim, context read-ahead from the cached history (the
    xarray walk's quirks included), io_pages raise for large reads, FADV hints, EOF clipping;
    seqcount = window (pages, capped at ra_pages)."""

    reset = reset
    update = update
