"""Comparing computed floats in tests: exact for everything else, a stated tolerance for floats.

Computed floats may differ in the last bits between CPUs, BLAS kernels (OPENBLAS_CORETYPE),
libm builds and dependency versions, and between two groupings of the same sum. Tests compare
them with these helpers and say why the tolerance they pass is the right one; integers,
strings, booleans, None and the structure (keys, lengths, column names and types) must match
exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

# Summaries of one replay computed two ways on one machine (chunked vs one shot, streamed vs
# kept, path vs table, out-of-core vs in memory). Their floats are sums over thousands of
# per-op disk times and ratios of integers: regrouping such a sum moves it by ~n·eps ≈ 1e-12
# relative, while one op's time changing moves it by > 1e-6. 1e-9 sits between.
SUMMARY_REL = 1e-9


def tree_mismatches(a: Any, b: Any, *, rel: float, abs: float = 0.0, path: str = "") -> list[str]:
    """Where two JSON-like trees (dicts, lists, tuples, scalars) differ: floats by
    ``math.isclose(rel_tol=rel, abs_tol=abs)`` (NaN matches NaN), everything else exactly."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return [f"{path}: keys differ: {sorted(set(a) ^ set(b))}"]
        out: list[str] = []
        for k in a:
            out += tree_mismatches(a[k], b[k], rel=rel, abs=abs, path=f"{path}/{k}")
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += tree_mismatches(x, y, rel=rel, abs=abs, path=f"{path}[{i}]")
        return out
    floats = (float, np.floating)
    if isinstance(a, floats) or isinstance(b, floats):
        if isinstance(a, bool) or isinstance(b, bool) or not (
                isinstance(a, (int, float, np.number)) and isinstance(b, (int, float, np.number))):
            return [f"{path}: {a!r} != {b!r}"]
        if math.isnan(a) or math.isnan(b):
            return [] if math.isnan(a) and math.isnan(b) else [f"{path}: {a!r} != {b!r}"]
        if math.isclose(a, b, rel_tol=rel, abs_tol=abs):
            return []
        return [f"{path}: {a!r} != {b!r} (rel {rel:g}, abs {abs:g})"]
    if isinstance(a, bool) != isinstance(b, bool) or a != b:
        return [f"{path}: {a!r} != {b!r}"]
    return []


def assert_tree_close(a: Any, b: Any, *, rel: float, abs: float = 0.0) -> None:
    bad = tree_mismatches(a, b, rel=rel, abs=abs)
    assert not bad, "\n".join(bad[:30]) + f"\n({len(bad)} mismatches)"


def assert_frames_close(a, b, *, rel: float, abs: float = 0.0) -> None:
    """Two polars DataFrames: same columns, dtypes and heights; float columns within
    ``rel``/``abs`` (NaN and null positions equal), every other column exactly equal."""
    assert a.columns == b.columns, (a.columns, b.columns)
    assert a.dtypes == b.dtypes, (a.dtypes, b.dtypes)
    assert a.height == b.height, (a.height, b.height)
    for name, dtype in zip(a.columns, a.dtypes):
        x, y = a[name], b[name]
        if dtype.is_float():
            assert x.is_null().equals(y.is_null()), name
            np.testing.assert_allclose(x.to_numpy(), y.to_numpy(), rtol=rel, atol=abs,
                                       equal_nan=True, err_msg=name)
        else:
            assert x.equals(y), name
