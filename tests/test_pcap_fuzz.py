"""Mutated captures never crash the decoder and every frame stays accounted for.

The default run tries a few hundred mutants; the ``slow`` run 100 000 (hypothesis).
"""

from __future__ import annotations

import io
import os
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqheur.errors import IngestError
from seqheur.ingest.pcap import read_pcap
from seqheur.ingest.pcap import synth as S


def _seed_captures() -> list[bytes]:
    out = []
    for fmt, transport, mtu in (("pcap", "tcp", 1500), ("pcapng", "udp", 700),
                                ("pcap", "udp", 1500)):
        buf = io.BytesIO()
        cap = S.CaptureWriter(buf, fmt=fmt)
        c = S.Conversation(cap, transport, (bytes([10, 0, 0, 2]), 900), (bytes([10, 0, 0, 1]), 2049),
                           mtu=mtu)
        if transport == "tcp":
            c.handshake()
        for i in range(3):
            c.send(0, S.rpc_call(i, 100003, 3, 6, S.nfs3_read_call(b"F" * 32, i * 2000, 2000)))
            c.send(1, S.rpc_reply(i, S.nfs3_read_reply(b"d" * 2000, i == 2, 6000)))
        c.send(0, S.rpc_call(9, 100003, 4, 1, S.nfs4_read_compound_ga(b"4" * 40, 0, 100)))
        c.send(1, S.rpc_reply(9, S.nfs4_read_result(b"w" * 100, True, 100)))
        out.append(buf.getvalue())
    return out


SEEDS = _seed_captures()


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randrange(1, 12)):
        kind = rng.randrange(5)
        i = rng.randrange(len(b))
        if kind == 0:
            b[i] = rng.randrange(256)
        elif kind == 1:
            b[i:i + 4] = rng.choice([b"\0\0\0\0", b"\xff\xff\xff\xff", b"\x80\0\0\x10",
                                     b"\0\0\0\x01", b"\x7f\xff\xff\xff"])
        elif kind == 2:
            del b[i:i + rng.randrange(1, 64)]
        elif kind == 3:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 32)))
        else:
            j = rng.randrange(len(b))
            n = rng.randrange(1, 200)
            b[i:i + n] = b[j:j + n]
    return bytes(b)


def _check(tmp: Path, data: bytes) -> None:
    tmp.write_bytes(data)
    try:
        table, rep = read_pcap(tmp, chunk_bytes=1 << 16)
    except IngestError:
        return  # a clear, one-line error is an acceptable answer to garbage
    rep.check()
    assert table.num_rows == rep.rows


def _run(tmp_path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    p = tmp_path / "m.pcap"
    for _ in range(n):
        _check(p, _mutate(rng.choice(SEEDS), rng))


def test_fuzz_quick(tmp_path: Path) -> None:
    _run(tmp_path, 300, 1)


def _worker(args: tuple[str, int, int]) -> int:
    tmp, n, seed = args
    _run(Path(tmp), n, seed)
    return n


@pytest.mark.fuzz
def test_fuzz_100k(tmp_path: Path) -> None:
    from concurrent.futures import ProcessPoolExecutor

    workers = max(1, min(4, os.cpu_count() or 1))
    jobs = []
    for w in range(workers):
        d = tmp_path / f"w{w}"
        d.mkdir()
        jobs.append((str(d), 100_000 // workers + (w < 100_000 % workers), 100 + w))
    with ProcessPoolExecutor(workers) as ex:
        assert sum(ex.map(_worker, jobs)) == 100_000


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.sampled_from(range(len(SEEDS))), cuts=st.lists(
    st.tuples(st.integers(0, 1 << 20), st.binary(min_size=0, max_size=16)), max_size=8))
def test_fuzz_hypothesis(tmp_path_factory: pytest.TempPathFactory, seed: int,
                         cuts: list[tuple[int, bytes]]) -> None:
    data = bytearray(SEEDS[seed])
    for pos, ins in cuts:
        pos %= len(data)
        data[pos:pos + len(ins)] = ins
    _check(tmp_path_factory.mktemp("h") / "h.pcap", bytes(data))
