"""Make the damaged-input corpus from the repository's own bundled trace (traces/demo-v3),
deterministically: every supported format (pcap, pcapng, nfsdump text, each plain and
gzipped, CSV and Parquet request tables) cut short, truncated mid-record, bit-flipped, and
wrong-format or empty files. ``expected.json`` (beside this script) says what ``seqheur
ingest`` must answer for each; tests/test_damaged_corpus.py checks it.

    python tests/data/damaged/make_corpus.py [OUT_DIR]     # default: this directory
"""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
DEMO = ROOT / "traces" / "demo-v3.pcap.gz"


def _gz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:  # mtime 0: reproducible
        fh.write(data)
    return buf.getvalue()


def _flip(data: bytes, positions: list[int]) -> bytes:
    b = bytearray(data)
    for p in positions:
        b[p] ^= 0xFF
    return bytes(b)


def _pcap_prefix(n_records: int) -> bytes:
    """The demo capture's global header and first ``n_records`` records, whole."""
    raw = gzip.decompress(DEMO.read_bytes())
    p = 24
    for _ in range(n_records):
        p += 16 + int.from_bytes(raw[p + 8:p + 12], "little")
    return raw[:p]


def _pcapng() -> bytes:
    """A small pcapng of NFSv3 READs made by the project's capture writer."""
    sys.path.insert(0, str(ROOT / "src"))
    from seqheur.ingest.pcap import synth as S

    buf = io.BytesIO()
    cap = S.CaptureWriter(buf, fmt="pcapng")
    c = S.Conversation(cap, "tcp", (bytes([10, 0, 0, 2]), 900), (bytes([10, 0, 0, 1]), 2049))
    c.handshake()
    for i in range(12):
        fh = S.fh_for(i % 3)
        c.send(0, S.rpc_call(100 + i, 100003, 3, 6, S.nfs3_read_call(fh, 1024 * i, 1024)))
        c.send(1, S.rpc_reply(100 + i, S.nfs3_read_reply(b"d" * 1024, False, 1 << 20)))
    return buf.getvalue()


def _bad_block_length(ng: bytes) -> bytes:
    """The pcapng with its middle block's total length set to an impossible value."""
    p, starts = 0, []
    while p + 8 <= len(ng):
        starts.append(p)
        p += int.from_bytes(ng[p + 4:p + 8], "little")
    mid = starts[len(starts) // 2]
    return ng[:mid + 4] + (0xFFFFFF00).to_bytes(4, "little") + ng[mid + 8:]


def _nfsdump(tmp: Path) -> bytes:
    """The demo capture as nfsdump text (``seqheur export``), its first 120 lines."""
    out = tmp / "demo.txt"
    subprocess.run([sys.executable, "-m", "seqheur", "export", str(DEMO), "--format", "nfsdump",
                    "-o", str(out)], check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    lines = out.read_bytes().splitlines(keepends=True)
    return b"".join(lines[:120])


def _parquet(tmp: Path) -> bytes:
    out = tmp / "demo.parquet"
    subprocess.run([sys.executable, "-m", "seqheur", "ingest", str(DEMO), "-o", str(out)],
                   check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    return out.read_bytes()


def corpus(tmp: Path) -> dict[str, bytes]:
    pcap = _pcap_prefix(40)
    ng = _pcapng()
    dump = _nfsdump(tmp)
    pq = _parquet(tmp)
    csv = b"time,file,offset,count\n" + b"".join(
        b"%d,%d,%d,8192\n" % (i * 1000, i % 3, 8192 * i) for i in range(50))
    mid = len(pcap) // 2
    return {
        # pcap
        "cut-mid-record.pcap": pcap[:mid],
        "cut-in-global-header.pcap": pcap[:14],
        "huge-caplen.pcap": pcap[:24 + 16 + 100][:24 + 8] + (10 ** 9).to_bytes(4, "little")
        + pcap[24 + 12:],
        "bitflip-in-data.pcap": _flip(pcap, [200, 900, 1500]),
        "cut.pcap.gz": _gz(pcap)[:len(_gz(pcap)) // 2],
        "bitflip.pcap.gz": _flip(_gz(pcap), [len(_gz(pcap)) // 2, len(_gz(pcap)) // 2 + 7]),
        # pcapng
        "cut-mid-block.pcapng": ng[:len(ng) // 2 + 3],
        "bad-block-length.pcapng": _bad_block_length(ng),
        "cut.pcapng.gz": _gz(ng)[:len(_gz(ng)) // 2],
        # nfsdump text
        "cut-mid-line.txt": dump[:len(dump) // 2 + 11],
        "garbage-line.txt": dump[:len(dump) // 3] + b"\xff\xfe not a record \x00\x01\n"
        + dump[len(dump) // 3:],
        "cut.txt.gz": _gz(dump)[:len(_gz(dump)) // 2],
        # request tables
        "cut.parquet": pq[:len(pq) // 2],
        "bitflip-footer.parquet": _flip(pq, [len(pq) - 12, len(pq) - 20]),
        "bad-value.csv": csv.replace(b"10000,1,81920,", b"10000,1,eighty,"),
        "cut-mid-row.csv": csv[:len(csv) // 2 + 3],
        # wrong format / empty
        "a-png-named.pcap": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4,
        "a-pcap-named.parquet": pcap[:2000],
        "empty.pcap": b"",
        "empty.txt.gz": _gz(b""),
    }


def main(out: Path = HERE) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in corpus(Path(tmp)).items():
            (out / name).write_bytes(data)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
