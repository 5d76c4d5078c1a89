"""``linux-6`` page for page against the kernel.

Default suite: the recordings under tests/data/kernel/ — the pages each request of every
built-in pattern made resident on Linux 6.18.44 (ext4 on a loop device at read_ahead_kb 64,
128, 2560 and the device's default, recorded by ``seqheur kernel-check all --ra-kb
64,128,2560,default --reps 3 --record tests/data/kernel``; how, in each file's ``recipe``)
— are replayed through the model, which must match every request. ``kernel`` marker: the same
check against this machine's kernel (root, loop devices, cachestat)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from seqheur import kernelcheck as K

DATA = Path(__file__).parent / "data" / "kernel"
RECORDINGS = sorted(DATA.glob("*.json.gz"))


def test_recordings_are_there():
    assert len(RECORDINGS) >= 4, "tests/data/kernel/ should hold the four recorded settings"


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name)
def test_model_matches_every_recorded_request(path):
    doc = json.loads(gzip.open(path, "rt").read())
    size = max(s for p in doc["patterns"] for s in p["sizes"])
    patterns = K.builtin_patterns(size)
    total = exact = 0
    bad = []
    for rec in doc["patterns"]:
        pat = patterns[rec["name"]]
        assert list(pat.sizes) == rec["sizes"] and len(pat) == rec["requests"], \
            f"{rec['name']}: the generator no longer makes the recorded pattern"
        model = K.model_new_pages(pat.file, pat.offset, pat.count, pat.sizes, pat.hints,
                                  ra_kb=doc["read_ahead_kb"], io_kb=doc["max_sectors_kb"])
        kernel = [K.pages_of(r) for r in rec["pages"]]
        c = K.compare(pat.name, kernel, model, pat.file, pat.offset, pat.count, keep=3)
        total += c.requests
        exact += c.exact
        bad += c.mismatches
    assert total > 15000
    assert exact == total, bad[:3]


def test_runs_round_trip():
    pages = np.array([0, 1, 2, 5, 7, 8], np.int64)
    assert K.runs(pages) == [[0, 3], [5, 6], [7, 9]]
    assert np.array_equal(K.pages_of(K.runs(pages)), pages)
    assert K.runs([]) == [] and len(K.pages_of([])) == 0


def test_builtin_patterns_are_deterministic_and_inside_their_files():
    a, b = K.builtin_patterns(16 << 20), K.builtin_patterns(16 << 20)
    assert len(a) >= 20
    for name, p in a.items():
        q = b[name]
        assert np.array_equal(p.offset, q.offset) and np.array_equal(p.count, q.count)
        assert len(p.sizes) == len(p.hints) and p.file.max() < len(p.sizes)
        ends = np.array(p.sizes)[p.file]
        # only the EOF pattern reads at or past the end of its file
        assert (p.offset < ends).all() or name == "eof", name
        assert (p.count > 0).all()


def test_compare_lists_both_page_sets():
    c = K.compare("x", [np.array([1, 2]), np.array([3])], [np.array([1, 2]), np.array([4])],
                  np.zeros(2, int), np.array([0, 8192]), np.array([4096, 4096]))
    assert (c.requests, c.exact, c.mismatched) == (2, 1, 1)
    assert c.mismatches[0]["kernel_pages"] == [[3, 4]] and c.mismatches[0]["model_pages"] == [[4, 5]]


def test_kernel_note_only_outside_the_modelled_kernels():
    assert K.kernel_note("6.18.44-fc") is None
    assert "6.16-6.18" in K.kernel_note("6.8.0-45-generic")


def test_unknown_pattern_lists_the_valid_ones():
    out = subprocess.run([sys.executable, "-m", "seqheur", "kernel-check", "nosuch"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "seq-4k" in out.stderr and "nosuch" in out.stderr


def _can_run_live() -> str | None:
    if os.geteuid() != 0:
        return "needs root (loop device, sysfs read_ahead_kb)"
    if not Path("/dev/loop-control").exists():
        return "no loop devices here"
    try:
        fd = os.open(__file__, os.O_RDONLY)
        try:
            K._Libc().cachestat(fd)
        finally:
            os.close(fd)
    except K.KernelCheckError as exc:
        return str(exc)
    return None


@pytest.mark.kernel
def test_live_kernel_is_matched_page_for_page():
    why = _can_run_live()
    if why:
        pytest.skip(why)
    if K.kernel_note(os.uname().release):
        pytest.skip(K.kernel_note(os.uname().release))
    pats = K.builtin_patterns(32 << 20)
    chosen = [pats[n] for n in ("seq-4k", "interleaved-4", "context-probe", "eof",
                                "fadv-sequential", "mix-4", "multi-file")]
    res = K.run_check(chosen, [64, 128, None], reps=2)
    assert res["requests"] > 10000 and res["deterministic"]
    assert res["mismatched_requests"] == 0, res["mismatches"][:3]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert "seqheur-kcheck" not in loops  # the loop device is gone
