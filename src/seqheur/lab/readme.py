"""Write ``traces/README.md`` from the manifests of the lab captures in that directory.

``python -m seqheur.lab.readme traces/`` (run by ``make lab`` after regenerating the captures), so
the README always describes the captures actually there: how each was made, what is on the wire,
and what was verified.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from ..io import write_text

INTRO = """\
# Sample traces

## Real NFS captures from the capture lab (`*.pcap.gz` + `*.manifest.json`)

Every `NAME.pcap.gz` here is a real capture, made on one machine by `make lab`, which runs

    seqheur lab run {names} -o traces/
    python -m seqheur.lab.readme traces/

How a capture is made (details: `docs/capture-lab.md`):

* **Server:** nfs-ganesha with the VFS backend plus rpcbind (Debian packages), exporting a
  directory of generated files read-only as `/export`, NFSv3 and NFSv4.0 over TCP.
* **Clients:** `loadgen` (the lab's asynchronous libnfs client, `src/seqheur/lab/clients/`),
  which issues READs in a pattern with N in flight; or, for `fuse-*` captures, a plain reader doing
  `pread()` on a FUSE bridge (`fusebridge`, libfuse 3 + libnfs), so that the **Linux kernel's
  readahead** (`read_ahead_kb` set on the bridge's bdi) decides the NFS READs.
* **Network:** everything runs inside fresh network, mount and PID namespaces
  (`unshare --net --mount --pid`) whose only interface is `lo`, with IPv6 disabled; client and
  server are both 127.0.0.1, the only address in every capture. tcpdump captures `lo` with full
  packets (`-s 0`), filter `port 2049 or port 20048 or port 111`; the pcap is gzipped (level 9).
* **Verification (all passed for every file here):** tshark's READ calls equal the READs the
  client logged (file, offset, count; and, per TCP connection, the same order); every READ call
  has its reply; tcpdump reports 0 packets dropped by the kernel; every byte the clients read
  matched the generated contents; for `loadgen` captures the issued READs equal the scenario's
  plan exactly; and, before each capture, `nfs-cat` (libnfs-utils) read a file from the server
  with the generated file's sha256.
* **File contents** are verifiable: 4 KiB blocks of 32-byte records; record 0 of each block is
  `NAME@<byte offset, 12 hex digits>` padded with `=`, records 1..127 are `recNNN` padded with
  `.`; each record ends in a newline (`seqheur.lab.data.expected_bytes(name, offset, length)`).
  Only record 0 changes from block to block, which is why these full-payload captures gzip
  by a factor of about 50 to 120 (table below).
* **Manifests** (`NAME.manifest.json`, schema `seqheur-lab-manifest/1`) hold the scenario, tool
  versions, file sizes and sha256, the file handles (hex and CRC-32 = tshark's `nfs.fh.hash`),
  every READ the client issued (`reads`: order, client, seq, time_ns, file, offset, length,
  status, mismatches), for `fuse-*` also every application read (`app_reads`), tcpdump's and
  tshark's counts, the checks, the PIDs of all processes started, and timings.
* **Caveat:** `fuse-*` captures depend on the kernel's readahead code (kernel version in the
  manifest); the `loadgen` captures depend only on the scenario.

| capture | NFS | client | what it exercises | READs on the wire (count × size) | gzip / raw bytes |
|---|---|---|---|---|---|
"""

OUTRO = """
The captures start before the clients connect, so each holds the TCP handshake, the MOUNT (v3)
or SETCLIENTID/OPEN (v4) and everything after. `fuse-*` captures also hold the bridge's
LOOKUP/GETATTR/ACCESS traffic. Decode with tshark using `-d tcp.port==2049,rpc` (libnfs binds
privileged source ports that tshark would otherwise take for NCP or TWAMP) and
`-o tcp.reassemble_out_of_order:TRUE`, or with `seqheur ingest NAME.pcap.gz`.

`demo-v3` is the suggested demo trace: several concurrent sequential readers and a strided reader,
over NFSv3/TCP, their READs interleaved on the wire as a server sees them.

## Other files

Files here without a manifest were not made by the capture lab:

* `synthetic-mix.parquet` — a request table (Parquet) of a synthetic trace, the fallback demo
  trace, made by
  `seqheur synth mix --readers 4 --total-mb 16 --reorder 0.06 --stride 2 --stride-mb 8 --random 500 --seed 7 -o traces/synthetic-mix.parquet`:
  four paper-style readers of 4 MiB files with 6% client reordering, a 2-stride reader of an
  8 MiB file and 500 random READs, interleaved in time (docs/formats.md §Synthetic workloads).
"""


def _sizes(rows: list[list], col: int) -> str:
    counts = Counter(r[col] for r in rows)
    parts = []
    for size, n in counts.most_common(4):
        unit = f"{size // 1048576} MiB" if size % 1048576 == 0 else (
            f"{size // 1024} KiB" if size % 1024 == 0 else f"{size} B")
        parts.append(f"{n} × {unit}")
    if len(counts) > 4:
        parts.append(f"{sum(counts.values()) - sum(n for _, n in counts.most_common(4))} other")
    return ", ".join(parts)


def render(directory: Path) -> str:
    manifests = [json.loads(p.read_text()) for p in sorted(directory.glob("*.manifest.json"))]
    names = " ".join(m["scenario"]["name"] for m in manifests)
    lines = [INTRO.format(names=names)]
    for m in manifests:
        s = m["scenario"]
        rows = m["reads"]["rows"]
        col = m["reads"]["columns"].index("length")
        client = (f"FUSE, read_ahead_kb={s['read_ahead_kb']}" if s["via"] == "fuse"
                  else f"loadgen ×{len(s['readers'])}")
        lines.append(
            f"| `{m['pcap']['file']}` | v{s['nfs_version']} | {client} | {s['summary']} | "
            f"{len(rows)}: {_sizes(rows, col)} | {m['pcap']['bytes']:,} / "
            f"{m['pcap']['raw_bytes']:,} |\n")
    tools = manifests[0]["tools"] if manifests else {}
    dates = sorted(m["created"][:10] for m in manifests)
    made = f"Made on {dates[0]}" if dates else "Made"
    lines.append(f"\n{made} with " + ", ".join(f"{k} {v}" for k, v in tools.items()) + ".\n")
    lines.append(OUTRO)
    return "".join(lines)


def main(argv: list[str]) -> int:
    directory = Path(argv[0] if argv else "traces")
    write_text(render(directory), directory / "README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
