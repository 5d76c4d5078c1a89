"""Mutated captures never crash the decoder and every frame stays accounted for.

Mutants: random byte edits of whole captures; edits aimed at pcapng block structure (block
types, total lengths, option lengths, an interface's link type); and edits of the gzip
layer (the compressed bytes of a capture, cut or flipped). The default run tries a few
hundred of each; the ``fuzz`` run 100 000 (hypothesis).
"""

from __future__ import annotations

import gzip
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


def _blocks(data: bytes) -> list[int]:
    """Offsets of the pcapng blocks of ``data`` (little-endian, as the writer makes them)."""
    p, out = 0, []
    while p + 12 <= len(data):
        n = int.from_bytes(data[p + 4:p + 8], "little")
        if n < 12 or p + n > len(data):
            break
        out.append(p)
        p += n
    return out


PCAPNG_SEEDS = [d for d in SEEDS if d[:4] == b"\x0a\x0d\x0d\x0a"]


def _mutate_pcapng_blocks(data: bytes, rng: random.Random) -> bytes:
    """Edit pcapng structure: a block's type, its leading or trailing total length, an
    option length inside it, or an interface description's link type."""
    b = bytearray(data)
    starts = _blocks(data)
    for _ in range(rng.randrange(1, 4)):
        p = rng.choice(starts)
        n = int.from_bytes(b[p + 4:p + 8], "little")
        kind = rng.randrange(5)
        value = (rng.choice([0, 1, 11, 12, 13, n + 4, n - 4, 0xFFFFFFFF, 0x7FFFFFFF,
                             rng.randrange(1 << 32)]) & 0xFFFFFFFF).to_bytes(4, "little")
        if kind == 0:
            b[p:p + 4] = rng.choice([b"\x01\0\0\0", b"\x06\0\0\0", b"\x03\0\0\0",
                                     b"\x0a\x0d\x0d\x0a", b"\xff\xff\xff\xff", value])
        elif kind == 1:
            b[p + 4:p + 8] = value
        elif kind == 2 and p + n <= len(b):
            b[p + n - 4:p + n] = value
        elif kind == 3 and n > 24:  # somewhere in the body, read as an option header
            q = p + 8 + rng.randrange(max(1, n - 16)) // 4 * 4
            b[q:q + 4] = rng.choice([b"\x01\0\xff\xff", b"\x00\0\x00\x00", value])
        elif int.from_bytes(b[p:p + 4], "little") == 1:  # IDB: its link type
            b[p + 8:p + 10] = rng.choice([0, 1, 101, 113, 147, 276, 65535]).to_bytes(2, "little")
    return bytes(b)


def _gz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(data)
    return buf.getvalue()


GZ_SEEDS = [_gz(d) for d in SEEDS]


def _mutate_gzip(data: bytes, rng: random.Random) -> bytes:
    """Cut or flip the compressed bytes of a gzipped capture (header, deflate data, CRC)."""
    b = bytearray(data)
    if rng.random() < 0.4:
        return bytes(b[:rng.randrange(10, len(b))])
    for _ in range(rng.randrange(1, 4)):
        b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
    return bytes(b)


def _mutant(rng: random.Random) -> bytes:
    kind = rng.randrange(3)
    if kind == 0:
        return _mutate(rng.choice(SEEDS), rng)
    if kind == 1:
        return _mutate_pcapng_blocks(rng.choice(PCAPNG_SEEDS), rng)
    return _mutate_gzip(rng.choice(GZ_SEEDS), rng)


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
        _check(p, _mutant(rng))


def test_fuzz_quick(tmp_path: Path) -> None:
    _run(tmp_path, 300, 1)


def test_pcapng_block_and_gzip_mutants_are_real(tmp_path: Path) -> None:
    """The structure-aware mutants do what they say: block edits break the block chain or an
    interface's link type, gzip edits break decompression (and still never crash)."""
    rng = random.Random(3)
    assert PCAPNG_SEEDS and len(_blocks(PCAPNG_SEEDS[0])) > 5
    changed = sum(_mutate_pcapng_blocks(PCAPNG_SEEDS[0], rng) != PCAPNG_SEEDS[0]
                  for _ in range(50))
    assert changed >= 40  # a few draws rewrite a field with its own value
    broken = 0
    for _ in range(60):
        m = _mutate_gzip(GZ_SEEDS[0], rng)
        try:
            gzip.decompress(m)
        except (OSError, EOFError):  # BadGzipFile is an OSError; zlib.error too
            broken += 1
        except Exception:  # noqa: BLE001 - any other decompression complaint
            broken += 1
        _check(tmp_path / "g.pcap", m)
    assert broken >= 40


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
