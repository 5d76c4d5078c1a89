"""``disk-only``: the disk's busy time is the only time (the replay's figure without a timing
model). It adds nothing to the summary: ``disk_seconds`` and ``throughput_mbps`` (demand bytes
/ disk busy time) are what the replay computes anyway, so ``timing="disk-only"`` and
``timing=None`` give the same summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NAME = "disk-only"
DOC = ("the disk's busy time only (disk_seconds, throughput_mbps): reads back to back in "
       "issue order, no client, network or server")
SOURCE = "seqheur.disk.model (docs/replay.md, step 6)"
PRESETS: dict[str, dict[str, Any]] = {}


@dataclass(frozen=True)
class Params:
    """disk-only takes no options."""


def run(params: Params, inputs: Any) -> None:
    """Nothing to simulate: the replay's own disk accounting is the result."""
    return None
