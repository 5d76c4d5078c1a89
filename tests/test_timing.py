"""Timing models (seqheur.timing, docs/timing.md): the spec grammar with presets, the laws of
the closed-loop model, and that disk-only (or no model) leaves the summary as it was."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from floatcmp import SUMMARY_REL
from seqheur import metrics as M
from seqheur import options as O
from seqheur.errors import SeqheurError, SpecError
from seqheur.replay import observed_file_sizes, replay, replay_chunks
from seqheur.streams import ReadStream
from seqheur.timing import TIMINGS, parse_timing, registered_timings
from seqheur.timing.closed_loop import PRESETS, Params

K8 = 8192
IDEAL = "closed-loop:slots=1:think=none:rtt_us=0:cpu_us=0:link_mbps=0:host_mbps=0"


@st.composite
def streams(draw, max_files: int = 4, max_n: int = 60, max_count: int = 4 * K8):
    """A few files read sequentially, with jumps back and forth; request times increasing."""
    n = draw(st.integers(1, max_n))
    files = draw(st.integers(1, max_files))
    seed = draw(st.integers(0, 2 ** 16))
    rng = np.random.default_rng(seed)
    f = rng.integers(0, files, n)
    pos = np.zeros(files, np.int64)
    off = np.empty(n, np.int64)
    cnt = rng.choice([K8, K8, 2 * K8, 4096, 0, max_count], n)
    for i in range(n):
        if rng.random() < 0.2:
            pos[f[i]] = int(rng.integers(0, 64)) * K8
        off[i] = pos[f[i]]
        pos[f[i]] += cnt[i]
    t = np.cumsum(rng.integers(0, 3_000_000, n))
    return ReadStream.from_arrays(f * 31 + 7, off, cnt, time_ns=t)


def throttled(profile: str, mbps: float):
    """The profile ``profile`` behind a blk-throttle read limit of ``mbps`` MB/s (CONFIG_HZ
    250: slices of 100 ms), or the profile itself for 0."""
    from seqheur.disk.profile import DriveCache, HostThrottle
    from seqheur.disk.registry import parse_disk

    if not mbps:
        return profile
    model = parse_disk(profile).model()  # its options: drive_cache=false is the model's
    return model.profile.replace(throttle=HostThrottle(read_bps=int(mbps * 1e6), hz=250),
                                 cache=model.profile.cache if model.drive_cache
                                 else DriveCache())


def _summary(s: ReadStream, timing=None, policy: str = "auto", profile: str = "ide-7200",
             detector: str = "freebsd4", **kw):
    return replay(s, detector, "freebsd4", policy, profile=profile, file_sizes="observed",
                  per_request=False, timing=timing, **kw)


# --------------------------------------------------------------------------------------------
# the grammar


def test_registry_and_presets() -> None:
    assert TIMINGS.names() == ["disk-only", "closed-loop"]
    for name, e in TIMINGS.entries().items():
        assert e.name == name and e.doc and e.source and e.builtin
        for o in O.options(e.params):
            assert o.doc and (o.unit or o.kind in ("choice", "bool")), (name, o.name)
    rows = {r["name"]: r for r in registered_timings()}
    assert set(rows["closed-loop"]["presets"]) == {"paper-testbed", "lab-loopback"}
    p = parse_timing("closed-loop:preset=paper-testbed").params
    assert (p.slots, p.nfsd, p.rsize, p.link_mbps) == (8, 8, 8192, 125.0)
    for preset, values in PRESETS.items():
        p = parse_timing(f"closed-loop:preset={preset}").params
        assert {k: getattr(p, k) for k in values} == values
    # options after a preset override it; the canonical spec keeps the preset
    t = parse_timing("closed-loop:preset=paper-testbed:slots=2,rtt_us=0")
    assert (t.params.slots, t.params.rtt_us, t.params.nfsd) == (2, 0.0, 8)
    assert t.spec == "closed-loop:preset=paper-testbed:slots=2:rtt_us=0.0"
    # a value equal to the default but not to the preset survives the round trip
    t = parse_timing("closed-loop:preset=paper-testbed:scheduler=fifo")
    assert parse_timing(t.spec).params == t.params and t.params.scheduler == "fifo"
    assert parse_timing("disk-only").spec == "disk-only" and parse_timing("disk-only").disk_only
    assert parse_timing(None) is None


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(data=st.data())
def test_spec_round_trip(data) -> None:
    values = {}
    for o in O.options(Params):
        if not data.draw(st.booleans()):
            continue
        if o.kind == "choice":
            values[o.name] = data.draw(st.sampled_from(o.choices))
        elif o.kind == "float":
            values[o.name] = data.draw(st.floats(0, 1e4, allow_nan=False).map(
                lambda x: round(x, 3)))
        else:
            values[o.name] = data.draw(st.integers(1, 1 << 20))
    if values.get("clients") == "per-file":  # processes issue at once: no think time
        values.pop("think", None)
    text = "closed-loop" + "".join(f":{k}={O.Option(k, v, 'str').format(v)}"
                                   for k, v in values.items())
    t = parse_timing(text)
    for k, v in values.items():
        assert getattr(t.params, k) == v, (k, text)
    again = parse_timing(t.spec)
    assert again.params == t.params and again.spec == t.spec  # canonical is a fixed point


@pytest.mark.parametrize("spec, match", [
    ("closed-lop", r"unknown timing model 'closed-lop'; valid: disk-only, closed-loop"),
    ("closed-loop:slotz=3", r"unknown option 'slotz'; valid: preset=none .*slots=8 count"),
    ("closed-loop:preset=paper", r"expected one of none\|paper-testbed\|lab-loopback"),
    ("closed-loop:slots=0", r"slots must be >= 1"),
    ("closed-loop:rtt_us=-1", r"rtt_us must be >= 0"),
    ("closed-loop:scheduler=sstf", r"expected one of fifo\|cscan"),
    ("closed-loop:slots=4:slots=5", r"given twice"),
    ("closed-loop:clients=per-file:think=trace", r"clients=per-file .* needs think=none"),
    ("disk-only:slots=1", r"unknown option 'slots'; valid: none"),
    ("", r"non-empty"),
])
def test_spec_errors(spec: str, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        parse_timing(spec)


def test_timing_needs_a_disk() -> None:
    s = ReadStream.from_arrays([0] * 4, range(0, 4 * K8, K8), K8)
    with pytest.raises(SeqheurError, match="needs a disk profile"):
        replay(s, profile=None, timing="closed-loop")
    assert "e2e_seconds" not in replay(s, profile=None, timing="disk-only").to_dict()


def test_cli_timing() -> None:
    from seqheur.cli import cli
    from seqheur.demo import bundled_trace

    t = bundled_trace()
    r = CliRunner().invoke(cli, ["replay", str(t), "--timing", "closed-loop:slotz=1"])
    assert r.exit_code != 0 and "unknown option 'slotz'" in r.output
    assert "slots=8 count" in r.output
    r = CliRunner().invoke(cli, ["replay", str(t), "--timing",
                                 "closed-loop:preset=paper-testbed", "--json"])
    assert r.exit_code == 0, r.output
    import json

    d = json.loads(r.output)
    assert d["timing"] == "closed-loop:preset=paper-testbed"
    assert d["e2e_seconds"] > 0 and d["e2e_throughput_mbps"] > 0
    r = CliRunner().invoke(cli, ["replay", str(t), "--timing", "closed-loop"])
    assert r.exit_code == 0 and "e2e_throughput_mbps [MB/s" in r.output


# --------------------------------------------------------------------------------------------
# laws


@settings(max_examples=25, deadline=None)
@given(s=streams(), policy=st.sampled_from(["auto", "none", "fixed:2"]),
       a=st.integers(1, 6), more=st.integers(1, 6), rtt=st.sampled_from([0, 50, 500]),
       cpu=st.sampled_from([0, 20, 300]), nfsd=st.integers(1, 8),
       reply=st.sampled_from([0, 40]))
def test_more_slots_never_lower_e2e_throughput_under_fifo(s, policy, a, more, rtt, cpu,
                                                          nfsd, reply) -> None:
    """FIFO disk, idle at the start, no drive cache (the drive reading ahead while idle would
    make the disk itself faster when the clients leave it idle), requests of at most rsize
    bytes (one RPC each, so the disk queue sees the same order): more slots only issue
    earlier."""
    spec = f"closed-loop:rtt_us={rtt}:cpu_us={cpu}:nfsd={nfsd}:reply_us={reply}:scheduler=fifo"
    few = _summary(s, f"{spec}:slots={a}", policy, "ide-7200:drive_cache=false").to_dict()
    many = _summary(s, f"{spec}:slots={a + more}", policy,
                    "ide-7200:drive_cache=false").to_dict()
    assert many["e2e_seconds"] <= few["e2e_seconds"] * (1 + 1e-9) + 1e-12
    if few["demand_bytes"]:
        assert many["e2e_throughput_mbps"] >= few["e2e_throughput_mbps"] * (1 - 1e-9)


@settings(max_examples=25, deadline=None)
@given(s=streams(), profile=st.sampled_from(["ide-7200", "scsi-10k",
                                             "ide-7200:drive_cache=false"]),
       scheduler=st.sampled_from(["fifo", "cscan", "tcq"]))
def test_ideal_client_and_network_is_the_disk_time(s, profile, scheduler) -> None:
    """Infinite bandwidth, no round trip, no CPU, one slot, no think time, no read-ahead:
    the disk is never idle while the READs run (utilisation 1), and served in issue order
    (fifo) the READs see exactly the replay's disk time. cscan and tcq may serve the disk
    reads of one READ (one per missing run of its blocks) in another order than the replay
    priced them, so only the first holds for them (the example below: a READ whose second
    read lies past the head is served first)."""
    d = _summary(s, f"{IDEAL}:scheduler={scheduler}", "none", profile).to_dict()
    if scheduler == "fifo":
        assert d["e2e_seconds"] == pytest.approx(d["disk_seconds"], rel=1e-9, abs=1e-12)
    if d["disk_seconds"] > 0:
        assert d["disk_utilisation"] == pytest.approx(1.0, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(s=streams(), slots=st.integers(1, 8), reply=st.sampled_from([10, 300]),
       host=st.sampled_from([0, 50]), rtt=st.sampled_from([0, 100]))
def test_the_reply_path_takes_one_reply_at_a_time(s, slots, reply, host, rtt) -> None:
    """Every READ's reply holds the host's reply path for ``reply_us`` plus its bytes at
    ``host_mbps``, one reply at a time: the run lasts at least that sum, whatever the slots,
    and with one slot, no read-ahead and a drive without a cache (whose service times do
    not depend on when a read comes) it adds exactly ``reply_us`` to every READ."""
    spec = f"closed-loop:slots={slots}:rtt_us={rtt}:reply_us={reply}:host_mbps={host}"
    d = _summary(s, spec, "auto").to_dict()
    path = len(s) * reply * 1e-6 + (d["demand_bytes"] / (host * 1e6) if host else 0.0)
    assert d["e2e_seconds"] >= path * (1 - 1e-9)
    if slots == 1:
        plain = "ide-7200:drive_cache=false"
        d = _summary(s, spec, "none", plain).to_dict()
        base = _summary(s, f"closed-loop:slots=1:rtt_us={rtt}:host_mbps={host}", "none",
                        plain).to_dict()
        assert d["e2e_seconds"] == pytest.approx(base["e2e_seconds"] + len(s) * reply * 1e-6,
                                                 rel=1e-9, abs=1e-12)


def test_cscan_serves_one_reads_disk_reads_in_address_order_from_the_head() -> None:
    """The third READ misses blocks 46-47 and 49 of 8 KiB (block 48 is cached): two disk
    reads at once. With the head past block 48, cscan serves block 49 first and then wraps
    to 46-47; fifo serves them as issued, which is how the replay priced them."""
    s = ReadStream.from_arrays([0, 0, 0], [0, 393216, 376832], [4096, 4096, 32768])
    by = {sch: _summary(s, f"{IDEAL}:scheduler={sch}", "none", "ide-7200").to_dict()
          for sch in ("fifo", "cscan")}
    assert by["fifo"]["e2e_seconds"] == pytest.approx(by["fifo"]["disk_seconds"], rel=1e-9)
    assert by["cscan"]["disk_seconds"] == by["fifo"]["disk_seconds"]  # the replay's pricing
    assert not by["cscan"]["e2e_seconds"] == pytest.approx(by["fifo"]["e2e_seconds"],
                                                           rel=1e-6)
    assert by["cscan"]["disk_utilisation"] == pytest.approx(1.0, rel=1e-9)


@settings(max_examples=25, deadline=None)
@given(s=streams(), detector=st.sampled_from(["freebsd4", "slowdown", "linux-6",
                                              "linux-3.12"]),
       spec=st.sampled_from(["closed-loop", "closed-loop:preset=paper-testbed",
                             "closed-loop:preset=lab-loopback:think=trace",
                             "closed-loop:slots=3:scheduler=cscan:rsize=4096",
                             "closed-loop:clients=per-file:slots=2:nfsd=3:scheduler=tcq"]),
       shrink=st.integers(0, 3))
def test_bytes_are_conserved(s, detector, spec, shrink) -> None:
    """The replies carry the bytes the READs asked for after end-of-file clipping; the disk
    reads of the model are the replay's; every READ completes after it was issued."""
    sizes = observed_file_sizes(s) >> shrink  # smaller files: clipping
    r = replay(s, detector, "freebsd4", profile="ide-7200", file_sizes=sizes,
               per_request=False, timing=spec)
    d = r.to_dict()
    assert r.timing.client_bytes == d["demand_bytes"]
    assert r.timing.disk_bytes == d["disk_bytes"]
    assert r.timing.issue_s.size == d["requests"] == len(s)
    assert (r.timing.done_s >= r.timing.issue_s).all()
    assert d["e2e_seconds"] >= 0 and 0 <= (d["disk_utilisation"] or 0) <= 1 + 1e-9
    if d["requests"]:
        assert d["read_latency_p50_ms"] <= d["read_latency_p95_ms"] <= d["read_latency_p99_ms"]


