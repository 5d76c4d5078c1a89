"""Dependency checks outside the lock: `make upgrade-check` and `make min-check`.

    python3 tools/depcheck.py upgrade --venv .venv-checks/upgrade
    python3 tools/depcheck.py min --venv .venv-checks/min --uv .venv-checks/tools/bin/uv

Each builds a fresh venv (removing the old one), installs seqheur with the test and dask extras
at the newest versions pyproject.toml allows (`upgrade`, pip's resolver, unlocked) or at the
lowest versions it declares (`min`, uv's `--resolution lowest-direct`: every direct dependency
at its `>=` bound, transitive ones resolved against them), runs the default test suite once,
then prints the versions installed (and, for `upgrade`, how they differ from the lock) and
which tests broke. Exit status: 0 if the suite passed, 1 if any test failed or errored, 2 if the
install itself failed. Only the standard library is used here, so any Python >= 3.11 runs it.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "test.lock.txt"
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"
EXTRAS = ".[test,dask,tune]"


def run(cmd: list[str], **kw) -> int:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.call([str(c) for c in cmd], cwd=ROOT, **kw)


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def freeze(py: Path) -> dict[str, str]:
    out = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze", "--exclude-editable"],
                         capture_output=True, text=True, check=True).stdout
    pins = {}
    for line in out.splitlines():
        if "==" in line:
            name, version = line.split("==", 1)
            pins[norm(name)] = version
    return pins


def locked() -> dict[str, str]:
    pins = {}
    for line in LOCK.read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==([^ \\;]+)", line)
        if m:
            pins[norm(m.group(1))] = m.group(2)
    return pins


def broken_tests(junit: Path) -> list[str]:
    if not junit.exists():
        return []
    broke = []
    for case in ET.parse(junit).iter("testcase"):
        for kind in ("failure", "error"):
            node = case.find(kind)
            if node is not None:
                name = f"{case.get('classname', '')}::{case.get('name', '')}"
                first = (node.get("message") or "").splitlines()[:1]
                broke.append(f"{kind.upper():7} {name}  {first[0][:160] if first else ''}")
    return broke


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["upgrade", "min"])
    ap.add_argument("--venv", type=Path, required=True)
    ap.add_argument("--uv", type=Path, help="uv executable (min mode)")
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest (default: the default suite)")
    args = ap.parse_args()
    venv = (ROOT / args.venv).resolve()
    py = venv / "bin" / "python"
    t0 = time.monotonic()

    shutil.rmtree(venv, ignore_errors=True)
    if run([sys.executable, "-m", "venv", venv]) != 0:
        return 2
    run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"])
    if args.mode == "upgrade":
        # Unlocked: pip picks the newest release each requirement allows. The constraints file
        # only steers a resolver trap (see it), it pins nothing of ours.
        rc = run([py, "-m", "pip", "install", "-q", "--upgrade", "--upgrade-strategy", "eager",
                  "-c", CONSTRAINTS, "-e", EXTRAS])
    else:
        if args.uv is None:
            ap.error("min needs --uv")
        rc = run([args.uv, "pip", "install", "-q", "--python", py, "--resolution", "lowest-direct",
                  "-c", CONSTRAINTS, "-e", EXTRAS])
    if rc != 0:
        print(f"\nWARNING: {args.mode}-check could not install seqheur[test,dask,tune] (exit {rc})")
        return 2

    pins = freeze(py)
    lock = locked()
    print(f"\n== {args.mode}-check: versions installed ==")
    for name in sorted(pins):
        was = lock.get(name)
        note = "" if was == pins[name] else (f"   (lock: {was})" if was else "   (not in lock)")
        print(f"  {name}=={pins[name]}{note}")

    # Own numba cache, so these runs neither reuse nor overwrite the work tree's compiled kernels.
    env = dict(os.environ, NUMBA_CACHE_DIR=str(venv / "numba-cache"), SEQHEUR_PROGRESS="0")
    junit = venv / "junit.xml"
    # As `make test`: the suite spread over every core (pytest-xdist, in the test extra).
    cores = os.cpu_count() or 1
    spread = ["-n", str(cores), "--dist", "worksteal"] if cores > 1 else []
    rc = run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
              *(args.pytest_args or spread)], env=env)
    broke = broken_tests(junit)
    minutes = (time.monotonic() - t0) / 60
    print(f"\n== {args.mode}-check: {len(broke)} test(s) broke, pytest exit {rc}, "
          f"{minutes:.1f} min ==")
    for line in broke:
        print("  " + line)
    if rc not in (0, 5) or broke:
        print(f"{args.mode}-check FAILED with the versions listed above")
        return 1
    print(f"{args.mode}-check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
