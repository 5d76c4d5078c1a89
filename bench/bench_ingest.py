"""`seqheur ingest` end to end vs tshark (-T fields) on the same capture, same run.

Input: captures made by ``seqheur.ingest.pcap.synth.generate_read_capture`` (NFSv3 sequential
READs by 4 UDP and 4 TCP clients, as bench_pcap.py), 1 GiB and 256 MiB (256 and 64 MiB with
--quick), in the OS page cache (each is read once before timing): both tools read the same
bytes from memory.

Each repetition runs, interleaved: ``seqheur ingest BIG -o out.parquet`` (a fresh process:
interpreter start, imports, numba cache load, decode, Parquet write, summary), tshark's
``-T fields`` pass over BIG (bench_pcap.py's field list: the READ calls and replies), the
same two on SMALL (the scaling figure: BIG is 4x SMALL), and seqheur on a capture of a few
frames (the fixed start-up cost). seqheur's bytecode is written first, as an install
writes it (see byte_compile_seqheur). Each child is measured by a small launcher (wall, CPU =
user + system, peak RSS of the child alone). seqheur's READ rows and tshark's READ calls are
checked to agree before any figure is written.

Figures: end-to-end wall of each and the ratio (target: seqheur >= 20x tshark on BIG), CPU
seconds of each (the machine is shared: wall inflates with the neighbours' load, CPU less),
peak RSS of each (target: seqheur <= 1 GiB), time(BIG) / time(SMALL) (target <= 4.4), and the
same ratio with the start-up subtracted (the decoding work itself).
"""

from __future__ import annotations

import os
import statistics
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import WORK, parse_args, summarize, write_result  # noqa: E402
from bench_pcap import TSHARK_FIELDS, run_child  # noqa: E402

NAME = "ingest"


def make_capture(mb: int, name: str | None = None, **kw: int) -> Path:
    from seqheur.ingest.pcap.synth import ReadCaptureParams, generate_read_capture

    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / (name or f"pcap-nfs3-read-{mb}MB.pcap")
    if not path.exists():
        t0 = time.perf_counter()
        info = generate_read_capture(path, ReadCaptureParams(target_bytes=mb << 20, **kw))
        print(f"generated {path}: {info} in {time.perf_counter() - t0:.1f} s", flush=True)
    return path


def byte_compile_seqheur() -> None:
    """Write seqheur's bytecode before timing, as installing the package does. Otherwise, with
    PYTHONDONTWRITEBYTECODE set, every timed process compiles from source each module edited
    since its bytecode was last written (~15 ms of CPU of a start-up, measured with the
    ingest modules then stale in a working tree)."""
    import compileall

    import seqheur

    compileall.compile_dir(Path(seqheur.__file__).resolve().parent, quiet=1)


def warm_page_cache(path: Path) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(1 << 24):
            pass


def read_rows(parquet: Path) -> int:
    import pyarrow.parquet as pq

    t = pq.read_table(parquet, columns=["op"])
    return sum(1 for v in t.column("op").to_pylist() if v == "read")


def tshark_read_calls(stdout: bytes) -> int:
    return len({ln.split(b"\t")[1] for ln in stdout.splitlines() if ln.split(b"\t")[2] == b"0"})


