"""A toy detector, table model and read-ahead policy, each one module-level definition plus
one registration line: what a contributor writes to add a model (docs/architecture.md).
Loaded by tests/test_toy_models.py in-process and by the CLI with ``--plugin``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

import seqheur
from seqheur import readahead as R
from seqheur.options import param
from seqheur.tables import register_table


# -- a detector: seqcount = length of the current run of sequential READs ---------------------


@dataclass(frozen=True)
class RunParams:
    cap: int = param(64, doc="largest seqcount reported")


@njit(nogil=True, _nrt=False)
def run_reset(state, params, offset, count, time_ns):
    state[0] = 0  # run length
    state[1] = offset  # expected next offset


@njit(nogil=True, _nrt=False)
def run_update(state, params, offset, count, time_ns):
    state[0] = min(state[0] + 1, params[0]) if offset == state[1] else 0
    state[1] = offset + count
    return state[0]


seqheur.register_detector("toy-run", params=RunParams, state_words=2, reset=run_reset,
                          update=run_update, max_seqcount=lambda p: p.cap, replace=True)


# -- a table model: slot = file index modulo the size ------------------------------------------


@dataclass(frozen=True)
class ModuloParams:
    spec_positional = ("size",)
    size: int = param(4, doc="slots")


def modulo_state(p: ModuloParams, file_ids: np.ndarray) -> tuple:
    return (np.full(p.size, -1, np.int64),)


@njit(nogil=True, _nrt=False)
def modulo_lookup(tab, f):
    slots = tab[0]
    s = f % slots.shape[0]
    prev = slots[s]
    if prev == f:
        return s, 0, -1
    slots[s] = f
    return s, 1, prev


register_table("toy-modulo", params=ModuloParams, make_state=modulo_state,
               n_slots=lambda p, n: p.size, lookup=modulo_lookup, replace=True)


# -- a policy: the demand blocks, then ``ahead`` blocks once seqcount reaches ``min_seq`` ------


@dataclass(frozen=True)
class LookaheadParams:
    ahead: int = param(4, unit="blocks", doc="blocks read after the request")
    min_seq: int = param(2, doc="seqcount from which to read ahead")
    bsize: int = param(8192, unit="bytes", doc="block size")


@njit(nogil=True, _nrt=False)
def lookahead_serve(world, row, params, f, off, cnt, t, seq, fresh, stamp):
    pol = world.policy  # the fields every policy has (block size, its log2, reorder window)
    ahead = world.policy_params[0]  # this policy's own parameters, in LookaheadParams order
    min_seq = world.policy_params[1]
    eof = world.fsize[f]
    cnt = R.begin_request(f, off, cnt, fresh, pol, eof, world.fs, world.ctr, world.req)
    if cnt > 0:
        d_lo = off >> pol.bshift
        d_hi = (off + cnt - 1) >> pol.bshift
        world.ctr.demand_blocks += d_hi - d_lo + 1
        R.simple_request(world.cache, f, off, cnt, seq, stamp, pol, eof, world.fs, world.ctr,
                         world.lost, world.req, world.ops, world.acts)
        if seq >= min_seq:
            eof_blk = (eof + pol.bsize - 1) >> pol.bshift if eof >= 0 else -1
            R.read_range(world.cache, f, d_hi + 1, ahead, -1, stamp, d_lo, d_hi, eof_blk,
                         pol.bsize, eof, world.ctr, world.req, world.ops, False)
    R.end_request(f, off, cnt, world.fs, world.req)
    return seq


R.register_policy("toy-lookahead", params=LookaheadParams, serve=lookahead_serve,
                  ops_bound=lambda p: p.ahead + 2, replace=True)
