"""``seqheur lab validate``: the pure parts (stat deltas, errors, rows, report, the throttle's
profile) in the default suite; one small end-to-end run under the ``lab`` marker (root and
the lab packages; skips with the reason otherwise)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from seqheur.lab.scenarios import LabError
from seqheur.lab.validate import (DEFAULT_SCENARIOS, LOOP_MBPS, TARGETS, client_span,
                                  environment_problems, iops_for, loop_profile,
                                  parse_block_stat, rel_error, report, row, scenario, slots_of,
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
    assert (tmp_path / "smoke-v3.pcap.gz").exists()
    assert not list(tmp_path.glob(".lab-work-*"))
