"""Which OpenBLAS kernels numpy uses, and another set to test under (`make test-blas`).

numpy's wheels ship OpenBLAS built for every x86-64 core type (DYNAMIC_ARCH), which picks its
kernels from the CPU at load time; OPENBLAS_CORETYPE forces a core type, so one machine can run
the kernels another CPU would (an AMD EPYC gets the Haswell ones). threadpoolctl reports the core type in
use, so the switch is checked, not assumed.

    python tools/blas_core.py              # the core type in use (honours OPENBLAS_CORETYPE)
    python tools/blas_core.py --pick       # another core type this CPU can run
    python tools/blas_core.py --expect Haswell  # exit 1 unless OpenBLAS reports Haswell
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def core_in_use() -> str:
    import numpy  # noqa: F401  (loads numpy's OpenBLAS)
    import threadpoolctl

    for info in threadpoolctl.threadpool_info():
        if info.get("internal_api") == "openblas":
            return f"{info.get('architecture')} (OpenBLAS {info.get('version')}, numpy {numpy.__version__})"
    raise SystemExit("numpy is not using OpenBLAS here: no BLAS core type to switch")


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def pick(current: str) -> str:
    """Haswell (the AVX2 kernels an AMD EPYC runs too: OpenBLAS reports Zen as Haswell) unless
    that is what runs already or the CPU lacks AVX2; else Nehalem (SSE4.2 only: numpy 2 needs
    at least that, so every host runs it)."""
    cur = current.split()[0].lower()
    if cur != "haswell" and {"avx2", "fma"} <= cpu_flags():
        return "Haswell"
    return "Nehalem"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pick", action="store_true")
    ap.add_argument("--expect")
    a = ap.parse_args()
    cur = core_in_use()
    if a.pick:
        print(pick(cur))
    elif a.expect:
        ok = cur.split()[0].lower() == a.expect.lower()
        print(f"OpenBLAS core type in use: {cur}" + ("" if ok else f"; expected {a.expect}"),
              file=sys.stderr)
        return 0 if ok else 1
    else:
        print(cur)
    return 0


if __name__ == "__main__":
    sys.exit(main())
