"""``cursor``: Ellard & Seltzer's cursors (FREENIX 2003 §7; docs/heuristics.md).

Each table slot holds up to ``cursors`` cursors {nextoff, seqcount, last_use}; a request is
matched to the cursor whose ``|off - nextoff| <= window`` (SlowDown's approximate match),
preferring an exact match (``off == nextoff``), then the smallest distance, then the most
recently used (*choice*). Unmatched: a free cursor, else the least recently used one
is recycled and initialised like a new table entry (seqcount 4 at offset 0 else 1,
``nextoff := off``). The SlowDown update is applied to the chosen cursor, whose seqcount is
the result.

State per slot: ``[tick, last, (nextoff, seqcount, last_use) * cursors]``; ``last_use == 0``
marks a free cursor, ``tick`` counts the slot's requests (recency without a global clock),
``last`` is the most recently used cursor: if the READ continues it exactly, the full rule
would pick it too (an exact match, and the most recent among exact matches), so the scan is
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit, uint64

from ..options import param
from .registry import detector
from .slowdown import step

TICK = 0
LAST = 1
BASE = 2
C_NEXT = 0
C_SEQ = 1
C_USE = 2
C_WORDS = 3


@dataclass(frozen=True)
class CursorParams:
    cursors: int = param(4, tune=(1, 64, "log"), doc="cursors per file, 1..4096; paper §7: "
                         "a small and constant number, seqheur's choice")
    window: int = param(65536, unit="bytes", tune=(4096, 1 << 20), doc="SlowDown's match window")
    seqmax: int = param(127, tune=(1, 127, "log"), doc="seqcount cap, IO_SEQMAX; 1..127")

    def __post_init__(self) -> None:
        if not 1 <= self.cursors <= 4096:
            raise ValueError("cursors must be in 1..4096")
        if self.window < 0:
            raise ValueError("window must be >= 0")
        if not 1 <= self.seqmax <= 127:
            raise ValueError("seqmax must be in 1..127")


@njit(cache=True, nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    for k in range(state.shape[0]):
        state[k] = 0


@njit(cache=True, nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    ncur = params[0]
    window = params[1]
    tick = state[TICK] + 1
    state[TICK] = tick
    b = uint64(BASE + state[LAST] * C_WORDS)  # unsigned: no negative-index wraparound code
    if state[b + C_USE] != 0 and state[b + C_NEXT] == offset:
        best = state[LAST]  # exact continuation of the most recent cursor
    else:
        best = -1
        best_d = 0
        best_use = 0
        free = -1
        lru = -1
        lru_use = 0
        for c in range(ncur):
            b = uint64(BASE + c * C_WORDS)
            use = state[b + C_USE]
            if use == 0:
                if free < 0:
                    free = c
                continue
            if lru < 0 or use < lru_use:
                lru = c
                lru_use = use
            d = offset - state[b + C_NEXT]
            d = d if d >= 0 else -d
            if d <= window:
                # exact match first (d == 0), then smallest distance, then most recently used
                if best < 0 or d < best_d or (d == best_d and use > best_use):
                    best = c
                    best_d = d
                    best_use = use
        if best < 0:
            best = free if free >= 0 else lru
            b = uint64(BASE + best * C_WORDS)
            state[b + C_NEXT] = offset
            state[b + C_SEQ] = 4 if offset == 0 else 1
    b = uint64(BASE + best * C_WORDS)
    seq = step(state[b + C_SEQ], state[b + C_NEXT], offset, window, params[2])
    state[b + C_SEQ] = seq
    state[b + C_NEXT] = offset + count
    state[b + C_USE] = tick
    state[LAST] = best
    return seq


@detector("cursor", params=CursorParams, state_words=lambda p: BASE + C_WORDS * p.cursors,
          builtin=True, max_seqcount=lambda p: p.seqmax,
          source="Ellard & Seltzer, FREENIX 2003, §7 (no published code)")
class Cursor:
    """Ellard & Seltzer cursors: several SlowDown cursors per file, matched by the SlowDown
    window, least recently used recycled."""

    reset = reset
    update = update
