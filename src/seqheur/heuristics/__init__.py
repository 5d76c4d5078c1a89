"""Sequentiality detectors (one module each) and their registry.

See :mod:`seqheur.heuristics.registry` for the detector contract and the plug-in API, and
``docs/heuristics.md`` for every built-in with its source.
"""

from __future__ import annotations

from .registry import (
    DetectorInfo,
    DetectorSpec,
    detector,
    get_detector,
    parse_detector,
    register_detector,
    registered_detectors,
    unregister_detector,
)

__all__ = ["DetectorInfo", "DetectorSpec", "detector", "get_detector", "parse_detector",
           "register_detector", "registered_detectors", "unregister_detector"]
