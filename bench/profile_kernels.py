"""Where does a numba kernel spend its time? perf sampling with names for JIT code.

    python bench/profile_kernels.py replay [--requests N | --trace PATH] [--profile ide-7200|none]
                                           [--detector D] [--table T] [--cache 64MiB]
    python bench/profile_kernels.py disk [--trace READS.npz]   (arrays f, o, l and sizes)
    python bench/profile_kernels.py nfsdump [--lines N]
    python bench/profile_kernels.py oracle [--requests N]   (the oracle's replay in bound)
    python bench/profile_kernels.py timing [--requests N]   (the closed-loop model alone)

perf (Debian ``linux-perf``) samples the process; numba's JIT code has no symbols, so after
the warm-up this script writes ``/tmp/perf-PID.map`` (perf's map format for JIT code) from the
compiled libraries of the kernels it ran. That needs the kernels compiled in this process, so
the profiled child runs with empty, temporary ``NUMBA_CACHE_DIR`` / ``SEQHEUR_CACHE_DIR``
(nothing is loaded from a cache). The report lists the share of samples per function; numba's
LLVM inlines small callees, so a name stands for itself plus what was inlined into it. Watch
for ``NRT_incref``/``NRT_decref`` (reference counting on a call between kernels: give the callee
``_nrt=False`` if it never allocates) and for a large share in a small caller (arguments passed
on the stack: numba passes every array as ~7 machine words).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def write_perf_map(*dispatchers) -> int:
    """Write /tmp/perf-PID.map for every function in the dispatchers' compiled libraries."""
    rows = []
    for d in dispatchers:
        for cres in d.overloads.values():
            lib = cres.library
            for fn in lib._final_module.functions:  # numba's library: no public accessor
                if fn.is_declaration:
                    continue
                try:
                    addr = lib.get_pointer_to_function(fn.name)
                except Exception:  # noqa: BLE001 - a helper without an address
                    continue
                if addr:
                    rows.append((addr, fn.name))
    rows.sort()
    dump = os.environ.get("SEQHEUR_PERF_DUMP")
    with open(f"/tmp/perf-{os.getpid()}.map", "w") as fh:
        for i, (addr, name) in enumerate(rows):
            size = rows[i + 1][0] - addr if i + 1 < len(rows) else 4096
            fh.write(f"{addr:x} {size:x} {name}\n")
            if dump:
                _dump_code(dump, addr, min(size, 1 << 16), name)
    return len(rows)


def _dump_code(folder: str, addr: int, size: int, name: str) -> None:
    """Copy a JIT function's machine code to ``folder`` for disassembly (perf cannot read it
    after the process ends); only bytes inside one mapping of this process are read."""
    import ctypes

    with open("/proc/self/maps") as fh:
        for line in fh:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                size = min(size, hi - addr)
                break
        else:
            return
    with open(f"{folder}/{addr:x}.bin", "wb") as out:
        out.write(ctypes.string_at(addr, size))
    with open(f"{folder}/{addr:x}.name", "w") as out:
        out.write(name)


def annotate(data: str, dump: str, match: str, top: int) -> None:
    """Print the hottest instructions of the JIT functions whose short name contains ``match``,
    with their disassembly (objdump) and share of the function's samples."""
    import collections
    import glob

    funcs = []
    for bin_path in glob.glob(f"{dump}/*.bin"):
        addr = int(Path(bin_path).stem, 16)
        name = _short(Path(bin_path).with_suffix(".name").read_text())
        if match in name:
            funcs.append((addr, addr + Path(bin_path).stat().st_size, name, bin_path))
    if not funcs:
        print(f"no profiled function matches {match!r}")
        return
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip"], capture_output=True,
                         text=True).stdout
    ips = collections.Counter(int(x, 16) for x in out.split())
    for lo, hi, name, bin_path in funcs:
        hits = {ip: n for ip, n in ips.items() if lo <= ip < hi}
        total = sum(hits.values())
        if not total:
            continue
        asm = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                              f"--adjust-vma={lo:#x}", bin_path], capture_output=True,
                             text=True).stdout
        lines = [(int(ln.split(":")[0], 16), ln.split("\t", 2)[-1].strip())
                 for ln in asm.splitlines() if ln[:1] == " " and ":" in ln.split()[0]]
        print(f"\n{name}: {total} samples; hottest instructions (share of the function, with "
              f"the 6 before each: a sample lands just after the instruction that stalled)")
        index = {a: k for k, (a, _) in enumerate(lines)}
        for ip, n in sorted(hits.items(), key=lambda kv: -kv[1])[:top]:
            k = index.get(ip)
            if k is None:
                continue
            print(f"  --- {100 * n / total:5.1f}%  at +{ip - lo:#x}")
            for a, text in lines[max(0, k - 6):k + 1]:
                mark = f"{100 * hits.get(a, 0) / total:5.1f}%" if hits.get(a) else "      "
                print(f"   {mark} {a - lo:6x}  {text}")


