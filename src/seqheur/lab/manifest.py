"""Client logs → manifest; manifest ↔ capture comparison.

The manifest says what the clients actually issued: every NFS READ (file, offset, length, global
issue order, client, per-client sequence number, issue time, reply status) as logged by the
load generator or the FUSE bridge just before the call went out, plus the application reads of
FUSE scenarios, plus what tshark found in the capture. ``compare`` is the check the lab and its
tests rely on: the capture's READ calls must equal the manifest's READs, as a multiset of (file,
offset, count) and, per TCP connection, in the same order.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .tshark import CaptureReads

SCHEMA = "seqheur-lab-manifest/1"
READ_COLUMNS = ["order", "client", "seq", "time_ns", "file", "offset", "length", "status",
                "mismatches"]
APP_COLUMNS = ["client", "seq", "time_ns", "file", "offset", "length", "got", "mismatches"]


@dataclass
class ClientLog:
    """One NFS client's log (loadgen.c or fusebridge.c format)."""

    version: int = 0
    port: int = -1
    files: dict[int, dict[str, Any]] = field(default_factory=dict)  # idx -> name, size, fh
    issued: list[tuple[int, int, int, int, int]] = field(default_factory=list)  # seq,t,file,off,len
    done: dict[int, tuple[int, int, int]] = field(default_factory=dict)  # seq -> t, status, bad
    totals: tuple[int, int, int] | None = None  # reads, failures, mismatched bytes
    errors: list[str] = field(default_factory=list)


def parse_client_log(path: Path) -> ClientLog:
    log = ClientLog()
    for line in path.read_text().splitlines():
        kind, *cols = line.split("\t")
        if kind == "V":
            log.version = int(cols[0])
        elif kind == "P":
            log.port = int(cols[0])
        elif kind == "F":
            log.files[int(cols[0])] = {"name": cols[1], "size": int(cols[2]), "fh": cols[3]}
        elif kind == "R":
            s, t, f, o, n = map(int, cols)
            log.issued.append((s, t, f, o, n))
        elif kind == "D":
            s, t, st, bad = map(int, cols)
            log.done[s] = (t, st, bad)
        elif kind == "X":
            a, b, c = map(int, cols)
            log.totals = (a, b, c)
        elif kind == "E":
            log.errors.append(cols[0] if cols else "")
    return log


def parse_app_log(path: Path) -> list[tuple[int, int, int, int, int, int, int]]:
    """The FUSE reader's read() log: (seq, t_ns, file, offset, length, got, mismatches)."""
    rows = []
    for line in path.read_text().splitlines():
        kind, *cols = line.split("\t")
        if kind == "A":
            rows.append(tuple(map(int, cols)))  # type: ignore[arg-type]
    return rows  # type: ignore[return-value]


def read_rows(logs: list[ClientLog]) -> list[list[Any]]:
    """Manifest READ rows over all clients, in global issue order (time, client, seq)."""
    rows = []
    for ci, log in enumerate(logs):
        for s, t, f, o, n in log.issued:
            _, status, bad = log.done.get(s, (0, None, None))
            rows.append([0, ci, s, t, log.files[f]["name"], o, n, status, bad])
    rows.sort(key=lambda r: (r[3], r[1], r[2]))
    for i, r in enumerate(rows):
        r[0] = i
    return rows


def fh_names(logs: list[ClientLog]) -> dict[str, str]:
    """File handle hex → file name, from the clients' own view of what they opened."""
    out = {}
    for log in logs:
        for meta in log.files.values():
            out[meta["fh"]] = meta["name"]
    return out


def compare(logs: list[ClientLog], capture: CaptureReads) -> dict[str, Any]:
    """Check the capture's READ calls against what the clients logged; a dict of findings."""
    names = fh_names(logs)
    wire = [(names.get(c.fh, f"?{c.fh}"), c.offset, c.count) for c in capture.calls]
    issued = [(log.files[f]["name"], o, n) for log in logs for _, _, f, o, n in log.issued]
    want, got = Counter(issued), Counter(wire)
    by_port: dict[int, list[tuple[str, int, int]]] = {}
    for c, w in zip(capture.calls, wire):
        by_port.setdefault(c.client_port, []).append(w)
    order_ok = True
    for log in logs:
        mine = [(log.files[f]["name"], o, n) for _, _, f, o, n in sorted(log.issued)]
        if by_port.get(log.port, []) != mine:
            order_ok = False
    summary = capture.summary()
    return {
        "issued_reads": len(issued),
        "capture_read_calls": len(wire),
        "missing_from_capture": sum((want - got).values()),
        "extra_in_capture": sum((got - want).values()),
        "unknown_file_handles": sum(1 for w in wire if w[0].startswith("?")),
        "capture_equals_manifest": want == got,
        "per_connection_order_equal": order_ok,
        "all_replied": summary["unanswered"] == 0,
        "fh_crc32": {fh: f"0x{zlib.crc32(bytes.fromhex(fh)):08x}" for fh in names},
    }


def dumps(manifest: dict[str, Any]) -> str:
    """JSON text of a manifest: indented, but one line per READ row (so it stays small)."""
    tables = {}
    shallow = dict(manifest)
    for key in ("reads", "app_reads"):
        if key in shallow:
            tables[key] = shallow[key]["rows"]
            shallow[key] = {**shallow[key], "rows": f"@@{key}@@"}
    text = json.dumps(shallow, indent=2)
    for key, rows in tables.items():
        body = ",\n".join("      " + json.dumps(r, separators=(",", ":")) for r in rows)
        text = text.replace(f'"@@{key}@@"', "[\n" + body + "\n    ]" if rows else "[]")
    return text + "\n"
