"""The float-comparison helpers the other tests rely on catch what they must."""

from __future__ import annotations

import math

import polars as pl
import pytest
from floatcmp import assert_frames_close, assert_tree_close, tree_mismatches


def test_tree_floats_within_tolerance_match_and_others_must_be_exact():
    a = {"x": 1.0, "n": 3, "s": "a", "l": [0.5, None, math.nan], "b": True}
    near = {"x": 1.0 + 1e-12, "n": 3, "s": "a", "l": [0.5, None, math.nan], "b": True}
    assert_tree_close(a, near, rel=1e-9)
    assert tree_mismatches(a, {**a, "x": 1.001}, rel=1e-9) == [
        "/x: 1.0 != 1.001 (rel 1e-09, abs 0)"]
    assert tree_mismatches(a, {**a, "n": 4}, rel=1.0)          # ints exact whatever rel is
    assert tree_mismatches(a, {**a, "s": "b"}, rel=1.0)
    assert tree_mismatches(a, {**a, "b": 1}, rel=1.0)          # a bool is not the int 1
    assert tree_mismatches(a, {**a, "l": [0.5, None]}, rel=1.0)
    assert tree_mismatches(a, {**a, "l": [0.5, 0.0, math.nan]}, rel=1.0)   # None is not 0.0
    assert tree_mismatches(a, {**a, "l": [0.5, None, 1.0]}, rel=1.0)       # NaN only matches NaN
    assert tree_mismatches(a, {k: v for k, v in a.items() if k != "x"}, rel=1.0)
    assert tree_mismatches({"y": 0.0}, {"y": 1e-8}, rel=1e-9)
    assert not tree_mismatches({"y": 0.0}, {"y": 1e-8}, rel=1e-9, abs=1e-7)


def test_frames_float_columns_within_tolerance_others_exact():
    a = pl.DataFrame({"i": [1, 2], "f": [0.1, None], "s": ["a", "b"]})
    assert_frames_close(a, a.with_columns(pl.col("f") * (1 + 1e-13)), rel=1e-9)
    with pytest.raises(AssertionError):
        assert_frames_close(a, a.with_columns(pl.col("f") * 1.01), rel=1e-9)
    with pytest.raises(AssertionError):
        assert_frames_close(a, a.with_columns(pl.col("f").fill_null(0.0)), rel=1e-9)
    with pytest.raises(AssertionError):
        assert_frames_close(a, a.with_columns(pl.col("i") + 1), rel=1.0)
    with pytest.raises(AssertionError):
        assert_frames_close(a, a.with_columns(pl.col("i").cast(pl.Float64)), rel=1.0)