@settings(max_examples=20, deadline=None)
@given(s=streams(), policy=st.sampled_from(["auto", "none", "fixed:4", "freebsd-cluster"]))
def test_disk_only_leaves_the_summary_unchanged(s, policy) -> None:
    base = _summary(s, None, policy).to_dict()
    assert tuple(base) == M.SUMMARY_KEYS
    same = _summary(s, "disk-only", policy)
    assert same.to_dict() == base and same.timing is None
    closed = _summary(s, "closed-loop:preset=paper-testbed", policy).to_dict()
    assert tuple(closed) == M.SUMMARY_KEYS + M.TIMING_KEYS
    assert {k: closed[k] for k in M.SUMMARY_KEYS} == base  # the model only adds columns


def test_chunks_give_the_same_timing() -> None:
    rng = np.random.default_rng(5)
    n = 600
    f = rng.integers(0, 5, n)
    off = np.zeros(n, np.int64)
    pos = np.zeros(5, np.int64)
    for i in range(n):
        off[i] = pos[f[i]]
        pos[f[i]] += K8
    s = ReadStream.from_arrays(f, off, K8, time_ns=np.arange(n) * 200_000)
    sizes = observed_file_sizes(s)
    spec = "closed-loop:preset=paper-testbed:think=trace"
    one = replay(s, file_sizes=sizes, per_request=False, timing=spec)
    cut = replay_chunks((s.slice(a, b) for a, b in [(0, 17), (17, 300), (300, n)]),
                        file_sizes=sizes, per_request=False, timing=spec)
    assert cut.to_dict() == one.to_dict()
    np.testing.assert_array_equal(cut.timing.done_s, one.timing.done_s)


