"""Synthetic request tables, seeded and reproducible.

* :func:`paper` — Ellard & Seltzer's benchmark (§4): N concurrent readers, each reading its
  own ``total/N`` MB file from start to end in ``request_kb`` READs, interleaved as concurrent
  clients issue them, then reordered by a client-side nfsiod queue model.
* :func:`stride` — one reader visiting S sequential sub-streams of one file in turn
  (blocks 0, x, 1, x+1, ... for S = 2, with x = n/2).
* :func:`random_reads` — uniformly random block READs over several files.
* :func:`mix` — several of the above interleaved in time.

The reorder model (docs/formats.md §Synthetic workloads): walking a reader's sequence of
READs, each READ is, with probability ``p``, held back in an nfsiod queue while the next ``k``
READs (``k`` uniform in 1..``max_displacement``) overtake it. Each such event makes exactly one
READ arrive after a READ of a later part of its file — one *out-of-order* READ (see
``streams.trace_stats``). Events consume ``k + 1`` READs, so the expected out-of-order
fraction is ``f = p / (1 + p·E[k])``; ``p`` is solved from the requested ``reorder`` = f.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa
from numba import njit

from .errors import SeqheurError
from .schema import build_request_table, concat_request_tables, fh_columns

MiB = 1 << 20
KiB = 1 << 10
# Start of synthetic time: 2003-01-01T00:00:00Z, the paper's era; purely cosmetic.
EPOCH_NS = 1_041_379_200 * 1_000_000_000
# Mean gap between READs arriving at the server (8 KiB at ~40 MB/s, a paper-era server).
DEFAULT_GAP_NS = 200_000
FH_CHUNK_ROWS = 1 << 22  # rows per chunk of the fh column (4 Mi handles: ~160 MB)


@dataclass(frozen=True)
class ReorderModel:
    """Client-side reordering: each READ held back past 1..max_displacement successors with
    probability ``hold_probability``."""

    fraction: float = 0.0
    max_displacement: int = 3

    @property
    def hold_probability(self) -> float:
        f = self.fraction
        if f <= 0:
            return 0.0
        mean_k = (self.max_displacement + 1) / 2.0
        if f * (1 + mean_k) >= 1:
            raise SeqheurError(f"reorder fraction {f} is not reachable with max displacement "
                               f"{self.max_displacement} (must be < {1 / (1 + mean_k):.3f})")
        return f / (1.0 - f * mean_k)


@njit(cache=True, nogil=True)
def _displace(n: int, p: float, max_disp: int, seed: int) -> np.ndarray:
    np.random.seed(seed)
    out = np.empty(n, np.int64)
    i = 0
    o = 0
    while i < n:
        if p > 0.0 and i + 1 < n and np.random.random() < p:
            k = np.random.randint(1, max_disp + 1)
            if k > n - 1 - i:
                k = n - 1 - i
            for j in range(1, k + 1):
                out[o] = i + j
                o += 1
            out[o] = i
            o += 1
            i += k + 1
        else:
            out[o] = i
            o += 1
            i += 1
    return out


def _check_positive(**values: float) -> None:
    for name, v in values.items():
        if not v > 0:
            raise SeqheurError(f"{name} must be positive, got {v}")


def _blocks(file_bytes: int, request_bytes: int) -> int:
    return -(-file_bytes // request_bytes)


def _table(kind: str, file_label: Sequence[str], file_of: np.ndarray, block: np.ndarray,
           request_bytes: int, file_bytes: np.ndarray, time_ns: np.ndarray,
           client_of_file: np.ndarray | None = None) -> pa.Table:
    """Assemble a request table from per-request file index and block number."""
    n = len(block)
    offset = block.astype(np.uint64) * np.uint64(request_bytes)
    fsize = file_bytes[file_of].astype(np.uint64)
    count = np.minimum(np.uint64(request_bytes), fsize - np.minimum(offset, fsize)).astype(np.uint32)
    eof = offset + count.astype(np.uint64) >= fsize
    fh_dict = pa.array([f"seqheur-synth:{kind}:{lab}".encode() for lab in file_label], pa.binary())
    # the handles in chunks: one binary array holds at most 2 GiB, ~50 M handles of 40 bytes
    fh = pa.chunked_array([
        pa.DictionaryArray.from_arrays(pa.array(file_of[i:i + FH_CHUNK_ROWS].astype(np.int32)),
                                       fh_dict).cast(pa.binary())
        for i in range(0, n, FH_CHUNK_ROWS)], pa.binary())
    file_id, fh_crc32 = (a.take(pa.array(file_of)) for a in fh_columns(fh_dict))
    clients = client_of_file[file_of] if client_of_file is not None else np.zeros(n, np.int64)
    client = pa.DictionaryArray.from_arrays(
        pa.array(clients.astype(np.int32)),
        pa.array([f"client{i}" for i in range(int(clients.max(initial=0)) + 1)]))
    return build_request_table({
        "time": time_ns,
        "reply_time": time_ns + 100_000,
        "client": client,
        "server": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["server0"])),
        "transport": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["udp"])),
        "xid": (np.arange(n, dtype=np.uint64) + 1).astype(np.uint32),
        "vers": np.full(n, 3, np.uint8),
        "op": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array(["read"])),
        "fh": fh,
        "file_id": file_id,
        "fh_crc32": fh_crc32,
        "offset": offset,
        "count": count,
        "ret_count": count,
        "eof": eof,
        "status": np.zeros(n, np.uint32),
        "file_size": fsize,
        "source_index": np.arange(1, n + 1, dtype=np.uint64),
    }, n)


def _interleave(n_per_reader: np.ndarray, rng: np.random.Generator, gap_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge readers' request sequences in time as concurrent clients would issue them.

    Each reader issues at the same rate; the k-th request of a reader is issued at
    (k + U) · R · gap with U uniform in [0, 1), so readers interleave irregularly but no
    reader runs ahead. Returns (reader of each request, its rank within the reader, time).
    """
    r_count = len(n_per_reader)
    reader = np.repeat(np.arange(r_count, dtype=np.int64), n_per_reader)
    starts = np.concatenate(([0], np.cumsum(n_per_reader)[:-1]))
    rank = np.arange(len(reader), dtype=np.int64) - starts[reader]
    t = (rank + rng.random(len(reader))) * (r_count * gap_ns)
    order = np.argsort(t, kind="stable")
    return reader[order], rank[order], EPOCH_NS + np.sort(t).astype(np.int64)


