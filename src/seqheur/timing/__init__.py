"""Timing models: from what a replay did to the time the clients see (docs/timing.md).

``seqheur.replay(..., timing="closed-loop:preset=paper-testbed")`` runs the registered model
(:mod:`seqheur.timing.registry`) at the end of the replay and adds its columns to the summary
(:data:`seqheur.metrics.TIMING_METRICS`); ``timing=None`` or ``"disk-only"`` leaves the summary
as it was. Built-ins: ``disk-only`` (:mod:`.disk_only`), ``closed-loop`` (:mod:`.closed_loop`).
"""

from __future__ import annotations

from .registry import (TIMINGS, TimingSpec, parse_timing, register_timing,  # noqa: F401
                       registered_timings)