def test_think_trace_never_issues_before_the_trace_time() -> None:
    n = 50
    t = np.arange(n) * 10_000_000 + 5_000_000  # 10 ms apart, the first at 5 ms
    s = ReadStream.from_arrays([0] * n, np.arange(n) * K8, K8, time_ns=t)
    r = replay(s, profile="ide-7200", file_sizes="observed", per_request=False,
               timing="closed-loop:think=trace")
    assert (r.timing.issue_s >= (t - t[0]) / 1e9 - 1e-12).all()
    assert r["e2e_seconds"] >= (t[-1] - t[0]) / 1e9
    none = replay(s, profile="ide-7200", file_sizes="observed", per_request=False,
                  timing="closed-loop")
    assert none["e2e_seconds"] < r["e2e_seconds"]


def test_read_ahead_does_not_hold_its_read_but_a_later_read_waits() -> None:
    """One sequential reader, read-ahead of 8 blocks, both READs issued at once: the first
    replies after its own block, before its read-ahead is done; the second (a hit on a block
    still being read ahead) waits for that read, though it issues no demand read."""
    s = ReadStream.from_arrays([0] * 2, [0, K8], K8)
    r = replay(s, "always", "ideal", "fixed:8", profile="ide-7200:drive_cache=false",
               file_sizes=[20 * K8], per_request=False,
               timing=IDEAL.replace("slots=1", "slots=2"))
    done = r.timing.done_s
    assert r["disk_sync_ops"] == 1 and r["hits"] == 1
    assert 0 < done[0] < done[1] <= r.timing.disk_end_s


