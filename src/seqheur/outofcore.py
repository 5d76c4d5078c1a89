"""Out-of-core replay: a dataset larger than memory, replayed in time-ordered chunks.

Two passes over the dataset (``ingest.dataset.scan_dataset``), each holding one group of
overlapping parts at a time: the first learns every file's dense number (first appearance)
and its observed size (largest offset + count), which the replayer needs up front to size its
per-file state and lay files out on disk; the second feeds ReadStream chunks to one
:class:`seqheur.replay.Replayer`, which carries table, detector, cache and disk state from
chunk to chunk. The result equals the in-memory ``replay`` of the whole trace.
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Sequence

import numpy as np

from .streams import ReadStream, reads


def _numbering(tables) -> tuple[np.ndarray, np.ndarray]:
    index: dict[int, int] = {}
    sizes: list[int] = []
    for table in tables:
        s = reads(table)
        if len(s) == 0:
            continue
        local = np.zeros(len(s.file_ids), np.int64)
        np.maximum.at(local, s.file.astype(np.int64), s.offset + s.count.astype(np.int64))
        for j, fid in enumerate(s.file_ids.tolist()):
            k = index.get(fid)
            if k is None:
                index[fid] = len(sizes)
                sizes.append(int(local[j]))
            else:
                sizes[k] = max(sizes[k], int(local[j]))
    ids = np.fromiter(index.keys(), np.uint64, len(index))
    return ids, np.asarray(sizes, np.int64)


def dataset_chunks(path: str | os.PathLike[str], chunk_rows: int = 1 << 22
                   ) -> tuple[np.ndarray, np.ndarray, Iterator[ReadStream]]:
    """(file_ids, file_sizes, chunks) of a dataset: chunks share the whole trace's numbering."""
    from .ingest.dataset import scan_dataset
    from .streams import scan_reads

    file_ids, sizes = _numbering(scan_dataset(path))

    def chunks() -> Iterator[ReadStream]:
        for c in scan_reads(scan_dataset(path), chunk_rows=chunk_rows):
            # every chunk carries the full numbering, known from the first pass
            yield ReadStream(c.time_ns, c.file, c.offset, c.count, file_ids, c.is_write,
                             c.source_index)

    return file_ids, sizes, chunks()


def replay_dataset(path: str | os.PathLike[str], chunk_rows: int = 1 << 22, **kw: Any):
    """Replay a dataset chunk by chunk (keyword arguments as :func:`seqheur.replay.replay`)."""
    from .replay import replay_chunks

    file_ids, sizes, chunks = dataset_chunks(path, chunk_rows)
    return replay_chunks(chunks, file_sizes=sizes, **kw)
