"""``seqheur lab validate``: the pure parts (stat deltas, errors, rows, report, the throttle's
profile) in the default suite; one small end-to-end run under the ``lab`` marker (root and
the lab packages; skips with the reason otherwise)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from seqheur.lab.scenarios import LabError
from seqheur.lab.validate import (DEFAULT_SCENARIOS, LOOP_MBPS, PROBE_SIZES, TARGETS,
                                  CostLine, HostCost, client_span, environment_problems,
                                  iops_for, loop_profile, median_of_runs, parse_block_stat,
                                  predict,
                                  probe_scenarios, rel_error, report, row, scenario, slots_of,
                                  stat_delta)
from seqheur.lab.manifest import ClientLog

BEFORE = ("  156578        2 35940002    22171      357      202   591576     1414        0    "
          "18096    23699        6        0  1035456        0       68      113\n")
AFTER = ("  156698       10 35972770    22183      357      202   591576     1414        0    "
         "18096    23711        6        0  1035456        0       68      113\n")


def test_stat_delta_reads_fields_1_and_3() -> None:
    assert parse_block_stat(BEFORE)["read_ios"] == 156578
    d = stat_delta(BEFORE, AFTER)
    assert d == {"disk_ops": 120, "disk_bytes": (35972770 - 35940002) * 512, "merges": 8}
    assert d["disk_bytes"] == 16 << 20


def test_stat_delta_rejects_garbage_and_resets() -> None:
    with pytest.raises(LabError):
        parse_block_stat("not a stat line")
    with pytest.raises(LabError, match="backwards"):
        stat_delta(AFTER, BEFORE)


def test_rel_error() -> None:
    assert rel_error(110, 100) == pytest.approx(0.1)
    assert rel_error(90.0, 100.0) == pytest.approx(-0.1)
    assert rel_error(1, 0) is None
    assert rel_error(None, 5) is None


def test_row_and_report() -> None:
    r = row("seq-v3", {"mbps": 20.0, "disk_bytes": 1000, "disk_ops": 100, "client_bytes": 7},
            {"mbps": 25.0, "disk_bytes": 1040, "disk_ops": 111}, {"table": "ideal"})
    assert r["scenario"] == "seq-v3"
    assert r["error_mbps"] == pytest.approx(0.25) and r["target_mbps_met"] is False
    assert r["error_disk_bytes"] == pytest.approx(0.04) and r["target_disk_bytes_met"] is True
    assert r["error_disk_ops"] == pytest.approx(0.11) and r["target_disk_ops_met"] is False
    assert r["measured"] == {"client_bytes": 7} and r["settings"] == {"table": "ideal"}
    json.dumps(r)
    text = report([r])
    assert "seq-v3" in text and "+25.0%" in text and "+4.0%" in text
    assert "disk_bytes ±5%: 1/1" in text and "mbps ±20%: 0/1" in text
    # the reads submitted (before merging) are compared too, without a target
    b = row("seq-v3", {"mbps": 20.0, "disk_bytes": 1000, "disk_ops": 95, "disk_bios": 128},
            {"mbps": 20.0, "disk_bytes": 1000, "disk_ops": 100, "disk_bios": 128}, {})
    assert (b["measured_disk_bios"], b["predicted_disk_bios"], b["error_disk_bios"]) == (
        128, 128, 0.0)
    assert "target_disk_bios_met" not in b and "disk_bios" not in b["measured"]
    assert b["error_disk_ops"] == pytest.approx(5 / 95)
    assert "128" in report([b])
    empty = row("x", {"mbps": None, "disk_bytes": 0, "disk_ops": 0}, {}, {})
    assert empty["target_mbps_met"] is None and "—" in report([empty])
    assert set(TARGETS) == {"mbps", "disk_bytes", "disk_ops"}


def test_client_span() -> None:
    a, b = ClientLog(), ClientLog()
    a.issued = [(0, 1_000_000_000, 0, 0, 4096), (1, 1_100_000_000, 0, 4096, 4096)]
    a.done = {0: (1_200_000_000, 4096, 0), 1: (1_300_000_000, 4096, 0)}
    b.issued = [(0, 1_050_000_000, 0, 0, 8192)]
    b.done = {0: (1_500_000_000, -5, 0)}  # a failed READ counts no bytes
    assert client_span([a, b]) == (8192, pytest.approx(0.5))
    with pytest.raises(LabError):
        client_span([ClientLog()])


def test_loop_profile_and_iops() -> None:
    bps = 20_000_000
    p = loop_profile(1 << 30, bps, iops_for(bps), 250)
    assert p.zone_mbps == (LOOP_MBPS,) and p.command_overhead_s == 0 and not p.cache.enabled
    assert (p.throttle.read_bps, p.throttle.read_iops, p.throttle.hz) == (bps, 4883, 250)
    # blk-throttle waits for the larger of the byte and the op wait: with this iops limit the
    # byte wait is the larger for every read of 4 KiB or more
    for size in (4096, 8192, 131072, 1 << 20):
        assert size / bps >= 1 / iops_for(bps) - 1e-12


def test_median_of_runs() -> None:
    one = ({"mbps": 20.0, "disk_ops": 9}, {"mbps": 21.0, "disk_ops": 9})
    assert median_of_runs([one]) == one
    runs = [({"mbps": m, "disk_bytes": 1000, "disk_ops": ops, "client_bytes": 7},
             {"mbps": p, "disk_bytes": 1000, "disk_ops": 100})
            for m, ops, p in ((20.0, 100, 30.0), (40.0, 104, 24.0), (25.0, 101, 26.0))]
    measured, predicted = median_of_runs(runs)
    assert measured["mbps"] == 25.0 and predicted["mbps"] == 26.0
    assert measured["disk_ops"] == 101 and isinstance(measured["disk_ops"], int)
    assert measured["mbps_spread"] == pytest.approx(2.0)
    assert [r["mbps"] for r in measured["runs"]] == [20.0, 40.0, 25.0]
    # an even number of runs: integers stay integers (the lower middle), rates are averaged
    even, _ = median_of_runs(runs[:2])
    assert even["disk_ops"] == 100 and even["mbps"] == pytest.approx(30.0)
    r = row("seq-v3", measured, predicted, {
        "device_probe": {"fixed_us": 30.0, "mbps": 6000.0, "per_op_us": {4096: 31.0}},
        "host_probe": {"reply": {"fixed_us": 40.0, "mbps": 350.0,
                                 "per_op_us": {"4096": 52.0, "131072": 414.0}},
                       "alone_us": 90.0, "disk_reads": 0}})
    assert r["error_mbps"] == pytest.approx(0.04) and r["measured"]["mbps_spread"] == 2.0
    text = report([r])
    assert "spread x2.00" in text and "4 KiB 52.0 µs, 128 KiB 414.0 µs" in text
    assert "one READ at a time: 4 KiB 90.0 µs" in text and "read 0 times" in text


def test_cost_line_goes_through_both_probes() -> None:
    line = CostLine.fit({4096: 50e-6, 131072: 400e-6})
    for size, seconds in ((4096, 50e-6), (131072, 400e-6)):
        assert line.time_us(size) == pytest.approx(1e6 * seconds, rel=1e-9)
    assert line.mbps == pytest.approx(126976 / 350, rel=1e-9)  # bytes per µs = MB/s
    assert line.per_op_us == {4096: pytest.approx(50.0), 131072: pytest.approx(400.0)}
    # large operations no slower a byte than small ones: no per-byte cost, the small's time
    flat = CostLine.fit({4096: 50e-6, 131072: 40e-6})
    assert flat.mbps == 0 and flat.time_us(1 << 20) == pytest.approx(50.0)
    # large operations more than proportionally slower: no negative fixed cost (a model
    # option must be >= 0); the line goes through the large operations' time
    steep = CostLine.fit({4096: 1e-6, 131072: 400e-6})
    assert steep.fixed_us == 0 and steep.time_us(131072) == pytest.approx(400.0)


def test_host_cost_gives_a_read_alone_the_probes_time() -> None:
    reply = CostLine.fit({4096: 50e-6, 131072: 400e-6})
    host = HostCost(reply, alone_us=120.0)
    # round trip + server CPU + the reply path of a 4 KiB READ = its time alone
    assert host.rtt_us(20.0) + 20.0 + reply.time_us(PROBE_SIZES[0]) == pytest.approx(120.0)
    assert HostCost(reply, alone_us=10.0).rtt_us(20.0) == 0.0
    opts = dict(kv.split("=") for kv in host.spec(20.0).split(":"))
    assert set(opts) == {"reply_us", "host_mbps", "rtt_us"}
    assert float(opts["host_mbps"]) == pytest.approx(reply.mbps, rel=1e-5)


def test_probe_scenarios_read_the_cached_file_at_the_probe_sizes() -> None:
    small, large, alone = probe_scenarios()
    assert [sc.readers[0].size for sc in (small, large, alone)] == [*PROBE_SIZES, PROBE_SIZES[0]]
    assert slots_of(alone) == 1 and slots_of(small) > 1 and slots_of(large) > 1
    assert {f.name for sc in (small, large, alone) for f in sc.files} == {
        f.name for f in scenario("seq-v3").files}


def test_loop_profile_from_the_device_probe() -> None:
    line = CostLine.fit({4096: 30e-6, 1 << 20: 200e-6})
    p = loop_profile(1 << 30, 20_000_000, iops_for(20_000_000), 250, line)
    assert p.zone_mbps == (pytest.approx(line.mbps),)
    assert p.command_overhead_s == pytest.approx(line.fixed_us * 1e-6)
    assert "O_DIRECT reads of the run's loop device" in p.sources["zones"]


def test_the_probed_host_slows_the_prediction_above_the_throttle() -> None:
    """A capture replayed on a fast device: with the host's reply path the model predicts at
    most what the path allows (replies one at a time), without it far more."""
    from pathlib import Path

    pcap = Path(__file__).resolve().parent.parent / "traces" / "demo-v3.pcap.gz"
    if not pcap.exists():
        pytest.skip("the bundled capture traces/demo-v3.pcap.gz is missing")
    sc = scenario("demo-v3")
    profile = loop_profile(1 << 30, 2_000_000_000, iops_for(2_000_000_000), 250)
    host = HostCost(CostLine.fit({4096: 50e-6, 131072: 400e-6}), alone_us=120.0)
    fast, _ = predict(pcap, sc, 128, 1280, 256 << 20, profile)
    slow, settings = predict(pcap, sc, 128, 1280, 256 << 20, profile, host=host)
    assert "reply_us=" in settings["timing"] and "rtt_us=" in settings["timing"]
    assert slow["disk_bytes"] == fast["disk_bytes"] and slow["disk_ops"] == fast["disk_ops"]
    assert slow["mbps"] < fast["mbps"]
    # every reply holds the path: the clients' bytes cannot come faster than it passes them
    assert slow["mbps"] <= host.reply.mbps * (1 + 1e-9)


def test_validation_scenarios() -> None:
    assert len(DEFAULT_SCENARIOS) >= 6
    for name in DEFAULT_SCENARIOS:
        sc = scenario(name)
        assert slots_of(sc) >= 1
    assert slots_of(scenario("val-seqdepth8-v3")) == 8
    assert slots_of(scenario("seq4-v3")) == 8
    assert slots_of(scenario("fuse-seq-ra128k-v3")) == 1
    with pytest.raises(LabError):
        scenario("no-such-scenario")


def test_cli_is_registered() -> None:
    from seqheur.cli import cli

    res = CliRunner().invoke(cli, ["lab", "validate", "--help"])
    assert res.exit_code == 0 and "throttled loop device" in res.output
    assert "--repeat" in res.output and "--no-probe" in res.output
    bad = CliRunner().invoke(cli, ["lab", "validate", "--repeat", "0"])
    assert bad.exit_code == 2


# -- end to end -------------------------------------------------------------------------------

@pytest.mark.lab
def test_validate_smoke_end_to_end(tmp_path) -> None:
    problems = environment_problems([scenario("smoke-v3")])
    if problems:
        pytest.skip("; ".join(problems))
    from seqheur.cli import cli

    out = tmp_path / "rows.json"
    res = CliRunner().invoke(cli, ["lab", "validate", "smoke-v3", "--timeout", "60",
                                    "-o", str(out), "--json", "--captures", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = json.loads(out.read_text())
    assert json.loads(res.output) == rows
    (r,) = rows
    assert r["scenario"] == "smoke-v3"
    # 2 files of 1 MiB, read whole: the device read each byte once (cold cache), in 128 KiB
    # read-ahead windows at most
    assert r["measured_disk_bytes"] == 2 << 20
    assert 16 <= r["measured_disk_ops"] <= 2 * 16 + 4
    assert r["predicted_disk_bytes"] == 2 << 20
    assert r["measured_mbps"] > 0 and r["predicted_mbps"] > 0
    assert r["settings"]["read_ahead_kb"] == 128
    # the probes ran and gave the model its figures; the device is still named by its node
    assert r["settings"]["device"].startswith("loop")
    probe = r["settings"]["host_probe"]
    assert probe["disk_reads"] == 0 and probe["alone_us"] > 0 and probe["reply"]["fixed_us"] >= 0
    assert r["settings"]["device_probe"]["mbps"] > 0 and "reply_us=" in r["settings"]["timing"]
    assert (tmp_path / "smoke-v3.pcap.gz").exists()
    assert not list(tmp_path.glob(".lab-work-*"))