def test_params_are_frozen() -> None:
    p = parse_timing("closed-loop").params
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.slots = 3  # type: ignore[misc]


def test_timing_result_public_surface() -> None:
    """TimingResult: the times given at once, or computed once when first read (then kept);
    a result without times must say how to get them; it pickles with its late times."""
    import pickle

    from seqheur.timing.closed_loop import TimingResult

    issue = np.array([0.0, 0.001])
    done = np.array([0.002, 0.004])
    r = TimingResult(issue, done, 0.003, 0.004, 16384, 16384, 2)
    assert r.has_times and r.issue_s is issue and r.done_s is done
    assert r.e2e_seconds == 0.004
    assert r.summary(16384)["disk_requests"] == 2
    calls = []

    def times():
        calls.append(1)
        return r

    late = TimingResult(None, None, 0.003, 0.004, 16384, 16384, 2,
                        latency_runs=(np.array([2.0, 3.0]), np.array([1, 1])),
                        last_done_s=0.004, times=times)
    assert not late.has_times and late.e2e_seconds == 0.004
    assert late.summary(16384) == pytest.approx(r.summary(16384), nan_ok=True)
    assert not calls  # the summary needs no times
    assert late.done_s is done and late.issue_s is issue and late.has_times
    assert calls == [1]  # computed once, then kept
    with pytest.raises(ValueError, match="both"):
        TimingResult(issue, None, 0.0, 0.0, 0, 0, 0)
    with pytest.raises(ValueError, match="needs latency_runs"):
        TimingResult(None, None, 0.0, 0.0, 0, 0, 0, last_done_s=0.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.disk_busy_s = 1.0  # type: ignore[misc]
    back = pickle.loads(pickle.dumps(r))
    assert np.array_equal(back.done_s, done) and back.disk_requests == 2


def test_a_plug_in_timing_model() -> None:
    """register_timing: a params dataclass and ``run(params, inputs) -> TimingResult``."""
    from seqheur.options import param
    from seqheur.timing import register_timing
    from seqheur.timing.closed_loop import TimingResult

    @dataclasses.dataclass(frozen=True)
    class Fixed:
        ms: float = param(2.0, unit="ms", doc="every READ takes this long, one at a time")

    def run(params, inputs):
        n = inputs.time_ns.size
        issue = np.arange(n) * params.ms / 1e3
        return TimingResult(issue, issue + params.ms / 1e3, 0.0, 0.0,
                            int(inputs.nbytes.sum()), int(inputs.op_length.sum()),
                            int(inputs.op_length.size))

    register_timing("toy-fixed", params=Fixed, run=run, doc="toy", replace=True)
    try:
        s = ReadStream.from_arrays([0] * 10, np.arange(10) * K8, K8)
        r = replay(s, profile="ide-7200", file_sizes="observed", timing="toy-fixed:ms=3")
        assert r["timing"] == "toy-fixed:ms=3.0"
        assert r["e2e_seconds"] == pytest.approx(0.03)
        assert r["read_latency_p99_ms"] == pytest.approx(3.0)
    finally:
        TIMINGS.unregister("toy-fixed")
    with pytest.raises(SpecError, match="unknown timing model 'toy-fixed'"):
        parse_timing("toy-fixed")


def test_summary_after_more_feeding_times_everything_fed():
    """A Replayer summarised, fed more, and summarised again times all of its READs (the
    first summary's timing result is not reused)."""
    from seqheur.replay import Replayer

    s = ReadStream.from_arrays([0] * 64, np.arange(64) * 8192, 8192)
    rp = Replayer(s.file_ids, detector="freebsd4", table="ideal", policy="none",
                  cache="64MiB", profile="ide-7200", file_sizes=np.array([64 * 8192]),
                  timing="closed-loop")
    rp.feed(s.slice(0, 32))
    first = rp.summary()["e2e_seconds"]
    rp.feed(s.slice(32, 64))
    assert rp.summary()["e2e_seconds"] > first


# --------------------------------------------------------------------------------------------
# the short event loop against the exact one; latency percentiles against numpy


def _inputs(s: ReadStream, spec: str, policy: str, profile: str):
    from seqheur.replay import Replayer

    rp = Replayer(s.file_ids, detector="freebsd4", table="freebsd4", policy=policy,
                  profile=profile, file_sizes=observed_file_sizes(s), per_request=False,
                  timing=spec)
    rp.feed(s)
    return rp.timing_inputs(), rp.timing.params


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80), policy=st.sampled_from(["auto", "none", "fixed:4"]),
       profile=st.sampled_from(["ide-7200", "scsi-10k:drive_cache=false"]),
       slots=st.integers(1, 6), extra=st.integers(0, 3),
       rtt=st.sampled_from([0, 37.5, 500]), cpu=st.sampled_from([0, 20, 300]),
       link=st.sampled_from([0, 54, 125]), reply=st.sampled_from([0, 0, 25]),
       rsize=st.sampled_from([4096, 1048576]), think=st.sampled_from(["none", "trace"]),
       scheduler=st.sampled_from(["fifo", "cscan", "tcq:tcq_depth=1", "tcq:tcq_depth=3"]),
       merge=st.sampled_from(["off", "plug", "elevator"]),
       throttle=st.sampled_from([0, 0.5, 5]))
