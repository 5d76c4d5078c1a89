"""``seqheur bench plot``: one PNG with the profile's curves (size, latency, seek, zones, QD)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..io import atomic_path
from .profile import DiskProfile, load_profile


def _fmt_size(b: float) -> str:
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div:
            v = b / div
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{b:.0f} B"


def plot_profile(profile: "DiskProfile | str | os.PathLike[str]", out: str | os.PathLike[str]) -> Path:
    """Draw a measured or modelled profile as a 2x3 panel PNG at ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from .model import DiskModel

    p = load_profile(profile) if not isinstance(profile, DiskProfile) else profile
    tb: dict[str, list[dict[str, Any]]] = p.tables
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    import textwrap

    title = textwrap.shorten(f"{p.name} — {p.kind}: {p.description}", width=260, placeholder=" …")
    fig.suptitle("\n".join(textwrap.wrap(title, 130)), fontsize=10)
    model = DiskModel(p, drive_cache=False)

    # 1. sequential throughput by request size (measured min/median/max, else the model's)
    ax = axes[0, 0]
    if tb.get("sequential"):
        rows = sorted(tb["sequential"], key=lambda r: r["size"])
        x = [r["size"] for r in rows]
        med = [r["mbps"]["median"] for r in rows]
        lo = [r["mbps"]["min"] for r in rows]
        hi = [r["mbps"]["max"] for r in rows]
        ax.fill_between(x, lo, hi, alpha=0.25, label="min–max of reps")
        ax.plot(x, med, "o-", label="median")
    else:
        x = [4096 * 4 ** i for i in range(6)]
        r = [model.run(np.zeros(64), np.arange(64) * s, np.full(64, s)).throughput_mbps for s in x]
        ax.plot(x, r, "o-", label="model, 64 sequential reads")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [_fmt_size(v) for v in x], rotation=30)
    ax.set_title("Sequential throughput by request size")
    ax.set_ylabel("MB/s")
    ax.legend(fontsize=8)

    # 2. random-read latency percentiles by size
    ax = axes[0, 1]
    ax.set_xscale("log", base=2)
    if tb.get("random"):
        rows = sorted(tb["random"], key=lambda r: r["size"])
        x = [r["size"] for r in rows]
        for key, style in (("p50_s", "o-"), ("p90_s", "s--"), ("p99_s", "^:")):
            ax.plot(x, [r[key] * 1e3 for r in rows], style, label=key[:-2])
        ax.set_xticks(x, [_fmt_size(v) for v in x], rotation=30)
    else:
        x = [4096 * 4 ** i for i in range(6)]
        rng = np.random.default_rng(0)
        r = []
        for s in x:
            offs = rng.integers(0, p.capacity_bytes // s - 1, 256) * s
            r.append(model.run(np.zeros(256), offs, np.full(256, s), [p.capacity_bytes]).seconds.mean() * 1e3)
        ax.plot(x, r, "o-", label="model mean (random over the disk)")
        ax.set_xticks(x, [_fmt_size(v) for v in x], rotation=30)
    ax.set_title("Random-read latency by size")
    ax.set_ylabel("ms")
    ax.legend(fontsize=8)

    # 3. seek curve
    ax = axes[0, 2]
    if tb.get("seek"):
        rows = sorted(tb["seek"], key=lambda r: r["distance_bytes"])
        ax.plot([r["distance_bytes"] for r in rows], [r["p50_s"] * 1e3 for r in rows], "o-",
                label="measured p50 (read at a±d after a)")
        ax.fill_between([r["distance_bytes"] for r in rows],
                        [r["p50_rep_s"]["min"] * 1e3 for r in rows],
                        [r["p50_rep_s"]["max"] * 1e3 for r in rows], alpha=0.25, label="rep spread")
    if p.has_seek_curve:
        ax.plot(p.seek_distance_bytes, [s * 1e3 for s in p.seek_seconds], "k.--",
                label="model positioning")
    flat = p.provenance.get("seek_flat")
    ax.set_xscale("log")
    ax.set_title("Latency by seek distance" + (" — flat" if flat else ""))
    ax.set_xlabel("distance (bytes)")
    ax.set_ylabel("ms")
    ax.legend(fontsize=8)

    # 4. zones
    ax = axes[1, 0]
    if tb.get("zones"):
        rows = sorted(tb["zones"], key=lambda r: r["position_bytes"])
        pos = [r["position_bytes"] / 1e9 for r in rows]
        ax.plot(pos, [r["mbps"]["median"] for r in rows], "o-", label="measured median")
        ax.fill_between(pos, [r["mbps"]["min"] for r in rows], [r["mbps"]["max"] for r in rows],
                        alpha=0.25, label="rep spread")
    zs = list(p.zone_start_bytes) + [p.capacity_bytes]
    ax.step([z / 1e9 for z in zs], list(p.zone_mbps) + [p.zone_mbps[-1]], "k--", where="post",
            label="model zone rate")
    ax.set_title("Throughput by position (ZCAV)" + (" — flat" if p.provenance.get("zones_flat") else ""))
    ax.set_xlabel("position (GB from the start)")
    ax.set_ylabel("MB/s")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)

    # 5. queue depth
    ax = axes[1, 1]
    if tb.get("queue_depth"):
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for r in tb["queue_depth"]:
            groups.setdefault((r.get("pattern", "rand"), r["size"], r.get("backend", "threads")),
                              []).append(r)
        for (pat, size, backend), rows in sorted(groups.items()):
            rows.sort(key=lambda r: r["depth"])
            line, = ax.plot([r["depth"] for r in rows], [r["iops"]["median"] for r in rows], "o-",
                            label=f"{pat} {_fmt_size(size)} ({backend})")
            bound = [r for r in rows if r.get("client_bound")]
            if bound:
                ax.plot([r["depth"] for r in bound], [r["iops"]["median"] for r in bound], "x",
                        color="red", markersize=10)
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=8, title="red x = client-bound")
    else:
        ax.text(0.5, 0.5, "modelled profile:\nreads are served in issue order\n(no queue model)",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
    ax.set_title("Throughput by queue depth")
    ax.set_xlabel("queue depth (reads in flight)")
    ax.set_ylabel("IOPS")

    # 6. caches: identical block, first touch vs re-read, interleaved streams
    ax = axes[1, 2]
    labels, vals = [], []
    for r in tb.get("cached", []):
        labels.append(f"same block {_fmt_size(r['size'])}")
        vals.append(r["p50_s"] * 1e3)
    for r in tb.get("first_touch", []):
        labels.append(f"{r['mode']} {_fmt_size(r['size'])}")
        vals.append(r["p50_s"] * 1e3)
    for r in tb.get("idle_gap", []):
        labels.append(f"random {_fmt_size(r['size'])}, {r['gap_s'] * 1e3:g} ms idle before")
        vals.append(r["p50_s"] * 1e3)
    for r in tb.get("streams", []):
        labels.append(f"{r['streams']} stream{'s' if r['streams'] > 1 else ''}")
        vals.append(r["p50_s"] * 1e3)
    if p.cache.enabled:
        labels.append("model: drive-cache hit 16 KiB")
        vals.append((p.cache.hit_overhead_s + 16384 / (p.host_mbps * 1e6)) * 1e3)
        labels.append("model: random 16 KiB")
        vals.append((p.random_positioning_s + p.command_overhead_s + 16384 / (p.zone_mbps[0] * 1e6)) * 1e3)
    if vals:
        ax.barh(range(len(vals)), vals, color="tab:blue")
        ax.set_yticks(range(len(vals)), labels, fontsize=8)
        ax.invert_yaxis()
    ax.set_title("Caches, idle gaps, streams: p50 latency")
    ax.set_xlabel("ms")

    fig.tight_layout()
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return Path(out)
