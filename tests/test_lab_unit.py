"""Fast checks of the capture lab's pure parts: scenarios, plans, export contents, manifests."""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqheur.lab import manifest as mf
from seqheur.lab.data import BLOCK, ExportFile, expected_bytes, mismatches, write_file
from seqheur.lab.scenarios import (
    SCENARIOS,
    LabError,
    Reader,
    Scenario,
    plan_app_reads,
    plan_reads,
)
from seqheur.lab.server import ganesha_config
from seqheur.lab.tshark import CaptureReads, ReadCall

KiB, MiB = 1024, 1024 * 1024


def _find(pred) -> list[Scenario]:
    return [s for s in SCENARIOS.values() if pred(s)]


def test_required_scenarios_exist():
    one = lambda s, pat: len(s.readers) == 1 and s.readers[0].pattern == pat  # noqa: E731
    assert _find(lambda s: s.via == "libnfs" and s.version == 3 and one(s, "seq"))
    assert _find(lambda s: s.via == "libnfs" and s.version == 4 and one(s, "seq"))
    for n in (4, 16):
        assert _find(lambda s: len(s.readers) == n and all(r.pattern == "seq" for r in s.readers))
    for k in (2, 4, 8):
        assert _find(lambda s: s.via == "libnfs" and one(s, "stride") and s.readers[0].streams == k)
    assert _find(lambda s: s.via == "libnfs" and one(s, "random"))
    assert _find(lambda s: s.via == "libnfs" and one(s, "backward"))
    assert _find(lambda s: one(s, "interleave") and len(s.readers[0].files) > 1
                 and s.readers[0].depth > 1)
    for ra in (128, 1024):
        for pat in ("seq", "stride", "random"):
            assert _find(lambda s: s.via == "fuse" and s.read_ahead_kb == ra and one(s, pat)), (ra, pat)
    assert len(_find(lambda s: "demo" in s.tags)) == 1


def test_file_names_have_one_size_across_scenarios():
    sizes: dict[str, set[int]] = {}
    for s in SCENARIOS.values():
        for f in s.files:
            sizes.setdefault(f.name, set()).add(f.size)
    assert all(len(v) == 1 for v in sizes.values()), sizes


def test_scenario_validation():
    files = (ExportFile("a.bin", MiB),)
    with pytest.raises(LabError):
        Scenario("x", "", 2, files, (Reader("seq", ("a.bin",), 4096),))
    with pytest.raises(LabError):
        Scenario("x", "", 3, files, (Reader("seq", ("b.bin",), 4096),))
    with pytest.raises(LabError):
        Scenario("x", "", 3, files, (Reader("seq", ("a.bin",), 4096),), via="fuse")
    with pytest.raises(LabError):
        Scenario("x", "", 3, files, (Reader("seq", ("a.bin",), 2 * MiB),))
    with pytest.raises(LabError):
        Scenario("x", "", 3, files, (Reader("seq", ("a.bin",), 4096, mmap=True),))
    with pytest.raises(LabError):
        Reader("zigzag", ("a.bin",), 4096)
    with pytest.raises(LabError):
        Reader("random", ("a.bin",), 4096)


SIZES = {"a": 10 * 8192 + 100, "b": 3 * 8192}


def test_plan_seq_and_backward():
    seq = plan_reads(Reader("seq", ("a",), 8192), SIZES)
    assert [o for _, o, _ in seq] == [i * 8192 for i in range(11)]
    assert seq[-1] == ("a", 10 * 8192, 100)  # clipped at EOF, never past it
    assert plan_reads(Reader("backward", ("a",), 8192), SIZES) == seq[::-1]