def test_the_short_loop_is_the_exact_loop(s, policy, profile, slots, extra, rtt, cpu, link,
                                          reply, rsize, think, scheduler, merge,
                                          throttle) -> None:
    """With at least as many nfsd threads as slots the model runs a loop of CPU and disk
    events only (arrivals and replies computed when known), or the exact loop when a CPU
    event and the disk's fall at one time; either way it must give what the loop of every
    event gives."""
    from seqheur.timing import closed_loop as CL

    spec = (f"closed-loop:slots={slots}:nfsd={slots + extra}:rtt_us={rtt}:cpu_us={cpu}:"
            f"link_mbps={link}:reply_us={reply}:rsize={rsize}:think={think}:"
            f"scheduler={scheduler}:merge={merge}:max_request={3 * K8}")
    inputs, params = _inputs(s, spec, policy, throttled(profile, throttle))
    short = CL.run(params, inputs)
    full = CL.run(params, inputs, exact=True)
    # the same events in the same order: equal to rounding (tests/floatcmp.py SUMMARY_REL)
    for a, b in ((short.issue_s, full.issue_s), (short.done_s, full.done_s)):
        np.testing.assert_allclose(a, b, rtol=SUMMARY_REL, atol=1e-12)
    assert short.disk_busy_s == pytest.approx(full.disk_busy_s, rel=SUMMARY_REL, abs=1e-12)
    assert short.disk_end_s == pytest.approx(full.disk_end_s, rel=SUMMARY_REL, abs=1e-12)
    assert short.disk_requests == full.disk_requests


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80), ring=st.sampled_from([1, 2, 4, 16]), slots=st.integers(1, 6),
       nfsd=st.integers(1, 8), clients=st.sampled_from(["trace", "per-file"]),
       scheduler=st.sampled_from(["fifo", "cscan", "tcq:tcq_depth=2"]),
       merge=st.sampled_from(["off", "elevator"]), throttle=st.sampled_from([0, 0.5]))
def test_a_small_ring_of_reads_in_flight_changes_nothing(s, ring, slots, nfsd, clients,
                                                         scheduler, merge, throttle) -> None:
    """The state of the disk reads in flight lives in a ring; a run that finds it full starts
    again with a place for every read. Any ring gives the run of a place for every read, to
    the last bit."""
    from seqheur.timing import closed_loop as CL

    spec = (f"closed-loop:slots={slots}:nfsd={nfsd}:clients={clients}:scheduler={scheduler}:"
            f"merge={merge}:rtt_us=100:cpu_us=50")
    inputs, params = _inputs(s, spec, "fixed:4", throttled("ide-7200", throttle))
    wide = CL.run(params, inputs)
    kept = CL.OP_RING
    try:
        CL.OP_RING = ring
        a = CL.run(params, inputs)
    finally:
        CL.OP_RING = kept
    assert np.array_equal(a.issue_s, wide.issue_s) and np.array_equal(a.done_s, wide.done_s)
    assert (a.disk_busy_s, a.disk_end_s, a.disk_requests) == (
        wide.disk_busy_s, wide.disk_end_s, wide.disk_requests)


@pytest.mark.parametrize("ring, statuses", [(64, ["DONE"]), (1, ["RING_FULL", "DONE"])])
def test_the_ring_of_reads_in_flight_wraps_or_starts_again(ring, statuses,
                                                            monkeypatch) -> None:
    """Thousands of disk reads, a few dozen in flight at once: a ring of 64 places wraps
    many times and the run ends at once; a ring of one is full at the first overlap and
    the run starts again."""
    from seqheur import workloads as W
    from seqheur.streams import reads
    from seqheur.timing import closed_loop as CL

    s = reads(W.paper(readers=4, total_mb=16, reorder=0.06, seed=3))
    inputs, params = _inputs(s, "closed-loop:preset=paper-testbed", "fixed:4", "ide-7200")
    assert inputs.op_request.size > 20 * ring
    wide = CL.run(params, inputs)
    seen = []
    real = CL.simulate

    def spy(*args):
        out = real(*args)
        seen.append(int(out[2]))
        return out

    monkeypatch.setattr(CL, "simulate", spy)
    monkeypatch.setattr(CL, "OP_RING", ring)
    a = CL.run(params, inputs)
    assert seen == [getattr(CL, k) for k in statuses]
    assert np.array_equal(a.issue_s, wide.issue_s) and np.array_equal(a.done_s, wide.done_s)


# --------------------------------------------------------------------------------------------
# clients: one issuing in trace order, or a process per file


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80, max_files=1), slots=st.integers(1, 6), nfsd=st.integers(1, 8),
       scheduler=st.sampled_from(["fifo", "cscan", "tcq:tcq_depth=2"]),
       merge=st.sampled_from(["off", "plug"]), throttle=st.sampled_from([0, 0.5]))
