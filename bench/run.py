"""Run every bench/bench_*.py, then compare with the previous results and print changes.

    python bench/run.py [--quick] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from _common import RESULTS, ROOT

NOISE = 0.15  # relative change of a median beyond which a figure is reported as changed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    args = ap.parse_args()
    scripts = sorted(ROOT.glob("bench_*.py"))
    if args.names:
        scripts = [s for s in scripts if s.stem.removeprefix("bench_") in args.names]
    failed = []
    for script in scripts:
        name = script.stem.removeprefix("bench_")
        out = RESULTS / f"{name}.json"
        previous = json.loads(out.read_text()) if out.exists() else None
        cmd = [sys.executable, str(script), "--out", str(out)] + (["--quick"] if args.quick else [])
        print(f"\n### {name}: {' '.join(cmd[1:])}", flush=True)
        if subprocess.call(cmd, cwd=ROOT.parent) != 0:
            failed.append(name)
            continue
        if previous:
            compare(previous, json.loads(out.read_text()))
    import render_docs

    render_docs.main()
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


def compare(old: dict, new: dict) -> None:
    before = {f["metric"]: f for f in old.get("figures", [])}
    for f in new.get("figures", []):
        o = before.get(f["metric"])
        if not o or not (o.get("seqheur") and f.get("seqheur")):
            continue
        a, b = o["seqheur"]["median"], f["seqheur"]["median"]
        if a and abs(b - a) / abs(a) > NOISE:
            print(f"  changed: {f['metric']}: {a:.4g} -> {b:.4g} ({(b - a) / a:+.0%}) since {old.get('date')}")


if __name__ == "__main__":
    sys.exit(main())
