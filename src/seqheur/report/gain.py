"""How much of what read-ahead could gain each heuristic takes: the references beside it.

For a trace, a cache and a disk profile, three references bracket every heuristic
(docs/bound.md):

* **no read-ahead**: the demand blocks alone (policy ``none`` at the block size), the floor
  of usefulness;
* **oracle**: the clairvoyant read-ahead of :func:`seqheur.bound`, an achievable schedule
  replayed through the same cache and disk models, the best any heuristic could do;
* **lower bound**: disk time no schedule can beat (:func:`seqheur.bound`).

Each depends on the cache block size, so the references are computed once per block size
among the heuristics' rows (16 KiB for the FreeBSD cluster policies, 4 KiB for the Linux
detectors) and a row is compared with those of its own block size. A heuristic's
``achievable_gain_fraction`` is ``(its throughput - no read-ahead) / (oracle - no
read-ahead)``: 0 gains nothing, 1 gains all the oracle does; undefined (null) where the oracle
gains nothing or is not available.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from ..metrics import REFERENCE_METRICS

#: Columns this module adds to every heuristic's row (their units and meanings:
#: :data:`seqheur.metrics.REFERENCE_METRICS`).
GAIN_COLUMNS = tuple(m.name for m in REFERENCE_METRICS)
#: Reference rows' names (the ``detector`` column; ``kind`` is "reference").
NO_READAHEAD, ORACLE, LOWER_BOUND = "no read-ahead", "oracle", "lower bound"


def gain_fraction(throughput: Any, never: Any, oracle: Any) -> float:
    """``(throughput - never) / (oracle - never)``; NaN when undefined (no oracle, or an
    oracle that gains nothing over no read-ahead)."""
    vals = (throughput, never, oracle)
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in vals):
        return math.nan
    span = oracle - never
    if not span > 0:
        return math.nan
    return (throughput - never) / span


def references(stream: Any, rows: Sequence[dict[str, Any]], *, cache: Any, profile: Any,
               file_sizes: Any = "auto") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(heuristic rows with :data:`GAIN_COLUMNS` added, reference rows) for summary ``rows``
    replayed on ``stream`` with ``cache``, ``profile`` (a profile is required: the
    references are disk times) and ``file_sizes`` (as for :func:`seqheur.replay`)."""
    from ..bound import bound
    from ..replay import replay

    out_rows = [dict(r) for r in rows]
    refs: list[dict[str, Any]] = []
    by_block: dict[int, dict[str, Any]] = {}
    for bs in sorted({int(r["block_size"]) for r in rows}):
        b = bound(stream, cache=cache, profile=profile, block_size=bs, file_sizes=file_sizes,
                  references=False)  # the oracle and the bound, not Cao et al.'s schedules
        never = replay(stream, "never", "ideal", f"none:bsize={bs}", cache, profile,
                       file_sizes=file_sizes, per_request=False).to_dict()
        demand = never["demand_bytes"]
        lb = b.get("lower_bound_disk_seconds")
        ref = {"lower_bound_disk_seconds": lb,
               "oracle_disk_seconds": b.get("oracle_disk_seconds"),
               "oracle_throughput_mbps": b.get("oracle_throughput_mbps"),
               "no_readahead_throughput_mbps": never["throughput_mbps"]}
        by_block[bs] = ref
        label = f"{bs // 1024} KiB blocks" if bs % 1024 == 0 else f"{bs} B blocks"
        def ref_row(name: str, mbps: Any, seconds: Any, misses: Any) -> dict[str, Any]:
            return {"kind": "reference", "detector": name, "table": label, "block_size": bs,
                    "cache_bytes": never["cache_bytes"], "demand_bytes": demand,
                    "throughput_mbps": mbps, "disk_seconds": seconds, "misses": misses}

        refs.append(ref_row(NO_READAHEAD, never["throughput_mbps"], never["disk_seconds"],
                            never["misses"]))
        if b.get("oracle_disk_seconds") is not None:
            refs.append(ref_row(ORACLE, b["oracle_throughput_mbps"], b["oracle_disk_seconds"],
                                b.get("oracle_misses")))
        refs.append(ref_row(LOWER_BOUND, demand / 1e6 / lb if lb else math.nan, lb,
                            b["belady_misses"]))
    for r in out_rows:
        ref = by_block[int(r["block_size"])]
        r.update(ref)
        r["achievable_gain_fraction"] = gain_fraction(r.get("throughput_mbps"),
                                                      ref["no_readahead_throughput_mbps"],
                                                      ref["oracle_throughput_mbps"])
    return out_rows, refs
