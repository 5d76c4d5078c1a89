"""Plain-Python transcriptions of the nfsheur lookup, the freebsd4 seqcount rule and
SlowDown (docs/heuristics.md), written independently of the numba kernels, line by line from the
spec's pseudo-code. Used as the oracle in tests and as the pure-Python peer in the benchmark.
Slow by design; do not use for real traces.
"""

from __future__ import annotations

from typing import Sequence


class Entry:
    __slots__ = ("vp", "nextoff", "use", "seqcount")

    def __init__(self) -> None:
        self.vp = None
        self.nextoff = 0
        self.use = 0
        self.seqcount = 0


class NfsheurRef:
    """The kernel-global nfsheur table with its lookup (FreeBSD 4.x nfs_serv.c)."""

    def __init__(self, n: int, tries: int) -> None:
        self.n = n
        self.tries = tries
        self.slots = [Entry() for _ in range(n)]

    def lookup(self, vp: int, h0: int, off: int) -> tuple[Entry, bool]:
        slot = self.slots
        i = h0 % self.n
        best = i
        for _ in range(self.tries):
            if slot[i].vp == vp:
                best = i
                break
            if slot[i].use > 0:
                slot[i].use -= 1
            i = (i + 1) % self.n
            if slot[i].use < slot[best].use:
                best = i
        e = slot[best]
        fresh = e.vp != vp
        if fresh:
            e.vp = vp
            e.nextoff = off
            e.use = 64
            e.seqcount = 4 if off == 0 else 1
        return e, fresh


def freebsd4_ref(files: Sequence[int], h0: Sequence[int], offsets: Sequence[int],
                 counts: Sequence[int], n: int = 64, tries: int = 4,
                 slowdown_window: int | None = None) -> tuple[list[int], list[bool]]:
    """(seqcounts, fresh flags) of freebsd4 (or SlowDown when ``slowdown_window`` is set)."""
    table = NfsheurRef(n, tries)
    out: list[int] = []
    fresh_out: list[bool] = []
    for f, h, off, cnt in zip(files, h0, offsets, counts):
        e, fresh = table.lookup(f, h, off)
        if (off == 0 and e.seqcount > 0) or off == e.nextoff:
            e.seqcount = min(e.seqcount + 1, 127)
        elif slowdown_window is not None:
            if abs(off - e.nextoff) > slowdown_window:
                e.seqcount = e.seqcount // 2
        elif e.seqcount > 1:
            e.seqcount = 1
        else:
            e.seqcount = 0
        e.use = min(e.use + 16, 2048)
        if slowdown_window is not None or cnt > 0:
            e.nextoff = off + cnt
        out.append(e.seqcount)
        fresh_out.append(fresh)
    return out, fresh_out
