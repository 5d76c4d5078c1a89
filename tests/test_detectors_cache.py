"""The engine's loops are cached on disk across processes and never served stale when a
detector's source changes (seqheur.engine.EngineCache)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = '''
from dataclasses import dataclass
import seqheur

@dataclass(frozen=True)
class P:
    k: int = 1

@seqheur.detector("cachetest", params=P, state_words=1)
class D:
    @staticmethod
    def reset(state, params, offset, count, time_ns):
        state[0] = 0

    @staticmethod
    def update(state, params, offset, count, time_ns):
        state[0] += STEP
        return min(state[0], 127)
'''

RUN = '''
import json, sys, seqheur
from seqheur import engine
from seqheur.heuristics.registry import load_plugins
load_plugins([sys.argv[1]])
s = seqheur.ReadStream.from_arrays([1, 1, 1], [0, 10, 20], 10)
r = seqheur.detect(s, "cachetest", "nfsheur:64x4")
(loop,) = engine._LOOPS.values()
print(json.dumps({"seq": r.seqcount.tolist(), "hits": sum(loop.stats.cache_hits.values()),
                  "misses": sum(loop.stats.cache_misses.values())}))
'''


def _run(tmp: Path, plugin: Path) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "numba"))
    out = subprocess.run([sys.executable, "-c", RUN, str(plugin)], env=env, check=True,
                         capture_output=True, text=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_loop_cache_reused_and_invalidated(tmp_path: Path) -> None:
    plugin = tmp_path / "cachetest.py"
    plugin.write_text(PLUGIN.replace("STEP", "1"))
    first = _run(tmp_path, plugin)
    assert first["seq"] == [1, 2, 3] and first["hits"] == 0 and first["misses"] == 1
    second = _run(tmp_path, plugin)  # fresh process, same source: served from the disk cache
    assert second["seq"] == [1, 2, 3] and second["hits"] == 1 and second["misses"] == 0
    plugin.write_text(PLUGIN.replace("STEP", "5"))  # changed source: a new loop, not stale
    third = _run(tmp_path, plugin)
    assert third["seq"] == [5, 10, 15] and third["hits"] == 0 and third["misses"] == 1