@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
def test_plan_stride_covers_once_and_each_substream_is_sequential(k):
    plan = plan_reads(Reader("stride", ("a",), 8192, streams=k), SIZES)
    offs = [o for _, o, _ in plan]
    assert sorted(offs) == [i * 8192 for i in range(11)]
    # request i belongs to sub-stream i % k (until a short last round); each sub-stream ascends
    # by exactly one record
    per = -(-11 // k)
    streams: dict[int, list[int]] = {}
    for o in offs:
        streams.setdefault(o // 8192 // per, []).append(o)
    assert len(streams) == min(k, -(-11 // per))
    for run in streams.values():
        assert all(b - a == 8192 for a, b in zip(run, run[1:]))


def test_plan_interleave_round_robin():
    plan = plan_reads(Reader("interleave", ("a", "b"), 8192), SIZES)
    assert [f for f, _, _ in plan[:6]] == ["a", "b"] * 3
    assert Counter(f for f, _, _ in plan) == {"a": 11, "b": 3}


def test_plan_random_is_seeded_aligned_and_in_bounds():
    r = Reader("random", ("a", "b"), 4096, reads=500, seed=3)
    plan = plan_reads(r, SIZES)
    assert plan == plan_reads(r, SIZES)
    assert plan != plan_reads(Reader("random", ("a", "b"), 4096, reads=500, seed=4), SIZES)
    assert len(plan) == 500 and {f for f, _, _ in plan} == {"a", "b"}
    assert all(o % 4096 == 0 and o + n <= SIZES[f] and n == 4096 for f, o, n in plan)
    app = plan_app_reads(r, SIZES)
    assert len(app) == 500 and all(o + n <= SIZES[f] for f, o, n in app)


def test_plan_reads_cap():
    assert len(plan_reads(Reader("seq", ("a",), 8192, reads=4), SIZES)) == 4


def test_expected_bytes_layout():
    blk = expected_bytes("f.bin", 3 * BLOCK, BLOCK)
    assert blk.startswith(b"f.bin@000000003000=") and blk[31:32] == b"\n"
    assert blk[32:64] == b"rec001".ljust(31, b".") + b"\n"
    assert len(blk) == BLOCK


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 5 * BLOCK), st.integers(0, 3 * BLOCK))
def test_expected_bytes_slices_agree(offset, length):
    whole = expected_bytes("x", 0, 9 * BLOCK)
    assert expected_bytes("x", offset, length) == whole[offset:offset + length]


def test_mismatches_catch_wrong_file_shift_and_flip():
    good = expected_bytes("a", 8192, 8192)
    assert mismatches("a", 8192, good) == 0
    assert mismatches("b", 8192, good) > 0  # another file's stamp
    assert mismatches("a", 4096, good) > 0  # another block
    assert mismatches("a", 8192 + 32, good) > 0  # shifted by one record inside the block
    flipped = bytearray(good)
    flipped[5000] ^= 1
    assert mismatches("a", 8192, bytes(flipped)) == 1


def test_write_file_streams_the_same_bytes(tmp_path):
    digest = write_file(tmp_path, ExportFile("w.bin", 300 * BLOCK + 17))
    data = (tmp_path / "w.bin").read_bytes()
    assert data == expected_bytes("w.bin", 0, len(data)) and len(data) == 300 * BLOCK + 17
    import hashlib

    assert hashlib.sha256(data).hexdigest() == digest


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_c_pattern_matches_python(tmp_path):
    """clients/pattern.h (used by loadgen and the bridge) must produce data.py's bytes."""
    src = tmp_path / "p.c"
    header = Path(__file__).resolve().parents[1] / "src/seqheur/lab/clients/pattern.h"
    src.write_text(f'#include <time.h>\n#include "{header}"\n' + r'''
int main(void) {
    char rec[PAT_RECORD];
    for (unsigned b = 0; b < 3; b++)
        for (unsigned i = 0; i < PAT_BLOCK / PAT_RECORD; i++) {
            pat_record("name_with_a_rather_long_tail.bin", b + 1000, i, rec);
            fwrite(rec, 1, PAT_RECORD, stdout);
        }
    return 0;
}
''')
    subprocess.run(["gcc", "-O1", "-o", str(tmp_path / "p"), str(src)], check=True)
    out = subprocess.run([str(tmp_path / "p")], check=True, capture_output=True).stdout
    name = "name_with_a_rather_long_tail.bin"
    assert out == expected_bytes(name, 1000 * BLOCK, 3 * BLOCK)


def test_ganesha_config_follows_the_spec(tmp_path):
    conf = ganesha_config(tmp_path / "export", tmp_path / "rec")
    assert "Bind_Addr" not in conf  # fatal inside a loopback-only namespace
    for key in ("Graceless = true", "Mount_Path_Pseudo = true", "Enable_UDP = false",
                "Clients = 127.0.0.1", "Access_Type = RO", "Name = VFS", "Pseudo = /export"):
        assert key in conf
    assert f"Path = {tmp_path / 'export'};" in conf


LOG = """V\t3
P\t700
F\t0\ta.bin\t16384\t0a0b
F\t1\tb.bin\t8192\t0c0d
R\t0\t100\t0\t0\t8192
R\t1\t101\t1\t0\t8192
D\t0\t150\t8192\t0
R\t2\t160\t0\t8192\t8192
D\t1\t170\t8192\t0
D\t2\t180\t8192\t0
X\t3\t0\t0
"""


def _capture(calls):
    cap = CaptureReads()
    for i, (fh, off, cnt) in enumerate(calls):
        cap.calls.append(ReadCall(i + 1, "0", 700, 1000 + i, fh, off, cnt))
        cap.reply_xids.add((700, 1000 + i))
    return cap


def test_parse_and_compare(tmp_path):
    (tmp_path / "c.log").write_text(LOG)
    log = mf.parse_client_log(tmp_path / "c.log")
    assert log.port == 700 and log.totals == (3, 0, 0) and len(log.issued) == 3
    rows = mf.read_rows([log])
    assert [r[4:7] for r in rows] == [["a.bin", 0, 8192], ["b.bin", 0, 8192], ["a.bin", 8192, 8192]]
    good = mf.compare([log], _capture([("0a0b", 0, 8192), ("0c0d", 0, 8192), ("0a0b", 8192, 8192)]))
    assert good["capture_equals_manifest"] and good["per_connection_order_equal"]
    assert good["all_replied"] and good["unknown_file_handles"] == 0
    swapped = mf.compare([log], _capture([("0c0d", 0, 8192), ("0a0b", 0, 8192),
                                          ("0a0b", 8192, 8192)]))
    assert swapped["capture_equals_manifest"] and not swapped["per_connection_order_equal"]
    short = mf.compare([log], _capture([("0a0b", 0, 8192), ("0c0d", 0, 8192)]))
    assert not short["capture_equals_manifest"] and short["missing_from_capture"] == 1
    wrong = mf.compare([log], _capture([("0a0b", 0, 8192), ("0a0b", 0, 8192),
                                        ("0a0b", 8192, 8192)]))
    assert not wrong["capture_equals_manifest"] and wrong["extra_in_capture"] == 1
    cap = _capture([("0a0b", 0, 8192), ("0c0d", 0, 8192), ("0a0b", 8192, 8192)])
    cap.reply_xids.discard((700, 1001))
    assert not mf.compare([log], cap)["all_replied"]


def test_manifest_dumps_is_json_with_one_row_per_line():
    import json

    man = {"a": 1, "reads": {"columns": ["x", "y"], "rows": [[1, "p"], [2, "q"]]},
           "app_reads": {"columns": ["z"], "rows": []}}
    text = mf.dumps(man)
    assert json.loads(text) == man
    assert '      [1,"p"],\n' in text


def test_lab_list_cli():
    from click.testing import CliRunner

    from seqheur.cli import cli

    res = CliRunner().invoke(cli, ["lab", "list", "--json"])
    assert res.exit_code == 0, res.output
    import json

    names = [s["name"] for s in json.loads(res.output)]
    assert names == list(SCENARIOS)
    res = CliRunner().invoke(cli, ["lab", "run", "no-such-scenario", "-o", "x"])
    assert res.exit_code == 1 and "unknown scenario" in res.output


def test_processes_stop_by_pid_newest_first(tmp_path):
    import os
    import signal

    from seqheur.lab.proc import Processes, is_running

    procs = Processes()
    order = tmp_path / "order"
    # each child appends its name when SIGTERM arrives, so the file shows the stop order
    script = ("import signal,sys,time\n"
              "def bye(*_):\n"
              f"    open({str(order)!r},'a').write(sys.argv[1]+'\\n'); sys.exit(0)\n"
              "signal.signal(signal.SIGTERM, bye)\n"
              "print('ready', flush=True)\n"
              "time.sleep(60)\n")
    import sys

    started = []
    for name in ("first", "second"):
        p = procs.start(name, [sys.executable, "-c", script, name], stdout=subprocess.PIPE)
        assert p.popen.stdout.readline() == b"ready\n"
        assert os.getsid(p.pid) == p.pid  # own session: a terminal Ctrl-C does not reach it
        started.append(p)
    procs.stop_all()
    assert order.read_text().split() == ["second", "first"]
    assert [r["returncode"] for r in procs.records()] == [0, 0]
    assert not any(is_running(p.pid, p.started) for p in started)
    # a child that ignores SIGTERM is killed after the timeout
    stubborn = procs.start("stubborn", [sys.executable, "-c",
                                        "import signal,time; signal.signal(signal.SIGTERM, "
                                        "signal.SIG_IGN); print('ready', flush=True); "
                                        "time.sleep(60)"], stdout=subprocess.PIPE)
    assert stubborn.popen.stdout.readline() == b"ready\n"
    assert Processes.stop(stubborn, timeout=0.5) == -signal.SIGKILL


def test_ganesha_log_filter_drops_known_noise(tmp_path):
    from seqheur.lab.server import serious_log_lines

    log = tmp_path / "g.log"
    log.write_text(
        "21/11 : epoch x : vm : nfs-ganesha-1[main] gsh_dbus_pkginit :DBUS :CRIT :dbus_bus_get failed\n"
        "21/11 : epoch x : vm : nfs-ganesha-1[main] init_export_root :EXPORT :CRIT :Lookup failed on path\n"
        "21/11 : epoch x : vm : nfs-ganesha-1[main] x :NFS CB :CRIT :gssd_refresh_krb5 no keytab\n"
        "21/11 : epoch x : vm : nfs-ganesha-1[main] main :MAIN :EVENT :Starting\n")
    out = serious_log_lines(log)
    assert "Lookup failed on path" in out and "dbus" not in out and "keytab" not in out


def test_sigterm_raises_unwinds_and_restores_the_handler():
    """kernel-check and lab validate clean up on SIGTERM as on Ctrl-C: inside the context
    manager SIGTERM raises, and the handler in force before is back afterwards."""
    import os
    import signal
    import threading

    from seqheur.loopdev import sigterm_raises

    class Stop(Exception):
        pass

    cleaned = []
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Stop, match="signal 15"):
        with sigterm_raises(Stop):
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                signal.sigtimedwait([], 0.5)  # let the handler run
            finally:
                cleaned.append(True)
    assert cleaned == [True] and signal.getsignal(signal.SIGTERM) is before
    # outside the main thread no handler can be set: signals are left alone
    seen = []
    t = threading.Thread(target=lambda: seen.append(sigterm_raises().__enter__() is None))
    t.start()
    t.join()
    assert seen == [True] and signal.getsignal(signal.SIGTERM) is before
