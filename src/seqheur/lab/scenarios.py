"""Capture-lab scenarios: which files are exported, which clients read them, and how.

A scenario is data only (frozen dataclasses); ``seqheur.lab.runner`` turns it into processes.
Two kinds of client exist:

* ``libnfs``: the lab's own asynchronous load generator (``clients/loadgen.c``) speaks NFS
  directly; the READs on the wire are exactly the ones it issues, so the lab checks them against
  :func:`plan_reads` (an independent Python copy of the generator's plan).
* ``fuse``: an ordinary reader (``seqheur.lab.reader``) reads through the FUSE bridge
  (``clients/fusebridge.c``); the Linux page cache and its readahead (``read_ahead_kb``) decide the
  NFS READs, so only the bridge's own log says what went on the wire.

Adding a scenario: append a :class:`Scenario` to ``_SCENARIOS`` (file names must be unique per
size across all scenarios, because one export directory serves a whole ``lab run``).
"""

from __future__ import annotations

import random as _random
from dataclasses import dataclass, field

from ..errors import SeqheurError
from .data import ExportFile

KiB = 1024
MiB = 1024 * KiB
PATTERNS = ("seq", "backward", "stride", "random", "interleave")
_MASK = (1 << 64) - 1


class LabError(SeqheurError):
    """The capture lab could not run or a capture failed verification."""


@dataclass(frozen=True)
class Reader:
    """One client process: a READ pattern over some export files.

    ``size`` is the bytes per request (NFS READ for libnfs, read() for fuse); ``depth`` READs are
    kept in flight (libnfs only); ``streams`` is the number of interleaved sequential sub-streams of
    the stride pattern; ``reads`` caps the number of requests (and is the count for random);
    ``mmap`` (fuse only) reads through a shared mapping instead of pread(), so page faults and
    the kernel's read-around, not read(), decide what is fetched.
    """

    pattern: str
    files: tuple[str, ...]
    size: int
    depth: int = 1
    streams: int = 1
    reads: int = 0
    seed: int = 1
    mmap: bool = False

    def __post_init__(self) -> None:
        if self.pattern not in PATTERNS:
            raise LabError(f"unknown pattern {self.pattern!r} (one of {', '.join(PATTERNS)})")
        if not self.files or self.size <= 0 or self.depth < 1 or self.streams < 1:
            raise LabError(f"bad reader {self}")
        if self.pattern == "random" and self.reads <= 0:
            raise LabError("a random reader needs reads > 0")


@dataclass(frozen=True)
class Scenario:
    """A named capture: NFS ``version`` (3 or 4 = 4.0), files, readers run concurrently."""

    name: str
    summary: str
    version: int
    files: tuple[ExportFile, ...]
    readers: tuple[Reader, ...]
    via: str = "libnfs"
    read_ahead_kb: int | None = None
    tags: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.version not in (3, 4):
            raise LabError(f"{self.name}: version must be 3 or 4")
        if self.via not in ("libnfs", "fuse"):
            raise LabError(f"{self.name}: via must be libnfs or fuse")
        if (self.via == "fuse") != (self.read_ahead_kb is not None):
            raise LabError(f"{self.name}: read_ahead_kb is set exactly for fuse scenarios")
        names = {f.name for f in self.files}
        for r in self.readers:
            missing = set(r.files) - names
            if missing:
                raise LabError(f"{self.name}: reader uses unknown files {sorted(missing)}")
            if self.via == "libnfs" and r.size > MiB:
                raise LabError(f"{self.name}: request size above ganesha's 1 MiB rsize")
            if self.via == "libnfs" and r.mmap:
                raise LabError(f"{self.name}: mmap readers need the FUSE bridge")

    @property
    def deterministic(self) -> bool:
        """True when the wire READs are exactly the planned ones (no kernel in the path)."""
        return self.via == "libnfs"


def _xorshift(state: int) -> int:
    x = state
    x ^= (x << 13) & _MASK
    x ^= x >> 7
    x ^= (x << 17) & _MASK
    return x


