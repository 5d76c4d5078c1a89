"""Matplotlib figures of replay results: one function a figure, each writing a PNG.

Inputs are plain polars DataFrames / numpy arrays, so the figures can be drawn from a
``results.parquet`` a user saved earlier. Colours are fixed per detector so that one detector
looks the same in every figure of a report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ..io import atomic_path

_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf"]
CAUSES = ("lost_ejected", "lost_reordered", "lost_nonsequential", "lost_cold", "lost_evicted")
CAUSE_COLORS = {"lost_ejected": "#d62728", "lost_reordered": "#ff7f0e",
                "lost_nonsequential": "#7f7f7f", "lost_cold": "#1f77b4", "lost_evicted": "#9467bd"}


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"figure.dpi": 110, "axes.spines.top": False, "axes.spines.right": False,
                         "axes.grid": True, "grid.alpha": 0.3, "font.size": 9})
    return plt


def color_map(names: Sequence[str]) -> dict[str, str]:
    return {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(dict.fromkeys(names))}


def save(fig, path: str | Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", bbox_inches="tight")
    _plt().close(fig)
    return Path(path)


def _grouped(summary, value: str):
    """(tables, detectors, matrix[table, detector]) of a summary frame's ``value``."""
    tables = list(dict.fromkeys(summary["table"].to_list()))
    dets = list(dict.fromkeys(summary["detector"].to_list()))
    m = np.full((len(tables), len(dets)), np.nan)
    for row in summary.iter_rows(named=True):
        m[tables.index(row["table"]), dets.index(row["detector"])] = row[value]
    return tables, dets, m


def throughput_bars(summary, path: str | Path, title: str = "Estimated throughput") -> Path:
    """Grouped bars: MB/s per table (group) and detector (bar), values written on the bars."""
    plt = _plt()
    tables, dets, m = _grouped(summary, "throughput_mbps")
    colors = color_map(dets)
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(tables) * len(dets) ** 0.6 + 2), 3.6))
    width = 0.8 / len(dets)
    x = np.arange(len(tables))
    for j, d in enumerate(dets):
        bars = ax.bar(x + (j - (len(dets) - 1) / 2) * width, m[:, j], width, label=d, color=colors[d])
        for b, v in zip(bars, m[:, j]):
            if np.isfinite(v):
                ax.text(b.get_x() + b.get_width() / 2, b.get_height(), f"{v:.1f}", ha="center",
                        va="bottom", fontsize=7)
    ax.set_xticks(x, tables)
    ax.set_xlabel("table model")
    ax.set_ylabel("MB/s (10^6 B/s, disk model)")
    ax.set_title(title)
    ax.legend(title="detector", fontsize=7, ncols=min(len(dets), 4), loc="upper left",
              bbox_to_anchor=(0, -0.18))
    return save(fig, path)


def _labels(summary) -> list[str]:
    return [f"{r['detector']}\n{r['table']}" for r in summary.iter_rows(named=True)]


def blocks_bars(summary, path: str | Path) -> Path:
    """Per combination: demand hits, misses, and wasted read-ahead blocks (stacked/side)."""
    plt = _plt()
    labels = _labels(summary)
    x = np.arange(len(labels))
    hits = summary["hits"].to_numpy().astype(float)
    misses = summary["misses"].to_numpy().astype(float)
    wasted = summary["prefetch_wasted"].to_numpy().astype(float)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(labels) + 2), 3.8))
    ax.bar(x - 0.2, hits, 0.4, label="demand hits", color="#2ca02c")
    ax.bar(x - 0.2, misses, 0.4, bottom=hits, label="demand misses", color="#d62728")
    ax.bar(x + 0.2, wasted, 0.4, label="read-ahead wasted", color="#7f7f7f")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("blocks")
    ax.set_title("Demand hits and misses; wasted read-ahead")
    ax.legend(fontsize=7)
    return save(fig, path)


def causes_bars(summary, path: str | Path) -> Path:
    """Per combination: demand misses that read-ahead could have served, by cause."""
    plt = _plt()
    labels = _labels(summary)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(labels) + 2), 3.8))
    bottom = np.zeros(len(labels))
    for c in CAUSES:
        if c not in summary.columns:
            continue
        v = summary[c].to_numpy().astype(float)
        ax.bar(x, v, 0.6, bottom=bottom, label=c.removeprefix("lost_"), color=CAUSE_COLORS[c])
        bottom += v
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("demand misses")
    ax.set_title("Why read-ahead was lost")
    ax.legend(fontsize=7, title="cause")
    return save(fig, path)