def paper(readers: int = 32, total_mb: float = 256, request_kb: float = 8, reorder: float = 0.0,
          seed: int = 0, max_displacement: int = 3, gap_ns: int = DEFAULT_GAP_NS) -> pa.Table:
    """The paper's benchmark: ``readers`` readers of their own ``total_mb/readers`` MB file."""
    _check_positive(readers=readers, total_mb=total_mb, request_kb=request_kb)
    if not 0 <= reorder < 1:
        raise SeqheurError(f"reorder must be in [0, 1), got {reorder}")
    model = ReorderModel(reorder, max_displacement)
    p = model.hold_probability
    request_bytes = int(request_kb * KiB)
    file_bytes = int(total_mb * MiB) // readers
    n_blocks = _blocks(file_bytes, request_bytes)
    rng = np.random.default_rng(seed)
    n_per = np.full(readers, n_blocks, np.int64)
    reader, rank, time_ns = _interleave(n_per, rng, gap_ns)
    perms = np.empty((readers, n_blocks), np.int64)
    for r in range(readers):
        perms[r] = _displace(n_blocks, p, max_displacement, int(rng.integers(0, 2**31 - 1)))
    block = perms[reader, rank]
    return _table("paper", [f"reader{r:03d}" for r in range(readers)], reader, block, request_bytes,
                  np.full(readers, file_bytes, np.int64), time_ns, np.arange(readers))


def stride_order(n_blocks: int, stride: int) -> np.ndarray:
    """Block visiting order of an S-stride reader: S contiguous parts read in turn."""
    parts = np.array_split(np.arange(n_blocks, dtype=np.int64), stride)
    pos = np.concatenate([np.arange(len(part), dtype=np.int64) for part in parts])
    sub = np.concatenate([np.full(len(part), s, np.int64) for s, part in enumerate(parts)])
    order = np.lexsort((sub, pos))
    return np.concatenate(parts)[order]


def stride(stride: int = 2, file_mb: float = 256, request_kb: float = 8, seed: int = 0,
           gap_ns: int = DEFAULT_GAP_NS) -> pa.Table:
    """One reader of one file visiting ``stride`` sequential sub-streams in turn (Table 1)."""
    _check_positive(stride=stride, file_mb=file_mb, request_kb=request_kb)
    request_bytes = int(request_kb * KiB)
    file_bytes = int(file_mb * MiB)
    block = stride_order(_blocks(file_bytes, request_bytes), stride)
    rng = np.random.default_rng(seed)
    time_ns = EPOCH_NS + np.cumsum(rng.exponential(gap_ns, len(block))).astype(np.int64)
    return _table(f"stride{stride}", ["file"], np.zeros(len(block), np.int64), block, request_bytes,
                  np.array([file_bytes]), time_ns)


