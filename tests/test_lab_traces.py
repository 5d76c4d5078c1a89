"""The lab captures shipped in traces/: small, documented, and equal to their manifests.

Runs by default with seqheur's own pcap reader; the tshark cross-check carries the ``oracle``
marker (tshark is an external tool).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[1] / "traces"
MANIFESTS = sorted(TRACES.glob("*.manifest.json"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _wanted(man: dict) -> Counter:
    c = man["reads"]["columns"]
    return Counter((r[c.index("file")], r[c.index("offset")], r[c.index("length")])
                   for r in man["reads"]["rows"])


def test_a_handful_of_small_documented_captures():
    assert 3 <= len(MANIFESTS) <= 10
    readme = (TRACES / "README.md").read_text()
    kinds = set()
    for path in MANIFESTS:
        man = _load(path)
        pcap = TRACES / man["pcap"]["file"]
        assert pcap.exists() and pcap.stat().st_size == man["pcap"]["bytes"] <= 1_000_000
        assert f"`{pcap.name}`" in readme
        assert man["checks"]["ok"] is True and man["checks"]["capture_equals_manifest"] is True
        kinds.add((man["scenario"]["via"], man["scenario"]["nfs_version"]))
    assert ("libnfs", "3") in kinds and ("libnfs", "4.0") in kinds and ("fuse", "3") in kinds
    demo = _load(TRACES / "demo-v3.manifest.json")
    assert len(demo["scenario"]["readers"]) >= 5


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name.split(".")[0])
def test_seqheur_reader_sees_the_manifest_reads(path):
    try:
        from seqheur.ingest.pcap import read_pcap
    except ImportError as exc:
        pytest.skip(f"seqheur's pcap reader is not available ({exc})")
    man = _load(path)
    res = read_pcap(TRACES / man["pcap"]["file"])
    table = res[0] if isinstance(res, tuple) else res
    cols = table.to_pydict()
    names = {int(h["crc32"], 16): h["name"] for h in man["file_handles"]}
    got = Counter((names.get(crc), off, cnt) for op, crc, off, cnt in
                  zip(cols["op"], cols["fh_crc32"], cols["offset"], cols["count"]) if op == "read")
    assert got == _wanted(man)


@pytest.mark.oracle
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name.split(".")[0])
def test_tshark_sees_the_manifest_reads(path):
    if shutil.which("tshark") is None:
        pytest.skip("tshark not installed")
    from seqheur.lab.tshark import decode_reads

    man = _load(path)
    cap = decode_reads(TRACES / man["pcap"]["file"])
    names = {h["fh"]: h["name"] for h in man["file_handles"]}
    assert Counter((names.get(c.fh), c.offset, c.count) for c in cap.calls) == _wanted(man)
    assert cap.summary()["unanswered"] == 0
