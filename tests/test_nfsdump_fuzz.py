"""Fuzz the nfsdump reader with mutated real lines (token drops, swaps, duplications,
truncations, random bytes, random tokens): never an uncaught exception, every line
accounted, and the table it returns is a valid request table that exports to text which
reads back without a single skipped line.

The default run checks a few thousand lines; ``-m slow`` runs >= 100 k.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqheur.errors import IngestError
from seqheur.export import export_nfsdump
from seqheur.ingest.nfsdump import read_nfsdump
from seqheur.schema import validate

RAW_EXTRA = [
    b"1000.000001 0a000001.03f7   0a000002.0801 U C3 a1       6 read     fh 0102 off 10 "
    b"count 1000 con = 130 len = 170",
    b"1000.000002 0a000002.0801   0a000001.03f7 U R3       a1 6 read     OK ftype 1 size FF "
    b"count 800 eof 1 status=0 pl = 120 con = 130 len = 400 LONGPKT-4",
    b"XX Not Auth_Unix (1)??",
    b"1000.500000 1.0001 0.0801 U C2 d4 8 write fh 0c0d begoff 0 offset 2000 tcount 400 +|+ "
    b"con = XXX len = XXX",
]
_TOKENS = [b"con", b"=", b"XXX", b"status=XXX", b"OK", b"fh", b"off", b"count", b"size",
           b"eof", b"SHORT", b"PACKETcon", b"+|+", b"+/+", b"status=", b"ffffffffffffffffff",
           b"-1", b"0x10", b"\x00", b"\xff\xfe", b"read", b"C3", b"R2", b"CU4", b"T", b"U"]


def _lines(shared: Path) -> list[bytes]:
    real = (shared / "nfsdump" / "ellard-raw-data.txt").read_bytes().splitlines()
    return real + RAW_EXTRA


def mutate(line: bytes, rng: random.Random) -> bytes:
    toks = line.split(b" ")
    kind = rng.randrange(8)
    if kind == 0 and toks:  # drop a token
        del toks[rng.randrange(len(toks))]
    elif kind == 1 and len(toks) > 1:  # swap two tokens
        i, j = rng.randrange(len(toks)), rng.randrange(len(toks))
        toks[i], toks[j] = toks[j], toks[i]
    elif kind == 2 and toks:  # duplicate a token
        i = rng.randrange(len(toks))
        toks.insert(i, toks[i])
    elif kind == 3:  # truncate
        return line[: rng.randrange(len(line) + 1)]
    elif kind == 4:  # random bytes somewhere (may include newlines: new lines appear)
        i = rng.randrange(len(line) + 1)
        return line[:i] + rng.randbytes(rng.randrange(1, 12)) + line[i:]
    elif kind == 5 and toks:  # replace a token by a nasty one
        toks[rng.randrange(len(toks))] = rng.choice(_TOKENS)
    elif kind == 6 and toks:  # flip one byte
        b = bytearray(line)
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    elif kind == 7 and toks:  # replace a token by random hex of any length
        toks[rng.randrange(len(toks))] = rng.randbytes(rng.randrange(0, 20)).hex().encode()
    return b" ".join(toks)


def fuzz_once(lines: list[bytes], seed: int, n: int, p_mut: float, chunk: int,
              tmp: Path) -> int:
    rng = random.Random(seed)
    out = []
    unchanged = 0
    for _ in range(n):
        line = rng.choice(lines)
        if rng.random() < p_mut:
            for _ in range(rng.randrange(1, 4)):
                line = mutate(line, rng)
        else:
            unchanged += 1 if line[:1].isdigit() else 0
        out.append(line)
    sep = b"\r\n" if rng.random() < 0.2 else b"\n"
    data = sep.join(out) + (sep if rng.random() < 0.5 else b"")
    path = tmp / f"fuzz-{seed}.txt"
    path.write_bytes(data)
    table, rep = read_nfsdump(path, chunk_lines=chunk, max_line_bytes=rng.choice([64, 1 << 20]))
    total = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
    assert rep.records_total == total
    rep.check()
    assert rep.parsed == rep.calls + rep.replies
    assert rep.rows == rep.matched + rep.orphan_calls + rep.orphan_replies == table.num_rows
    assert rep.calls == rep.matched + rep.orphan_calls + rep.retransmissions
    assert rep.replies == rep.matched + rep.orphan_replies + rep.extra["duplicate_replies"]
    for rec, reason, _detail in rep.examples:
        assert 1 <= rec <= total and reason in rep.skipped
    validate(table)
    # whatever was read can be written and read back, with no line skipped
    out_path = tmp / f"fuzz-{seed}.out.txt"
    exp = export_nfsdump(table, out_path)
    table2, rep2 = read_nfsdump(out_path)
    assert rep2.records_total == exp.calls + exp.replies
    assert rep2.skipped == {}
    return total


def fuzz_gzip_once(lines: list[bytes], seed: int, n: int, tmp: Path) -> int:
    """The gzip layer: a trace compressed, then its compressed bytes cut or flipped. Every
    line decoded before the damage is read; reading stops with a report saying so; the
    accounting holds."""
    import gzip
    import io

    rng = random.Random(seed)
    data = b"\n".join(rng.choice(lines) for _ in range(n)) + b"\n"
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(data)
    gz = bytearray(buf.getvalue())
    if rng.random() < 0.5:
        gz = gz[:rng.randrange(10, len(gz))]
    else:
        for _ in range(rng.randrange(1, 4)):
            gz[rng.randrange(len(gz))] ^= 1 << rng.randrange(8)
    path = tmp / f"fuzz-{seed}.txt.gz"
    path.write_bytes(bytes(gz))
    try:
        gzip.decompress(bytes(gz))
        damaged = False
    except Exception:  # noqa: BLE001 - any decompression complaint
        damaged = True
    try:
        table, rep = read_nfsdump(path)
    except IngestError:  # nothing decodable at all (a cut header): a clear one-line error
        return 0
    rep.check()
    assert rep.rows == table.num_rows
    if damaged:
        assert rep.extra.get("stopped", "").startswith("decompression stopped")
    return rep.records_total


def _run(shared_dir: Path, tmp_path_factory, examples: int, n_lines: int) -> None:
    lines = _lines(shared_dir)
    seen = {"lines": 0}
    tmp = tmp_path_factory.mktemp("fuzz")

    @settings(max_examples=examples, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(seed=st.integers(0, 2**32 - 1), p_mut=st.sampled_from([0.3, 0.7, 1.0]),
           chunk=st.sampled_from([1, 7, 64, 1 << 18]))
    def check(seed: int, p_mut: float, chunk: int) -> None:
        n = n_lines if chunk > 1 else min(n_lines, 200)
        if seed % 5 == 0:  # one run in five: the gzip layer
            fuzz_gzip_once(lines, seed, n, tmp)
            return
        seen["lines"] += fuzz_once(lines, seed, n, p_mut, chunk, tmp)

    check()
    return seen["lines"]


def test_fuzz_quick(shared_dir: Path, tmp_path_factory) -> None:
    assert _run(shared_dir, tmp_path_factory, examples=25, n_lines=300) >= 3000


@pytest.mark.fuzz
def test_fuzz_100k_lines(shared_dir: Path, tmp_path_factory) -> None:
    assert _run(shared_dir, tmp_path_factory, examples=140, n_lines=1000) >= 100_000


def test_fuzz_gzip_quick(shared_dir: Path, tmp_path) -> None:
    lines = _lines(shared_dir)
    assert sum(fuzz_gzip_once(lines, seed, 300, tmp_path) for seed in range(40)) > 1000


def test_mutations_change_lines() -> None:
    rng = random.Random(1)
    line = b"1006231504.285023 32.03fd 30.0801 T C3 1cf0d105 6 read fh cfbc off 0 count 2000"
    changed = sum(mutate(line, rng) != line for _ in range(200))
    assert changed > 150
