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
from typing import Any, Iterator

import numpy as np

from .streams import STREAM_COLUMNS, ReadStream, scan_reads


def _numbering(tables) -> tuple[np.ndarray, np.ndarray]:
    """(file_ids by first appearance, observed size per file) over all of ``tables``."""
    file_ids = np.zeros(0, np.uint64)
    sizes = np.zeros(0, np.int64)
    for chunk in scan_reads(tables):
        file_ids = chunk.file_ids
        sizes = np.pad(sizes, (0, len(file_ids) - len(sizes)))
        np.maximum.at(sizes, chunk.file.astype(np.int64), chunk.offset + chunk.count.astype(np.int64))
        del chunk  # not alive while the next part is read
    return file_ids, sizes


def dataset_chunks(path: str | os.PathLike[str], chunk_rows: int = 1 << 22
                   ) -> tuple[np.ndarray, np.ndarray, Iterator[ReadStream]]:
    """(file_ids, file_sizes, chunks) of a dataset: chunks share the whole trace's numbering."""
    from .ingest.dataset import scan_dataset

    def parts():  # the READ rows and stream columns only: memory follows the READs
        return scan_dataset(path, columns=STREAM_COLUMNS, ops=("read",))

    file_ids, sizes = _numbering(parts())
    return file_ids, sizes, scan_reads(parts(), chunk_rows=chunk_rows, file_ids=file_ids)


def attribute_sizes(path: str | os.PathLike[str], file_ids: np.ndarray,
                    observed: np.ndarray) -> tuple[np.ndarray, str]:
    """File sizes from the dataset's reply attributes (a third pass reading two columns of
    every row), at least what is read; observed where a file has none. Returns (sizes, where
    they came from), as :func:`seqheur.replay.file_sizes_for` does for one trace."""
    from .ingest.dataset import scan_dataset
    from .streams import attribute_file_sizes

    attrs = np.full(len(file_ids), -1, np.int64)
    for table in scan_dataset(path, columns=["time", "file_id", "file_size"]):
        attrs = np.maximum(attrs, attribute_file_sizes(table, file_ids))
    known = attrs >= 0
    if not known.any():
        return observed, "observed"
    sizes = np.where(known, np.maximum(attrs, observed), observed)
    return sizes, "attributes" if known.all() else "attributes+observed"


def replay_dataset(path: str | os.PathLike[str], chunk_rows: int = 1 << 22, **kw: Any):
    """Replay a dataset chunk by chunk (keyword arguments as :func:`seqheur.replay.replay`;
    file sizes from the reply attributes where the dataset has them)."""
    from .replay import replay_chunks

    file_ids, observed, chunks = dataset_chunks(path, chunk_rows)
    sizes, source = attribute_sizes(path, file_ids, observed)
    return replay_chunks(chunks, file_sizes=sizes, size_source=source, **kw)
