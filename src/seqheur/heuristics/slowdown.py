"""``slowdown``: Ellard & Seltzer's SlowDown (FREENIX 2003 §6.2;
docs/heuristics.md).

No code was published; this is the paper's text with seqheur's documented choices.
State per slot: ``[seqcount, nextoff]``, same table, same initialisation as ``freebsd4``
(``seqcount := 4`` at offset 0 else 1, ``nextoff := off``).

update:
* ``(off == 0 and seqcount > 0) or off == nextoff`` → ``+1`` (cap 127) ("as before");
* else ``|off - nextoff| <= window`` (inclusive; default 64 KiB, "eight 8k NFS blocks") →
  unchanged (probably a reordered request);
* else ``seqcount := seqcount // 2`` (1 → 0).
Then ``nextoff := off + count`` (always, as the spec's pseudo-code).
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from ..options import param
from .registry import detector

SEQ = 0
NEXTOFF = 1


@dataclass(frozen=True)
class SlowdownParams:
    window: int = param(65536, unit="bytes", tune=(4096, 1 << 20),
                        doc="a READ within this distance of the expected "
                        "offset keeps its seqcount; paper §6.2: eight 8 KiB NFS blocks")
    seqmax: int = param(127, tune=(1, 127, "log"), doc="seqcount cap, IO_SEQMAX; 1..127")

    def __post_init__(self) -> None:
        if self.window < 0:
            raise ValueError("window must be >= 0")
        if not 1 <= self.seqmax <= 127:
            raise ValueError("seqmax must be in 1..127")


@njit(cache=True, nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    state[NEXTOFF] = offset
    state[SEQ] = 4 if offset == 0 else 1


@njit(cache=True, nogil=True, _nrt=False)
def step(seq, nextoff, offset, window, seqmax):
    """The SlowDown rule on (seqcount, nextoff); returns the new seqcount (cursor reuses it).
    Selects instead of branches (reordering makes branches unpredictable)."""
    inc = seq + 1
    inc = inc if inc < seqmax else seqmax
    d = offset - nextoff
    d = d if d >= 0 else -d
    other = seq if d <= window else seq >> 1  # seq >= 0: the same as // 2, without the
    # floor-division sign fix-up code
    sequential = ((offset == 0) & (seq > 0)) | (offset == nextoff)
    return inc if sequential else other


@njit(cache=True, nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    seq = step(state[SEQ], state[NEXTOFF], offset, params[0], params[1])
    state[SEQ] = seq
    state[NEXTOFF] = offset + count
    return seq


@detector("slowdown", params=SlowdownParams, state_words=2, builtin=True,
          max_seqcount=lambda p: p.seqmax,
          source="Ellard & Seltzer, FREENIX 2003, §6.2 (no published code)")
class Slowdown:
    """Ellard & Seltzer SlowDown: +1 on sequential, unchanged within a window (64 KiB) of the
    expected offset, halved otherwise."""

    reset = reset
    update = update
