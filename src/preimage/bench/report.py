"""Showing a benchmark run: terminal tables, Markdown, and an HTML report with plots."""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console
from rich.table import Table

from preimage._sizes import human_bytes
from preimage.bench.results import BenchReport, RunResult, Totals


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 10 else f"{value:.1f} s"


TOTAL_COLUMNS = (
    "protector", "scenarios", "backup rate", "content", "metadata", "server",
    "capture p50", "capture p95", "restore (mean)", "stored", "model tokens",
)


def total_cells(t: Totals) -> list[str]:
    """One totals row as text cells (same order as :data:`TOTAL_COLUMNS`)."""
    ran = f"{t.ran}" + (f" (+{t.not_covered} n/c)" if t.not_covered else "")
    ran += f" ({t.errors} err)" if t.errors else ""
    return [
        t.label, ran, _pct(t.backup_rate), _f(t.content, 3), _f(t.metadata, 3),
        _f(t.server, 3), _ms(t.capture_p50_s), _ms(t.capture_p95_s), _ms(t.restore_mean_s),
        human_bytes(t.stored_bytes), str(t.model_tokens),
    ]


def scenario_cell(r: RunResult | None) -> str:
    """``✓ content/metadata`` for one scenario under one protector."""
    if r is None:
        return ""
    if r.status == "not covered":
        return "n/a"
    if r.status == "error":
        return "error"
    mark = "✓" if r.backed_up else "✗"
    return f"{mark} {_f(r.content)}/{_f(r.metadata)}"


def _by_scenario(report: BenchReport) -> dict[str, dict[str, RunResult]]:
    grid: dict[str, dict[str, RunResult]] = {}
    for r in report.runs:
        grid.setdefault(r.scenario, {})[r.protector] = r
    return grid


def render_terminal(report: BenchReport, console: Console) -> None:
    """The totals table, the per-scenario table, what did not run and what fell short."""
    from preimage.bench.undo_report import is_undo, render_undo

    if is_undo(report):
        render_undo(report, console)
        return
    totals = Table(title=f"regret benchmark — suite {report.suite} — totals", title_justify="left")
    for i, col in enumerate(TOTAL_COLUMNS):
        totals.add_column(col, justify="left" if i == 0 else "right")
    for t in report.totals:
        totals.add_row(*total_cells(t))
    console.print(totals)
    grid = _by_scenario(report)
    per = Table(
        title="per scenario: ✓/✗ backed up before the call, then content/metadata similarity",
        title_justify="left",
    )
    per.add_column("scenario")
    per.add_column("category")
    for label in report.protectors.values():
        per.add_column(label, justify="right")
    for sid, row in grid.items():
        first = next(iter(row.values()))
        per.add_row(sid, first.category, *(scenario_cell(row.get(p)) for p in report.protectors))
    for nr in report.not_run:
        per.add_row(nr.scenario, nr.category, *(["not run"] * len(report.protectors)))
    console.print(per)
    for nr in report.not_run:
        console.print(f"not run: {nr.scenario} — {nr.reason}", markup=False)
    for t in report.totals:
        if t.protector in ("preimage", "declared"):
            for line in t.short_of:
                console.print(f"{t.label} short of 1.0: {line}", markup=False)
    console.print(f"{len(report.runs)} runs in {report.seconds:.1f} s", markup=False)


def markdown(report: BenchReport) -> str:
    """The totals and per-scenario tables as Markdown (for the docs)."""
    from preimage.bench.undo_report import is_undo, undo_markdown

    if is_undo(report):
        return undo_markdown(report)
    lines = ["| " + " | ".join(TOTAL_COLUMNS) + " |", "|" + "---|" * len(TOTAL_COLUMNS)]
    lines += ["| " + " | ".join(total_cells(t)) + " |" for t in report.totals]
    lines.append("")
    head = ["scenario", "category", *report.protectors.values()]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sid, row in _by_scenario(report).items():
        first = next(iter(row.values()))
        cells = [sid, first.category, *(scenario_cell(row.get(p)) for p in report.protectors)]
        lines.append("| " + " | ".join(cells) + " |")
    for nr in report.not_run:
        cells = [nr.scenario, nr.category, *(["not run"] * len(report.protectors))]
        lines.append("| " + " | ".join(cells) + " |")
    if report.not_run:
        lines.append("")
        lines += [f"- not run: {nr.scenario} — {nr.reason}" for nr in report.not_run]
    return "\n".join(lines) + "\n"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1200px;
