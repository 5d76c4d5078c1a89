"""Disk-time model: a sequence of disk reads -> service seconds, from a DiskProfile.

Model (the traps are Ellard & Seltzer 2003 §5):

* **Layout.** Files are placed one after another in first-appearance order (file index order),
  starting at ``Layout.start`` (a fraction of the capacity: 0 = outermost, fastest zone), each
  rounded up to a 4 KiB boundary. With ``Layout(extent_bytes=E)`` every file is cut into
  extents of E bytes and all extents are shuffled (seeded) over the same region: a fragmented
  file system.
* **Positioning.** A read that does not start where the head is pays positioning time: the
  profile's seek-distance curve (seek + rotational latency, linear interpolation in distance)
  or, without a curve (or for the very first read, head unknown), the random positioning time.
  A read that starts exactly where the previous media read ended pays none.
* **Transfer.** Media transfer at the rate of the zone the read starts in, never faster than
  the host-side ceiling (bus or network): ``L / min(zone, host)``; plus the per-command
  overhead.
* **Drive cache.** N segments of S bytes, LRU. After a media read the drive reads ahead into the
  segment (up to ``readahead_bytes`` past the request, at most filling the segment). Read-ahead
  progresses during host idle time (``idle_s`` before each op, default 0 = back-to-back) and
  during cache hits; the next media read preempts it except for the first
  ``min_prefetch_bytes``, which the drive always finishes (their media time is charged to
  that next op). A read found in a segment costs only ``hit_overhead_s`` + bus transfer; a read
  that lands in the segment still being filled waits for the head to get there (no
  positioning). Without the cache the paper's default-heuristic numbers cannot be explained:
  a 2-stride reader would pay a seek per block (see docs/disk-bench.md).
* **Host throttle** (a profile's ``throttle``, off in every bundled profile). Linux
  blk-throttle's read limit in front of the device: a read waits until the slice's byte and
  op budgets allow it (the budget of a slice of hz/10 jiffies is granted at its start, so an
  idle device lets a burst through), then runs on the device as above. The rules are the
  kernel's (docs/disk-bench.md "A throttled device").

API (numba-speed batch use; state carried explicitly so callers can run in chunks)::

    model = DiskModel.from_profile("ide-7200", layout=Layout(start=0.0))
    place = model.place(file_sizes)          # int64 bytes per file (dense file index)
    state = model.new_state()                # int64 array; head, read-ahead, segments
    res = model.service(file, offset, length, place, state)   # arrays in issue order
    res.seconds, res.flags, res.total_seconds, res.positionings, res.hits
    model.run(file, offset, length, file_sizes)   # one-shot convenience (fresh state)

``service`` mutates ``state``; calling it on consecutive chunks equals one call on the
concatenation. From inside numba code call :func:`service_kernel` with ``model.kernel_args()``
and ``place`` arrays (see :meth:`DiskModel.kernel_args`), or :func:`service_read` for one read
at a time. ``flags`` bits: ``POSITIONED`` (paid a
positioning), ``HIT`` (served from a drive segment), ``STREAM`` (continued the head's stream,
no positioning), ``SPLIT`` (crossed an extent boundary in a fragmented layout).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from .profile import DiskProfile, HostThrottle, load_profile
from .. import _inlining

_inlining.install()  # numba's inliner: one copy of a callee's IR, not one per block (_inlining)

POSITIONED = 1
HIT = 2
STREAM = 4
SPLIT = 8

# state layout: header words, then segment start[N], end[N], stamp[N]. With a host throttle
# the header also keeps the time (ns since the first read) and the throttle's slice: its
# start and end (jiffies), the bytes and reads dispatched in it, and whether the read it is
# holding has been charged its bytes already.
S_HEAD, S_PFSEG, S_PFPOS, S_PFLIM, S_PFMIN, S_TICK = 0, 1, 2, 3, 4, 5
S_CLOCK, S_TSTART, S_TEND, S_TBYTES, S_TIOS, S_TCHARGED = 6, 7, 8, 9, 10, 11
S_HDR = 12
_NO_SLICE = -(np.int64(1) << np.int64(40))  # a slice long over: the first read starts one
# integer parameters (the throttle's: bytes/s and reads/s, 0 = none; jiffies per second and
# per slice)
I_NSEG, I_SEGBYTES, I_RA, I_MINPF, I_TBPS, I_TIOPS, I_HZ, I_SLICE = 0, 1, 2, 3, 4, 5, 6, 7
# float parameters
F_HOST, F_OVER, F_HITOVER, F_RAND = 0, 1, 2, 3

_ALIGN = 4096
NO_EXTENTS = np.int64(1) << np.int64(62)  # the extent size of a contiguous layout (no extents)


@dataclass(frozen=True)
class Layout:
    """Where files lie on the disk.

    ``start``: fraction of the capacity where the first file begins (0 = outer edge, like the
    paper's ``ide1``/``scsi1`` partitions; 0.75 = its ``*4`` partitions). ``extent_bytes``: 0
    for contiguous files, else the extent size of a fragmented layout whose extents are
    shuffled with ``seed``.
    """

    start: float = 0.0
    extent_bytes: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.start < 1.0:
            raise ValueError("Layout.start is a fraction of the capacity in [0, 1)")
        if self.extent_bytes < 0 or (self.extent_bytes and self.extent_bytes % 512):
            raise ValueError("Layout.extent_bytes must be 0 or a positive multiple of 512")


@dataclass(frozen=True)
class Placement:
    """Byte addresses of every file's extents: file f's extent k starts at
    ``ext_base[ext_first[f] + k]``; ``extent_bytes`` is huge for a contiguous layout."""

    ext_first: np.ndarray  # int64[F + 1]
    ext_base: np.ndarray   # int64[n_extents]
    extent_bytes: int


@dataclass
class DiskResult:
    """Per-op service seconds and flags of one ``service`` call, with totals."""

    seconds: np.ndarray   # float64 per op
    flags: np.ndarray     # uint8 per op
    bytes: int

    @property
    def ops(self) -> int:
        return int(self.seconds.size)

    @property
    def total_seconds(self) -> float:
        return float(self.seconds.sum())

    @property
    def positionings(self) -> int:
        return int(np.count_nonzero(self.flags & POSITIONED))

    @property
    def hits(self) -> int:
        return int(np.count_nonzero(self.flags & HIT))

    @property
    def throughput_mbps(self) -> float:
        t = self.total_seconds
        return self.bytes / t / 1e6 if t > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        return {"disk_ops": self.ops, "disk_seconds": self.total_seconds,
                "disk_positionings": self.positionings, "disk_cache_hits": self.hits,
                "disk_bytes": self.bytes, "disk_mbps": self.throughput_mbps}


class DiskModel:
    """A DiskProfile turned into arrays for :func:`service_kernel`."""

    def __init__(self, profile: DiskProfile, layout: Layout | None = None, *,
                 drive_cache: bool = True, host_mbps: float | None = None) -> None:
        self.profile = profile
        self.spec = profile.name  # the disk spec it was made from (DiskSpec.model sets options)
        self.layout = layout or Layout()
        c = profile.cache
        use_cache = drive_cache and c.enabled
        t = profile.throttle
        self.iparams = np.array([c.segments if use_cache else 0, c.segment_bytes,
                                 c.readahead_bytes if use_cache else 0,
                                 c.min_prefetch_bytes if use_cache else 0,
                                 t.read_bps if t.enabled else 0, t.read_iops if t.enabled else 0,
                                 t.hz, t.hz // 10], dtype=np.int64)  # slice: DFL_THROTL_SLICE
        host = host_mbps if host_mbps is not None else profile.host_mbps
        self.fparams = np.array([host * 1e6, profile.command_overhead_s, c.hit_overhead_s,
                                 profile.random_positioning_s], dtype=np.float64)
        if profile.has_seek_curve:
            self.seek_d = np.asarray(profile.seek_distance_bytes, dtype=np.float64)
            self.seek_t = np.asarray(profile.seek_seconds, dtype=np.float64)
        else:
            self.seek_d = np.zeros(0, dtype=np.float64)
            self.seek_t = np.zeros(0, dtype=np.float64)
        self.zone_start = np.asarray(profile.zone_start_bytes, dtype=np.int64)
        self.zone_rate = np.asarray(profile.zone_mbps, dtype=np.float64) * 1e6

    @classmethod
    def from_profile(cls, profile: "DiskProfile | str", layout: Layout | None = None, *,
                     drive_cache: bool = True, host_mbps: float | None = None) -> "DiskModel":
        """From a DiskProfile, a registered profile name or spec (``ide-7200``,
        ``ide-7200:drive_cache=false``, see :mod:`seqheur.disk.registry`; the spec's options
        combine with the arguments) or a profile JSON path."""
        from .registry import is_disk_spec, parse_disk

        if isinstance(profile, str) and is_disk_spec(profile):
            return parse_disk(profile).model(layout, drive_cache=drive_cache, host_mbps=host_mbps)
        return cls(load_profile(profile), layout, drive_cache=drive_cache, host_mbps=host_mbps)

    @property
    def throttled(self) -> bool:
        return bool(self.iparams[I_TBPS] > 0 or self.iparams[I_TIOPS] > 0)

    def drive_params(self) -> np.ndarray:
        """``iparams`` without the throttle: for a caller that holds reads back itself (the
        closed-loop timing model's block layer, with :func:`throttle_step`) and hands the
        drive only what the throttle let go."""
        ip = self.iparams.copy()
        ip[I_TBPS] = ip[I_TIOPS] = 0
        return ip

    def with_throttle(self, throttle: "HostThrottle") -> "DiskModel":
        """The same drive (layout, drive-cache switch, host ceiling) behind a host throttle."""
        out = DiskModel(self.profile.replace(throttle=throttle), self.layout,
                        drive_cache=self.drive_cache, host_mbps=float(self.fparams[F_HOST]) / 1e6)
        out.spec = self.spec
        return out

    @property
    def drive_cache(self) -> bool:
        return bool(self.iparams[I_NSEG] > 0)

    def new_state(self) -> np.ndarray:
        """A fresh drive: head position unknown, empty segments, no read-ahead running."""
        n = int(self.iparams[I_NSEG])
        st = np.full(S_HDR + 3 * n, -1, dtype=np.int64)
        st[S_TICK] = 0
        st[S_CLOCK] = st[S_TBYTES] = st[S_TIOS] = st[S_TCHARGED] = 0
        st[S_TSTART] = st[S_TEND] = _NO_SLICE
        st[S_HDR + 2 * n:] = 0
        return st

    def place(self, file_sizes: np.ndarray) -> Placement:
        """Lay out files of the given sizes (bytes; index = dense file number)."""
        sizes = np.maximum(np.asarray(file_sizes, dtype=np.int64), 1)
        sizes = (sizes + _ALIGN - 1) // _ALIGN * _ALIGN
        base0 = int(self.layout.start * self.profile.capacity_bytes) // _ALIGN * _ALIGN
        nfiles = sizes.size
        if self.layout.extent_bytes == 0:
            ext_base = base0 + np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
            ext_first = np.arange(nfiles + 1, dtype=np.int64)
            return Placement(ext_first, ext_base if nfiles else np.zeros(0, np.int64),
                             int(NO_EXTENTS))
        e = int(self.layout.extent_bytes)
        counts = (sizes + e - 1) // e
        ext_first = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        total = int(ext_first[-1])
        slots = np.random.default_rng(self.layout.seed).permutation(total).astype(np.int64)
        return Placement(ext_first, base0 + slots * e, e)

    def kernel_args(self) -> tuple[np.ndarray, ...]:
        """(iparams, fparams, seek_d, seek_t, zone_start, zone_rate) for service_kernel."""
        return (self.iparams, self.fparams, self.seek_d, self.seek_t, self.zone_start,
                self.zone_rate)

    def service(self, file: np.ndarray, offset: np.ndarray, length: np.ndarray,
                place: Placement, state: np.ndarray,
                idle_s: np.ndarray | None = None) -> DiskResult:
        """Service times of disk reads in issue order; ``state`` is updated in place."""
        file = np.ascontiguousarray(file, dtype=np.int64)
        offset = np.ascontiguousarray(offset, dtype=np.int64)
        length = np.ascontiguousarray(length, dtype=np.int64)
        n = file.size
        if offset.size != n or length.size != n:
            raise ValueError("file, offset and length must have equal length")
        if idle_s is None:
            idle = np.zeros(0, dtype=np.float64)
        else:
            idle = np.ascontiguousarray(idle_s, dtype=np.float64)
            if idle.size != n:
                raise ValueError("idle_s must have one entry per op")
        if n and (file.min() < 0 or file.max() >= place.ext_first.size - 1):
            raise ValueError("file index outside the placement")
        if n and (offset.min() < 0 or length.min() < 0):
            raise ValueError("offsets and lengths must be >= 0")
        if state.size != S_HDR + 3 * int(self.iparams[I_NSEG]):
            raise ValueError("state was not made by this model's new_state()")
        out_s = np.empty(n, dtype=np.float64)
        out_f = np.empty(n, dtype=np.uint8)
        service_kernel(file, offset, length, idle, place.ext_first, place.ext_base,
                       np.int64(place.extent_bytes), *self.kernel_args(), state, out_s, out_f)
        return DiskResult(out_s, out_f, int(length.sum()))

    def run(self, file: np.ndarray, offset: np.ndarray, length: np.ndarray,
            file_sizes: np.ndarray | None = None, idle_s: np.ndarray | None = None) -> DiskResult:
        """One-shot: place files (sizes default to the largest offset+length seen), fresh
        drive, service all ops."""
        file = np.asarray(file, dtype=np.int64)
        if file_sizes is None:
            file_sizes = extents_from_reads(file, offset, length)
        return self.service(file, offset, length, self.place(file_sizes), self.new_state(),
                            idle_s)


def extents_from_reads(file: np.ndarray, offset: np.ndarray, length: np.ndarray,
                       nfiles: int | None = None) -> np.ndarray:
    """Per-file size = the largest ``offset + length`` read (when the trace lacks sizes)."""
    file = np.asarray(file, dtype=np.int64)
    end = np.asarray(offset, dtype=np.int64) + np.asarray(length, dtype=np.int64)
    n = int(nfiles if nfiles is not None else (file.max() + 1 if file.size else 0))
    sizes = np.zeros(n, dtype=np.int64)
    np.maximum.at(sizes, file, end)
    return sizes


# ---------------------------------------------------------------------------------------------
# numba kernels
# ---------------------------------------------------------------------------------------------
@njit(cache=True, nogil=True, _nrt=False)
def _floor_index(a, x, strict):
    """Largest i with a[i] <= x (a[i] < x when ``strict``) in sorted ``a``, else 0. A plain
    binary search: numba's searchsorted costs several times more on these tiny arrays."""
    lo = 0
    hi = a.size
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if a[mid] < x or (not strict and a[mid] == x):
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def extent_address(f, k, ext_first, ext_base, extent_bytes):
    """Disk address where extent ``k`` of file ``f`` starts in a :class:`Placement`'s arrays;
    past the file's last extent the file continues contiguously after it."""
    nfext = ext_first[f + 1] - ext_first[f]
    if k < nfext:
        return ext_base[ext_first[f] + k]
    return ext_base[ext_first[f] + nfext - 1] + (k - nfext + 1) * extent_bytes


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def extent_piece(f, off, rem, ext_first, ext_base, extent_bytes):
    """The physically contiguous piece at byte ``off`` of file ``f`` of a read of ``rem``
    more bytes: (the address where its extent starts, ``off``'s offset within that extent,
    the piece's length). A contiguous layout (``NO_EXTENTS``) needs no 64-bit division."""
    if extent_bytes == NO_EXTENTS:
        k = 0
        within = off
    else:
        k = off // extent_bytes
        within = off - k * extent_bytes
    return (extent_address(f, k, ext_first, ext_base, extent_bytes), within,
            min(rem, extent_bytes - within))


@njit(cache=True, nogil=True, _nrt=False)
def _rate(zone_start, zone_rate, addr):
    return zone_rate[_floor_index(zone_start, addr, False)]  # the zone holding addr


@njit(cache=True, nogil=True, _nrt=False)
def _positioning(seek_d, seek_t, rand_s, head, addr):
    if head < 0 or seek_d.size == 0:
        return rand_s
    d = float(abs(addr - head))
    if d <= seek_d[0]:
        return seek_t[0]
    if d >= seek_d[-1]:
        return seek_t[-1]
    # seek_d[j] < d <= seek_d[j + 1]: the inner points below d counted, not searched for. A
    # seek's distance is a coin flip at each step of a binary search, and a count has no
    # branch: on the modelled profiles' 17 points the drive model alone took 13.1 -> 11.9 ms
    # for the timing benchmark's 293 k reads (docs/timing.md). A measured curve of a few
    # dozen points costs a few dozen compares; guarding the count with a binary search for
    # long curves lost the gain.
    j = 0
    for k in range(1, seek_d.size - 1):
        j += seek_d[k] < d
    w = (d - seek_d[j]) / (seek_d[j + 1] - seek_d[j])
    return seek_t[j] + w * (seek_t[j + 1] - seek_t[j])


@njit(cache=True, nogil=True, _nrt=False)
def _advance(state, nseg, segbytes, dt, zone_start, zone_rate):
    """Let the running read-ahead progress for ``dt`` seconds of drive time."""
    seg = state[S_PFSEG]
    if seg < 0 or dt <= 0.0:
        return
    pos = state[S_PFPOS]
    lim = state[S_PFLIM]
    if pos >= lim:
        return
    _progress(state, nseg, segbytes, seg, pos, lim, dt, _rate(zone_start, zone_rate, pos))


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _progress(state, nseg, segbytes, seg, pos, lim, dt, rate):
    """:func:`_advance` past its checks (read-ahead segment ``seg`` running at ``pos`` <
    ``lim``, ``dt`` > 0) given the rate of the zone holding ``pos``."""
    got = np.int64(dt * rate)
    newpos = min(lim, pos + got)
    state[S_PFPOS] = newpos
    state[S_HEAD] = newpos
    state[S_HDR + nseg + seg] = newpos
    if newpos - state[S_HDR + seg] > segbytes:
        state[S_HDR + seg] = newpos - segbytes


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _piece(addr, ln, first, state, ip, fp, seek_d, seek_t, zone_start, zone_rate):
    """Service one physically contiguous piece; returns (seconds, flags)."""
    nseg = ip[I_NSEG]
    segbytes = ip[I_SEGBYTES]
    host = fp[F_HOST]
    over = fp[F_OVER] if first else 0.0
    hitover = fp[F_HITOVER] if first else 0.0
    end = addr + ln
    bus = ln / host
    victim = 0
    if nseg > 0:
        state[S_TICK] += 1
        tick = state[S_TICK]
        seg = state[S_PFSEG]
        # 1. inside the segment the drive is still reading ahead into: no positioning
        if seg >= 0 and state[S_HDR + seg] <= addr and addr <= state[S_PFLIM]:
            pos = state[S_PFPOS]
            state[S_HDR + 2 * nseg + seg] = tick
            if end <= pos:
                t = hitover + bus
                _advance(state, nseg, segbytes, t, zone_start, zone_rate)
                return t, HIT
            media = (end - pos) / _rate(zone_start, zone_rate, pos)
            t = over + max(media, bus)
            ra = min(ip[I_RA], max(np.int64(0), segbytes - ln))
            state[S_PFPOS] = end
            state[S_HEAD] = end
            state[S_PFLIM] = max(state[S_PFLIM], end + ra)
            state[S_PFMIN] = min(state[S_PFLIM], end + ip[I_MINPF])
            state[S_HDR + nseg + seg] = end
            if end - state[S_HDR + seg] > segbytes:
                state[S_HDR + seg] = end - segbytes
            return t, STREAM
        # 2. wholly inside another segment: bus transfer only. The same pass picks the
        # segment a media read would replace (the first empty one, else the least recently
        # used); nothing below changes emptiness or use ticks before that choice is needed.
        empty = -1
        lru = 0
        best = state[S_HDR + 2 * nseg]
        for s in range(nseg):
            st = state[S_HDR + s]
            # "filled (st >= 0) and st <= addr and end <= segment end" as one sign test: one
            # rarely taken branch (LLVM turns a non-short-circuit & back into two, and
            # st <= addr is a coin flip per segment)
            if (st | (addr - st) | (state[S_HDR + nseg + s] - end)) >= 0:
                state[S_HDR + 2 * nseg + s] = tick
                t = hitover + bus
                _advance(state, nseg, segbytes, t, zone_start, zone_rate)
                return t, HIT
            if st < 0:
                if empty < 0:
                    empty = s
            elif state[S_HDR + 2 * nseg + s] < best:
                best = state[S_HDR + 2 * nseg + s]
                lru = s
        victim = empty if empty >= 0 else lru
    # 3. media read; first finish the read-ahead the drive will not abandon
    t = over
    if nseg > 0 and state[S_PFSEG] >= 0:
        pos = state[S_PFPOS]
        stop = min(state[S_PFMIN], state[S_PFLIM])
        if pos < stop:
            # _advance's checks hold (pos < stop <= its limit) and its rate is this one: a
            # second search of the zones was a tenth of a positioned read's time
            rate = _rate(zone_start, zone_rate, pos)
            dt = (stop - pos) / rate
            _progress(state, nseg, segbytes, state[S_PFSEG], pos, state[S_PFLIM], dt + 1e-12,
                      rate)
            t += dt
        state[S_PFSEG] = -1
    head = state[S_HEAD]
    flags = 0
    if head == addr:
        flags = STREAM
    else:
        t += _positioning(seek_d, seek_t, fp[F_RAND], head, addr)
        flags = POSITIONED
    rate = min(_rate(zone_start, zone_rate, addr), host)
    t += ln / rate
    state[S_HEAD] = end
    if nseg > 0:
        state[S_HDR + victim] = max(addr, end - segbytes)
        state[S_HDR + nseg + victim] = end
        state[S_HDR + 2 * nseg + victim] = state[S_TICK]
        ra = min(ip[I_RA], max(np.int64(0), segbytes - ln))
        if ra > 0:
            state[S_PFSEG] = victim
            state[S_PFPOS] = end
            state[S_PFLIM] = end + ra
            state[S_PFMIN] = min(end + ra, end + ip[I_MINPF])
    return t, flags


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _roundup(x, step):
    return (x + step - 1) // step * step


@njit(cache=True, nogil=True, _nrt=False)
def _extend_slice(state, until, slice_j):
    """throtl_extend_slice: the slice lasts at least to ``until``, rounded up to slices."""
    if state[S_TEND] < until:
        state[S_TEND] = _roundup(until, slice_j)


@njit(cache=True, nogil=True, _nrt=False)
def _update_slice(state, j, slice_j, queued):
    """tg_update_slice: a new slice when the last one is over and nothing waits, else
    extend it to one slice from now."""
    if not (state[S_TSTART] <= j <= state[S_TEND]) and not queued:
        state[S_TBYTES] = 0
        state[S_TIOS] = 0
        state[S_TSTART] = j
        state[S_TEND] = j + slice_j
    else:
        _extend_slice(state, j + slice_j, slice_j)


@njit(cache=True, nogil=True, _nrt=False)
def _trim_slice(state, j, bps, iops, hz, slice_j):
    """throtl_trim_slice after a dispatch: give back the budget of whole slices used, keeping
    the last one (and only once two are over)."""
    if not (state[S_TSTART] <= j <= state[S_TEND]):
        return
    state[S_TEND] = _roundup(j + slice_j, slice_j)
    elapsed = (j - state[S_TSTART]) // slice_j * slice_j
    if elapsed < 2 * slice_j:
        return
    elapsed -= slice_j
    trimmed = _trim_count(state, S_TBYTES, bps, elapsed, hz)
    trimmed += _trim_count(state, S_TIOS, iops, elapsed, hz)
    if trimmed > 0:
        state[S_TSTART] += elapsed


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _trim_count(state, word, limit, elapsed, hz):
    """throtl_trim_bps / throtl_trim_iops: take ``elapsed`` jiffies' budget off the count in
    ``state[word]`` (not below 0); returns how much was taken (0 without a limit)."""
    if limit <= 0:
        return 0
    budget = limit * elapsed // hz
    if budget <= 0 or state[word] < budget:
        budget = state[word]
        state[word] = 0
    else:
        state[word] -= budget
    return budget


@njit(cache=True, nogil=True, _nrt=False)
def throttle_step(state, ip, j, nbytes, queued):
    """One blk-throttle check, at jiffy ``j``, of a read of ``nbytes`` (``queued``: the
    oldest read the throttle holds, asked again when its timer fires; else a read arriving
    with nothing held). Returns 0 when the read goes now (charged its bytes and one op, the
    slice trimmed), else the jiffies to wait before asking again (the bytes stay charged
    when only the op limit held it: ``state[S_TCHARGED]``). The slice, the counts and that
    flag live in the drive state's header; ``ip``'s throttle words give the limits
    (tg_within_limit / tg_dispatch_time / tg_dispatch_one_bio in block/blk-throttle.c)."""
    bps = ip[I_TBPS]
    iops = ip[I_TIOPS]
    hz = ip[I_HZ]
    slice_j = ip[I_SLICE]
    charged = bps <= 0 or (queued and state[S_TCHARGED] != 0)
    wait = 0
    if not charged:
        _update_slice(state, j, slice_j, queued)
        elapsed = j - state[S_TSTART]
        rnd = _roundup(elapsed if elapsed > 0 else slice_j, slice_j)
        allowed = bps * rnd // hz
        if state[S_TBYTES] + nbytes > allowed:
            wait = max((state[S_TBYTES] + nbytes - allowed) * hz // bps, 1) + (rnd - elapsed)
        _extend_slice(state, j + wait, slice_j)
        if wait == 0:
            state[S_TBYTES] += nbytes
            charged = True
    if wait == 0 and iops > 0:
        _update_slice(state, j, slice_j, queued)
        elapsed = j - state[S_TSTART]
        rnd = _roundup(elapsed + 1, slice_j)
        if state[S_TIOS] + 1 > iops * rnd // hz:
            wait = max(rnd - elapsed, hz // iops + 1)
        _extend_slice(state, j + wait, slice_j)
    if wait > 0:
        state[S_TCHARGED] = 1 if charged and bps > 0 else 0
        return wait
    state[S_TCHARGED] = 0
    state[S_TIOS] += 1
    _trim_slice(state, j, bps, iops, hz, slice_j)
    return np.int64(0)


@njit(cache=True, nogil=True, _nrt=False)
def _throttle_wait_ns(state, ip, nbytes):
    """Nanoseconds from now (``state[S_CLOCK]``) until blk-throttle dispatches a read of
    ``nbytes`` arriving with nothing else held: checked on arrival, then whenever the
    throttle's timer fires (at the start of a jiffy) until it goes."""
    hz = ip[I_HZ]
    now = state[S_CLOCK]
    j = now * hz // 1_000_000_000
    wait = throttle_step(state, ip, j, nbytes, False)
    if wait == 0:
        return np.int64(0)
    while wait > 0:
        j += wait
        wait = throttle_step(state, ip, j, nbytes, True)
    return (j * 1_000_000_000 + hz - 1) // hz - now


@njit(cache=True, nogil=True, _nrt=False)
def service_kernel(file, offset, length, idle, ext_first, ext_base, extent_bytes,
                   ip, fp, seek_d, seek_t, zone_start, zone_rate, state, out_s, out_f):
    """Service ``len(file)`` reads in issue order into ``out_s`` (seconds) and ``out_f`` (flags).

    ``idle`` is empty (back-to-back) or one host-idle gap in seconds before each read.
    """
    has_idle = idle.size > 0
    for i in range(file.size):
        out_s[i], out_f[i] = service_read(file[i], offset[i], length[i], has_idle,
                                          idle[i] if has_idle else 0.0, ext_first, ext_base,
                                          extent_bytes, ip, fp, seek_d, seek_t, zone_start,
                                          zone_rate, state)


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def service_read(f, off, remaining, has_idle, idle_s, ext_first, ext_base, extent_bytes,
                 ip, fp, seek_d, seek_t, zone_start, zone_rate, state):
    """Service one read of ``remaining`` bytes at offset ``off`` of file ``f`` (after
    ``idle_s`` seconds of host idle when ``has_idle``); returns (seconds, flags). What
    :func:`service_kernel` does per read, for callers that hand the drive one read at a
    time (scalars, not one-element arrays: the call costs a fraction)."""
    nseg = ip[I_NSEG]
    segbytes = ip[I_SEGBYTES]
    throttled = ip[I_TBPS] > 0 or ip[I_TIOPS] > 0
    if has_idle:
        _advance(state, nseg, segbytes, idle_s, zone_start, zone_rate)
        if throttled:
            state[S_CLOCK] += np.int64(idle_s * 1e9 + 0.5)
    wait = 0.0
    if throttled:  # the host holds the read back; the drive idles meanwhile
        wait_ns = _throttle_wait_ns(state, ip, remaining)
        state[S_CLOCK] += wait_ns
        wait = wait_ns * 1e-9
        _advance(state, nseg, segbytes, wait, zone_start, zone_rate)
    total = 0.0
    flags = 0
    first = True
    while True:
        base, within, piece = extent_piece(f, off, remaining, ext_first, ext_base,
                                           extent_bytes)
        addr = base + within
        t, fl = _piece(addr, piece, first, state, ip, fp, seek_d, seek_t, zone_start,
                       zone_rate)
        total += t
        flags |= fl
        remaining -= piece
        off += piece
        if remaining <= 0:
            break
        first = False
        flags |= SPLIT
    if not first and (flags & HIT) and (flags & (POSITIONED | STREAM)):
        flags &= ~HIT  # partly from the cache, partly from the media: not a hit
    if throttled:
        state[S_CLOCK] += np.int64(total * 1e9 + 0.5)
        total += wait
    return total, flags
