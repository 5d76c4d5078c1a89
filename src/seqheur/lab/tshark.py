"""Decode the READ calls and replies of a lab capture with tshark (the independent oracle).

Per RPC message, not per frame: with several READs in flight, one TCP segment carries several
calls (docs/capture-lab.md). Calls come from PDML (small: calls carry no data); replies from
``-T fields`` (PDML of the replies would hold every payload byte as hex). Always with
``-d tcp.port==2049,rpc`` (libnfs binds privileged source ports such as 524 or 862, which tshark
would otherwise decode as NCP or TWAMP) and ``tcp.reassemble_out_of_order`` (loopback on a busy
2-CPU machine does reorder and retransmit).
"""

from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from .scenarios import LabError
from .server import MNT_PORT, NFS_PORT, RPCBIND_PORT

READ_FILTER = "(nfs.procedure_v3 == 6 || nfs.opcode == 25)"


def tshark_args() -> list[str]:
    exe = shutil.which("tshark")
    if exe is None:
        raise LabError("tshark not found; run `make lab` (apt-get install tshark)")
    return [exe, "-n", "-d", f"tcp.port=={NFS_PORT},rpc", "-d", f"tcp.port=={MNT_PORT},rpc",
            "-d", f"tcp.port=={RPCBIND_PORT},rpc", "-o", "tcp.reassemble_out_of_order:TRUE"]


@dataclass(frozen=True)
class ReadCall:
    frame: int
    time: str  # frame.time_epoch as tshark prints it (ns precision kept as text)
    client_port: int
    xid: int
    fh: str  # file handle bytes, hex
    offset: int
    count: int


@dataclass
class CaptureReads:
    calls: list[ReadCall] = field(default_factory=list)
    reply_xids: set[tuple[int, int]] = field(default_factory=set)  # (client port, xid)
    reply_bytes: int = 0
    duplicate_calls: int = 0

    def summary(self) -> dict[str, int]:
        keys = {(c.client_port, c.xid) for c in self.calls}
        return {"read_calls": len(self.calls), "read_replies": len(keys & self.reply_xids),
                "matched": len(keys & self.reply_xids), "unanswered": len(keys - self.reply_xids),
                "duplicate_calls": self.duplicate_calls, "reply_bytes": self.reply_bytes}


def _tshark(pcap: Path, extra: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([*tshark_args(), "-r", str(pcap), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def decode_reads(pcap: Path) -> CaptureReads:
    """Every NFS READ call (v3 READ or v4 COMPOUND READ) and the xids of the READ replies."""
    out = CaptureReads()
    seen: set[tuple[int, int]] = set()
    proc = _tshark(pcap, ["-T", "pdml", "-Y", f"rpc.msgtyp == 0 && {READ_FILTER}"])
    assert proc.stdout is not None
    for _, packet in ET.iterparse(proc.stdout, events=("end",)):
        if packet.tag != "packet":
            continue
        frame, when, sport = 0, "", 0
        xid, fh = -1, ""
        offset: int | None = None
        is_v3_read, in_v4_read = False, False
        for el in packet.iter():
            name = el.get("name")
            show = el.get("show", "")
            if name == "frame.number":
                frame = int(show)
            elif name == "frame.time_epoch":
                when = show
            elif name == "tcp.srcport":
                sport = int(show)
            elif el.tag == "proto" and name == "rpc":
                xid, fh, offset, is_v3_read, in_v4_read = -1, "", None, False, False
            elif name == "rpc.xid":
                xid = int(show, 16)
            elif name == "nfs.procedure_v3":
                is_v3_read = show == "6"
            elif name == "nfs.opcode":
                in_v4_read = show == "25"
            elif name == "nfs.fhandle":
                fh = el.get("value", "")
            elif name in ("nfs.offset3", "nfs.offset4") and (is_v3_read or in_v4_read):
                offset = int(show)
            elif name in ("nfs.count3", "nfs.count4") and offset is not None:
                key = (sport, xid)
                if key in seen:
                    out.duplicate_calls += 1
                else:
                    seen.add(key)
                    out.calls.append(ReadCall(frame, when, sport, xid, fh, offset, int(show)))
                offset = None
        packet.clear()
    _finish(proc, pcap)
    proc = _tshark(pcap, ["-T", "fields", "-E", "occurrence=a", "-E", "aggregator=,",
                          "-e", "tcp.dstport", "-e", "rpc.xid", "-e", "nfs.count3",
                          "-e", "nfs.read.data_length",
                          "-Y", f"rpc.msgtyp == 1 && {READ_FILTER}"])
    assert proc.stdout is not None
    for line in proc.stdout:
        cols = line.decode().rstrip("\n").split("\t")
        dport = int(cols[0].split(",")[0])
        for x in filter(None, cols[1].split(",")):
            out.reply_xids.add((dport, int(x, 16)))
        for col in cols[2:4]:
            out.reply_bytes += sum(int(v) for v in col.split(",") if v)
    _finish(proc, pcap)
    return out


def _finish(proc: subprocess.Popen[bytes], pcap: Path) -> None:
    assert proc.stderr is not None
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise LabError(f"tshark failed on {pcap}: {err.strip()}")


def addresses(pcap: Path) -> list[str]:
    """Every IPv4/IPv6 address in the capture (the lab requires exactly ["127.0.0.1"])."""
    exe = tshark_args()[0]
    proc = subprocess.Popen([exe, "-n", "-r", str(pcap), "-T", "fields", "-E", "occurrence=a",
                             "-E", "aggregator=,", "-e", "ip.src", "-e", "ip.dst", "-e", "ipv6.src",
                             "-e", "ipv6.dst"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    seen: set[str] = set()
    for line in proc.stdout:
        for col in line.decode().rstrip("\n").split("\t"):
            seen.update(a for a in col.split(",") if a)
    _finish(proc, pcap)
    return sorted(seen)