def _short(sym: str) -> str:
    """``_ZN7seqheur5cache10_evict_oneB3v38...`` -> ``seqheur.cache._evict_one``."""
    if not sym.startswith("_ZN"):
        return sym
    parts, i = [], 3
    while i < len(sym) and sym[i].isdigit():
        j = i
        while sym[j].isdigit():
            j += 1
        n = int(sym[i:j])
        parts.append(sym[j:j + n])
        i = j + n
    return ".".join(parts) or sym


# -- workloads (run in the profiled child) ----------------------------------------------------

def _replay(args) -> list:
    sys.path.insert(0, str(ROOT))
    from bench_detect import make_stream

    import seqheur
    from seqheur.disk.model import service_kernel
    from seqheur.replay import Replayer, observed_file_sizes

    if args.trace:  # e.g. a month-like trace of bench_sweep.py (sizes as a sweep takes them)
        from seqheur.sweep import load_stream, trace_file_sizes

        stream = load_stream(args.trace)
        sizes = trace_file_sizes(args.trace)[0]
    else:
        stream = make_stream(args.requests)
        sizes = observed_file_sizes(stream)
    profile = None if args.profile == "none" else args.profile
    kw = dict(detector=args.detector, table=args.table, policy=args.policy, cache=args.cache,
              profile=profile, file_sizes=sizes, per_request=False)
    warm = Replayer(stream.file_ids, **kw)
    warm.feed(stream)
    disps = [warm._run] + ([service_kernel] if profile else [])

    def run():
        seqheur.replay(stream, **kw)
    return [disps, run]


def _disk(args) -> list:
    import numpy as np

    from seqheur.disk.model import DiskModel, Layout, service_kernel

    if args.trace:  # disk reads saved as an .npz of f, o, l and the file sizes
        z = np.load(args.trace)
        model = DiskModel.from_profile("ide-7200", Layout())
        place = model.place(np.maximum(z["sizes"], 1))

        def run():
            model.service(z["f"], z["o"], z["l"], place, model.new_state())
        run()
        return [[service_kernel], run]
    rng = np.random.default_rng(1)
    n = 300_000
    files = rng.integers(0, 32, n)
    offs = np.zeros(n, np.int64)
    nxt = np.zeros(32, np.int64)
    for i, f in enumerate(files):  # 32 interleaved sequential readers of 128 KiB
        offs[i] = nxt[f]
        nxt[f] += 131072
    lens = np.full(n, 131072, np.int64)
    model = DiskModel.from_profile(args.profile if args.profile != "none" else "ide-7200", Layout())
    place = model.place(np.maximum(nxt, 1))
    model.service(files, offs, lens, place, model.new_state())

    def run():
        model.service(files, offs, lens, place, model.new_state())
    return [[service_kernel], run]


def _nfsdump(args) -> list:
    from seqheur.ingest import _nfsdump_kernel as K
    from seqheur.ingest.nfsdump import read_nfsdump

    work = ROOT / "work"
    cands = sorted(work.glob("nfsdump-mixed-*.txt"), key=lambda p: p.stat().st_size)
    if not cands:
        raise SystemExit("no bench/work/nfsdump-mixed-*.txt: run bench/bench_nfsdump.py once")
    path = cands[0]
    read_nfsdump(path)
    disps = [getattr(K, n) for n in dir(K) if hasattr(getattr(K, n), "overloads")]

    def run():
        read_nfsdump(path)
    return [disps, run]