def test_one_file_read_by_its_own_process_is_the_trace_order_client(s, slots, nfsd, scheduler,
                                                                     merge, throttle) -> None:
    """A trace of one file: its process issues the READs in trace order with ``slots``
    outstanding, as the one client does: the same run, to the last bit."""
    from seqheur.timing import closed_loop as CL

    base = f"closed-loop:slots={slots}:nfsd={nfsd}:scheduler={scheduler}:merge={merge}"
    profile = throttled("ide-7200", throttle)
    inputs, one = _inputs(s, base, "auto", profile)
    _, per_file = _inputs(s, f"{base}:clients=per-file", "auto", profile)
    a = CL.run(one, inputs)
    b = CL.run(per_file, inputs)
    assert np.array_equal(a.issue_s, b.issue_s) and np.array_equal(a.done_s, b.done_s)
    assert (a.disk_busy_s, a.disk_end_s, a.disk_requests) == (b.disk_busy_s, b.disk_end_s,
                                                              b.disk_requests)


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80), slots=st.integers(1, 4), nfsd=st.integers(1, 8),
       scheduler=st.sampled_from(["fifo", "cscan", "tcq"]), rtt=st.sampled_from([0, 100]))
def test_each_process_issues_its_reads_in_order_with_at_most_slots_outstanding(
        s, slots, nfsd, scheduler, rtt) -> None:
    """Per file: READs issued in trace order, none before a reply freed one of the process's
    ``slots``, every one completed after its issue; the processes start together."""
    from seqheur.timing import closed_loop as CL

    spec = (f"closed-loop:clients=per-file:slots={slots}:nfsd={nfsd}:scheduler={scheduler}:"
            f"rtt_us={rtt}")
    inputs, params = _inputs(s, spec, "auto", "ide-7200")
    r = CL.run(params, inputs)
    assert (r.done_s >= r.issue_s).all()
    for f in np.unique(inputs.file):
        x = np.flatnonzero(inputs.file == f)  # its READs in trace order
        issue, done = r.issue_s[x], r.done_s[x]
        assert (np.diff(issue) >= 0).all() and issue[0] == 0.0
        for i in range(slots, x.size):
            # when READ i was issued, at most slots - 1 of the earlier ones were outstanding
            assert np.sum(done[:i] > issue[i]) <= slots - 1, (f, i)


# --------------------------------------------------------------------------------------------
# the drive's tagged queue


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80), policy=st.sampled_from(["auto", "none", "fixed:4"]),
       slots=st.integers(1, 8), merge=st.sampled_from(["off", "plug"]),
       throttle=st.sampled_from([0, 0.5]), exact=st.booleans())
def test_a_tagged_queue_deeper_than_the_reads_is_arrival_order(s, policy, slots, merge,
                                                               throttle, exact) -> None:
    """A drive that can hold every read gets each one as it is queued and serves them in
    arrival order: the same run as a fifo queue, to the last bit (no elevator merging: that
    needs requests the host still holds)."""
    from seqheur.timing import closed_loop as CL

    base = f"closed-loop:slots={slots}:merge={merge}"
    profile = throttled("ide-7200", throttle)
    inputs, fifo = _inputs(s, f"{base}:scheduler=fifo", policy, profile)
    _, tcq = _inputs(s, f"{base}:scheduler=tcq:tcq_depth={inputs.op_length.size + 1}",
                     policy, profile)
    a = CL.run(fifo, inputs, exact=exact)
    b = CL.run(tcq, inputs, exact=exact)
    assert np.array_equal(a.issue_s, b.issue_s) and np.array_equal(a.done_s, b.done_s)
    assert (a.disk_busy_s, a.disk_end_s, a.disk_requests) == (b.disk_busy_s, b.disk_end_s,
                                                              b.disk_requests)


@pytest.mark.parametrize("depth, order", [(1, [0, 1, 2]), (2, [0, 2, 1]), (3, [0, 2, 1])])
def test_the_host_sends_in_elevator_order_and_the_drive_serves_in_arrival_order(depth,
                                                                                  order):
    """Read 0 reaches an idle drive; reads 2 (far) then 1 (near) are queued while it is busy.
    A one-deep tagged queue leaves the choice to the host's elevator (1, the nearer, next);
    a deeper one has sent both on and the drive serves them as they came."""
    from seqheur.timing import closed_loop as CL

    s = ReadStream.from_arrays([0, 0, 0], [0, K8, 2 * K8], [K8, K8, K8])
    inputs, _ = _inputs(s, "closed-loop", "none", "ide-7200")
    i64 = np.int64
    f = np.zeros(3, i64)
    o = np.array([0, 64 * K8, 640 * K8], i64)  # reads 0, 1, 2 in address order
    n = np.full(3, K8, i64)
    place = inputs.place
    addr = CL.op_address(f, o, place.ext_first, place.ext_base, i64(place.extent_bytes))
    d = CL.new_disk(inputs, addr, f, o, n, "off", 1 << 20, depth)
    ext = i64(place.extent_bytes)
    tail = CL._enqueue(d, 0, 0, 0, True, 0.0)
    j, _, head, tail, end = CL._serve_next(d, 0, tail, i64(0), True, ext, 0.0, 0.0)
    served = [int(j)]
    for k in (2, 1):
        tail = CL._enqueue(d, k, head, tail, True, 0.001)
    while len(served) < 3:
        tail = CL._tcq_done(d, tail)
        j, _, head, tail, end = CL._serve_next(d, head, tail, end, True, ext, 0.01, 0.0)
        served.append(int(j))
    assert served == order
    assert tail == 0 and d.blk[CL.TQ_COUNT] == 1  # the last one is at the drive, in service


