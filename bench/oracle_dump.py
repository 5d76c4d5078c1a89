"""The oracle's disk reads beside a detector's, read by read, on one trace drawn as
bench/oracle_losses.py draws them (how a losing trace is looked at: docs/bound.md, "Where
the oracle loses").

    python bench/oracle_dump.py --seed 47 -n 500 --trace 428 --detector freebsd4 --policy none

Prints the trace's READs (file, offset, count, the blocks they cover at the detector's block
size), the files' sizes, then each schedule's disk reads in issue order: file, first and last
block, bytes, seconds, how the drive served it (P positioned, S streamed on, H a drive-cache
hit, X split across extents) and the running sum. The detector's replay and the oracle
(``seqheur.bound`` at that block size) are run exactly as the law runs them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import seqheur  # noqa: E402
from oracle_losses import draw  # noqa: E402
from seqheur.bound import bound  # noqa: E402
from seqheur.disk.model import HIT, POSITIONED, SPLIT, STREAM  # noqa: E402
from seqheur.replay import DiskPricer, observed_file_sizes  # noqa: E402

FLAGS = ((POSITIONED, "P"), (STREAM, "S"), (HIT, "H"), (SPLIT, "X"))


def recording(log: list) -> object:
    """DiskPricer.price that also appends (file, offset, bytes, seconds, flags) per disk read
    to ``log``: each batch is serviced on a copy of the drive's state first (the model is
    deterministic, so the copy's figures are the replay's)."""
    price = DiskPricer.price

    def price_and_log(self: DiskPricer, file: np.ndarray, offset: np.ndarray,
                      length: np.ndarray) -> None:
        res = self.disk.service(file, offset, length, self.place, self.state.copy())
        log.extend(zip(file.tolist(), offset.tolist(), length.tolist(), res.seconds.tolist(),
                       res.flags.tolist()))
        price(self, file, offset, length)

    return price_and_log


def show(title: str, log: list, bs: int) -> None:
    print(f"--- {title}")
    total = 0.0
    for f, off, ln, sec, flags in log:
        total += sec
        how = "".join(c for bit, c in FLAGS if flags & bit)
        print(f"  f{f} blk {off // bs:6d}..{(off + ln - 1) // bs:6d} len {ln:7d} "
              f"{sec * 1e3:8.3f} ms {how:3s} cum {total * 1e3:8.3f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("-n", type=int, required=True)
    p.add_argument("--caches", default="2,3,4,8,16,64,1024")
    p.add_argument("--trace", type=int, required=True, help="index among the n drawn")
    p.add_argument("--detector", required=True)
    p.add_argument("--policy", default="auto")
    args = p.parse_args()
    cases = draw(args.seed, args.n, [int(c) for c in args.caches.split(",")])
    if not 0 <= args.trace < len(cases):
        p.error(f"--trace must be in 0..{len(cases) - 1}")
    s, profile, cache_blocks, extra = cases[args.trace]
    sizes = observed_file_sizes(s) + np.array(extra[:s.n_files], np.int64)
    probe = seqheur.replay(s, args.detector, "ideal", args.policy, cache="1MiB", profile=None,
                           file_sizes=sizes, per_request=False)
    bs = int(probe["block_size"])
    print(f"{profile}, {cache_blocks} blocks of {bs} bytes")
    print("READs:")
    for i in range(len(s.file)):
        off, cnt = int(s.offset[i]), int(s.count[i])
        print(f"  {i:3d} f{s.file[i]} off {off} cnt {cnt}  blocks {off // bs}.."
              f"{(off + max(cnt, 1) - 1) // bs}")
    print("sizes", sizes, "blocks", (sizes + bs - 1) // bs)
    log: list = []
    DiskPricer.price = recording(log)
    r = seqheur.replay(s, args.detector, "ideal", args.policy, cache=cache_blocks * bs,
                       profile=profile, file_sizes=sizes, per_request=False)
    show(f"{args.detector}/{args.policy} {r['disk_seconds'] * 1e3:.3f} ms", log, bs)
    log.clear()
    b = bound(s, cache=cache_blocks * bs, profile=profile, block_size=bs, file_sizes=sizes,
              references=False)
    show(f"oracle {b['oracle_disk_seconds'] * 1e3:.3f} ms", log, bs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
