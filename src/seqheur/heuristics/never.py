"""``never``: no read-ahead — every request gets seqcount 0. No state."""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from .registry import detector


@dataclass(frozen=True)
class NeverParams:
    pass


@njit(cache=True, nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    pass


@njit(cache=True, nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    return 0


@detector("never", params=NeverParams, state_words=0, builtin=True, max_seqcount=0,
          source="baseline: read-ahead disabled")
class Never:
    """Never read ahead: seqcount 0 on every request."""

    reset = reset
    update = update