def main() -> None:
    args = parse_args(NAME)
    big_mb = 256 if args.quick else 1024
    big = make_capture(big_mb)
    small = make_capture(big_mb // 4)
    tiny = make_capture(1, "pcap-nfs3-read-tiny.pcap", udp_clients=1, tcp_clients=1, files=1)
    tshark = shutil.which("tshark")
    if tshark is None:
        sys.exit("tshark is not installed (apt-get install tshark)")
    out = WORK / "ingest-out.parquet"
    seq = [sys.executable, "-m", "seqheur", "ingest"]
    cmds = {
        "seqheur_big": [*seq, str(big), "-o", str(out)],
        "tshark_big": [tshark, "-r", str(big), *TSHARK_FIELDS],
        "seqheur_small": [*seq, str(small), "-o", str(out)],
        "tshark_small": [tshark, "-r", str(small), *TSHARK_FIELDS],
        "seqheur_startup": [*seq, str(tiny), "-o", str(out)],
    }
    byte_compile_seqheur()
    for p in (big, small, tiny):
        warm_page_cache(p)
    # warm-up (numba's cache filled, files cached) and the row check
    check = run_child(cmds["seqheur_big"])
    if check["returncode"] != 0:
        sys.exit(f"seqheur ingest failed: {check}")
    ours = read_rows(out)
    theirs = tshark_read_calls(run_child(cmds["tshark_big"])["stdout"])
    print(f"READ rows: seqheur {ours}, tshark {theirs}", flush=True)
    if ours != theirs:
        sys.exit(f"seqheur and tshark disagree on the READ rows: {ours} vs {theirs}")

    runs: dict[str, list[dict]] = {k: [] for k in cmds}
    for _ in range(args.reps):
        for k, cmd in cmds.items():
            r = run_child(cmd)
            if r["returncode"] != 0:
                sys.exit(f"{k} failed with exit code {r['returncode']}")
            runs[k].append(r)

    def med(k: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[k])

    def samples(k: str, key: str) -> list[float]:
        return [r[key] for r in runs[k]]

    big_b, small_b = big.stat().st_size, small.stat().st_size
    figures = []
    for what, key, unit in (("end-to-end wall s", "seconds", "s"), ("end-to-end CPU s", "cpu", "s")):
        for size, tag in ((big_mb, "big"), (big_mb // 4, "small")):
            ratio = med(f"tshark_{tag}", key) / med(f"seqheur_{tag}", key)
            fig = {"metric": f"{what}, {size} MiB vs tshark", "unit": unit,
                   "seqheur": summarize(samples(f"seqheur_{tag}", key)),
                   "peer": summarize(samples(f"tshark_{tag}", key)), "peer_name": "tshark -T fields",
                   "ratio": ratio}
            if tag == "big" and key == "seconds" and not args.quick:
                fig.update(target=">= 20x", met=ratio >= 20)
            figures.append(fig)
    figures.append({"metric": "seqheur start-up (capture of a few frames) s", "unit": "s",
                    "seqheur": summarize(samples("seqheur_startup", "seconds")), "peer": None,
                    "peer_name": "", "ratio": None})
    figures.append({"metric": "seqheur start-up CPU s", "unit": "s",
                    "seqheur": summarize(samples("seqheur_startup", "cpu")), "peer": None,
                    "peer_name": "", "ratio": None})
    rss = max(samples("seqheur_big", "rss_mb"))
    figures.append({"metric": f"peak RSS MB, {big_mb} MiB", "unit": "MB",
                    "seqheur": summarize(samples("seqheur_big", "rss_mb")),
                    "peer": summarize(samples("tshark_big", "rss_mb")), "peer_name": "tshark -T fields",
                    "ratio": med("tshark_big", "rss_mb") / med("seqheur_big", "rss_mb"),
                    "target": "<= 1024 MB", "met": rss <= 1024})
    figures.append({"metric": f"peak RSS MB, {big_mb // 4} MiB", "unit": "MB",
                    "seqheur": summarize(samples("seqheur_small", "rss_mb")),
                    "peer": summarize(samples("tshark_small", "rss_mb")),
                    "peer_name": "tshark -T fields",
                    "ratio": med("tshark_small", "rss_mb") / med("seqheur_small", "rss_mb")})
    scale = [b["seconds"] / s["seconds"] for b, s in zip(runs["seqheur_big"], runs["seqheur_small"])]
    figures.append({"metric": f"seqheur time {big_mb} / {big_mb // 4} MiB (input x{big_b / small_b:.2f})",
                    "unit": "x", "seqheur": summarize(scale),
                    "peer": summarize([b["seconds"] / s["seconds"] for b, s in
                                       zip(runs["tshark_big"], runs["tshark_small"])]),
                    "peer_name": "tshark", "ratio": None, "target": "<= 4.4",
                    "met": statistics.median(scale) <= 4.4})
    # the work that grows with the input: CPU medians less the start-up's (wall differences
    # of a few tenths of a second drown in the shared machine's noise)
    cpu0 = med("seqheur_startup", "cpu")
    work = (med("seqheur_big", "cpu") - cpu0) / max(med("seqheur_small", "cpu") - cpu0, 1e-9)
    figures.append({"metric": "same on CPU, start-up subtracted (decode + write)", "unit": "x",
                    "seqheur": summarize([work]), "peer": None, "peer_name": "", "ratio": None})
    write_result(NAME, args.out, figures=figures, params={
        "big": str(big), "big_bytes": big_b, "small_bytes": small_b,
        "tiny_bytes": tiny.stat().st_size, "read_rows_big": ours, "reps": args.reps,
        "load_avg": os.getloadavg(), "command": " ".join(cmds["seqheur_big"][1:])}, notes=(
        "each child a fresh process timed by a launcher (wall, user + system CPU, its own peak "
        "RSS); captures in the page cache; the machine is shared (2 vCPUs, other jobs running): "
        "wall times inflate with the load, CPU times are the steadier comparison"))


if __name__ == "__main__":
    main()
