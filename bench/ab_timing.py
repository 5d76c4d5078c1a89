"""A/B check of the closed-loop timing model: this tree against a base revision, same inputs.

    python bench/ab_timing.py [--base REV] [--quick]

The base (default: where this branch left ``main``) is exported with ``git archive`` into a
temporary folder; each side runs in a child process with its own ``src`` on ``PYTHONPATH``
and replays every case under every timing spec. Cases: the bundled traces
(``traces/*.pcap.gz``, ``traces/*.parquet``), synthetic workloads (``seqheur.workloads``:
the paper's readers with reordering, a 4-stride reader, random reads, a mix) and the replay
benchmark's stream (``bench_detect.make_stream``, 200 k READs; 20 k with ``--quick``).
Specs: both presets with a fifo and a cscan queue, plus the ideal defaults (every event at
one time: the tie order), think time from the trace, and few threads with multi-RPC READs.

Reported: per spec, the largest relative difference over the cases of every timing column
of the summary (``seqheur.metrics.TIMING_KEYS``), of every other summary column, and of the
per-READ issue and completion times. Exit status 1 when any exceeds ``--rel`` (1e-9).

    python bench/ab_timing.py --speed ROUNDS [--requests N] [--reps K]

instead times the replay benchmark's configuration (``bench_replay.py``: ``full``, and
``full+closed-loop`` with ``closed-loop:preset=paper-testbed``) on its stream of N READs
(default 2 M): each round runs a child process of the base and one of this tree, in turns;
each child warms up, then times ``full`` and ``full+closed-loop`` interleaved K times (CPU
time of the thread). Reported per side: the medians and the ratio of the two rates (the
benchmark's "timing adds <= 30 %" figure, target >= 1/1.3), from the same run.

    python bench/ab_timing.py --model ROUNDS [--requests N] [--reps K] [--fresh]

times ``closed_loop.run`` and its summary alone on the model's inputs for the replay
benchmark's configuration (N READs, default 2 M): each round a child process of the base and
one of this tree, in turns; each child replays once for the inputs, runs the model once
(warm-up), then K more times (default 15). Reported per round: the least and the median CPU
time of the thread. The children load the kernels from the on-disk caches as a replay does;
``--fresh`` gives each child empty temporary caches instead, so it runs the code it has just
compiled (the two can differ in speed by 15-20 % for one source: docs/timing.md, "Speed").
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SPECS = [f"closed-loop:preset={p}:scheduler={s}"
         for p in ("paper-testbed", "lab-loopback") for s in ("fifo", "cscan")]
EXTRA_SPECS = ["closed-loop", "closed-loop:preset=paper-testbed:think=trace",
               "closed-loop:slots=6:nfsd=2:rsize=4096:cpu_us=30:rtt_us=40:scheduler=cscan"]


def cases(quick: bool):
    """(name, input, replay options) for every case."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_detect import make_stream

    from seqheur import workloads as W

    for path in sorted((ROOT / "traces").glob("*.pcap.gz")) + sorted(
            (ROOT / "traces").glob("*.parquet")):
        yield path.name, str(path), {}
    mb = 8 if quick else 32
    paper = W.paper(readers=8, total_mb=mb, reorder=0.06, seed=3)
    stride = W.stride(4, file_mb=mb / 2, seed=1)
    rand = W.random_reads(files=4, file_mb=mb / 2, requests=2000 if quick else 20000, seed=2)
    yield "paper-8-readers", paper, {}
    yield "stride-4", stride, {}
    yield "random", rand, {}
    yield "mix", W.mix([paper, stride, rand], seed=4), {}
    from seqheur.replay import observed_file_sizes

    s = make_stream(20_000 if quick else 200_000)
    yield "bench-stream", s, dict(table="nfsheur:64x4", policy="freebsd4-cluster",
                                  file_sizes=observed_file_sizes(s))


def child(out: str, quick: bool) -> None:
    """Replay every case under every spec with the seqheur on PYTHONPATH; write the results."""
    import seqheur
    from seqheur import metrics as M

    rows = {}
    arrays = {}
    for name, src, opts in cases(quick):
        for spec in SPECS + EXTRA_SPECS:
            r = seqheur.replay(src, per_request=False, timing=spec, **opts)
            d = r.to_dict()
            key = f"{name}|{spec}"
            rows[key] = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                         for k, v in d.items()}
            rows[key]["_timing_keys"] = list(M.TIMING_KEYS)
            arrays[key + "|issue"] = r.timing.issue_s
            arrays[key + "|done"] = r.timing.done_s
    Path(out).write_text(json.dumps(rows))
    np.savez(out + ".npz", **arrays)


