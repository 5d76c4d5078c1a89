"""``seqheur kernel-check``: the ``linux-6`` model against the running kernel, page for page.

The live side (:mod:`seqheur.live`) preads a pattern's requests on scratch files and records
the pages each request made resident (cachestat-gated mincore). The model side replays the
same requests through ``linux-6`` with the device's ``read_ahead_kb`` and ``max_sectors_kb``
and an ample cache, and derives the pages each request read from its read-ahead actions: the
blocks an action asked for, inside the file, less what was already cached. A request is
*exact* when both page sets are equal.

Files are independent in the kernel (each has its own page cache and ``file_ra_state``), so
the model replays each fadvise-hint group of files on its own, with ``ideal`` (one ra state
per open file).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

PAGE = 4096


@dataclass
class Comparison:
    """Request-by-request comparison of one pattern."""

    pattern: str
    requests: int
    exact: int
    mismatches: list[dict[str, Any]] = field(default_factory=list)

    @property
    def mismatched(self) -> int:
        return self.requests - self.exact


def model_new_pages(file: np.ndarray, offset: np.ndarray, count: np.ndarray,
                    sizes: Sequence[int], hints: Sequence[str], *, ra_kb: int, io_kb: int,
                    large_folios: bool = True, max_order: int = 9) -> list[np.ndarray]:
    """Pages each request made resident according to ``linux-6`` (sorted page indices).
    ``file``: index into ``sizes`` (bytes) and ``hints`` (``normal``/``sequential``/
    ``random``, the fadvise hint the file was opened with)."""
    from .replay import replay
    from .streams import ReadStream

    file = np.asarray(file, np.int64)
    offset = np.asarray(offset, np.int64)
    count = np.asarray(count, np.int64)
    sizes = np.asarray(sizes, np.int64)
    hint_of = np.asarray(list(hints))
    out: list[np.ndarray] = [np.zeros(0, np.int64)] * len(file)
    for hint in sorted(set(hint_of[file].tolist())) if len(file) else []:
        sel = np.flatnonzero(hint_of[file] == hint)
        stream = ReadStream.from_arrays(file[sel], offset[sel], count[sel])
        ids = stream.file_ids.astype(np.int64)
        cache = int(sizes[ids].sum()) + (64 << 20)
        det = (f"linux-6:ra_kb={ra_kb},io_kb={io_kb},large_folios={str(large_folios).lower()},"
               f"max_order={max_order},fadvise={hint}")
        r = replay(stream, det, "ideal", cache=cache, profile=None, file_sizes=sizes[ids],
                   per_request=False, actions=True)
        acts = r.actions
        req = acts["request"].to_numpy()
        start = acts["start"].to_numpy()
        cnt = acts["count"].to_numpy()
        resident = {int(f): np.zeros((int(sizes[f]) + PAGE - 1) // PAGE, bool) for f in ids}
        order = np.argsort(req, kind="stable")
        req, start, cnt = req[order], start[order], cnt[order]
        bounds = np.searchsorted(req, np.arange(len(sel) + 1))
        for j, i in enumerate(sel):
            have = resident[int(file[i])]
            new: set[int] = set()
            for k in range(bounds[j], bounds[j + 1]):
                lo, hi = int(start[k]), min(int(start[k] + cnt[k]), len(have))
                if lo < hi:
                    span = np.arange(lo, hi)
                    new.update(span[~have[lo:hi]].tolist())
            pages = np.array(sorted(new), np.int64)
            have[pages] = True
            out[i] = pages
    return out


def compare(name: str, kernel: Sequence[np.ndarray], model: Sequence[np.ndarray],
            file: np.ndarray, offset: np.ndarray, count: np.ndarray,
            keep: int = 10) -> Comparison:
    """Request-by-request comparison; the first ``keep`` mismatches with both page sets."""
    exact = 0
    mism: list[dict[str, Any]] = []
    for i, (k, m) in enumerate(zip(kernel, model)):
        if np.array_equal(np.asarray(k, np.int64), np.asarray(m, np.int64)):
            exact += 1
        elif len(mism) < keep:
            mism.append({"pattern": name, "request": i, "file": int(file[i]),
                         "offset": int(offset[i]), "count": int(count[i]),
                         "kernel_pages": runs(k), "model_pages": runs(m)})
    return Comparison(name, len(kernel), exact, mism)


def runs(pages: Sequence[int]) -> list[list[int]]:
    """Sorted pages as ``[start, end)`` runs."""
    out: list[list[int]] = []
    for p in np.asarray(pages, np.int64).tolist():
        if out and out[-1][1] == p:
            out[-1][1] = p + 1
        else:
            out.append([p, p + 1])
    return out


def pages_of(runs_: Sequence[Sequence[int]]) -> np.ndarray:
    """The inverse of :func:`runs`."""
    parts = [np.arange(a, b, dtype=np.int64) for a, b in runs_]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


# --------------------------------------------------------------------------------------------
# built-in patterns (deterministic; file offsets in bytes)


@dataclass(frozen=True)
class Pattern:
    """Per-file read requests to run on the live kernel and the model alike."""

    name: str
    sizes: tuple[int, ...]  # bytes per file
    hints: tuple[str, ...]  # fadvise hint per file: normal, sequential, random
    file: np.ndarray
    offset: np.ndarray
    count: np.ndarray

    def __len__(self) -> int:
        return len(self.file)


def _one(name: str, reqs: list[tuple[int, int]], size: int, hint: str = "normal") -> Pattern:
    if name != "eof":  # a smaller file drops the requests that would start past its end
        reqs = [r for r in reqs if r[0] < size]
    off = np.array([o for o, _ in reqs], np.int64)
    cnt = np.array([c for _, c in reqs], np.int64)
    return Pattern(name, (size,), (hint,), np.zeros(len(reqs), np.int64), off, cnt)


def _interleaved(name: str, starts: list[int], req: int, n: int, size: int) -> Pattern:
    reqs = [(s + i * req, req) for i in range(n) for s in starts]
    return _one(name, reqs, size)


def builtin_patterns(size: int = 64 << 20, seed: int = 1) -> dict[str, Pattern]:
    """The built-in patterns over a ``size``-byte file (several files for ``multi-file``)."""
    rng = np.random.default_rng(seed)
    K, M = 1024, 1 << 20
    pages = size // 4096
    p: dict[str, Pattern] = {}

    def add(pt: Pattern) -> None:
        p[pt.name] = pt

    add(_one("seq-4k", [(i * 4 * K, 4 * K) for i in range(min(3000, pages))], size))
    add(_one("seq-32k", [(i * 32 * K, 32 * K) for i in range(min(1000, size // (32 * K)))],
             size))
    add(_one("seq-128k", [(i * 128 * K, 128 * K) for i in range(size // (128 * K))], size))
    add(_one("seq-1m", [(i * M, M) for i in range(size // M)], size))
    add(_one("backward-32k", [(size - (i + 1) * 32 * K, 32 * K)
                              for i in range(min(500, size // (32 * K)))], size))
    add(_one("random-4k", [(int(x) * 4 * K, 4 * K) for x in rng.integers(0, pages, 500)], size))
    add(_one("random-32k", [(int(x) * 32 * K, 32 * K)
                            for x in rng.integers(0, size // (32 * K), 500)], size))
    add(_one("strided", [(i * 64 * K, 32 * K) for i in range(size // (64 * K))], size))
    add(_interleaved("interleaved-2", [0, size // 2], 32 * K, 600, size))
    add(_interleaved("interleaved-4", [k * size // 4 for k in range(4)], 32 * K, 300, size))
    add(_one("unaligned-6k", [(i * 6 * K, 6 * K) for i in range(2000)], size))
    half = [(i * 64 * K, 64 * K) for i in range(size // (128 * K))]
    add(_one("reread", half + half, size))
    add(_one("fadv-sequential", [(i * 32 * K, 32 * K) for i in range(1000)], size,
             "sequential"))
    add(_one("fadv-random", [(i * 32 * K, 32 * K) for i in range(300)], size, "random"))
    add(_one("eof", [(size - 256 * K + i * 32 * K, 32 * K) for i in range(8)]
             + [(size - 10000, 20000), (size, 4096), (size + 8192, 4096)], size))
    mid = (size // 2) // (32 * K) * 32 * K
    add(_one("midfile-then-seq", [(mid + i * 32 * K, 32 * K) for i in range(400)], size))
    add(_one("every-other-page", [(size // 3 // 4096 * 4096 + i * 8 * K, 4 * K)
                                  for i in range(300)], size))
    probe: list[tuple[int, int]] = []
    for base in rng.integers(16, pages - 16, 100):
        for k in range(3):
            probe.append((int(base + k) * 4096, 4096))
            probe.append((int(rng.integers(0, pages)) * 4096, 4096))
    add(_one("context-probe", probe, size))
    for n_streams, name in ((2, "mix-2"), (4, "mix-4")):
        pos = [int(x) for x in rng.integers(0, size, n_streams)]
        reqs = []
        for _ in range(1200):
            s = int(rng.integers(0, n_streams))
            cnt = int(rng.integers(1, 33)) * 4 * K if rng.random() < 0.7 else int(
                rng.integers(1, 128 * K))
            r = rng.random()
            if r < 0.05:
                pos[s] = int(rng.integers(0, size))
            elif r < 0.08:
                pos[s] = max(0, pos[s] - int(rng.integers(1, 64)) * 4 * K)
            reqs.append((pos[s], cnt))
            pos[s] = (pos[s] + cnt) % size
        add(_one(name, reqs, size))
    files = 3
    per = size // files // 4096 * 4096
    reqs3 = [(f, i * 32 * K) for i in range(per // (32 * K)) for f in range(files)]
    p["multi-file"] = Pattern("multi-file", (per,) * files, ("normal",) * files,
                              np.array([f for f, _ in reqs3], np.int64),
                              np.array([o for _, o in reqs3], np.int64),
                              np.full(len(reqs3), 32 * K, np.int64))
    return p


# --------------------------------------------------------------------------------------------
# the live kernel: pread, then the pages that became resident (cachestat-gated mincore)


class KernelCheckError(RuntimeError):
    """The live side cannot run here (no cachestat, no root for a loop device, ...)."""


class _Libc:
    def __init__(self) -> None:
        import ctypes

        self.ct = ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                              ctypes.c_int, ctypes.c_long]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.syscall.restype = ctypes.c_long
        self.libc = libc

        class Stat(ctypes.Structure):
            _fields_ = [(n, ctypes.c_uint64) for n in (
                "nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]

        class Range(ctypes.Structure):
            _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]

        self.Stat, self.Range = Stat, Range

    def cachestat(self, fd: int) -> tuple[int, int]:
        """(pages cached, pages evicted) of the whole file: cachestat(2), syscall 451."""
        rng, st = self.Range(0, 0), self.Stat()
        if self.libc.syscall(451, fd, self.ct.byref(rng), self.ct.byref(st), 0) != 0:
            err = self.ct.get_errno()
            raise KernelCheckError(f"cachestat(2) failed ({os.strerror(err)}): it needs Linux "
                                   ">= 6.5")
        return int(st.nr_cache), int(st.nr_evicted)

    def resident(self, fd: int, size: int) -> np.ndarray:
        """mincore(2) of the whole file: True for every up-to-date resident page (mapping the
        file does not fault anything in: the mapping is never touched)."""
        n = (size + PAGE - 1) // PAGE
        if size == 0:
            return np.zeros(0, bool)
        addr = self.libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
        if addr in (None, self.ct.c_void_p(-1).value):
            raise KernelCheckError(f"mmap failed: {os.strerror(self.ct.get_errno())}")
        try:
            vec = (self.ct.c_ubyte * n)()
            if self.libc.mincore(self.ct.c_void_p(addr), size, vec) != 0:
                raise KernelCheckError(f"mincore failed: {os.strerror(self.ct.get_errno())}")
        finally:
            self.libc.munmap(self.ct.c_void_p(addr), size)
        return (np.frombuffer(vec, np.uint8) & 1).astype(bool)


_HINTS = {"normal": os.POSIX_FADV_NORMAL, "sequential": os.POSIX_FADV_SEQUENTIAL,
          "random": os.POSIX_FADV_RANDOM}


class Evicted(Exception):
    """Pages vanished from the page cache while a pattern ran (this VM reclaims at times)."""


def observe(pattern: Pattern, paths: Sequence[str], libc: _Libc | None = None,
            timeout: float = 10.0) -> list[np.ndarray]:
    """Run ``pattern`` on the files at ``paths`` (of ``pattern.sizes``): drop their pages,
    open each afresh with its hint, one pread per request; after each, wait until mincore's
    count equals cachestat's (mincore reports only up-to-date pages, so in-flight read-ahead
    would be missed) and record the new pages. Raises :class:`Evicted` when a page vanished."""
    libc = libc or _Libc()
    fds = []
    try:
        for path, hint in zip(paths, pattern.hints):
            fd = os.open(path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            left = int(libc.resident(fd, os.fstat(fd).st_size).sum())
            os.close(fd)
            if left:
                raise Evicted(f"{left} pages of {path} stayed resident after DONTNEED")
            fd = os.open(path, os.O_RDONLY)  # a fresh file_ra_state
            if hint != "normal":
                os.posix_fadvise(fd, 0, 0, _HINTS[hint])
            fds.append(fd)
        have = [np.zeros((s + PAGE - 1) // PAGE, bool) for s in pattern.sizes]
        out: list[np.ndarray] = []
        for f, off, cnt in zip(pattern.file.tolist(), pattern.offset.tolist(),
                               pattern.count.tolist()):
            fd, size = fds[f], pattern.sizes[f]
            os.pread(fd, cnt, off)
            deadline = time.monotonic() + timeout
            while True:
                now = libc.resident(fd, size)
                cached, _ = libc.cachestat(fd)
                if int(now.sum()) == cached:
                    break
                if time.monotonic() > deadline:
                    raise KernelCheckError(f"pages of {paths[f]} not up to date after "
                                           f"{timeout:.0f} s")
                time.sleep(0.0005)
            if (have[f] & ~now).any():
                raise Evicted(f"{int((have[f] & ~now).sum())} pages of {paths[f]} reclaimed")
            out.append(np.flatnonzero(now & ~have[f]))
            have[f] = now
        return out
    finally:
        for fd in fds:
            os.close(fd)


def observe_until_stable(pattern: Pattern, paths: Sequence[str], reps: int,
                         attempts: int = 6) -> tuple[list[np.ndarray], int, bool]:
    """``reps`` clean runs of ``pattern`` (a run that lost pages is run again, up to
    ``attempts`` times per rep). Returns (the first run's pages, runs redone after reclaim,
    whether every rep gave the same pages)."""
    libc = _Libc()
    reruns = 0
    runs_: list[list[np.ndarray]] = []
    for _ in range(reps):
        for attempt in range(attempts):
            try:
                runs_.append(observe(pattern, paths, libc))
                break
            except Evicted:
                reruns += 1
                if attempt == attempts - 1:
                    raise KernelCheckError(f"pattern {pattern.name}: the page cache lost pages "
                                           f"in {attempts} runs in a row (memory pressure?)")
    first = runs_[0]
    same = all(len(r) == len(first) and all(np.array_equal(a, b) for a, b in zip(r, first))
               for r in runs_[1:])
    return runs_[0], reruns, same


# --------------------------------------------------------------------------------------------
# devices: a loop device of our own (root), or the device under --dir


@dataclass
class Device:
    """The block device under the scratch files and its read-ahead settings."""

    name: str  # e.g. loop3, vda
    filesystem: str
    mountpoint: str

    @property
    def queue(self) -> str:
        return f"/sys/block/{self.name}/queue"

    def read_ahead_kb(self) -> int:
        with open(f"{self.queue}/read_ahead_kb") as fh:
            return int(fh.read())

    def max_sectors_kb(self) -> int:
        with open(f"{self.queue}/max_sectors_kb") as fh:
            return int(fh.read())

    def set_read_ahead_kb(self, kb: int) -> None:
        try:
            with open(f"{self.queue}/read_ahead_kb", "w") as fh:
                fh.write(str(kb))
        except PermissionError as exc:
            raise KernelCheckError(f"setting {self.queue}/read_ahead_kb needs root; run as "
                                   "root or drop --ra-kb to use the device's own value"
                                   ) from exc


def device_of(path: str) -> Device:
    """The whole-disk device (a partition's parent) and file system under ``path``."""
    st = os.stat(path)
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    sysdev = os.path.realpath(f"/sys/dev/block/{major}:{minor}")
    if not os.path.isdir(sysdev):
        raise KernelCheckError(f"{path} is not on a block device (major:minor {major}:{minor})")
    name = os.path.basename(sysdev)
    if not os.path.isdir(f"/sys/block/{name}"):  # a partition: its queue is its parent's
        name = os.path.basename(os.path.dirname(sysdev))
    fs, mnt = "?", "?"
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            parts = line.split()
            if parts[2] == f"{major}:{minor}":
                sep = parts.index("-")
                fs, mnt = parts[sep + 1], parts[4]
    return Device(name, fs, mnt)


class LoopDevice:
    """A scratch ext4 on a loop device of our own (:class:`seqheur.loopdev.ScratchExt4`);
    everything is removed on exit, also after Ctrl-C or (inside :func:`run_check`, which turns
    it into KeyboardInterrupt) SIGTERM."""

    def __init__(self, size: int) -> None:
        from .loopdev import ScratchExt4

        self.scratch = ScratchExt4(size, prefix="seqheur-kcheck-")

    def __enter__(self) -> tuple[Device, str]:
        if os.geteuid() != 0:
            raise KernelCheckError("a loop device and its sysfs settings need root; without "
                                   "root use --dir DIR (scratch files on DIR's device, its own "
                                   "read_ahead_kb)")
        try:
            mnt = self.scratch.create()
            return device_of(mnt), mnt
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        self.scratch.remove()


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _scratch_files(where: str, sizes: Sequence[int], seed: int = 0) -> list[str]:
    """Files of random bytes (fsync'd) of ``sizes`` under ``where``; reused when present."""
    rng = np.random.default_rng(seed)
    paths = []
    for k, size in enumerate(sizes):
        path = os.path.join(where, f"seqheur-kcheck-{k}-{size}.bin")
        if not (os.path.exists(path) and os.path.getsize(path) == size):
            with open(path, "wb") as fh:
                left = size
                while left:
                    n = min(left, 8 << 20)
                    fh.write(rng.integers(0, 256, n, dtype=np.uint8).tobytes())
                    left -= n
                fh.flush()
                os.fsync(fh.fileno())
        paths.append(path)
    return paths


KNOWN_KERNELS = ((6, 16), (6, 17), (6, 18))


def kernel_note(release: str) -> str | None:
    """Why results may differ on this kernel (None on the kernels the model was built from)."""
    try:
        major, minor = (int(x) for x in release.split(".")[:2])
    except ValueError:
        return f"kernel {release}: version not recognised; linux-6 follows 6.16-6.18"
    if (major, minor) in KNOWN_KERNELS:
        return None
    return (f"kernel {release}: linux-6 follows the 6.16-6.18 rules; other kernels differ "
            "(the folio-order state and alignment trim of the async window, the async size of "
            "an initial window; later kernels omit the mark of a window clipped at EOF), so a "
            "mismatch may be this kernel's rules rather than the model's")


def run_check(patterns: Sequence[Pattern], ra_kbs: Sequence[int | None], *,
              where: str | None = None, reps: int = 3, keep: int = 10,
              progress: Any = None, record: str | None = None) -> dict[str, Any]:
    """Every pattern at every ``read_ahead_kb`` (None: the device's own), ``reps`` times on
    the live kernel, against ``linux-6``. ``where``: a directory for the scratch files (its
    device); None: a loop device of our own (root). ``record``: a directory to write the
    kernel's pages to (:func:`write_recording`, one file per setting)."""
    import contextlib

    from .loopdev import sigterm_raises

    files = {(k, s) for p in patterns for k, s in enumerate(p.sizes)}  # _scratch_files names
    total = sum(s for _, s in files)
    with contextlib.ExitStack() as stack:
        stack.enter_context(sigterm_raises())  # unwinds like Ctrl-C: everything is cleaned up
        if where is None:
            dev, where = stack.enter_context(LoopDevice(int(total * 1.3) + (64 << 20)))
            own = True
        else:
            dev, own = device_of(where), False
        original = dev.read_ahead_kb()
        if not own and any(kb is not None and kb != original for kb in ra_kbs):
            stack.callback(dev.set_read_ahead_kb, original)  # restore the shared device
        settings = []
        created: set[str] = set()
        mism: list[dict[str, Any]] = []
        for kb in ra_kbs:
            if kb is not None:
                dev.set_read_ahead_kb(kb)
            ra = dev.read_ahead_kb()
            io = dev.max_sectors_kb()
            rows = []
            observed: list[tuple[str, list[np.ndarray]]] = []
            for pat in patterns:
                paths = _scratch_files(where, pat.sizes)
                for path in paths:
                    if path not in created:  # removed at the end, also after Ctrl-C
                        created.add(path)
                        stack.callback(_remove, path)
                kernel, reruns, same = observe_until_stable(pat, paths, reps)
                model = model_new_pages(pat.file, pat.offset, pat.count, pat.sizes, pat.hints,
                                        ra_kb=ra, io_kb=io)
                c = compare(pat.name, kernel, model, pat.file, pat.offset, pat.count, keep)
                for m in c.mismatches:
                    m["read_ahead_kb"] = ra
                mism.extend(c.mismatches[:max(0, keep - len(mism))])
                rows.append({"pattern": pat.name, "requests": c.requests, "exact": c.exact,
                             "evicted_reruns": reruns, "deterministic": same})
                if progress is not None:
                    progress(ra, rows[-1])
                if record is not None:
                    observed.append((pat.name, kernel))
            settings.append({"read_ahead_kb": ra, "ra_pages": ra // 4, "io_pages": io // 4,
                             "patterns": rows})
            if record is not None:
                write_recording(record, dev, ra, io, reps, observed, patterns)
        release = os.uname().release
        reqs = sum(r["requests"] for s in settings for r in s["patterns"])
        exact = sum(r["exact"] for s in settings for r in s["patterns"])
        return {
            "kernel": release, "kernel_note": kernel_note(release),
            "device": dev.name, "filesystem": dev.filesystem, "loop_device": own,
            "ra_pages": [s["ra_pages"] for s in settings],
            "io_pages": settings[0]["io_pages"] if settings else None,
            "reps": reps,
            "requests": reqs, "exact_requests": exact, "mismatched_requests": reqs - exact,
            "exact_fraction": exact / reqs if reqs else None,
            "evicted_reruns": sum(r["evicted_reruns"] for s in settings for r in s["patterns"]),
            "deterministic": all(r["deterministic"] for s in settings for r in s["patterns"]),
            "settings": settings, "mismatches": mism,
        }


def trace_pattern(path: str) -> Pattern:
    """A trace's READs as a pattern: files numbered densely, each as large as the largest
    byte any request read (rounded up to a page), opened with no hint."""
    from .streams import read_stream

    s = read_stream(path)
    n = max(int(s.n_files), 1)
    end = np.zeros(n, np.int64)
    np.maximum.at(end, s.file.astype(np.int64), s.offset + s.count.astype(np.int64))
    sizes = tuple(int(max(e, PAGE) + PAGE - 1) // PAGE * PAGE for e in end)
    return Pattern(os.path.basename(path), sizes, ("normal",) * n, s.file.astype(np.int64),
                   s.offset.astype(np.int64), s.count.astype(np.int64))


RECIPE = ("one pread per request on a fresh fd per pattern after POSIX_FADV_DONTNEED (checked "
          "empty with mincore); after each pread, wait until mincore's resident count equals "
          "cachestat(2)'s nr_cache, then record the newly resident pages; runs that lost pages "
          "to reclaim are redone; every rep gave the same pages")


def write_recording(directory: str, dev: Device, ra_kb: int, io_kb: int, reps: int,
                    observed: Sequence[tuple[str, list[np.ndarray]]],
                    patterns: Sequence[Pattern]) -> str:
    """The kernel's pages per request of every pattern at one setting, as gzipped JSON
    (``[start, end)`` page runs per request), with how and where they were recorded."""
    import datetime
    import gzip
    import json

    from .io import atomic_path

    by_name = {p.name: p for p in patterns}
    doc = {
        "kernel": os.uname().release, "device": dev.name, "filesystem": dev.filesystem,
        "read_ahead_kb": ra_kb, "max_sectors_kb": io_kb, "ra_pages": ra_kb // 4,
        "io_pages": io_kb // 4, "reps": reps, "recipe": RECIPE,
        "date": datetime.date.today().isoformat(),
        "generator": "seqheur.kernelcheck.builtin_patterns",
        "patterns": [{"name": name, "sizes": list(by_name[name].sizes),
                      "requests": len(pages), "pages": [runs(p) for p in pages]}
                     for name, pages in observed],
    }
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{dev.name.rstrip('0123456789')}-ra{ra_kb}.json.gz")
    with atomic_path(path) as tmp:
        with gzip.open(tmp, "wt") as fh:
            json.dump(doc, fh, separators=(",", ":"))
    return path
