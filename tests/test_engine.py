"""The engine is ordinary code: under ``NUMBA_DISABLE_JIT=1`` the same loop runs as plain
Python (so it can be stepped through and covered) and gives the compiled loop's results."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import seqheur
from seqheur import engine as E

SCRIPT = r'''
import json, sys, warnings
import numpy as np
import pytest
import seqheur
warnings.simplefilter("ignore")
rng = np.random.default_rng(7)
n = 400
file = rng.integers(0, 6, n)
offset = (rng.integers(0, 64, n) * 8192).astype(np.int64)
offset[: n // 2] = np.arange(n // 2) * 8192 % (1 << 20)  # a sequential run first
s = seqheur.ReadStream.from_arrays(file, offset, 8192)
out = {}
for det, pol in (("freebsd4", "auto"), ("slowdown", "fixed:4"), ("cursor", "none"),
                 ("freebsd", "auto"), ("linux-3.12", "auto"), ("zfetch", "freebsd-cluster"),
                 ("linux-6", "auto"), ("linux-2.6.32:caller=read", "auto")):
    r = seqheur.replay(s, det, "nfsheur:16x2", pol, cache="256KiB")
    d = seqheur.detect(s, det, "raparms")
    out[det] = {"summary": r.to_dict(), "requests": r.requests.to_dicts(),
                "detect": d.seqcount.tolist()}
print(json.dumps(out))
'''


def _run(disable_jit: bool) -> dict:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable_jit else "0")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True,
                         capture_output=True, text=True, timeout=900)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_plain_python_engine_gives_the_compiled_results() -> None:
    compiled, plain = _run(False), _run(True)
    for det in compiled:
        assert plain[det]["requests"] == compiled[det]["requests"], det
        assert plain[det]["detect"] == compiled[det]["detect"], det
        for key, value in compiled[det]["summary"].items():
            if isinstance(value, float):  # the disk model's sums: same operations, same order
                assert abs(plain[det]["summary"][key] - value) <= 1e-9 * abs(value), key
            else:
                assert plain[det]["summary"][key] == value, (det, key)


def test_one_loop_per_detector_and_table_kind_whatever_the_parameters() -> None:
    s = seqheur.ReadStream.from_arrays([1, 2, 1, 2], [0, 0, 8192, 8192], 8192)
    before = set(E._LOOPS)
    for table in ("freebsd4", "ellard", "nfsheur:8x2:seed=3", "raparms", "raparms:threads=64",
                  "ideal"):
        for det in ("freebsd4", "slowdown:window=4096", "slowdown"):
            seqheur.detect(s, det, table)
    new = [k for k in E._LOOPS if k not in before]
    # table kinds nfsheur, raparms, ideal x detectors freebsd4, slowdown: parameters are data
    assert len(new) <= 6
    assert len(E._LOOPS) == len(set(E._LOOPS.values()))


def test_requests_columns_are_typed_as_the_loop_expects() -> None:
    r = E.Requests(np.zeros(1, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int32),
                   np.zeros(1, np.int64))
    assert r._fields == ("file", "offset", "count", "time_ns")


def test_writable_and_read_only_columns_share_one_compiled_loop() -> None:
    """A stream built from numpy arrays (writable) and one read from Arrow (read-only) run
    the same compiled loop: numba types the two kinds of array apart, so without the engine's
    read-only views each loop would compile twice."""
    import pyarrow as pa

    from seqheur import oracle

    file = np.array([0, 1, 0, 1], np.int32)
    offset = np.array([0, 0, 8192, 8192], np.int64)
    writable = seqheur.ReadStream.from_arrays(file, offset, 8192)
    table = pa.table({"file": pa.array(file), "offset": pa.array(offset)})
    read_only = seqheur.ReadStream.from_arrays(table["file"].to_numpy(),
                                               table["offset"].to_numpy(), 8192)
    assert not read_only.file.flags.writeable or not read_only.offset.flags.writeable
    for s in (writable, read_only):
        seqheur.replay(s, "cursor", "ellard", "fixed:4", cache="1MiB", profile=None)
        seqheur.detect(s, "cursor", "ellard")
    # the oracle's loop reads the stream's file column too, and a stream built field by field
    # keeps a writable one
    built = seqheur.ReadStream(time_ns=np.arange(4), file=file.copy(), offset=offset.copy(),
                               count=np.full(4, 8192, np.int32),
                               file_ids=np.arange(2, dtype=np.uint64),
                               is_write=None, source_index=None)
    assert built.file.flags.writeable and not read_only.file.flags.writeable
    for s in (built, read_only):
        oracle.run_oracle(s, None, cache_bytes=65536, block_size=16384, profile=None)
    for run in E._LOOPS.values():
        kinds = [str(sig).replace("readonly ", "") for sig in run.signatures]
        assert len(kinds) == len(set(kinds)), kinds


def test_an_unloadable_cache_entry_is_a_miss(monkeypatch) -> None:
    """An on-disk index written by other code (a type renamed since) fails to unpickle: the
    engine's cache answers 'not cached' and the loop compiles, rather than every replay
    failing with the unpickling error."""
    from numba.core.caching import FunctionCache
    from numba.core.registry import cpu_target

    from seqheur import engine as E

    def loop_body(x):
        return x + 1

    cache = E.EngineCache(loop_body)

    def stale(self, sig, target_context):
        raise AttributeError("Can't get attribute 'OldWorld' on <module 'seqheur.engine'>")

    monkeypatch.setattr(FunctionCache, "_load_overload", stale)
    assert cache.load_overload((), cpu_target.target_context) is None


def test_the_inliner_copies_an_ir_once_with_the_sharing_it_had() -> None:
    """seqheur's copy for numba's inliner (seqheur._inlining): a function's blocks copied one
    after the other share one copy of their scope, hold the same statements as block-by-block
    copies do, and a second copy of the same IR is a new one."""
    import copy

    from numba.core import inline_closurecall
    from numba.core.compiler import run_frontend

    from seqheur import _inlining

    assert isinstance(inline_closurecall.copy, _inlining._CopyOneMemoPerIR)

    def branches(a, n):
        t = 0
        for i in range(n):
            if a[i] > 0:
                t += a[i]
            else:
                t -= 1
        return t

    fir = run_frontend(branches)
    assert len(fir.blocks) > 3
    shim = inline_closurecall.copy
    once = {k: shim.deepcopy(b) for k, b in fir.blocks.items()}
    again = {k: shim.deepcopy(b) for k, b in fir.blocks.items()}
    plain = {k: copy.deepcopy(b) for k, b in fir.blocks.items()}
    assert len({id(b.scope) for b in once.values()}) == 1
    assert len({id(b.scope) for b in plain.values()}) == len(plain)
    for k, b in fir.blocks.items():
        assert once[k] is not b and once[k].scope is not b.scope
        assert again[k] is not once[k] and again[k].scope is not once[k].scope
        assert [str(s) for s in once[k].body] == [str(s) for s in plain[k].body]
        assert [str(s) for s in again[k].body] == [str(s) for s in b.body]


ASM_SCRIPT = r'''
import hashlib, sys
import numpy as np
import pytest
import seqheur
from seqheur import engine as E
s = seqheur.ReadStream.from_arrays(np.array([0, 1, 0, 1, 0] * 8), np.arange(40) * 8192, 8192)
seqheur.replay(s, "cursor", "ellard", "freebsd4-cluster", cache="1MiB", profile="ide-7200")
for run in E._LOOPS.values():
    for sig in run.signatures:
        print(hashlib.sha256(run.inspect_asm(sig).encode()).hexdigest())
'''


@pytest.mark.slow
def test_the_inliners_one_copy_compiles_the_same_machine_code(tmp_path) -> None:
    """A replay loop (its serve step inlines the FreeBSD read-ahead: the case the copy was
    slow on) compiled afresh with seqheur's copy for numba's inliner and with numba's own
    gives the same machine code."""
    from seqheur import _inlining

    out = {}
    for plain in ("0", "1"):
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / f"numba-{plain}"),
                   **{_inlining.ENV_PLAIN: plain})
        run = subprocess.run([sys.executable, "-c", ASM_SCRIPT], env=env, capture_output=True,
                             text=True, timeout=900)
        assert run.returncode == 0, run.stderr[-2000:]
        out[plain] = run.stdout.split()
    assert out["0"] and out["0"] == out["1"]
