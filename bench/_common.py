"""Shared helpers for benchmarks under bench/: machine facts, repeated timing, result files.

Each benchmark is a script ``bench/bench_NAME.py`` that accepts ``--quick`` and ``--out PATH``
and writes one JSON result (see ``write_result``) plus a printed table. ``bench/run.py`` runs
them all and compares with the previous results.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
# generated inputs (git-ignored); SEQHEUR_BENCH_WORK puts them elsewhere (a larger disk)
WORK = Path(os.environ.get("SEQHEUR_BENCH_WORK") or ROOT / "work")


def parse_args(name: str, argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=f"seqheur benchmark: {name}")
    p.add_argument("--quick", action="store_true", help="small inputs, fewer repetitions")
    p.add_argument("--out", type=Path, default=RESULTS / f"{name}.json")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 5, quick 3)")
    args = p.parse_args(argv)
    if args.reps is None:
        args.reps = 3 if args.quick else 5
    return args


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "processor": _cpu_model(),
    }
    for mod in ("numpy", "numba", "polars", "pyarrow"):
        try:
            info[mod] = __import__(mod).__version__
        except ImportError:
            pass
    try:
        import seqheur

        info["seqheur"] = seqheur.__version__
    except ImportError:
        pass
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def summarize(samples: list[float]) -> dict[str, float]:
    return {"min": min(samples), "median": statistics.median(samples), "max": max(samples),
            "n": len(samples)}


def figure(metric: str, unit: str, ours: list[float], peer: list[float] | None, peer_name: str,
           target: str = "report", met: bool | None = None) -> dict[str, Any]:
    """One figure of :func:`write_result` from both sides' samples of a cost (seconds, bytes):
    the ratio is the peer's median over ours, so above 1 says seqheur costs less."""
    ratio = statistics.median(peer) / statistics.median(ours) if peer else None
    return {"metric": metric, "unit": unit, "seqheur": summarize(ours),
            "peer": summarize(peer) if peer else None, "peer_name": peer_name,
            "ratio": ratio, "target": target, "met": met}


def time_call(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleaved(runners: dict[str, Callable[[], Any]], reps: int, warmup: int = 1) -> dict[str, list[float]]:
    """Time each runner ``reps`` times, interleaved (A B A B ...), after ``warmup`` rounds."""
    for _ in range(warmup):
        for fn in runners.values():
            fn()
    samples: dict[str, list[float]] = {k: [] for k in runners}
    for _ in range(reps):
        for k, fn in runners.items():
            samples[k].append(time_call(fn)[0])
    return samples


def run_measured(cmd: list[str], **kw: Any) -> dict[str, Any]:
    """Run a child process; wall seconds, its own peak RSS (MB) and the largest peak RSS of
    any process it started (``descendant_rss_mb``: a sweep's worker processes).

    Peak RSS is each process's VmHWM, sampled from /proc while it runs (every 10 ms): the
    rusage of wait4 is not used because a forked child inherits its parent's high-water mark.
    """
    import threading

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)
    peak_kb: dict[int, int] = {}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            pending = [proc.pid]
            while pending:
                pid = pending.pop()
                try:
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            peak_kb[pid] = max(peak_kb.get(pid, 0), int(line.split()[1]))
                            break
                    pending += [int(c) for c in
                                Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
                except (OSError, ValueError):
                    pass
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    dt = time.perf_counter() - t0
    done.set()
    sampler.join()
    own = peak_kb.pop(proc.pid, 0)
    return {"seconds": dt, "rss_mb": own / 1024.0,
            "descendant_rss_mb": max(peak_kb.values(), default=0) / 1024.0,
            "returncode": proc.returncode, "stdout": stdout, "stderr": stderr}


def write_result(name: str, out: Path, *, figures: list[dict[str, Any]], params: dict[str, Any],
                 notes: str = "") -> dict[str, Any]:
    """Write the result JSON and print a table.

    Each figure: {"metric", "unit", "seqheur": summary, "peer": summary|None, "peer_name",
    "ratio" (median seqheur/peer in the better-is-higher sense), "target", "met"}.
    """
    doc = {
        "name": name,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "params": params,
        "figures": figures,
        "notes": notes,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, out)
    print_table(doc)
    return doc


def print_table(doc: dict[str, Any]) -> None:
    print(f"\n== {doc['name']} ({doc['date']})")
    print(f"{'metric':40s} {'seqheur (median)':>18s} {'peer (median)':>16s} {'ratio':>8s}  target")
    for f in doc["figures"]:
        s = f.get("seqheur") or {}
        p = f.get("peer") or {}
        ratio = f.get("ratio")
        print(f"{f['metric'][:40]:40s} {_fmt(s.get('median')):>18s} {_fmt(p.get('median')):>16s} "
              f"{_fmt(ratio):>8s}  {f.get('target', '')}{'  OK' if f.get('met') else ('  MISSED' if f.get('met') is False else '')}")


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run bench/run.py or a bench/bench_*.py script")