def _oracle(args) -> list:
    """The oracle's replay as ``seqheur bound`` makes it, on bench_bound.py's workload."""
    import numpy as np

    from seqheur import workloads
    from seqheur.disk.model import service_kernel
    from seqheur.oracle import OracleReplayer, future_of, gap_blocks_of
    from seqheur.replay import observed_file_sizes
    from seqheur.streams import reads

    stream = reads(workloads.paper(32, args.requests * 8 / 1024, 8, 0.06, seed=1))
    sizes = np.asarray(observed_file_sizes(stream), np.int64)
    profile = None if args.profile == "none" else args.profile
    bs = 16384

    def run():
        from seqheur.disk.model import DiskModel, Layout

        model = DiskModel.from_profile(profile, Layout()) if profile else None
        fut = future_of(stream, sizes, bs, (256 << 20) // bs, gap_blocks_of(model, bs))
        rp = OracleReplayer(stream.file_ids, fut, block_size=bs, cache=256 << 20,
                            profile=profile, file_sizes=sizes, per_request=False)
        rp.feed(stream)
        return rp
    warm = run()
    return [[warm._run] + ([service_kernel] if profile else []), run]


def _timing(args) -> list:
    """The closed-loop model (``preset=paper-testbed``) alone, on the disk reads the replay
    benchmark's configuration records for it."""
    sys.path.insert(0, str(ROOT))
    from bench_detect import make_stream

    from seqheur.replay import Replayer, observed_file_sizes
    from seqheur.timing import closed_loop as CL

    stream = make_stream(args.requests)
    rp = Replayer(stream.file_ids, detector=args.detector, table=args.table,
                  policy=args.policy, cache=256 << 20, profile=args.profile,
                  file_sizes=observed_file_sizes(stream), per_request=False,
                  timing="closed-loop:preset=paper-testbed")
    rp.feed(stream)
    params, inputs = rp.timing.params, rp.timing_inputs()
    CL.run(params, inputs).summary(1)

    def run():
        CL.run(params, inputs).summary(1)
    return [[CL._short_loop, CL._count_or_collect], run]


WORKLOADS = {"replay": _replay, "timing": _timing, "disk": _disk, "nfsdump": _nfsdump, "oracle": _oracle}


def child(args) -> None:
    disps, run = WORKLOADS[args.workload](args)
    print(f"perf map: {write_perf_map(*disps)} functions", flush=True)
    ctl = os.environ.get("SEQHEUR_PERF_CTL")
    if ctl:  # sampling starts now: import, compilation and warm-up stay out of the profile
        with open(ctl, "w") as fh:
            fh.write("enable\n")
        time.sleep(0.1)
    t0 = time.perf_counter()
    for _ in range(args.reps):
        run()
    print(f"{args.reps} runs in {time.perf_counter() - t0:.2f} s", flush=True)
    if ctl:  # and stops before the interpreter's shutdown
        with open(ctl, "w") as fh:
            fh.write("disable\n")
        time.sleep(0.1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload", choices=sorted(WORKLOADS))
    ap.add_argument("--requests", type=int, default=2_000_000)
    ap.add_argument("--trace", help="replay: this trace file instead of a made stream")
    ap.add_argument("--cache", default="256MiB", help="replay: buffer-cache size")
    ap.add_argument("--detector", default="freebsd4")
    ap.add_argument("--table", default="nfsheur:64x4")
    ap.add_argument("--policy", default="auto")
    ap.add_argument("--profile", default="ide-7200", help="disk profile, or 'none'")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--annotate", metavar="NAME", help="also show the hottest instructions of "
                    "the kernels whose name contains NAME (e.g. replay, _evict_one)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0
    if not shutil.which("perf"):
        print("perf is not installed (apt-get install linux-perf)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="seqheur-prof-") as tmp:
        ctl = f"{tmp}/ctl"
        os.mkfifo(ctl)
        env = dict(os.environ, NUMBA_CACHE_DIR=f"{tmp}/numba", SEQHEUR_CACHE_DIR=f"{tmp}/kernels",
                   SEQHEUR_PERF_CTL=ctl)
        if args.annotate:
            os.mkdir(f"{tmp}/code")
            env["SEQHEUR_PERF_DUMP"] = f"{tmp}/code"
        data = f"{tmp}/perf.data"
        argv = [*sys.argv[1:], "--child"]
        rc = subprocess.call(["perf", "record", "-q", "-F", "2000", "-D", "-1",
                              f"--control=fifo:{ctl}", "-o", data, sys.executable, __file__,
                              *argv], env=env)
        if rc != 0:
            return rc
        rep = subprocess.run(["perf", "report", "-i", data, "--sort", "sym", "--stdio"],
                             capture_output=True, text=True).stdout
        if args.annotate:
            annotate(data, f"{tmp}/code", args.annotate, args.top)
    rows = []
    for line in rep.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "%" not in line:
            continue
        pct, _, sym = line.partition("%")
        sym = sym.split("]", 1)[-1].strip()
        rows.append((float(pct), _short(sym)))
    total_jit = sum(p for p, s in rows if s.startswith("seqheur"))
    print(f"\n{'share':>7}  function (seqheur kernels: {total_jit:.1f}% of the samples taken "
          f"after the warm-up)")
    for pct, sym in rows[:args.top]:
        print(f"{pct:6.2f}%  {sym}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
