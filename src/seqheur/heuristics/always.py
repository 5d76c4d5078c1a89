"""``always``: the paper's "Always Read-ahead" line — every request gets the maximum seqcount
(Ellard & Seltzer 2003, Figure 7). No state."""

from __future__ import annotations

from dataclasses import dataclass

from numba import njit

from ..options import param
from .registry import detector


@dataclass(frozen=True)
class AlwaysParams:
    seqcount: int = param(127, tune=(1, 127, "log"), doc="the seqcount of every READ, 0..127")

    def __post_init__(self) -> None:
        if not 0 <= self.seqcount <= 127:
            raise ValueError("seqcount must be in 0..127")


@njit(cache=True, nogil=True, _nrt=False)
def reset(state, params, offset, count, time_ns):
    pass


@njit(cache=True, nogil=True, _nrt=False)
def update(state, params, offset, count, time_ns):
    return params[0]


@detector("always", params=AlwaysParams, state_words=0, builtin=True,
          max_seqcount=lambda p: p.seqcount,
          source="Ellard & Seltzer, FREENIX 2003, Figure 7 ('Always Read-ahead')")
class Always:
    """Always read ahead: seqcount 127 on every request, whatever the access pattern."""

    reset = reset
    update = update