color:#1d2433;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border-bottom:1px solid #dde2ea;padding:.35rem .6rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f4f6fa}
td.ok{color:#0b7a3b}td.bad{color:#b3261e}td.na{color:#8a93a3}
img{max-width:100%;border:1px solid #dde2ea;margin:.5rem 0}
.muted{color:#5b6577}ul{font-size:.9rem}code{background:#f4f6fa;padding:0 .2rem}
"""


def _cell_class(r: RunResult | None) -> str:
    if r is None or r.status != "ok":
        return "na"
    full = r.backed_up and r.content == 1.0 and r.metadata == 1.0
    return "ok" if full else "bad"


def write_html(report: BenchReport, out: Path, images: list[Path]) -> Path:
    """``index.html`` in ``out``: tables, plots, what did not run, every shortfall."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>preimage regret benchmark — {e(report.suite)}</title>",
        f"<style>{_CSS}</style></head><body>",
        "<h1>preimage regret benchmark</h1>",
        f"<p class='muted'>suite <b>{e(report.suite)}</b> · {e(report.started_at)} · "
        f"preimage {e(report.version)} · {len(report.runs)} runs in {report.seconds:.1f} s</p>",
        "<h2>Totals</h2><table><tr>",
        *(f"<th>{e(c)}</th>" for c in TOTAL_COLUMNS),
        "</tr>",
    ]
    for t in report.totals:
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in total_cells(t)) + "</tr>")
    parts.append("</table>")
    for img in images:
        parts.append(f"<img src='{e(img.name)}' alt='{e(img.stem)}'>")
    parts.append(
        "<h2>Per scenario</h2><p class='muted'>✓ the affected state was captured before the "
        "call, ✗ it was not; then content / metadata similarity after restore. n/a: the "
        "baseline has no copier for that system.</p><table><tr><th>scenario</th><th>title</th>"
    )
    parts += [f"<th>{e(label)}</th>" for label in report.protectors.values()]
    parts.append("</tr>")
    for sid, row in _by_scenario(report).items():
        first = next(iter(row.values()))
        cells = "".join(
            f"<td class='{_cell_class(row.get(p))}'>{e(scenario_cell(row.get(p)))}</td>"
            for p in report.protectors
        )
        parts.append(f"<tr><td>{e(sid)}</td><td>{e(first.title)}</td>{cells}</tr>")
    for nr in report.not_run:
        cells = "".join("<td class='na'>not run</td>" for _ in report.protectors)
        parts.append(f"<tr><td>{e(nr.scenario)}</td><td>{e(nr.title)}</td>{cells}</tr>")
    parts.append("</table>")
    if report.not_run:
        parts.append("<h2>Not run</h2><ul>")
        parts += [f"<li><b>{e(nr.scenario)}</b>: {e(nr.reason)}</li>" for nr in report.not_run]
        parts.append("</ul>")
    parts.append("<h2>Where each protector falls short</h2>")
    for t in report.totals:
        parts.append(f"<h3>{e(t.label)}</h3>")
        if not t.short_of:
            parts.append("<p>every scenario it ran: backed up, content and metadata 1.0</p>")
            continue
        parts.append("<ul>" + "".join(f"<li>{e(s)}</li>" for s in t.short_of) + "</ul>")
    parts.append("</body></html>")
    out.mkdir(parents=True, exist_ok=True)
    page = out / "index.html"
    page.write_text("\n".join(parts), encoding="utf-8")
    return page