# --------------------------------------------------------------------------------------------
# block-layer merging


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80, max_files=2), policy=st.sampled_from(["auto", "fixed:4"]),
       slots=st.integers(1, 8),
       scheduler=st.sampled_from(["fifo", "cscan", "tcq:tcq_depth=1", "tcq:tcq_depth=4"]),
       merge=st.sampled_from(["plug", "elevator"]),
       max_request=st.sampled_from([4096, K8, 3 * K8, 1 << 20]),
       throttle=st.sampled_from([0, 0.5, 5]))
def test_merging_never_adds_requests_and_keeps_the_bytes(s, policy, slots, scheduler, merge,
                                                         max_request, throttle) -> None:
    """Without merging every disk read is a request; merging only joins reads, so there are
    never more requests than reads, the bytes are the same, and every READ still completes.
    Without a throttle plug merging has nothing to merge (a request that passed is the
    driver's at once)."""
    from seqheur.timing import closed_loop as CL

    base = f"closed-loop:slots={slots}:scheduler={scheduler}:max_request={max_request}"
    profile = throttled("ide-7200", throttle)
    inputs, off = _inputs(s, base, policy, profile)
    plain = CL.run(off, inputs)
    assert plain.disk_requests == inputs.op_length.size
    _, params = _inputs(s, f"{base}:merge={merge}", policy, profile)
    merged = CL.run(params, inputs)
    assert merged.disk_requests <= plain.disk_requests
    assert (merged.disk_bytes, merged.client_bytes) == (plain.disk_bytes, plain.client_bytes)
    assert np.isfinite(merged.done_s).all() and (merged.done_s >= merged.issue_s).all()
    if merge == "plug" and throttle == 0:
        assert merged.disk_requests == plain.disk_requests


@settings(max_examples=30, deadline=None)
@given(s=streams(max_n=80), slots=st.integers(1, 8), throttle=st.sampled_from([0.2, 1, 5]),
       merge=st.sampled_from(["off", "plug"]))
def test_the_throttle_passes_no_more_than_its_rate_and_one_slice(s, slots, throttle,
                                                                 merge) -> None:
    """By the time the disk finished its last read the throttle has let through at most its
    rate times (that time + one slice of 100 ms + a jiffy of 4 ms, the clock's grain): the
    budget runs at most one slice ahead."""
    r = _summary(s, timing=f"closed-loop:slots={slots}:merge={merge}",
                 profile=throttled("scsi-10k", throttle))
    t = r.timing
    assert t.disk_bytes <= throttle * 1e6 * (t.disk_end_s + 0.1 + 0.004) * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(s=streams(max_n=60, max_files=2), merge=st.sampled_from(["off", "plug", "elevator"]),
       cscan=st.booleans(), max_request=st.sampled_from([4096, K8, 3 * K8, 1 << 20]),
       throttle=st.sampled_from([0, 0.1, 1]), seed=st.integers(0, 2 ** 16))
def test_a_merged_request_is_contiguous_and_within_the_limit(s, merge, cscan, max_request,
                                                             throttle, seed) -> None:
    """Reads entering the queue in any order at increasing times, the drive taking requests
    at random moments (and waiting for the throttle when it holds them): every read is
    served exactly once; a request holds reads of one file, contiguous in the file and on
    the disk, in no more than ``max_request`` bytes (or one read alone, which may be
    larger); without merging each request is one read; the request count is the reads
    less the merges."""
    from seqheur.timing import closed_loop as CL

    inputs, _ = _inputs(s, "closed-loop", "fixed:4", throttled("ide-7200", throttle))
    i64 = np.int64
    f, o, n = (np.ascontiguousarray(a, i64) for a in (inputs.op_file, inputs.op_offset,
                                                      inputs.op_length))
    place = inputs.place
    addr = CL.op_address(f, o, place.ext_first, place.ext_base, i64(place.extent_bytes))
    d = CL.new_disk(inputs, addr, f, o, n, merge, max_request)
    rng = np.random.default_rng(seed)
    order = rng.permutation(f.size) if rng.random() < 0.5 else np.arange(f.size)
    head = tail = 0
    served = []
    pos = 0
    now = 0.0
    while pos < order.size or head != tail or d.blk[3] < d.blk[4]:
        now += float(rng.exponential(0.002))
        if pos < order.size and (rng.random() < 0.7 or (head == tail
                                                         and d.blk[3] == d.blk[4])):
            tail = CL._enqueue(d, order[pos], head, tail, cscan, now)
            pos += 1
            continue
        j, hold, head, tail, end = CL._serve_next(d, head, tail, i64(0), cscan,
                                                 i64(place.extent_bytes), now, 0.0)
        if j < 0:
            now += hold
            continue
        if merge == "off" and throttle == 0:  # no block layer: a read is a request
            assert d.rq.shape[1] == 0 and end == addr[j] + n[j]
            served.append([int(j)])
            continue
        members = []
        k = j
        while k != CL.NO_LINK:
            members.append(int(k))
            k = d.rq[0, k]
        served.append(members)
        extent = sorted((int(o[k]), int(n[k]), int(addr[k])) for k in members)
        assert len({int(f[k]) for k in members}) == 1
        for (a, la, da), (b, _, db) in zip(extent, extent[1:]):
            assert a + la == b and da + la == db
        assert sum(x[1] for x in extent) == d.rq[3, j]
        assert (extent[0][0], extent[0][2]) == (d.rq[2, j], d.rq[4, j])
        assert end == d.rq[4, j] + d.rq[3, j]
        assert len(members) == 1 or d.rq[3, j] <= max_request
        if merge == "off":
            assert len(members) == 1
    assert sorted(k for m in served for k in m) == list(range(f.size))
    assert len(served) == f.size - d.blk[1]


