"""The raw-device bench: read-only O_DIRECT measurements of a block device or file -> DiskProfile.

Rules (docs/disk-bench.md):

* **Read-only by construction.** :func:`open_target` is the only place that opens the target:
  ``O_RDONLY | O_DIRECT | O_CLOEXEC`` (no write, create or truncate flag exists in this module),
  and the access mode is checked with ``fcntl(F_GETFL)`` right after. Only block devices and
  regular files are accepted. The only calls made on the descriptor are libc ``pread`` (from
  the native read loop), ``os.preadv``, ``os.lseek``, ``posix_fadvise(DONTNEED)``, AIO
  ``IOCB_CMD_PREAD`` and the read-only query ioctls of ``_IOCTLS``.
  EPERM/EACCES and an O_DIRECT refusal give one clear :class:`SeqheurError` line.
* **Accurate.** Buffers come from anonymous ``mmap`` (page aligned); offsets and lengths are
  multiples of ``max(4096, dio_offset_align)`` (statx STATX_DIOALIGN, else BLKSSZGET, else 4096).
  :func:`timed_reads` runs the per-read work in :func:`_read_loop`, a numba loop with no GIL
  and no Python per read: libc ``pread`` timed by a ``clock_gettime(CLOCK_MONOTONIC)`` pair,
  every return checked for the full length (short reads counted, never timed as full), the
  first failed read stopping the run with its errno. Queue depth N = N threads each running
  that loop (N blocking reads in flight, like fio psync ``numjobs=N``); sequential QD > 1 is
  one stream striped across the threads (thread k: positions k, k+N, …). Python threads
  taking turns at the GIL around ``os.preadv`` fell 15-20 % behind fio at 4 KiB QD8.
* **Against noise.** Every point: a warm-up run that is discarded, then ``reps`` repetitions
  interleaved with the other points of its table (A B C, then a fresh random order ...),
  min / median / max over the repetitions, percentiles over all reads, the number of reads, and the client CPU used
  (points whose threads kept the CPUs busy are flagged ``client_bound``). Seek and zone curves
  are fitted only when the trend beats the run-to-run spread, else recorded as flat.
"""

from __future__ import annotations

import ctypes
import datetime as _dt
import errno
import fcntl
import functools
import mmap
import os
import platform
import random
import socket
import stat
import statistics
import struct
import threading
import time
import warnings
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numba import njit

from .. import __version__
from ..errors import SeqheurError
from .profile import DiskProfile, DriveCache

# read-only query ioctls, the only ones this module may issue
BLKGETSIZE64 = 0x80081272
BLKSSZGET = 0x1268
BLKPBSZGET = 0x127B
BLKROGET = 0x125E
_IOCTLS = {BLKGETSIZE64: "Q", BLKSSZGET: "i", BLKPBSZGET: "I", BLKROGET: "i"}

KiB = 1024
MiB = 1024 * 1024
DEFAULT_SIZES = (4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB)
DEFAULT_DEPTHS = (1, 2, 4, 8)
STREAM_COUNTS = (1, 2, 4, 8, 16, 32)


class BenchError(SeqheurError):
    """The target cannot be benchmarked (one line, names the target and the reason)."""