def speed_child(out: str, n: int, reps: int) -> None:
    """Time full and full+closed-loop replays interleaved; write the CPU seconds."""
    import time

    sys.path.insert(0, str(ROOT / "bench"))
    from bench_detect import make_stream

    import seqheur
    from seqheur.replay import observed_file_sizes

    stream = make_stream(n)
    sizes = observed_file_sizes(stream)
    base = dict(detector="freebsd4", table="nfsheur:64x4", policy="freebsd4-cluster",
                per_request=False, cache=256 << 20, profile="ide-7200", file_sizes=sizes)
    configs = {"full": {}, "full+closed-loop": {"timing": "closed-loop:preset=paper-testbed"}}
    for cfg in configs.values():  # warm-up: compiles, page faults
        seqheur.replay(stream, **base, **cfg)
    cpu: dict[str, list[float]] = {k: [] for k in configs}
    for _ in range(reps):
        for k, cfg in configs.items():
            c = time.thread_time()
            seqheur.replay(stream, **base, **cfg)
            cpu[k].append(time.thread_time() - c)
    Path(out).write_text(json.dumps(cpu))


def testbed_replayer(n: int):
    """The benchmark's stream of ``n`` READs fed to a replay with the paper's testbed
    closed-loop model (``freebsd4``, 256 MiB, ``ide-7200``): the model's inputs."""
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_detect import make_stream

    from seqheur.replay import Replayer, observed_file_sizes

    stream = make_stream(n)
    rp = Replayer(stream.file_ids, detector="freebsd4", table="nfsheur:64x4",
                  policy="freebsd4-cluster", cache=256 << 20, profile="ide-7200",
                  file_sizes=observed_file_sizes(stream), per_request=False,
                  timing="closed-loop:preset=paper-testbed")
    rp.feed(stream)
    return rp


def model_child(n: int, reps: int) -> None:
    """Time closed_loop.run and its summary alone on the benchmark's inputs; print JSON."""
    import time

    from seqheur.timing import closed_loop as CL

    rp = testbed_replayer(n)
    params, inputs = rp.timing.params, rp.timing_inputs()
    first = CL.run(params, inputs).summary(1)  # warm-up: compiles or loads the kernels
    cpu = []
    for _ in range(reps):
        c = time.thread_time()
        CL.run(params, inputs).summary(1)
        cpu.append(time.thread_time() - c)
    print(json.dumps({"cpu": cpu, "summary": first}))


def model(base_src: Path, rounds: int, n: int, reps: int, fresh: bool, tmp: str) -> None:
    print(f"closed_loop.run and its summary alone, {n} READs, least and median of {reps} "
          f"runs a child (ms){', each child compiling afresh' if fresh else ''}:")
    summaries = {}
    for r in range(rounds):
        line = []
        for side, src in (("base", base_src), ("new", ROOT / "src")):
            env = dict(os.environ, PYTHONPATH=str(src))
            if fresh:
                caches = tempfile.mkdtemp(dir=tmp)
                env.update(NUMBA_CACHE_DIR=f"{caches}/numba", SEQHEUR_CACHE_DIR=f"{caches}/k")
            out = subprocess.run([sys.executable, __file__, "--model-child", "--requests",
                                  str(n), "--reps", str(reps)], env=env, check=True, cwd=tmp,
                                 capture_output=True, text=True).stdout
            got = json.loads(out.splitlines()[-1])
            summaries[side] = got["summary"]
            cpu = np.asarray(got["cpu"]) * 1e3
            line.append(f"{side} {cpu.min():.2f} ({np.median(cpu):.2f})")
        print(f"  round {r + 1}: " + "   ".join(line), flush=True)
    if summaries["base"] != summaries["new"]:
        print("  the summaries differ:", summaries)


def speed(base_src: Path, rounds: int, n: int, reps: int, tmp: str) -> None:
    cpu: dict[str, dict[str, list[float]]] = {"base": {}, "new": {}}
    for r in range(rounds):
        for side, src in (("base", base_src), ("new", ROOT / "src")):
            path = str(Path(tmp) / f"speed-{side}-{r}.json")
            env = dict(os.environ, PYTHONPATH=str(src))
            subprocess.run([sys.executable, __file__, "--speed-child", path, "--requests",
                            str(n), "--reps", str(reps)], env=env, check=True, cwd=tmp)
            for k, v in json.loads(Path(path).read_text()).items():
                cpu[side].setdefault(k, []).extend(v)
    print(f"{n} READs, {rounds} rounds x {reps} interleaved reps per side; CPU seconds "
          f"(median, min-max) and the rate of full+closed-loop over full's:")
    for side, d in cpu.items():
        full, timed = (np.asarray(d[k]) for k in ("full", "full+closed-loop"))
        print(f"  {side:<5} full {np.median(full):.3f} ({full.min():.3f}-{full.max():.3f})  "
              f"full+closed-loop {np.median(timed):.3f} ({timed.min():.3f}-{timed.max():.3f})"
              f"  ratio {np.median(full) / np.median(timed):.3f}  timing adds "
              f"{np.median(timed) - np.median(full):.3f} s")


