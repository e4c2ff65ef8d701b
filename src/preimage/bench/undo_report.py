"""Tables of the undo suite: collateral, reverted and conflicts per protector and scenario."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from preimage.bench.results import BenchReport, RunResult, Totals

TOTAL_COLUMNS = (
    "protector", "scenarios", "collateral (lost / intervening)", "reverted",
    "conflicts reported", "silently overwritten", "restore (mean)",
)
COST_COLUMNS = (
    "protector", "call (mean)", "pre-call capture (mean)", "post-call capture (mean)",
    "post-call / call", "post-call / pre-call", "post-call stored",
)


def is_undo(report: BenchReport) -> bool:
    """Whether ``report`` is of the undo suite (every run measured intervening changes; a
    run through a real harness measures its later work beside the regret numbers)."""
    if any(r.harness for r in report.runs):
        return False
    return bool(report.runs) and all(
        r.intervening is not None or r.status != "ok" for r in report.runs) and any(
        r.intervening is not None for r in report.runs)


def _share(n: int | None, of: int | None) -> str:
    return "-" if n is None or of is None else f"{n}/{of}"


def total_cells(t: Totals) -> list[str]:
    """One protector's totals as text (same order as :data:`TOTAL_COLUMNS`)."""
    ran = f"{t.ran}" + (f" ({t.errors} err)" if t.errors else "")
    restore = _seconds(t.restore_mean_s)
    reverted = "-" if t.reverted is None else f"{t.reverted:.3f}"
    return [t.label, ran, _share(t.collateral, t.intervening), reverted,
            _share(t.conflicts_reported, t.conflicts), str(t.silently_overwritten or 0), restore]


def cost_cells(t: Totals) -> list[str]:
    """What knowing the call's delta cost one protector (same order as :data:`COST_COLUMNS`)."""
    return [t.label, _seconds(t.call_mean_s), _seconds(t.capture_mean_s),
            _seconds(t.post_mean_s), _times(t.post_to_call), _times(t.post_to_pre),
            "-" if t.post_bytes is None else _size(t.post_bytes)]


def _seconds(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.0f} ms" if v < 1 else f"{v:.1f} s"


def _times(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def cell(r: RunResult | None) -> str:
    """``lost 0/3 · rev 1.00 · conf 1/1`` for one scenario under one protector."""
    if r is None:
        return ""
    if r.status != "ok":
        return r.status
    rev = "-" if r.reverted is None else f"{r.reverted:.2f}"
    return (f"lost {_share(r.collateral, r.intervening)} · rev {rev} · "
            f"conf {_share(r.conflicts_reported, r.conflicts)}")


def _grid(report: BenchReport) -> dict[str, dict[str, RunResult]]:
    grid: dict[str, dict[str, RunResult]] = {}
    for r in report.runs:
        grid.setdefault(r.scenario, {})[r.protector] = r
    return grid


def render_undo(report: BenchReport, console: Console) -> None:
    """Totals and per-scenario tables of an undo-suite run."""
    totals = Table(title=f"undo benchmark — intervening changes — suite {report.suite}",
                   title_justify="left")
    for i, col in enumerate(TOTAL_COLUMNS):
        totals.add_column(col, justify="left" if i == 0 else "right")
    for t in report.totals:
        totals.add_row(*total_cells(t))
    console.print(totals)
    cost = Table(title="what knowing the call's delta costs (the post-call capture)",
                 title_justify="left")
    for i, col in enumerate(COST_COLUMNS):
        cost.add_column(col, justify="left" if i == 0 else "right")
    for t in report.totals:
        cost.add_row(*cost_cells(t))
    console.print(cost)
    per = Table(title="per scenario: intervening changes lost · share of the call reverted · "
                "conflicts reported", title_justify="left")
    per.add_column("scenario")
    per.add_column("category")
    for label in report.protectors.values():
        per.add_column(label, justify="right")
    for sid, row in _grid(report).items():
        first = next(iter(row.values()))
        per.add_row(sid, first.category, *(cell(row.get(p)) for p in report.protectors))
    console.print(per)
    for nr in report.not_run:
        console.print(f"not run: {nr.scenario} — {nr.reason}", markup=False)
    for r in report.runs:
        if r.status == "error":
            console.print(f"error: {r.scenario} / {r.label}: {r.reason}", markup=False)
    console.print(f"{len(report.runs)} runs in {report.seconds:.1f} s", markup=False)


def undo_markdown(report: BenchReport) -> str:
    """The undo-suite tables as Markdown (for docs/bench.md)."""
    lines = ["| " + " | ".join(TOTAL_COLUMNS) + " |", "|" + "---|" * len(TOTAL_COLUMNS)]
    lines += ["| " + " | ".join(total_cells(t)) + " |" for t in report.totals]
    lines.append("")
    lines += ["| " + " | ".join(COST_COLUMNS) + " |", "|" + "---|" * len(COST_COLUMNS)]
    lines += ["| " + " | ".join(cost_cells(t)) + " |" for t in report.totals]
    lines.append("")
    head = ["scenario", "category", *report.protectors.values()]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sid, row in _grid(report).items():
        first = next(iter(row.values()))
        cells = [sid, first.category, *(cell(row.get(p)) for p in report.protectors)]
        lines.append("| " + " | ".join(cells) + " |")
    if report.not_run:
        lines.append("")
        lines += [f"- not run: {nr.scenario} — {nr.reason}" for nr in report.not_run]
    return "\n".join(lines) + "\n"


def undo_html(report: BenchReport, out: Path) -> Path:
    """``index.html`` of an undo-suite run: the outcome, cost and per-scenario tables, and
    for each run what it lost, what of the call it did not revert and its conflicts."""
    import html

    from preimage.bench.page_style import CSS

    e = html.escape

    def table(head: tuple[str, ...] | list[str], rows: list[list[str]]) -> str:
        cells = "".join(f"<th>{e(h)}</th>" for h in head)
        body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><tr>{cells}</tr>{body}</table>"

    grid = _grid(report)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>preimage undo benchmark — {e(report.suite)}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>preimage undo benchmark — intervening changes</h1>",
        f"<p class='muted'>{e(report.started_at)} · preimage {e(report.version)} · "
        f"{len(report.runs)} runs in {report.seconds:.1f} s</p>",
        "<h2>Totals</h2>", table(TOTAL_COLUMNS, [total_cells(t) for t in report.totals]),
        "<h2>What knowing the call's delta costs</h2>",
        table(COST_COLUMNS, [cost_cells(t) for t in report.totals]),
        "<h2>Per scenario</h2><p class='muted'>lost a/b: intervening changes lost of those "
        "made · rev: share of the call's changes reverted · conf a/b: conflicts reported of "
        "those there were</p>",
        table(["scenario", "title", *report.protectors.values()], [
            [sid, next(iter(row.values())).title, *(cell(row.get(p)) for p in report.protectors)]
            for sid, row in grid.items()]),
        "<h2>Runs in detail</h2>",
    ]
    for r in report.runs:
        parts.append(f"<h3>{e(r.scenario)} — {e(r.label)}</h3>")
        if r.reason:
            parts.append(f"<p>{e(r.status)}: {e(r.reason)}</p>")
        parts.append("<ul>" + "".join(f"<li>{e(n)}</li>" for n in r.notes[:20]) + "</ul>")
    for nr in report.not_run:
        parts.append(f"<p>not run: <b>{e(nr.scenario)}</b> — {e(nr.reason)}</p>")
    parts.append("</body></html>")
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