# ---------------------------------------------------------------------------------------------
# target
# ---------------------------------------------------------------------------------------------
@dataclass
class Target:
    path: str
    fd: int
    kind: str                 # "block" or "file"
    size: int
    align: int                # offsets/lengths/buffers are multiples of this
    direct: bool
    meta: dict[str, Any] = field(default_factory=dict)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ioctl(fd: int, request: int) -> int:
    fmt = _IOCTLS[request]  # KeyError: not on the read-only allow-list
    buf = bytearray(struct.calcsize(fmt))
    fcntl.ioctl(fd, request, buf, True)
    return int(struct.unpack(fmt, bytes(buf))[0])


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    # the symbols the process already has (libc among them), as lab.proc does: no ldconfig
    # subprocess to find a library name
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def dio_alignment(path: str) -> tuple[int, int] | None:
    """(dio_mem_align, dio_offset_align) from statx(STATX_DIOALIGN), or None (needs no open)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "statx"):
        return None
    buf = ctypes.create_string_buffer(256)
    AT_FDCWD, STATX_DIOALIGN = -100, 0x2000
    rc = libc.statx(AT_FDCWD, os.fsencode(path), 0, STATX_DIOALIGN, buf)
    if rc != 0:
        return None
    mask = struct.unpack_from("I", buf.raw, 0)[0]
    if not mask & STATX_DIOALIGN:
        return None
    mem, off = struct.unpack_from("II", buf.raw, 152)
    if mem == 0 or off == 0:
        return None
    return int(mem), int(off)


def _sysfs_queue(rdev: int) -> dict[str, Any]:
    base = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
    out: dict[str, Any] = {}
    q = base / "queue"
    if not q.is_dir():  # a partition: its queue is the parent disk's
        q = base.resolve().parent / "queue"
    for name in ("rotational", "scheduler", "nr_requests", "read_ahead_kb", "max_sectors_kb",
                 "logical_block_size", "physical_block_size"):
        try:
            out[name] = (q / name).read_text().strip()
        except OSError:
            pass
    for name, rel in (("vendor", "device/vendor"), ("model", "device/model"),
                      ("serial", "serial"), ("device_vendor_id", "device/device/vendor")):
        try:
            out[name] = (base / rel).read_text().strip()
        except OSError:
            pass
    try:
        out["hw_queues"] = len(list((base / "mq").iterdir()))
    except OSError:
        pass
    try:
        out["holders"] = sorted(p.name for p in (base / "holders").iterdir())
    except OSError:
        pass
    return out


def _mounted(rdev: int) -> list[str]:
    want = f"{os.major(rdev)}:{os.minor(rdev)}"
    points = []
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            parts = line.split()
            if len(parts) > 4 and parts[2] == want:
                points.append(parts[4])
    except OSError:
        pass
    return points


def _system_meta() -> dict[str, Any]:
    meta: dict[str, Any] = {"kernel": platform.release(), "cpus": os.cpu_count(),
                            "python": platform.python_version()}
    try:
        meta["clocksource"] = Path(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource").read_text().strip()
    except OSError:
        pass
    try:
        meta["virtualization_hint"] = "hypervisor" if "hypervisor" in \
            Path("/proc/cpuinfo").read_text() else "none seen"
    except OSError:
        pass
    return meta


def open_target(path: str | os.PathLike[str], *, direct: bool = True) -> Target:
    """Open ``path`` read-only for the bench: the only open of a target in seqheur."""
    real = os.path.realpath(os.fspath(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise BenchError(f"{path}: no such file or device") from None
    except PermissionError as exc:
        raise BenchError(f"{path}: cannot stat: {errno.errorcode.get(exc.errno, exc.errno)}") from None
    if stat.S_ISBLK(st.st_mode):
        kind = "block"
    elif stat.S_ISREG(st.st_mode):
        kind = "file"
    else:
        raise BenchError(f"{path}: not a block device or regular file")
    meta: dict[str, Any] = {"realpath": real}
    dio = dio_alignment(real)
    if dio:
        meta["dio_mem_align"], meta["dio_offset_align"] = dio
    if kind == "block":
        meta.update(_sysfs_queue(st.st_rdev))
        mounts = _mounted(st.st_rdev)
        meta["mounted"] = mounts
        if mounts or meta.get("holders"):
            warnings.warn(f"{path} is in use (mounted on {', '.join(mounts) or '-'}; holders "
                          f"{', '.join(meta.get('holders') or []) or '-'}): reading it is safe "
                          "but its timings will be noisy", stacklevel=2)
    flags = os.O_RDONLY | os.O_CLOEXEC | (os.O_DIRECT if direct else 0)
    try:
        fd = os.open(real, flags)
    except PermissionError as exc:
        name = errno.errorcode.get(exc.errno or 0, str(exc.errno))
        raise BenchError(
            f"{path}: {name} on a read-only open (O_RDONLY{'|O_DIRECT' if direct else ''}); "
            "as root this usually means a host or sandbox policy, not file permissions — "
            "benchmark a file or a read-only loop device (losetup -r --direct-io=on) instead"
        ) from None
    except OSError as exc:
        if exc.errno == errno.EINVAL and direct:
            raise BenchError(f"{path}: O_DIRECT is not supported here (EINVAL); the bench never "
                             "falls back to buffered reads silently — pass --buffered to run "
                             "labelled buffered") from None
        raise BenchError(f"{path}: cannot open read-only: {exc.strerror}") from None
    try:
        mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
        if mode != os.O_RDONLY:
            raise BenchError(f"{path}: opened with access mode {mode}, not read-only; refusing")
        size = os.lseek(fd, 0, os.SEEK_END)
        lbs = 512
        if kind == "block":
            size = _ioctl(fd, BLKGETSIZE64)
            lbs = _ioctl(fd, BLKSSZGET)
            meta["physical_block_size"] = _ioctl(fd, BLKPBSZGET)
            meta["read_only"] = bool(_ioctl(fd, BLKROGET))
        meta["logical_block_size"] = lbs
        align = max(4096, lbs, meta.get("dio_offset_align", 0), meta.get("dio_mem_align", 0))
    except BaseException:
        os.close(fd)
        raise
    return Target(path=str(path), fd=fd, kind=kind, size=int(size), align=align, direct=direct,
                  meta=meta)


# ---------------------------------------------------------------------------------------------
# one timed run
# ---------------------------------------------------------------------------------------------
@dataclass
class Run:
    lat_ns: np.ndarray      # per-read latency
    wall_s: float
    cpu_s: float
    bytes: int
    short_reads: int
    threads: int

    @property
    def ios(self) -> int:
        return int(self.lat_ns.size)

    @property
    def iops(self) -> float:
        return self.ios / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def mbps(self) -> float:
        return self.bytes / self.wall_s / 1e6 if self.wall_s > 0 else 0.0

    @property
    def cpu_frac(self) -> float:
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def client_bound(self) -> bool:
        # the threads kept (nearly) every CPU they could use busy: the client limits the point
        return self.cpu_frac >= 0.8 * min(self.threads, os.cpu_count() or 1)


def _buffer(size: int) -> mmap.mmap:
    return mmap.mmap(-1, max(size, mmap.PAGESIZE))  # anonymous mapping: page aligned


# -- where the reads go ------------------------------------------------------------------------
# The native loop reads from int64 offset arrays, so an offset source hands each thread its
# offsets a chunk at a time: ``source(depth)`` returns one chunker per thread, and
# ``chunker(n)`` returns that thread's next (up to) n offsets; an empty array means none left.
# Sources keep their state across calls, so a ramp run and the measured run that follows it
# (bench/bench_disk.py) continue the same stream instead of re-reading the ramp's blocks.
OffsetChunks = Callable[[int], np.ndarray]
OffsetSource = Callable[[int], list[OffsetChunks]]


def _rand_offsets(lo: int, hi: int, bs: int, seed: int) -> OffsetSource:
    """Uniform aligned offsets in [lo, hi); thread k draws from its own generator. Chunks are
    fresh draws (never a wrapped array), so a long run does not re-read a block it has cached."""
    slots = max(1, (hi - lo) // bs)
    gens: dict[int, np.random.Generator] = {}

    def start(depth: int) -> list[OffsetChunks]:
        def chunker(k: int) -> OffsetChunks:
            g = gens.setdefault(k, np.random.default_rng(seed * 1000 + k))
            return lambda n: lo + g.integers(0, slots, n, dtype=np.int64) * bs
        return [chunker(k) for k in range(depth)]
    return start


def _seq_offsets(lo: int, hi: int, bs: int) -> OffsetSource:
    """One stream over [lo, hi), wrapping, shared by all threads: thread k of ``depth`` takes
    stream positions k, k+depth, k+2·depth, … So QD>1 keeps ``depth`` reads of one stream in
    flight (like fio libaio ``iodepth=N``; fio psync ``numjobs=N`` instead runs N streams). The
    stripes are fixed, not handed out by a shared counter: a thread that falls behind leaves
    its blocks to be read late rather than giving them to another thread."""
    slots = max(1, (hi - lo) // bs)
    state = {"next": 0}  # the stream position after the last one handed out

    def start(depth: int) -> list[OffsetChunks]:
        base = state["next"]

        def chunker(k: int) -> OffsetChunks:
            pos = base + k

            def take(n: int) -> np.ndarray:
                nonlocal pos
                idx = pos + depth * np.arange(n, dtype=np.int64)
                pos += depth * n
                state["next"] = max(state["next"], pos - depth + 1)
                return lo + idx % slots * bs
            return take
        return [chunker(k) for k in range(depth)]
    return start


def _listed_offsets(offsets: list[int]) -> OffsetSource:
    """Each of ``offsets`` once, in order (thread k of ``depth`` takes positions k, k+depth, …);
    every call starts the list again."""
    arr = np.asarray(offsets, dtype=np.int64)

    def start(depth: int) -> list[OffsetChunks]:
        def chunker(k: int) -> OffsetChunks:
            mine, pos = arr[k::depth], 0

            def take(n: int) -> np.ndarray:
                nonlocal pos
                out = mine[pos:pos + n]
                pos += out.size
                return out
            return take
        return [chunker(k) for k in range(depth)]
    return start


def _same_offset(off: int) -> OffsetSource:
    return lambda depth: [lambda n: np.full(n, off, dtype=np.int64) for _ in range(depth)]


# -- the native read loop ----------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _native_calls() -> tuple[Any, Any, Any]:
    """libc ``pread``, ``clock_gettime`` and ``__errno_location`` as ctypes function pointers
    for :func:`_read_loop`. They are passed to it as arguments: as globals numba would bake
    their addresses into the compiled code and refuse to cache it (libc moves every process)."""
    libc = _libc()
    if libc is None:
        raise BenchError("the C library cannot be loaded: the native read loop needs its pread")
    # pread64 takes a 64-bit offset on every ABI; newer musl only has pread (64-bit off_t)
    name = "pread64" if hasattr(libc, "pread64") else "pread"
    pread = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_int64)((name, libc))
    clock_gettime = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_void_p)(
        ("clock_gettime", libc))
    errno_location = ctypes.CFUNCTYPE(ctypes.POINTER(ctypes.c_int32))(("__errno_location", libc))
    # compile (or load from numba's cache) now, with no reads: not inside the first timed run,
    # whose deadline would pass while it compiles
    none = np.zeros(1, dtype=np.int64)
    _read_loop(pread, clock_gettime, errno_location, time.CLOCK_MONOTONIC, -1,
               np.zeros(1, dtype=np.uint8), 0, none[:0], none, np.zeros(2, dtype=np.int64), 0,
               np.zeros(1, dtype=np.int64))
    return pread, clock_gettime, errno_location


_EINTR = errno.EINTR


@njit(nogil=True, cache=True, _nrt=False)
def _read_loop(pread: Any, clock_gettime: Any, errno_location: Any, clock_id: int, fd: int,
               buf: np.ndarray, bs: int, offs: np.ndarray, lat: np.ndarray, ts: np.ndarray,
               deadline_ns: int, stop: np.ndarray) -> tuple[int, int, int, int]:
    """Read ``bs`` bytes at each of ``offs`` into ``buf``, timing each read with a
    clock_gettime pair; stop after the first read that ends at or past ``deadline_ns``, or
    when ``stop[0]`` is set (another thread failed). Full reads' latencies go to
    ``lat[:full]``. Returns (reads done, full, short, errno): errno is that of a failed read
    at ``offs[done]`` (which is then not counted), else 0."""
    full = 0
    short = 0
    i = 0
    while i < offs.size:
        if stop[0]:
            break
        clock_gettime(clock_id, ts.ctypes)
        t0 = ts[0] * 1_000_000_000 + ts[1]
        n = pread(fd, buf.ctypes, bs, offs[i])
        clock_gettime(clock_id, ts.ctypes)
        t1 = ts[0] * 1_000_000_000 + ts[1]
        if n < 0:
            err = errno_location()[0]
            if err == _EINTR:  # nothing was read: the same read again
                continue
            stop[0] = 1
            return i, full, short, err
        if n == bs:
            lat[full] = t1 - t0
            full += 1
        else:  # end of the target: never counted as a full read
            short += 1
        i += 1
        if t1 >= deadline_ns:
            break
    return i, full, short, 0


# A short run does not draw offsets it will never read; a long one takes the GIL rarely (a
# full chunk is ~1 s of 4 KiB reads per thread here, ~65 ms at the page cache's ~1 M reads/s)
# and holds 1 MiB of offsets and latencies per thread and chunk.
_CHUNK_FIRST = 1024
_CHUNK_MAX = 1 << 16


def _now_ns() -> int:
    # the clock _read_loop reads (CPython's perf_counter_ns is the same clock on Linux)
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def _native_reads(t: Target, bs: int, take: OffsetChunks, deadline_ns: int,
                  max_ios: int | None, stop: np.ndarray) -> tuple[np.ndarray, int, int]:
    """One thread's reads: :func:`_read_loop` over chunk after chunk of offsets, the GIL held
    only between chunks. Returns (latencies of full reads, short reads, reads done)."""
    pread, clock_gettime, errno_location = _native_calls()
    mm = _buffer(bs)
    buf = np.frombuffer(mm, dtype=np.uint8)
    ts = np.zeros(2, dtype=np.int64)
    lats: list[np.ndarray] = []
    short = done = 0
    chunk = _CHUNK_FIRST
    try:
        while max_ios is None or done < max_ios:
            offs = np.ascontiguousarray(
                take(chunk if max_ios is None else min(chunk, max_ios - done)), dtype=np.int64)
            if offs.size == 0:
                break
            lat = np.empty(offs.size, dtype=np.int64)
            n, full, sh, err = _read_loop(pread, clock_gettime, errno_location,
                                          time.CLOCK_MONOTONIC, t.fd, buf, bs, offs, lat, ts,
                                          deadline_ns, stop)
            lats.append(lat[:full])
            done += n
            short += sh
            if err:
                raise BenchError(
                    f"{t.path}: read of {bs} bytes at offset {int(offs[n])} failed: "
                    f"{errno.errorcode.get(err, err)} ({os.strerror(err)})")
            if n < offs.size or stop[0] or _now_ns() >= deadline_ns:
                break
            chunk = min(2 * chunk, _CHUNK_MAX)
    finally:
        del buf  # the array exports the mapping, which cannot close while it is exported
        mm.close()
    return (np.concatenate(lats) if lats else np.empty(0, dtype=np.int64)), short, done


def timed_reads(t: Target, bs: int, offsets: OffsetSource, *, depth: int = 1,
                seconds: float = 0.5, max_ios: int | None = None,
                backend: str = "threads") -> Run:
    """Read ``bs`` bytes at the offsets of ``offsets`` from ``depth`` threads, each running the
    native read loop (QD = ``depth`` blocking reads in flight, like fio psync ``numjobs``), or,
    ``backend="aio"``, with ``depth`` native-AIO reads in flight from one thread; until
    ``seconds`` pass (or ``max_ios`` reads per thread), timing each read."""
    if bs % t.align:
        raise BenchError(f"request size {bs} is not a multiple of the alignment {t.align}")
    if backend not in ("threads", "aio"):
        raise ValueError(f"unknown backend {backend!r}")
    chunkers = offsets(1 if backend == "aio" else depth)
    results: list[tuple[np.ndarray, int, int] | None] = [None] * len(chunkers)
    errors: list[BaseException] = []
    stop = np.zeros(1, dtype=np.int64)

    def worker(k: int) -> None:
        try:
            results[k] = _native_reads(t, bs, chunkers[k], deadline_ns, max_ios, stop)
        except BaseException as exc:  # re-raised in the caller's thread
            stop[0] = 1
            errors.append(exc)

    if backend == "threads":
        _native_calls()  # compiled, and a missing libc reported, before the clock starts
    c0 = os.times()
    w0 = time.perf_counter()
    deadline_ns = _now_ns() + int(seconds * 1e9)
    if backend == "aio":
        try:
            results[0] = _aio_reads(t, bs, chunkers[0], depth, deadline_ns, max_ios)
        except OSError as exc:
            errors.append(exc)
    elif depth == 1:
        worker(0)
    else:
        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(depth)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    wall = time.perf_counter() - w0
    c1 = os.times()
    if errors:
        exc = errors[0]
        if isinstance(exc, OSError):
            raise BenchError(f"{t.path}: read failed: {exc.strerror} (size {bs})") from None
        raise exc
    lat = np.concatenate([r[0] for r in results])  # every worker filled its slot: no error
    short = sum(r[1] for r in results)
    return Run(lat_ns=lat, wall_s=wall, cpu_s=(c1.user - c0.user) + (c1.system - c0.system),
               bytes=int(lat.size) * bs, short_reads=short, threads=1 if backend == "aio" else depth)


# -- Linux native AIO through raw syscalls: one thread, QD reads in flight ---------
_AIO_NR = {"x86_64": (206, 207, 208, 209), "aarch64": (0, 1, 4, 2)}  # setup destroy getevents submit
IOCB_CMD_PREAD = 0


class _IOCB(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("key", ctypes.c_uint32), ("rw_flags", ctypes.c_int32),
                ("opcode", ctypes.c_uint16), ("reqprio", ctypes.c_int16), ("fildes", ctypes.c_uint32),
                ("buf", ctypes.c_uint64), ("nbytes", ctypes.c_uint64), ("offset", ctypes.c_int64),
                ("reserved2", ctypes.c_uint64), ("flags", ctypes.c_uint32), ("resfd", ctypes.c_uint32)]


class _IOEvent(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64), ("res", ctypes.c_int64),
                ("res2", ctypes.c_int64)]


def aio_available() -> bool:
    return platform.machine() in _AIO_NR and _libc() is not None


def _aio_reads(t: Target, bs: int, take: OffsetChunks, depth: int, deadline_ns: int,
               max_ios: int | None) -> tuple[np.ndarray, int, int]:
    """Keep ``depth`` O_DIRECT reads in flight from one thread; latency = submit to reap. Stops
    at the deadline, after ``max_ios`` reads, or when ``take`` runs out of offsets."""
    libc = _libc()
    nr_setup, nr_destroy, nr_getevents, nr_submit = _AIO_NR[platform.machine()]
    syscall = libc.syscall
    syscall.restype = ctypes.c_long
    ctx = ctypes.c_ulong(0)
    if syscall(nr_setup, ctypes.c_uint(depth), ctypes.byref(ctx)) != 0:
        raise BenchError(f"{t.path}: io_setup failed: {os.strerror(ctypes.get_errno())}")
    bufs = [_buffer(bs) for _ in range(depth)]
    cbufs = [ctypes.c_char.from_buffer(b) for b in bufs]
    iocbs = (_IOCB * depth)()
    ptrs = (ctypes.POINTER(_IOCB) * depth)()
    events = (_IOEvent * depth)()
    start = [0] * depth
    lat = array("q")
    short = done = inflight = 0
    clock = _now_ns  # the deadline's clock

    def submit(slots: list[int]) -> bool:
        """Submit a read into each slot; False when the offsets ran out."""
        nonlocal inflight
        offs = take(len(slots)).tolist()
        for j, (k, off) in enumerate(zip(slots, offs)):
            cb = iocbs[k]
            cb.data, cb.opcode, cb.fildes = k, IOCB_CMD_PREAD, t.fd
            cb.buf, cb.nbytes, cb.offset = ctypes.addressof(cbufs[k]), bs, off
            ptrs[j] = ctypes.pointer(cb)
            start[k] = clock()
        if offs:
            got = syscall(nr_submit, ctx, ctypes.c_long(len(offs)), ptrs)
            if got != len(offs):
                raise BenchError(f"{t.path}: io_submit failed: {os.strerror(ctypes.get_errno())}")
            inflight += len(offs)
        return len(offs) == len(slots)

    try:
        stopping = not submit(list(range(depth)))
        while inflight:
            n = syscall(nr_getevents, ctx, ctypes.c_long(1), ctypes.c_long(depth), events, None)
            now = clock()
            if n < 0:
                err = ctypes.get_errno()
                if err == errno.EINTR:
                    continue
                raise BenchError(f"{t.path}: io_getevents failed: {os.strerror(err)}")
            again = []
            for e in events[:n]:
                k = int(e.data)
                inflight -= 1
                done += 1
                if e.res == bs:
                    lat.append(now - start[k])
                else:
                    short += 1
                again.append(k)
            if now >= deadline_ns or (max_ios is not None and done + inflight >= max_ios):
                stopping = True
            if not stopping and again:
                stopping = not submit(again)
    finally:
        syscall(nr_destroy, ctx)
        del cbufs
        for b in bufs:
            b.close()
    return np.frombuffer(lat, dtype=np.int64), short, done


def _pct(lat_ns: np.ndarray) -> dict[str, float]:
    if lat_ns.size == 0:
        return {"mean_s": 0.0, "p50_s": 0.0, "p90_s": 0.0, "p99_s": 0.0, "p999_s": 0.0}
    q = np.percentile(lat_ns, [50, 90, 99, 99.9]) / 1e9
    return {"mean_s": float(lat_ns.mean() / 1e9), "p50_s": float(q[0]), "p90_s": float(q[1]),
            "p99_s": float(q[2]), "p999_s": float(q[3])}


def _mmm(xs: list[float]) -> dict[str, float]:
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


# ---------------------------------------------------------------------------------------------
# the bench
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BenchConfig:
    seconds: float = 60.0            # total budget, all sections
    reps: int = 5
    sizes: tuple[int, ...] = DEFAULT_SIZES
    depths: tuple[int, ...] = DEFAULT_DEPTHS
    zones: int = 16
    seed: int = 1
    warmup_frac: float = 0.15        # of each point's time, as a discarded warm-up run
    aio: bool = True                 # add native-AIO rows for small random reads at QD > 1

    @classmethod
    def quick(cls, **kw: Any) -> "BenchConfig":
        return cls(**{"seconds": 10.0, "reps": 3, "zones": 8, **kw})


# share of the budget per section
_SHARE = {"sequential": 0.2, "random": 0.18, "seek": 0.15, "zones": 0.15, "queue_depth": 0.15,
          "cached": 0.04, "first_touch": 0.04, "streams": 0.05, "idle_gap": 0.04}
IDLE_GAPS = (0.0, 1e-3, 10e-3)


def run_bench(target: str | os.PathLike[str], config: BenchConfig | None = None, *,
              direct: bool = True, name: str | None = None, note: str | None = None,
              progress: Callable[[str], None] | None = None) -> DiskProfile:
    """Measure ``target`` read-only and return a measured DiskProfile (see module docstring).

    ``note`` says what the target is (e.g. "loop device over a file on the root virtio disk");
    it goes into the description and ``provenance.note``."""
    cfg = config or BenchConfig()
    say = progress or (lambda s: None)
    with open_target(target, direct=direct) as t:
        span = t.size // t.align * t.align
        sizes = tuple(s for s in cfg.sizes if s % t.align == 0 and s * 4 <= span)
        if not sizes:
            raise BenchError(f"{target}: too small ({t.size} bytes) for request sizes "
                             f"{list(cfg.sizes)} at alignment {t.align}")
        if not direct:
            _dontneed(t)
        rng = random.Random(cfg.seed)
        tables: dict[str, list[dict[str, Any]]] = {}
        notes: dict[str, Any] = {}
        t_start = time.time()

        def budget(section: str, points: int) -> float:
            return max(0.02, cfg.seconds * _SHARE[section] / max(1, points) / (cfg.reps + cfg.warmup_frac))

        # empty-preadv cost: recorded beside the cached latency
        notes["empty_preadv_ns"] = _empty_call_ns(t)

        # first touch vs re-read: before anything else warms hidden caches
        say("first touch vs re-read")
        tables["first_touch"] = _first_touch(t, span, rng, budget("first_touch", 2))

        say("sequential throughput by size")
        tables["sequential"] = _interleaved(
            cfg, [(bs, 1) for bs in sizes],
            lambda key, k: timed_reads(t, key[0], _seq_offsets(
                (rng.randrange(span // 2 // key[0]) * key[0]) if k else 0, span, key[0]),
                seconds=budget("sequential", len(sizes))),
            lambda key: {"size": key[0], "depth": 1})

        say("random latency by size")
        tables["random"] = _interleaved(
            cfg, [(bs, 1) for bs in sizes],
            lambda key, k: timed_reads(t, key[0], _rand_offsets(0, span, key[0], rng.randrange(1 << 30)),
                                       seconds=budget("random", len(sizes))),
            lambda key: {"size": key[0], "depth": 1})

        say("queue depth")
        qd_sizes = [s for s in (4 * KiB, 64 * KiB) if s in sizes] or [sizes[0]]
        keys = [(bs, d, pat, "threads") for pat in ("rand", "seq") for bs in qd_sizes
                for d in cfg.depths]
        if cfg.aio and aio_available():
            # the AIO backend reaches higher QD at small blocks than threads can
            keys += [(qd_sizes[0], d, "rand", "aio") for d in cfg.depths if d > 1]
        tables["queue_depth"] = _interleaved(
            cfg, keys,
            lambda key, k: timed_reads(
                t, key[0], (_rand_offsets(0, span, key[0], rng.randrange(1 << 30)) if key[2] == "rand"
                            else _seq_offsets(rng.randrange(span // 2 // key[0]) * key[0], span, key[0])),
                depth=key[1], seconds=budget("queue_depth", len(keys)), backend=key[3]),
            lambda key: {"size": key[0], "depth": key[1], "pattern": key[2], "backend": key[3]})

        say("identical-block (cached) latency")
        blk = sizes[0]
        same = rng.randrange(span // blk) * blk
        tables["cached"] = _interleaved(
            cfg, [(blk, 1)],
            lambda key, k: timed_reads(t, blk, _same_offset(same), seconds=budget("cached", 1)),
            lambda key: {"size": blk, "mode": "same-block O_DIRECT" if direct else "same-block buffered",
                         "empty_preadv_s": notes["empty_preadv_ns"] / 1e9})

        say("seek distance")
        tables["seek"], notes["seek_flat"] = _seek(t, span, blk, cfg, rng, budget("seek", 1))

        say("zones")
        tables["zones"], notes["zones_flat"] = _zones(t, span, cfg, rng, budget("zones", cfg.zones))

        say("drive read-ahead (interleaved streams)")
        tables["streams"] = _streams(t, span, blk, cfg, rng, budget("streams", len(STREAM_COUNTS)))

        say("isolated-request latency (idle gaps)")
        tables["idle_gap"] = _idle_gaps(t, span, blk, cfg, rng, cfg.seconds * _SHARE["idle_gap"])

        device = {"path": str(target), "kind": t.kind, "size_bytes": t.size,
                  "alignment": t.align, **t.meta}
        try:
            device["rotational"] = bool(int(t.meta.get("rotational", "")))
        except ValueError:
            device["rotational"] = None
        prov = {
            "kind": "measured",
            "where": socket.gethostname(),
            "when": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "tool": f"seqheur bench {__version__}",
            "o_direct": direct,
            "mode": "O_DIRECT" if direct else "buffered (page cache dropped per point)",
            "repetitions": cfg.reps,
            "budget_s": cfg.seconds,
            "elapsed_s": round(time.time() - t_start, 2),
            "queue_depth_backend": "threads (native pread loop, no GIL)" + (
                "; native AIO (io_submit) for small random reads" if cfg.aio and aio_available() else ""),
            "system": _system_meta(),
            **notes,
        }
        if note:
            prov["note"] = note
        return _profile_from_tables(name or Path(str(target)).name, t, tables, device, prov)


def _dontneed(t: Target) -> None:
    try:
        os.posix_fadvise(t.fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass


def _empty_call_ns(t: Target) -> float:
    """Median time of an empty read in the native loop (the syscall and the clock pair around
    it): the part of a cached read's latency that is not the copy. It is timed the
    way ``tables.cached`` is; the profile keys keep their historical ``empty_preadv`` names."""
    run = timed_reads(t, 0, _same_offset(0), seconds=1.0, max_ios=2000)
    return float(np.median(run.lat_ns)) if run.ios else 0.0


def _interleaved(cfg: BenchConfig, keys: list[tuple], run: Callable[[tuple, int], Run],
                 label: Callable[[tuple], dict[str, Any]]) -> list[dict[str, Any]]:
    """Warm-up once per key, then ``reps`` rounds over all keys (interleaved)."""
    for key in keys:
        run(key, 0)  # warm-up, discarded
    runs: dict[tuple, list[Run]] = {k: [] for k in keys}
    order = list(keys)
    shuffle = random.Random(cfg.seed).shuffle
    for rep in range(cfg.reps):
        # a fresh order every repetition, so that a point's time slot (periodic host activity,
        # a drifting regime) is not confounded with the point itself
        if rep:
            shuffle(order)
        for key in order:
            runs[key].append(run(key, rep + 1))
    rows = []
    for key in keys:
        rs = runs[key]
        lat = np.concatenate([r.lat_ns for r in rs])
        row = {**label(key),
               "mbps": _mmm([r.mbps for r in rs]),
               "iops": _mmm([r.iops for r in rs]),
               "p50_rep_s": _mmm([float(np.median(r.lat_ns)) / 1e9 if r.ios else 0.0 for r in rs]),
               **_pct(lat),
               "ios": int(lat.size),
               "short_reads": sum(r.short_reads for r in rs),
               "cpu": _mmm([r.cpu_frac for r in rs]),
               "client_bound": sum(r.client_bound for r in rs) > len(rs) // 2}
        rows.append(row)
    return rows


def _first_touch(t: Target, span: int, rng: random.Random, seconds: float) -> list[dict[str, Any]]:
    bs = t.align
    offs = _listed_offsets([rng.randrange(span // bs) * bs for _ in range(400)])
    first = timed_reads(t, bs, offs, seconds=seconds)
    again = timed_reads(t, bs, offs, seconds=seconds, max_ios=first.ios)
    return [{"mode": "first touch", "size": bs, "ios": first.ios, **_pct(first.lat_ns)},
            {"mode": "re-read", "size": bs, "ios": again.ios, **_pct(again.lat_ns)}]


def _seek(t: Target, span: int, bs: int, cfg: BenchConfig, rng: random.Random,
          seconds: float) -> tuple[list[dict[str, Any]], bool]:
    """Latency of a read at a ± d right after a read at a, for log2-spaced d."""
    dists = []
    d = bs
    while d <= span // 2:
        dists.append(d)
        d *= 4
    per = seconds / max(1, len(dists))
    samples: dict[int, list[list[int]]] = {d: [] for d in dists}
    buf = _buffer(bs)
    view = memoryview(buf)
    try:
        for rep in range(cfg.reps):
            for d in dists:
                lat: list[int] = []
                end = time.perf_counter() + per
                while time.perf_counter() < end or len(lat) < 5:
                    a = rng.randrange((span - d) // bs) * bs
                    b = a + d if rng.random() < 0.5 or a < d else a - d
                    if b + bs > span:
                        b = a - d
                    os.preadv(t.fd, [view[:bs]], a)
                    t0 = time.perf_counter_ns()
                    n = os.preadv(t.fd, [view[:bs]], b)
                    t1 = time.perf_counter_ns()
                    if n == bs:
                        lat.append(t1 - t0)
                samples[d].append(lat)
    finally:
        view.release()
        buf.close()
    rows = []
    for d in dists:
        all_lat = np.concatenate([np.asarray(x, dtype=np.int64) for x in samples[d]])
        reps = [float(np.median(x)) / 1e9 for x in samples[d]]
        rows.append({"distance_bytes": d, "size": bs, "pairs": int(all_lat.size),
                     "p50_rep_s": _mmm(reps), **_pct(all_lat)})
    return rows, _is_flat([r["p50_s"] for r in rows], [r["p50_rep_s"] for r in rows])


def _zones(t: Target, span: int, cfg: BenchConfig, rng: random.Random,
           seconds: float) -> tuple[list[dict[str, Any]], bool]:
    bs = MiB if span >= 8 * MiB else t.align
    n = max(1, min(cfg.zones, span // (bs * 4)))
    win = span // n // bs * bs
    keys = [(i * win,) for i in range(n)]
    rows = _interleaved(
        cfg, keys,
        lambda key, k: timed_reads(t, bs, _seq_offsets(key[0], key[0] + win, bs), seconds=seconds),
        lambda key: {"position_bytes": key[0], "window_bytes": win, "size": bs})
    return rows, _is_flat([r["mbps"]["median"] for r in rows], [r["mbps"] for r in rows])


def _streams(t: Target, span: int, bs: int, cfg: BenchConfig, rng: random.Random,
             seconds: float) -> list[dict[str, Any]]:
    """k interleaved sequential streams far apart: block i+1 of a stream shortly after block i.
    A drive with a segmented read-ahead cache serves them fast until k exceeds its segments."""
    rows = []
    for k in STREAM_COUNTS:
        gap = span // k // bs * bs
        if gap < bs * 64:
            break
        offs = _interleaved_streams(k, gap, bs)
        runs = [timed_reads(t, bs, offs, seconds=seconds / cfg.reps) for _ in range(cfg.reps)]
        lat = np.concatenate([r.lat_ns for r in runs])
        rows.append({"streams": k, "size": bs, "ios": int(lat.size),
                     "mbps": _mmm([r.mbps for r in runs]), **_pct(lat)})
    return rows


def _interleaved_streams(k: int, gap: int, bs: int) -> OffsetSource:
    """Read i goes to stream i mod k (streams start ``gap`` apart), at that stream's next block.
    The read counter is shared by every thread of a run, so taking a chunk is locked."""
    state = {"i": 0}
    lock = threading.Lock()

    def take(n: int) -> np.ndarray:
        with lock:
            first = state["i"]
            state["i"] = first + n
        i = first + np.arange(n, dtype=np.int64)
        return i % k * gap + i // k * bs % gap
    return lambda depth: [take] * depth


def _idle_gaps(t: Target, span: int, bs: int, cfg: BenchConfig, rng: random.Random,
               seconds: float) -> list[dict[str, Any]]:
    """Random reads with the device left idle between them: NFS read-ahead arrives with gaps,
    and on the reference VM a 100 ms gap doubled the latency. Gaps interleaved."""
    lat: dict[float, list[int]] = {g: [] for g in IDLE_GAPS}
    per_gap = seconds / len(IDLE_GAPS)
    buf = _buffer(bs)
    view = memoryview(buf)
    try:
        for _ in range(cfg.reps):
            for g in IDLE_GAPS:
                end = time.perf_counter() + per_gap / cfg.reps
                n = 0
                while time.perf_counter() < end or n < 3:
                    if g:
                        time.sleep(g)
                    off = rng.randrange(span // bs) * bs
                    t0 = time.perf_counter_ns()
                    got = os.preadv(t.fd, [view[:bs]], off)
                    t1 = time.perf_counter_ns()
                    if got == bs:
                        lat[g].append(t1 - t0)
                    n += 1
    finally:
        view.release()
        buf.close()
    return [{"gap_s": g, "size": bs, "ios": len(v), **_pct(np.asarray(v, dtype=np.int64))}
            for g, v in lat.items()]


def _is_flat(values: list[float], spreads: list[dict[str, float]]) -> bool:
    """Flat unless the range across points beats the typical run-to-run (max-min) spread and
    the trend is monotone in more than 3/4 of the steps."""
    if len(values) < 3:
        return True
    rng = max(values) - min(values)
    noise = statistics.median([s["max"] - s["min"] for s in spreads])
    steps = np.sign(np.diff(values))
    monotone = max((steps > 0).sum(), (steps < 0).sum()) >= 0.75 * len(steps)
    return not (rng > 2 * noise and monotone)


def _profile_from_tables(name: str, t: Target, tables: dict[str, list[dict[str, Any]]],
                         device: dict[str, Any], prov: dict[str, Any]) -> DiskProfile:
    """Model parameters from the measured tables (docs/disk-bench.md, "From tables to model")."""
    seq = tables["sequential"]
    big = max(seq, key=lambda r: r["size"])
    media_mbps = big["mbps"]["median"]
    host_mbps = max([r["mbps"]["max"] for r in seq] +
                    [r["mbps"]["median"] for r in tables["queue_depth"]])
    small = min(seq, key=lambda r: r["size"])
    # per-command overhead: a small sequential read minus its transfer at the media rate
    over = max(0.0, small["p50_s"] - small["size"] / (media_mbps * 1e6))
    rnd = min(tables["random"], key=lambda r: r["size"])
    xfer = rnd["size"] / (media_mbps * 1e6)
    random_pos = max(0.0, rnd["p50_s"] - xfer - over)
    sources = {
        "random_positioning_s": f"measured: p50 random {rnd['size']} B read - transfer - overhead",
        "zones": "measured: 1 MiB sequential O_DIRECT reads per window (flat => one zone at the "
                 "largest-size sequential median)",
        "host_mbps": "measured: the highest sequential throughput seen (any size or depth)",
        "command_overhead_s": "measured: p50 of the smallest sequential read - its media transfer",
        "positioning": "measured: p50 latency of a read at distance d right after a read, minus "
                       "transfer and overhead (empty when flat: random positioning is used)",
        "drive_cache": "measured: interleaved-streams probe (segments = most streams still fast)",
    }
    if prov.get("seek_flat", True):
        seek_d: tuple[float, ...] = ()
        seek_s: tuple[float, ...] = ()
    else:
        rows = sorted(tables["seek"], key=lambda r: r["distance_bytes"])
        seek_d = tuple(float(r["distance_bytes"]) for r in rows)
        seek_s = tuple(max(0.0, r["p50_s"] - r["size"] / (media_mbps * 1e6) - over) for r in rows)
        seek_s = tuple(np.maximum.accumulate(np.asarray(seek_s)).tolist())
    zrows = sorted(tables["zones"], key=lambda r: r["position_bytes"])
    if prov.get("zones_flat", True) or len(zrows) < 2:
        zstart, zmbps = (0,), (media_mbps,)
    else:
        zstart = tuple(int(r["position_bytes"]) for r in zrows)
        zmbps = tuple(float(r["mbps"]["median"]) for r in zrows)
    cache = DriveCache()
    srows = tables.get("streams") or []
    fast = [r["streams"] for r in srows if r["p50_s"] < 0.5 * rnd["p50_s"]]
    if fast and srows and fast[0] == 1 and len(fast) < len(srows):
        cache = DriveCache(segments=max(fast), segment_bytes=int(128 * KiB),
                           readahead_bytes=int(128 * KiB), min_prefetch_bytes=0,
                           hit_overhead_s=float(tables["cached"][0]["p50_s"]))
        sources["drive_cache"] += "; segment size not measurable this way: 128 KiB assumed"
    desc = (f"measured {t.kind} {device.get('model') or ''} on {prov['where']} "
            f"{prov['when'][:10]} ({prov['mode']})").replace("  ", " ")
    if prov.get("note"):
        desc += f": {prov['note']}"
    return DiskProfile(name=name, kind="measured", description=desc, capacity_bytes=t.size,
                       seek_distance_bytes=seek_d, seek_seconds=seek_s,
                       random_positioning_s=random_pos, zone_start_bytes=zstart, zone_mbps=zmbps,
                       host_mbps=host_mbps, command_overhead_s=over, cache=cache, device=device,
                       provenance=prov, tables=tables, sources=sources)