@pytest.mark.parametrize("spec", ["closed-loop", "closed-loop:preset=paper-testbed",
                                  "closed-loop:preset=lab-loopback:think=trace"])
def test_the_short_loop_runs_on_the_demo_trace(spec, monkeypatch) -> None:
    """The short loop gives up only at a tie between a CPU event and the disk's, which the
    demo trace under the presets and the defaults does not have: the exact loop never runs."""
    from seqheur.demo import bundled_trace
    from seqheur.timing import closed_loop as CL

    def refuse(*args):
        raise AssertionError("the exact loop ran")

    monkeypatch.setattr(CL, "simulate_exact", refuse)
    assert replay(bundled_trace(), per_request=False, timing=spec)["e2e_seconds"] > 0


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 400), seed=st.integers(0, 2 ** 16),
       kind=st.sampled_from(["spread", "equal", "few", "wide", "zeros", "close", "signed"]))
def test_latency_percentiles_are_numpys(n, seed, kind) -> None:
    from seqheur.timing.closed_loop import latency_percentiles

    rng = np.random.default_rng(seed)
    issue = np.cumsum(rng.random(n))
    lat = {"spread": rng.exponential(0.01, n), "equal": np.full(n, 0.004),
           "few": rng.integers(0, 3, n) * 1e-3, "wide": rng.lognormal(-6, 4, n),
           "zeros": np.zeros(n),
           "close": 0.3 + rng.integers(0, 5, n) * 1e-12 + rng.random(n) * 1e-15,
           "signed": rng.normal(0, 0.01, n) * rng.integers(0, 2, n)}[kind]
    done = issue + lat
    q = (50, 95, 99, 0, 100, 33.3)
    ours = latency_percentiles(issue, done, q)
    if n == 0:
        assert all(np.isnan(ours))
        return
    # the same order statistics interpolated the same way: equal to rounding
    np.testing.assert_allclose(ours, np.percentile((done - issue) * 1e3, q), rtol=1e-12,
                               atol=0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 400), seed=st.integers(0, 2 ** 16), distinct=st.sampled_from([1, 4, 64]),
       kind=st.sampled_from(["spread", "few", "close", "signed"]))
def test_latency_percentiles_with_few_values_counted(n, seed, distinct, kind) -> None:
    """Crowded buckets are counted value by value up to ``distinct`` values, else collected
    and partitioned: either way numpy's percentiles."""
    from seqheur.timing.closed_loop import latency_percentiles

    rng = np.random.default_rng(seed)
    issue = np.cumsum(rng.random(n))
    lat = {"spread": rng.exponential(0.01, n), "few": rng.integers(0, 3, n) * 1e-3,
           "close": 0.3 + rng.integers(0, 5, n) * 1e-12,
           "signed": rng.normal(0, 0.01, n) * rng.integers(0, 2, n)}[kind]
    done = issue + lat
    q = (50, 95, 99, 0, 100, 33.3)
    ours = latency_percentiles(issue, done, q, distinct=distinct)
    np.testing.assert_allclose(ours, np.percentile((done - issue) * 1e3, q), rtol=1e-12,
                               atol=0)


@settings(max_examples=25, deadline=None)
@given(s=streams(max_n=80), slots=st.integers(1, 6), think=st.sampled_from(["none", "trace"]),
       scheduler=st.sampled_from(["fifo", "cscan"]), throttle=st.sampled_from([0, 0.5]))
def test_times_computed_late_match_the_summary(s, slots, think, scheduler, throttle) -> None:
    """The short loop keeps the READs' latencies (as runs of one value), the last reply and
    the latencies counted by bucket; the READs' times, asked for later, come from the same run again: their
    latencies and last completion are the ones the summary used, to the last bit (the same
    operations in the same order), and the counts those of the percentiles' first pass."""
    from seqheur.timing import closed_loop as CL

    spec = (f"closed-loop:slots={slots}:nfsd={slots}:think={think}:scheduler={scheduler}:"
            "rtt_us=100:cpu_us=50:link_mbps=100")
    inputs, params = _inputs(s, spec, "fixed:4", throttled("ide-7200", throttle))
    r = CL.run(params, inputs)
    if r.latency_runs is None:  # the exact loop ran (a tie): it keeps the times
        return
    values, counts = r.latency_runs
    lat = (r.done_s - r.issue_s) * 1e3
    # the same latencies (kept in the order the replies came, as runs of one value)
    assert np.array_equal(np.sort(np.repeat(values, counts)), np.sort(lat))
    assert r.e2e_seconds == (float(r.done_s.max()) if r.done_s.size else 0.0)
    # the loop counted the latencies by bucket as the percentiles' first pass counts them
    hist = np.zeros(CL._LAT_BUCKETS, np.int64)
    least = np.full(CL._LAT_BUCKETS, np.inf)
    most = np.full(CL._LAT_BUCKETS, -np.inf)
    assert CL._latency_buckets(lat, np.ones(lat.size, np.int64), hist, least, most)
    for mine, theirs in zip(r.latency_buckets, (hist, least, most)):
        assert np.array_equal(mine, theirs)
    exact = CL.run(params, inputs, exact=True)
    np.testing.assert_allclose(r.done_s, exact.done_s, rtol=SUMMARY_REL, atol=1e-12)
