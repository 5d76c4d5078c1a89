"""CLI start-up: `seqheur --help` and small real jobs, cold (empty numba cache) and warm.

Peer: the bare interpreter (`python -c pass`), the floor any Python CLI pays. Cold runs use a
fresh NUMBA_CACHE_DIR so every kernel compiles; warm runs reuse it (numba's `cache=True`).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from _common import ROOT, parse_args, run_measured, summarize, write_result

SAMPLE = ROOT.parent / "traces" / "synthetic-mix.parquet"


def jobs() -> dict[str, list[str]]:
    exe = [sys.executable, "-m", "seqheur"]
    out = {"help": exe + ["--help"], "stats": exe + ["stats", str(SAMPLE), "--json"]}
    try:
        import seqheur.replay  # noqa: F401

        out["replay"] = exe + ["replay", str(SAMPLE), "--detector", "slowdown", "--table",
                               "freebsd4", "--json"]
    except ImportError:
        pass
    return out


def main() -> int:
    args = parse_args("cli")
    reps = args.reps
    base = [sys.executable, "-c", "pass"]
    figures = []
    for name, cmd in jobs().items():
        cold, warm, floor = [], [], []
        for _ in range(reps):
            cache = tempfile.mkdtemp(prefix="seqheur-numba-")
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "SEQHEUR_CACHE_DIR": f"{cache}/kernels",
                   "SEQHEUR_PROGRESS": "0"}
            try:
                r = run_measured(cmd, env=env)
                if r["returncode"] != 0:
                    raise SystemExit(f"{' '.join(cmd)} failed: {r['stderr'].decode()[-500:]}")
                cold.append(r["seconds"])
                warm.append(run_measured(cmd, env=env)["seconds"])
                floor.append(run_measured(base, env=env)["seconds"])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
        for kind, samples in (("cold", cold), ("warm", warm)):
            figures.append({
                "metric": f"`seqheur {name}` {kind} start (s)", "unit": "s",
                "seqheur": summarize(samples), "peer": summarize(floor),
                "peer_name": "python -c pass",
                "ratio": statistics.median(samples) / statistics.median(floor),
                "target": "report", "met": None})
    write_result("cli", args.out, figures=figures, params={"reps": reps, "sample": SAMPLE.name},
                 notes="ratio = seqheur seconds / bare interpreter seconds (lower is better)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
