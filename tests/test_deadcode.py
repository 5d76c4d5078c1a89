"""No dead code in src/: vulture over the sources, the tests and the benchmarks (a name they
use is alive) finds nothing but the reviewed false positives of vulture_whitelist.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_vulture_finds_no_dead_code_in_src() -> None:
    pytest.importorskip("vulture", reason="vulture is in the test extra (make test installs it)")
    out = subprocess.run(
        [sys.executable, "-m", "vulture", "src/seqheur", "tests", "bench", "vulture_whitelist.py",
         "--exclude", "bench/work", "--min-confidence", "60"],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    dead = [line for line in out.stdout.splitlines() if line.startswith("src/")]
    assert not dead, "dead code (delete it, or whitelist it with the reason):\n" + "\n".join(dead)