def random_reads(files: int = 4, file_mb: float = 64, requests: int = 10_000,
                 request_kb: float = 8, seed: int = 0, gap_ns: int = DEFAULT_GAP_NS) -> pa.Table:
    """``requests`` READs of uniformly random aligned blocks of ``files`` files."""
    _check_positive(files=files, file_mb=file_mb, requests=requests, request_kb=request_kb)
    request_bytes = int(request_kb * KiB)
    file_bytes = int(file_mb * MiB)
    rng = np.random.default_rng(seed)
    file_of = rng.integers(0, files, requests)
    block = rng.integers(0, _blocks(file_bytes, request_bytes), requests)
    time_ns = EPOCH_NS + np.cumsum(rng.exponential(gap_ns, requests)).astype(np.int64)
    return _table("random", [f"file{i:03d}" for i in range(files)], file_of, block, request_bytes,
                  np.full(files, file_bytes, np.int64), time_ns, np.arange(files))


def mix(tables: Sequence[pa.Table], seed: int = 0) -> pa.Table:
    """Interleave request tables in time: each is stretched onto a common time span."""
    import pyarrow.compute as pc

    if not tables:
        raise SeqheurError("mix needs at least one table")
    rng = np.random.default_rng(seed)
    parts = []
    span = max(int(pc.max(t.column("time")).cast(pa.int64()).as_py()) -
               int(pc.min(t.column("time")).cast(pa.int64()).as_py()) for t in tables) or 1
    for i, t in enumerate(tables):
        tn = t.column("time").cast(pa.int64()).to_numpy()
        lo, hi = tn.min(), tn.max()
        scale = span / max(hi - lo, 1)
        shifted = EPOCH_NS + ((tn - lo) * scale).astype(np.int64) + rng.integers(0, 1000)
        t = _replace(t, "time", pa.array(shifted, pa.int64()).cast(pa.timestamp("ns", tz="UTC")))
        # clients of different parts are different machines
        client = pc.binary_join_element_wise(f"m{i}-", t.column("client").cast(pa.string()), "")
        t = _replace(t, "client", client.dictionary_encode())
        parts.append(t)
    merged = concat_request_tables(parts)
    order = pc.sort_indices(merged, sort_keys=[("time", "ascending")])
    merged = merged.take(order)
    n = merged.num_rows
    return _renumber(merged)


def paper_benchmark(readers: Sequence[int] = (1, 2, 4, 8, 16, 32), total_mb: float = 256,
                    request_kb: float = 8, reorder: float = 0.0, seed: int = 0,
                    max_displacement: int = 3, gap_ns: int = DEFAULT_GAP_NS,
                    pause_ns: int = 1_000_000_000) -> pa.Table:
    """The paper's whole benchmark loop (§4.3): for each n in ``readers``, n readers of their
    own fresh ``total_mb/n`` MB files, the iterations run back to back on one server.

    One trace, so that a replay carries the server's table (and cache) from one iteration to
    the next, as the paper's server did. An extra column ``iteration`` (the n of each READ)
    follows the request-table columns; files of different iterations are different files.
    """
    parts = []
    start = 0
    for n in readers:
        t = paper(n, total_mb, request_kb, reorder, seed + n, max_displacement, gap_ns)
        fh = pc_binary_prefix(t.column("fh"), f"n{n}:")
        t = _replace(t, "fh", fh)
        fid, crc = fh_columns(fh)
        t = _replace(_replace(t, "file_id", fid), "fh_crc32", crc)
        tn = t.column("time").cast(pa.int64()).to_numpy()
        tn = tn - tn.min() + start
        start = int(tn.max()) + pause_ns
        t = _replace(t, "time", pa.array(tn, pa.int64()).cast(pa.timestamp("ns", tz="UTC")))
        t = _replace(t, "reply_time", pa.array(tn + 100_000, pa.int64()).cast(pa.timestamp("ns", tz="UTC")))
        t = t.append_column("iteration", pa.array(np.full(t.num_rows, n, np.int32)))
        parts.append(t)
    return _renumber(pa.concat_tables(parts).unify_dictionaries())


def pc_binary_prefix(col, prefix: str):
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(pa.scalar(prefix.encode(), pa.binary()), col.cast(pa.binary()),
                                       pa.scalar(b"", pa.binary()))


def _renumber(t: pa.Table) -> pa.Table:
    """Line numbers and xids 1..n in the table's (time) order, as one capture would have."""
    n = t.num_rows
    t = _replace(t, "source_index", pa.array(np.arange(1, n + 1, dtype=np.uint64)))
    return _replace(t, "xid", pa.array((np.arange(n) + 1).astype(np.uint32)))


def _replace(t: pa.Table, name: str, col) -> pa.Table:
    i = t.schema.get_field_index(name)
    return t.set_column(i, t.schema.field(name).with_type(col.type), col)