def rel_diff(a, b) -> float:
    if a is None or b is None:
        return 0.0 if a is b else math.inf
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if a == b:
            return 0.0
        return abs(a - b) / max(abs(a), abs(b))
    return 0.0 if a == b else math.inf


def array_rel(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return math.inf
    if a.size == 0:
        return 0.0
    scale = np.maximum(np.abs(a), np.abs(b))
    d = np.abs(a - b)
    return float(np.max(np.where(d == 0, 0.0, d / np.where(scale > 0, scale, 1.0))))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default=None, help="git revision (default: merge base with main)")
    ap.add_argument("--quick", action="store_true", help="smaller synthetic cases")
    ap.add_argument("--rel", type=float, default=1e-9, help="largest relative difference")
    ap.add_argument("--speed", type=int, metavar="ROUNDS", help="time instead of compare")
    ap.add_argument("--requests", type=int, default=2_000_000, help="READs (--speed)")
    ap.add_argument("--reps", type=int, default=None,
                    help="reps a child (--speed: 3 interleaved; --model: 15)")
    ap.add_argument("--model", type=int, metavar="ROUNDS", help="time the model alone")
    ap.add_argument("--fresh", action="store_true", help="--model: empty kernel caches")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--model-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--speed-child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.quick)
        return 0
    if args.reps is None:
        args.reps = 15 if args.model or args.model_child else 3
    if args.model_child:
        model_child(args.requests, args.reps)
        return 0
    if args.speed_child:
        speed_child(args.speed_child, args.requests, args.reps)
        return 0
    base = args.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT,
                                       capture_output=True, text=True,
                                       check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="ab_timing_") as tmp:
        tree = Path(tmp) / "base"
        tree.mkdir()
        archive = subprocess.run(["git", "archive", base, "src"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        if args.speed:
            speed(tree / "src", args.speed, args.requests, args.reps, tmp)
            return 0
        if args.model:
            model(tree / "src", args.model, args.requests, args.reps, args.fresh, tmp)
            return 0
        out = {}
        for side, src in (("base", tree / "src"), ("new", ROOT / "src")):
            path = str(Path(tmp) / f"{side}.json")
            env = dict(os.environ, PYTHONPATH=str(src))
            cmd = [sys.executable, __file__, "--child", path] + (["--quick"] if args.quick
                                                                 else [])
            subprocess.run(cmd, env=env, check=True, cwd=tmp)
            out[side] = (json.loads(Path(path).read_text()), np.load(path + ".npz"))
        (a, aa), (b, bb) = out["base"], out["new"]
        worst: dict[str, list[float]] = {}
        for key in sorted(a):
            spec = key.split("|")[1]
            tk = set(a[key]["_timing_keys"])
            w = worst.setdefault(spec, [0.0, 0.0, 0.0, 0.0])
            for k, v in a[key].items():
                if k == "_timing_keys":
                    continue
                d = rel_diff(v, b[key].get(k))
                if k in tk:
                    w[0] = max(w[0], d)
                else:
                    w[1] = max(w[1], d)
            w[2] = max(w[2], array_rel(aa[key + "|issue"], bb[key + "|issue"]))
            w[3] = max(w[3], array_rel(aa[key + "|done"], bb[key + "|done"]))
        ncases = len({k.split("|")[0] for k in a})
        print(f"base {base[:12]} vs this tree, {ncases} cases; largest relative difference:")
        print(f"{'spec':<76} {'timing cols':>11} {'other cols':>10} {'issue_s':>9} "
              f"{'done_s':>9}")
        bad = False
        for spec, w in worst.items():
            print(f"{spec:<76} " + " ".join(f"{x:>{n}.2g}" for x, n in
                                              zip(w, (11, 10, 9, 9))))
            bad |= max(w) > args.rel
        print("FAIL" if bad else f"OK: every difference <= {args.rel:g}")
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