def bound_bars(summary, references, path: str | Path) -> Path:
    """Per combination: disk seconds as a bar, with the references at its block size as
    markers (no read-ahead, the oracle, the lower bound): how far each heuristic is from the
    best schedule and from the floor."""
    plt = _plt()
    labels = _labels(summary)
    x = np.arange(len(labels))
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(labels) + 2), 3.8))
    ax.bar(x, summary["disk_seconds"].to_numpy().astype(float), 0.6, color="#9ecae1",
           label="heuristic")
    ref = {(r["detector"], r["block_size"]): r["disk_seconds"] for r in references.to_dicts()}
    marks = (("no read-ahead", "v", "#7f7f7f"), ("oracle", "D", "#2ca02c"),
             ("lower bound", "_", "#d62728"))
    blocks = summary["block_size"].to_list()
    for name, marker, color in marks:
        ys = np.array([ref.get((name, b), np.nan) for b in blocks], dtype=float)
        if np.isfinite(ys).any():
            ax.scatter(x, ys, marker=marker, s=60 if marker == "_" else 24, color=color,
                       zorder=3, label=name, linewidths=2)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("disk seconds (lower is better)")
    ax.set_title("Against the bound")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return save(fig, path)


def seqcount_timeline(series: dict[str, dict[int, tuple[np.ndarray, np.ndarray]]],
                      file_labels: dict[int, str], path: str | Path) -> Path:
    """Small multiples: one panel per busy file, seqcount over time, one line per detector.

    ``series[label][file] = (time_s, seqcount)``.
    """
    plt = _plt()
    files = list(file_labels)
    n = max(len(files), 1)
    cols = min(n, 2)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 2.4 * rows), squeeze=False,
                             sharex=True)
    colors = color_map(list(series))
    for k, f in enumerate(files):
        ax = axes[k // cols][k % cols]
        for label, per_file in series.items():
            if f in per_file:
                t, sc = per_file[f]
                ax.step(t, sc, where="post", lw=0.9, color=colors[label], label=label, alpha=0.85)
        ax.set_title(file_labels[f], fontsize=8)
        ax.set_ylabel("seqcount")
    for k in range(len(files), rows * cols):
        axes[k // cols][k % cols].axis("off")
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncols=min(len(labels), 4), fontsize=7,
               bbox_to_anchor=(0.5, 1.04))
    fig.suptitle("seqcount over time, busiest files", y=1.08)
    return save(fig, path)


def ejections_timeline(series: dict[str, tuple[np.ndarray, np.ndarray]], path: str | Path) -> Path:
    """Cumulative table ejections over time, one line per combination."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    colors = color_map(list(series))
    for label, (t, cum) in series.items():
        ax.plot(t, cum, lw=1.2, label=label, color=colors[label])
    ax.set_xlabel("time (s)")
    ax.set_ylabel("cumulative ejections")
    ax.set_title("Table ejections over time")
    ax.legend(fontsize=7)
    return save(fig, path)


def stream_stats_figure(stats, path: str | Path) -> Path:
    """The trace's reordering (per-file out-of-order fraction) and run-length histograms."""
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 3.2))
    files = stats.files
    rf = files["reordered_fraction"].to_numpy() if len(files) else np.zeros(0)
    a.hist(rf * 100, bins=min(30, max(5, len(rf))), color="#ff7f0e")
    a.axvline(stats.summary["reordered_fraction"] * 100, color="k", lw=1, ls="--",
              label=f"trace: {stats.summary['reordered_fraction']:.1%}")
    a.set_xlabel("reordered READs per file (%)")
    a.set_ylabel("files")
    a.set_title("Reordering")
    a.legend(fontsize=7)
    hist = stats.summary["run_length_histogram"]
    b.bar(range(len(hist)), list(hist.values()), color="#1f77b4")
    b.set_xticks(range(len(hist)), list(hist.keys()), rotation=45, fontsize=7)
    b.set_yscale("log")
    b.set_xlabel("run length (sequential READs)")
    b.set_ylabel("runs")
    b.set_title("Sequential runs")
    return save(fig, path)


def lines_by(x_name: str, y_name: str, frame, group: Sequence[str], path: str | Path, *,
             title: str, xlabel: str, ylabel: str, logx: bool = False,
             reference: dict[str, tuple[Sequence[float], Sequence[float]]] | None = None) -> Path:
    """y against x, one line per distinct combination of ``group`` columns (reproduce plots).

    ``reference`` adds dashed lines (e.g. numbers reported by a paper), label -> (xs, ys).
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    keys = frame.select(group).unique(maintain_order=True).rows()
    labels = [" / ".join(str(v) for v in k) for k in keys]
    colors = color_map(labels)
    for k, label in zip(keys, labels):
        sub = frame
        for col, v in zip(group, k):
            sub = sub.filter(sub[col] == v)
        sub = sub.sort(x_name)
        ax.plot(sub[x_name].to_numpy(), sub[y_name].to_numpy(), marker="o", ms=3, lw=1.3,
                label=label, color=colors[label])
    for label, (xs, ys) in (reference or {}).items():
        # a reference line takes the colour of the line it is the reference for
        of = label.split(": ", 1)[-1]
        ax.plot(xs, ys, ls="--", marker="x", color=colors.get(of, "k"), alpha=0.7, lw=1.2,
                label=label)
    if logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted(set(frame[x_name].to_list())), [str(v) for v in sorted(set(frame[x_name].to_list()))])
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save(fig, path)
