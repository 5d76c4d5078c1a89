"""Conformance with tshark: every NFS READ and WRITE row, on every real capture.

tshark decodes with ``-d tcp.port==2049,rpc -d udp.port==2049,rpc -o
tcp.reassemble_out_of_order:TRUE`` (the forced UDP mapping is needed for the nfstrace
retransmission capture, whose later WRITEs tshark otherwise takes for DNS). Calls and replies
are joined per (client, server, transport, xid) with retransmissions collapsed, exactly what
the request table promises; then both sides must hold the same READ/WRITE rows with the same
xid, fh CRC-32 (nfs.fh.hash), offset, count, status and eof.
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from seqheur.ingest.pcap import read_pcap

pytestmark = pytest.mark.oracle

TSHARK_ARGS = ["-d", "tcp.port==2049,rpc", "-d", "udp.port==2049,rpc",
               "-o", "tcp.reassemble_out_of_order:TRUE"]


def _captures(shared: Path, root: Path) -> list[Path]:
    found = sorted((shared / "captures").glob("*.pcap*"))
    traces = root / "traces"
    if traces.is_dir():
        for pat in ("*.pcap", "*.pcap.gz", "*.pcapng", "*.pcapng.gz", "*.cap"):
            found += sorted(traces.rglob(pat))
    return found


def _num(show: str | None) -> int | None:
    if show is None or show == "":
        return None
    return int(show, 0)


def tshark_rows(path: Path) -> dict[tuple, dict]:
    """READ/WRITE rows from tshark PDML: key (client, server, transport, xid, k) -> fields."""
    exe = shutil.which("tshark")
    if exe is None:
        pytest.skip("tshark is not installed (apt-get install tshark)")
    proc = subprocess.run([exe, "-r", str(path), *TSHARK_ARGS, "-Y", "rpc", "-T", "pdml"],
                          capture_output=True, check=True)
    root = ET.fromstring(proc.stdout)
    calls: dict[tuple, dict] = {}
    replies: dict[tuple, list] = {}
    for pkt in root.iter("packet"):
        protos = list(pkt)
        addr = {}
        for pr in protos:
            for f in pr.iter("field"):
                n = f.get("name")
                if n in ("ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "tcp.srcport",
                         "tcp.dstport", "udp.srcport", "udp.dstport") and n not in addr:
                    addr[n] = f.get("show")
        transport = "tcp" if "tcp.srcport" in addr else "udp"
        v6 = "ipv6.src" in addr and "ip.src" not in addr
        def ep(which: str) -> str:
            ip = addr["ipv6." + which] if v6 else addr["ip." + which]
            port = addr[f"{transport}.{which}port"]
            return f"[{ip}]:{port}" if v6 else f"{ip}:{port}"
        i = 0
        while i < len(protos):
            pr = protos[i]
            if pr.get("name") != "rpc":
                i += 1
                continue
            rf = {f.get("name"): f.get("show") for f in pr.iter("field")}
            nfs = protos[i + 1] if i + 1 < len(protos) and protos[i + 1].get("name") == "nfs" \
                else None
            i += 1
            if "rpc.xid" not in rf or "rpc.msgtyp" not in rf:
                continue
            xid = int(rf["rpc.xid"], 16)
            call = rf["rpc.msgtyp"] == "0"
            client, server = (ep("src"), ep("dst")) if call else (ep("dst"), ep("src"))
            key = (client, server, transport, xid)
            if nfs is None:
                continue
            ops = _nfs_ops(nfs, call)
            if call:
                if rf.get("rpc.program") != "100003" or key in calls:
                    continue  # not NFS, or a retransmission (collapsed)
                calls[key] = {"vers": int(rf["rpc.programversion"]), "ops": ops}
            elif key not in replies:
                replies[key] = ops
    out: dict[tuple, dict] = {}
    for key, c in calls.items():
        rep = replies.get(key)
        for k, op in enumerate(c["ops"]):
            row = {"op": op["op"], "fh_crc32": op.get("fh"), "offset": op.get("offset"),
                   "count": op.get("count"), "status": None, "eof": None}
            if rep is not None and k < len(rep):
                row["status"] = rep[k].get("status")
                row["eof"] = rep[k].get("eof")
            out[key + (k,)] = row
    return out


def _nfs_ops(nfs: ET.Element, call: bool) -> list[dict]:
    """The READ/WRITE operations of one NFS message, in order."""
    fields = [(f.get("name"), f.get("show")) for f in nfs.iter("field")]
    names = dict(fields)
    out: list[dict] = []
    if "nfs.procedure_v3" in names or "nfs.procedure_v2" in names:
        v3 = "nfs.procedure_v3" in names
        proc = int(names["nfs.procedure_v3" if v3 else "nfs.procedure_v2"])
        if proc not in ((6, 7) if v3 else (6, 8)):
            return out
        op = {"op": "read" if proc == 6 else "write"}
        if call:
            op["fh"] = _num(names.get("nfs.fh.hash"))
            if v3:
                op["offset"] = _num(names.get("nfs.offset3"))
                op["count"] = _num(names.get("nfs.count3"))
            elif proc == 6:
                op["offset"] = _num(names.get("nfs.read.offset"))
                op["count"] = _num(names.get("nfs.read.count"))
            else:
                op["offset"] = _num(names.get("nfs.write.offset"))
                op["count"] = _num(names.get("nfs.write.totalcount"))
        else:
            op["status"] = _num(names.get("nfs.status3" if v3 else "nfs.status"))
            if v3 and proc == 6:
                eof = names.get("nfs.read.eof")
                op["eof"] = None if eof is None else eof not in ("0", "False")
        out.append(op)
        return out
    # NFSv4 COMPOUND: walk op subtrees in order, following PUTFH
    cur = None
    ops_seen = 0
    for f in nfs.iter("field"):
        if f.get("name") != "nfs.opcode":
            continue
        opnum = int(f.get("show"))
        sub = {g.get("name"): g.get("show") for g in f.iter("field")}
        ops_seen += 1
        if call and opnum == 22:
            cur = _num(sub.get("nfs.fh.hash"))
        elif call and opnum in (24, 23, 15, 16, 18, 6):
            cur = None if opnum != 18 or sub.get("nfs.open.claim_type") not in ("4",) else cur
        if opnum not in (25, 38):
            continue
        op = {"op": "read" if opnum == 25 else "write"}
        if call:
            op["fh"] = cur
            op["offset"] = _num(sub.get("nfs.offset4"))
            op["count"] = _num(sub.get("nfs.count4") if opnum == 25
                               else sub.get("nfs.write.data_length"))
        else:
            op["status"] = _num(sub.get("nfs.nfsstat4"))
            if opnum == 25 and op["status"] == 0:
                eof = sub.get("nfs.eof")
                op["eof"] = None if eof is None else eof not in ("0", "False")
        out.append(op)
    return out


def seqheur_rows(path: Path) -> dict[tuple, dict]:
    table, report = read_pcap(path)
    report.check()
    out: dict[tuple, dict] = {}
    seen: dict[tuple, int] = {}
    for r in table.to_pylist():
        if r["op"] not in ("read", "write"):
            continue
        key = (r["client"], r["server"], r["transport"], r["xid"])
        k = seen.get(key, 0)
        seen[key] = k + 1
        out[key + (k,)] = {"op": r["op"], "fh_crc32": r["fh_crc32"], "offset": r["offset"],
                           "count": r["count"], "status": r["status"],
                           "eof": r["eof"] if r["op"] == "read" else None}
    return out


def test_read_write_rows_match_tshark(shared_dir: Path, repo_root: Path) -> None:
    captures = _captures(shared_dir, repo_root)
    assert captures, "no captures found"
    total = 0
    for cap in captures:
        want = tshark_rows(cap)
        got = seqheur_rows(cap)
        missing = sorted(set(want) - set(got))
        extra = sorted(set(got) - set(want))
        assert not missing, f"{cap.name}: rows tshark has and seqheur lacks: {missing[:5]}"
        assert not extra, f"{cap.name}: rows seqheur has and tshark lacks: {extra[:5]}"
        bad = [(k, want[k], got[k]) for k in want if want[k] != got[k]]
        assert not bad, f"{cap.name}: {len(bad)} rows differ, e.g. {bad[:3]}"
        total += len(want)
    assert total > 0
