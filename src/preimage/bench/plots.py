"""Matplotlib figures of a benchmark run (``preimage[bench]``; imported only when asked)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from preimage.bench.results import BenchReport
from preimage.interface.errors import UsageError

CATEGORIES = ("terminal", "sql", "kubernetes", "email", "browser")
COLOURS = ("#9aa3b2", "#e0a03a", "#5b8fd6", "#2f9e62", "#8b5cc7", "#c2453d")
MEDIAN = "#1d2433"  # the median line: ink, not any protector's colour


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
    counts = {c: len({r.scenario for r in report.runs if r.category == c}) for c in cats}
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
            if name == "none":
                label = f"{label} (the damage: nothing restored)"
            bars = ax.bar(xs, heights, width * 0.92, label=label, color=COLOURS[i % len(COLOURS)])
            for bar, note, h in zip(bars, notes, heights, strict=True):
                text = note or f"{h:.2f}"
                ax.text(bar.get_x() + bar.get_width() / 2, h + 0.01, text, ha="center",
                        va="bottom", fontsize=7, rotation=90)
        ax.set_xticks(range(len(cats)), [f"{c}\n(n={counts[c]})" for c in cats])
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
    """Capture latency and restore time per system (one panel each, its own log scale —
    a file tree takes milliseconds, a cluster seconds) and protector: every run as a
    point, a box once there are enough runs to draw one, the median in ink, ``n`` below."""
    plt = _pyplot()
    from matplotlib import ticker

    colour = {n: COLOURS[i % len(COLOURS)] for i, n in enumerate(report.protectors)}
    protectors = [(n, lbl) for n, lbl in report.protectors.items() if n != "none"]
    cats = [c for c in CATEGORIES if any(r.category == c for r in report.runs)] or ["(none)"]

    def timed(attr: str) -> bool:
        return any(getattr(r, attr) for r in report.runs if r.protector != "none")

    # A run through a real harness times whole tool calls (the harness table), not the
    # capture inside them: a row with no times at all is left out, not drawn empty.
    rows = [(a, w) for a, w in (("capture_s", "capture before the call"),
                                ("restore_s", "restore")) if timed(a)] or [("restore_s", "restore")]
    fig, axes = plt.subplots(len(rows), len(cats), figsize=(3.2 * len(cats) + 1.5,
                                                            3.6 * len(rows) + 0.6), squeeze=False)
    for row, (attr, what) in enumerate(rows):
        for col, cat in enumerate(cats):
            ax = axes[row][col]
            panel: dict[str, list[float]] = {}
            for i, (name, _label) in enumerate(protectors, start=1):
                vals = panel[name] = [
                    getattr(r, attr) * 1000 for r in report.runs
                    if r.protector == name and r.category == cat and r.status == "ok"
                    and getattr(r, attr) is not None and getattr(r, attr) > 0
                ]
                if len(vals) >= 5:
                    ax.boxplot([vals], positions=[i], showfliers=False, widths=0.55,
                               medianprops={"color": MEDIAN, "linewidth": 1.6})
                elif vals:
                    ax.hlines(statistics.median(vals), i - 0.25, i + 0.25, color=MEDIAN,
                              linewidth=1.6)
                jitter = [i + ((k % 7) - 3) * 0.04 for k in range(len(vals))]
                ax.scatter(jitter, vals, s=14, alpha=0.8, color=colour[name], zorder=3)
                ax.annotate(f"n={len(vals)}", (i, 0), xycoords=("data", "axes fraction"),
                            xytext=(0, 2), textcoords="offset points", ha="center",
                            fontsize=7, color="#5b6577")
            ax.set_xticks(range(1, len(protectors) + 1),
                          [tick_label(label) for _n, label in protectors], fontsize=7,
                          rotation=30, ha="right", rotation_mode="anchor")
            ax.set_xlim(0.4, len(protectors) + 0.6)
            shown = [v for col in panel.values() for v in col]
            if shown:
                log_axis(ax, ticker, shown)
            else:  # no axis to read: say why the panel is empty
                ax.set_yticks([])
                ax.text(0.5, 0.5, f"no {what} timed here", transform=ax.transAxes,
                        ha="center", va="center", fontsize=8, color="#5b6577")
            ax.set_title(f"{cat}: {what}", fontsize=9)
            ax.grid(axis="y", alpha=0.3, which="both")
        axes[row][0].set_ylabel("milliseconds (log scale)")
    legend = [plt.Line2D([], [], marker="o", linestyle="", color=colour[n], label=lbl)
              for n, lbl in protectors]
    legend.append(plt.Line2D([], [], color=MEDIAN, label="median"))
    fig.legend(handles=legend, loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path = out / "latency.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def tick_label(label: str) -> str:
    """A protector's name under its column: broken before its parenthesis."""
    return label.replace(" (", "\n(")


def log_axis(ax: Any, ticker: Any, values: list[float]) -> None:
    """A log scale that always reads: whole decades around the data, ticks at 1, 2 and 5
    of each decade in plain numbers (a panel within one decade would carry one tick)."""
    ax.set_yscale("log")
    low, high = min(values), max(values)
    ax.set_ylim(10 ** math.floor(math.log10(low)), 10 ** math.ceil(math.log10(high) + 1e-9))
    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def make_plots(report: BenchReport, out: Path) -> list[Path]:
    """Every figure of the HTML report, written into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    return [similarity_by_category(report, out), latency_distribution(report, out)]