def plan_reads(reader: Reader, sizes: dict[str, int]) -> list[tuple[str, int, int]]:
    """(file, offset, length) of every request ``reader`` issues, in issue order.

    A Python copy of ``plan()`` in clients/loadgen.c (kept independent on purpose: the lab checks
    the generator's log against it). The fuse reader uses it directly, with Python's seeded
    ``random`` for the random pattern.
    """
    size = reader.size
    out: list[tuple[str, int, int]] = []

    def add(name: str, rec: int) -> None:
        off = rec * size
        out.append((name, off, min(size, sizes[name] - off)))

    if reader.pattern == "seq":
        for name in reader.files:
            for rec in range(-(-sizes[name] // size)):
                add(name, rec)
    elif reader.pattern == "backward":
        for name in reader.files:
            for rec in reversed(range(-(-sizes[name] // size))):
                add(name, rec)
    elif reader.pattern == "stride":
        for name in reader.files:
            nrec = -(-sizes[name] // size)
            per = -(-nrec // reader.streams)
            for j in range(per):
                for s in range(reader.streams):
                    if s * per + j < nrec:
                        add(name, s * per + j)
    elif reader.pattern == "interleave":
        most = max(sizes[n] for n in reader.files)
        for rec in range(-(-most // size)):
            for name in reader.files:
                if rec * size < sizes[name]:
                    add(name, rec)
    else:  # random: the generator's xorshift64, seeded the same way
        st = (reader.seed * 2654435761 + 88172645463325252) & _MASK
        for _ in range(reader.reads):
            st = _xorshift(st)
            name = reader.files[st % len(reader.files)]
            nrec = sizes[name] // size
            st = _xorshift(st)
            add(name, st % (nrec or 1))
    if reader.reads and reader.pattern != "random":
        out = out[: reader.reads]
    return out


def plan_app_reads(reader: Reader, sizes: dict[str, int]) -> list[tuple[str, int, int]]:
    """Requests of the fuse reader: as :func:`plan_reads`, but random uses Python's PRNG."""
    if reader.pattern != "random":
        return plan_reads(reader, sizes)
    rng = _random.Random(reader.seed)
    out = []
    for _ in range(reader.reads):
        name = reader.files[rng.randrange(len(reader.files))]
        rec = rng.randrange(max(1, sizes[name] // reader.size))
        out.append((name, rec * reader.size, reader.size))
    return out


def _files(prefix: str, n: int, size: int) -> tuple[ExportFile, ...]:
    return tuple(ExportFile(f"{prefix}_{i}.bin", size) for i in range(n))


def _build() -> dict[str, Scenario]:
    s16 = _files("s16m", 1, 16 * MiB)
    s8 = _files("s8m", 1, 8 * MiB)
    f4 = _files("f4m", 4, 4 * MiB)
    f2 = _files("f2m", 16, 2 * MiB)
    tiny = _files("t1m", 2, 1 * MiB)
    names = lambda fs: tuple(f.name for f in fs)  # noqa: E731
    out: list[Scenario] = [
        Scenario("smoke-v3", "2 files of 1 MiB interleaved, 64 KiB READs, 4 in flight (test)",
                 3, tiny, (Reader("interleave", names(tiny), 64 * KiB, depth=4),), tags=("test",)),
        Scenario("smoke-v4", "1 MiB file read backward, 64 KiB READs, 2 in flight, NFSv4.0 (test)",
                 4, tiny[:1], (Reader("backward", names(tiny[:1]), 64 * KiB, depth=2),),
                 tags=("test",)),
        Scenario("fuse-smoke-v3", "1 MiB file read sequentially with 4 KiB read() through the FUSE "
                 "bridge, kernel readahead 128 KiB (test)", 3, tiny[:1],
                 (Reader("seq", names(tiny[:1]), 4 * KiB),), via="fuse", read_ahead_kb=128,
                 tags=("test",)),
        Scenario("seq-v3", "one 16 MiB file, sequential 64 KiB READs, one at a time", 3, s16,
                 (Reader("seq", names(s16), 64 * KiB),)),
        Scenario("seq-v4", "one 16 MiB file, sequential 64 KiB READs, one at a time, NFSv4.0", 4,
                 s16, (Reader("seq", names(s16), 64 * KiB),)),
        Scenario("seq1m-v3", "one 16 MiB file, sequential 1 MiB READs (what nfs-cat issues)", 3,
                 s16, (Reader("seq", names(s16), MiB),)),
        Scenario("seq4-v3", "4 concurrent sequential readers, one 4 MiB file each, 32 KiB READs, "
                 "2 in flight each", 3, f4[:4],
                 tuple(Reader("seq", (f.name,), 32 * KiB, depth=2) for f in f4[:4])),
        Scenario("seq16-v3", "16 concurrent sequential readers, one 2 MiB file each, 32 KiB READs",
                 3, f2, tuple(Reader("seq", (f.name,), 32 * KiB) for f in f2)),
        *(
            Scenario(f"stride{k}-v3", f"one 8 MiB file read as {k} interleaved sequential "
                     "sub-streams (Ellard & Seltzer's stride), 8 KiB READs, 2 in flight", 3, s8,
                     (Reader("stride", names(s8), 8 * KiB, depth=2, streams=k),))
            for k in (2, 4, 8)
        ),
        Scenario("random-v3", "2000 random 4 KiB READs over a 16 MiB file, 16 in flight", 3, s16,
                 (Reader("random", names(s16), 4 * KiB, depth=16, reads=2000, seed=7),)),
        Scenario("backward-v3", "one 8 MiB file read backward, 64 KiB READs, 2 in flight", 3, s8,
                 (Reader("backward", names(s8), 64 * KiB, depth=2),)),
        Scenario("interleave4-v3", "4 files of 4 MiB interleaved round-robin on one connection, "
                 "128 KiB READs, 8 in flight", 3, f4[:4],
                 (Reader("interleave", names(f4[:4]), 128 * KiB, depth=8),)),
        Scenario("demo-v3", "4 concurrent sequential readers (4 MiB files, 32 KiB READs) plus a "
                 "4-sub-stream stride reader (8 MiB file, 32 KiB READs), NFSv3/TCP", 3,
                 f4[:4] + s8,
                 tuple(Reader("seq", (f.name,), 32 * KiB) for f in f4[:4])
                 + (Reader("stride", names(s8), 32 * KiB, streams=4),), tags=("demo",)),
    ]
    for ra in (128, 1024):
        tag = "128k" if ra == 128 else "1m"
        out += [
            Scenario(f"fuse-seq-ra{tag}-v3", f"16 MiB file, sequential 4 KiB read() through the "
                     f"FUSE bridge, kernel read_ahead_kb={ra}", 3, s16,
                     (Reader("seq", names(s16), 4 * KiB),), via="fuse", read_ahead_kb=ra),
            Scenario(f"fuse-stride-ra{tag}-v3", f"8 MiB file, 4 interleaved sub-streams of 8 KiB "
                     f"read() through the FUSE bridge, kernel read_ahead_kb={ra}", 3, s8,
                     (Reader("stride", names(s8), 8 * KiB, streams=4),), via="fuse",
                     read_ahead_kb=ra),
            Scenario(f"fuse-random-ra{tag}-v3", f"500 random 4 KiB read() over a 16 MiB file "
                     f"through the FUSE bridge, kernel read_ahead_kb={ra}", 3, s16,
                     (Reader("random", names(s16), 4 * KiB, reads=500, seed=11),), via="fuse",
                     read_ahead_kb=ra),
        ]
    out += [
        Scenario("fuse-mmap-random-ra128k-v3", "300 random 4 KiB reads through a shared mmap of a "
                 "16 MiB file on the FUSE bridge: page faults and the kernel's read-around decide "
                 "the READs (read_ahead_kb=128)", 3, s16,
                 (Reader("random", names(s16), 4 * KiB, reads=300, seed=5, mmap=True),),
                 via="fuse", read_ahead_kb=128),
        Scenario("fuse-seq2-ra128k-v3", "2 concurrent sequential 4 KiB read() streams on two 4 MiB "
                 "files through one FUSE bridge (one NFS connection), read_ahead_kb=128", 3,
                 f4[:2], tuple(Reader("seq", (f.name,), 4 * KiB) for f in f4[:2]), via="fuse",
                 read_ahead_kb=128),
    ]
    out.append(Scenario("fuse-seq-ra128k-v4", "16 MiB file, sequential 4 KiB read() through the "
                        "FUSE bridge over NFSv4.0, kernel read_ahead_kb=128", 4, s16,
                        (Reader("seq", names(s16), 4 * KiB),), via="fuse", read_ahead_kb=128))
    table = {s.name: s for s in out}
    if len(table) != len(out):
        raise LabError("duplicate scenario names")
    return table


SCENARIOS: dict[str, Scenario] = _build()


def get(name: str) -> Scenario:
    """The scenario called ``name`` (a LabError naming the known ones otherwise)."""
    try:
        return SCENARIOS[name]
    except KeyError:
        raise LabError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
