"""``freebsd``: FreeBSD's NFS server since r228185 (2011), ``nfsrv_sequential_heuristic``
(docs/heuristics.md).

Source: freebsd/freebsd-src ``sys/fs/nfsserver/nfs_nfsdport.c`` @ 003cac51; commit r228185
(git 574862c8ba, John Baldwin, 2011-12-01).

State per slot: ``[seqcount, nextoff]``; reset as ``freebsd4`` (4 at offset 0 else 1,
``nextoff := off``). With ``resid = roundup4(count)`` (NFSM_RNDUP):

* ``(off == 0 and seqcount > 0) or off == nextoff`` → ``+ ceil(resid / 16384)`` (cap 127);
* elif ``|off - nextoff| <= 16 * max(iosize, resid)`` → unchanged ("probably a reordered RPC");
* elif ``seqcount > 1`` → ``seqcount // 2``; else 0.
Then ``nextoff := off + count`` (end of the transferred data).

``iosize`` is the mount's ``f_iosize``: the UFS block size (default 32 KiB today, unverified;
16 KiB in the 4.x era) or the ZFS recordsize (128 KiB). Zero-length reads do not invoke the
kernel heuristic; here they leave the state unchanged (the table lookup still happens).
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from ..options import param
from .registry import detector

SEQ = 0
NEXTOFF = 1


@dataclass(frozen=True)
class FreebsdParams:
    iosize: int = param(32768, unit="bytes",
                        doc="f_iosize of the exported file system: UFS block size")
    reorder: int = param(16, unit="RPCs", tune=(1, 64, "log"),
                         doc="MAX_REORDERED_RPC: a READ within reorder x "
                         "max(iosize, count) of the expected offset keeps its seqcount")
    unit: int = param(16384, unit="bytes",
                      doc="ramp unit, a BKVASIZE-era constant in sequential_heuristic")
    seqmax: int = param(127, tune=(1, 127, "log"), doc="seqcount cap, IO_SEQMAX; 1..127")

    def __post_init__(self) -> None:
        if self.iosize < 1 or self.reorder < 0 or self.unit < 1:
            raise ValueError("iosize and unit must be >= 1, reorder >= 0")
        if not 1 <= self.seqmax <= 127:
            raise ValueError("seqmax must be in 1..127")


@njit(cache=True, nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    state[NEXTOFF] = offset
    state[SEQ] = 4 if offset == 0 else 1


@njit(cache=True, nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    seq = state[SEQ]
    if count <= 0:
        return seq
    resid = (count + 3) & ~3
    nextoff = state[NEXTOFF]
    # selects instead of branches (reordered READs make branches unpredictable)
    inc = seq + (resid + params[2] - 1) // params[2]
    inc = inc if inc < params[3] else params[3]
    d = offset - nextoff
    d = d if d >= 0 else -d
    io = params[0] if params[0] > resid else resid
    other = seq if d <= params[1] * io else (seq >> 1 if seq > 1 else 0)  # seq >= 0: == // 2
    sequential = ((offset == 0) & (seq > 0)) | (offset == nextoff)
    seq = inc if sequential else other
    state[SEQ] = seq
    state[NEXTOFF] = offset + count
    return seq


@detector("freebsd", params=FreebsdParams, state_words=2, builtin=True,
          max_seqcount=lambda p: p.seqmax, policy="freebsd-cluster",
          source="freebsd/freebsd-src sys/fs/nfsserver/nfs_nfsdport.c @ 003cac51 (r228185)")
class Freebsd:
    """FreeBSD NFS server today: +ceil(resid/16K) on sequential, unchanged within
    16*max(iosize, resid) of the expected offset, halved otherwise."""

    reset = reset
    update = update
