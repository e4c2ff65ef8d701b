"""Matplotlib figures of a benchmark run (``preimage[bench]``; imported only when asked)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from preimage._errors import UsageError
from preimage.bench.results import BenchReport

CATEGORIES = ("terminal", "sql", "kubernetes", "email", "browser")
COLOURS = ("#9aa3b2", "#e0a03a", "#5b8fd6", "#2f9e62", "#8b5cc7", "#c2453d")


def _pyplot() -> Any:
    try:
        import matplotlib
    except ModuleNotFoundError as exc:
        raise UsageError(
            "the HTML report's plots need matplotlib — pip install 'preimage[bench]'"
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def similarity_by_category(report: BenchReport, out: Path) -> Path:
    """Grouped bars: mean content and metadata similarity per category and protector."""
    plt = _pyplot()
    cats = [c for c in CATEGORIES if any(r.category == c for r in report.runs)]
    protectors = list(report.protectors.items())
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4), sharey=True)
    width = 0.8 / max(len(protectors), 1)
    for ax, cls in zip(axes, ("content", "metadata"), strict=True):
        for i, (name, label) in enumerate(protectors):
            heights, notes = [], []
            for c in cats:
                vals = [
                    getattr(r, cls) for r in report.runs
                    if r.category == c and r.protector == name and r.status == "ok"
                    and getattr(r, cls) is not None
                ]
                heights.append(statistics.fmean(vals) if vals else 0.0)
                notes.append("" if vals else "n/a")
            xs = [j + (i - (len(protectors) - 1) / 2) * width for j in range(len(cats))]
            bars = ax.bar(xs, heights, width * 0.92, label=label, color=COLOURS[i % len(COLOURS)])
            for bar, note, h in zip(bars, notes, heights, strict=True):
                text = note or f"{h:.2f}"
                ax.text(bar.get_x() + bar.get_width() / 2, h + 0.01, text, ha="center",
                        va="bottom", fontsize=7, rotation=90)
        ax.set_xticks(range(len(cats)), cats)
        ax.set_ylim(0, 1.18)
        ax.set_title(f"{cls} similarity after restore (mean)")
        ax.axhline(1.0, color="#444", linewidth=0.6, linestyle=":")
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("share of original leaves restored exactly")
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    path = out / "similarity_by_category.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def latency_distribution(report: BenchReport, out: Path) -> Path:
    """Per protector: capture latency before the call and restore time (log scale)."""
    plt = _pyplot()
    colour = {n: COLOURS[i % len(COLOURS)] for i, n in enumerate(report.protectors)}
    protectors = [(n, lbl) for n, lbl in report.protectors.items() if n != "none"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    for ax, attr, title in (
        (axes[0], "capture_s", "capture latency before the call"),
        (axes[1], "restore_s", "restore time"),
    ):
        data, labels = [], []
        for name, label in protectors:
            vals = [
                getattr(r, attr) * 1000 for r in report.runs
                if r.protector == name and r.status == "ok" and getattr(r, attr) is not None
            ]
            data.append(vals or [float("nan")])
            labels.append(label.replace(" (", "\n("))
        ax.boxplot(data, showfliers=False, widths=0.5)
        for i, (vals, (name, _label)) in enumerate(zip(data, protectors, strict=True), start=1):
            jitter = [i + ((k % 7) - 3) * 0.035 for k in range(len(vals))]
            ax.scatter(jitter, vals, s=14, alpha=0.75, color=colour[name], zorder=3)
        ax.set_xticks(range(1, len(labels) + 1), labels, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("milliseconds (log scale)")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3, which="both")
    fig.tight_layout()
    path = out / "latency.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def make_plots(report: BenchReport, out: Path) -> list[Path]:
    """Every figure of the HTML report, written into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    return [similarity_by_category(report, out), latency_distribution(report, out)]
