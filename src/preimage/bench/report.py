"""Showing a benchmark run: terminal tables, Markdown, and an HTML report with plots."""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console
from rich.table import Table

from preimage.bench.harness_report import harness_html
from preimage.bench.page_style import CSS
from preimage.bench.results import (
    P95_MIN_RUNS,
    BenchReport,
    RunResult,
    Totals,
    totals_for,
)
from preimage.interface.sizes import human_bytes


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 10 else f"{value:.1f} s"


TOTAL_COLUMNS = (
    "protector", "scenarios", "backup rate", "damage", "restorable", "content", "metadata",
    "server", "capture p50", "capture p95", "restore (mean)", "stored", "model tokens",
)

#: What the ``server`` column means, printed with every totals table.
SERVER_NOTE = (
    "server: identities the systems assign themselves (inodes, UIDs, OIDs, object uids, "
    "web-app ids, vote counts) — no client can set them, so no protector reaches 1.0 there; "
    "preimage's restore reports name each new one (old → new)."
)
#: What a per-scenario cell means.
CELL_NOTE = (
    "✓ the affected state was captured before the call, ✗ it was not; then content / "
    "metadata similarity after restore (1.00 = every original leaf back exactly). "
    "\"damage\": nothing was restored (no backup to restore from), so the two numbers are "
    "the state the call left behind, not a restore. ↻: the protector ran a rewritten call "
    "(rm → a move into a trash). n/a: the baseline has no copier for that system."
)
#: Every column of the totals table, defined where it is shown.
DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("backup rate", "share of scenarios where, before the destructive call ran, the protector "
     "held the state of every target the call destroyed (or its restore brought back every "
     "leaf the call changed)"),
    ("damage", "restorable similarity of the live state right after the call, before any "
     "restore — what the call destroyed (the same for every protector unless one rewrote "
     "the call)"),
    ("restorable", "similarity after restore over the content and metadata leaves together: "
     "the share of the ground truth's restorable leaves back exactly, with a penalty for "
     "leaves it did not have; the number `preimage score --min` gates on. For no backup "
     "nothing is restored, so its restorable is its damage"),
    ("content", "similarity of the user's data after restore: file bytes, row values, "
     "message bodies, resource specs, comment text"),
    ("metadata", "similarity of the hard metadata a client can write back: modes, owners and "
     "times, sequence state, constraints, IMAP flags and dates, labels and annotations, "
     "cookie flags, authorship"),
    ("server", "similarity of the identities the system assigns itself (below)"),
    ("capture p50 / p95", "wall time of the protector's work before the call (deciding and "
     f"capturing), median and 95th percentile; with fewer than {P95_MIN_RUNS} runs a 95th "
     "percentile is just the slowest run, so the maximum is shown as such"),
    ("restore (mean)", "mean wall time of the protector's restore"),
    ("stored", "bytes the backups added to the protector's store (preimage: new blob bytes "
     "after deduplication and compression; workspace-only: the shadow repository; "
     "content-only: the copy); \"moved\" is what rewritten calls renamed into preimage's "
     "trash instead of deleting it — held by the store, though nothing was copied"),
    ("model tokens", "tokens spent on a model to decide or take the backups (0: rule tiers "
     "and baselines)"),
)


def capture_p95_cell(t: Totals) -> str:
    """The 95th percentile, or ``max …`` when too few runs make it the maximum."""
    if t.capture_p95_s is not None:
        return _ms(t.capture_p95_s)
    return "-" if t.capture_max_s is None else f"max {_ms(t.capture_max_s)}"


def stored_cell(t: Totals) -> str:
    """Blob bytes, and what rewritten calls moved into the trash when there is any."""
    moved = f" + {human_bytes(t.moved_bytes)} moved" if t.moved_bytes else ""
    return human_bytes(t.stored_bytes) + moved


def total_cells(t: Totals) -> list[str]:
    """One totals row as text cells (same order as :data:`TOTAL_COLUMNS`)."""
    ran = f"{t.ran}" + (f" (+{t.not_covered} n/c)" if t.not_covered else "")
    ran += f" ({t.errors} err)" if t.errors else ""
    return [
        t.label, ran, _pct(t.backup_rate), _f(t.damage, 3), _f(t.restorable, 3),
        _f(t.content, 3), _f(t.metadata, 3), _f(t.server, 3), _ms(t.capture_p50_s),
        capture_p95_cell(t), _ms(t.restore_mean_s), stored_cell(t), str(t.model_tokens),
    ]


def scenario_cell(r: RunResult | None) -> str:
    """``✓ content/metadata`` after restore, or ``✗ damage c/m`` when nothing was restored."""
    if r is None:
        return ""
    if r.status == "not covered":
        return "n/a"
    if r.status == "error":
        return "error"
    mark = "✓" if r.backed_up else "✗"
    if not r.restored:
        return f"{mark} damage {_f(r.damage_content)}/{_f(r.damage_metadata)}"
    return f"{mark} {_f(r.content)}/{_f(r.metadata)}" + (" ↻" if r.rewritten else "")


def _by_scenario(report: BenchReport) -> dict[str, dict[str, RunResult]]:
    grid: dict[str, dict[str, RunResult]] = {}
    for r in report.runs:
        grid.setdefault(r.scenario, {})[r.protector] = r
    return grid


def category_counts(report: BenchReport) -> dict[str, int]:
    """How many scenarios ran per category (the ``n`` shown next to each category)."""
    seen: dict[str, set[str]] = {}
    for r in report.runs:
        seen.setdefault(r.category, set()).add(r.scenario)
    return {c: len(s) for c, s in seen.items()}


def categories_line(report: BenchReport) -> str:
    """``terminal n=8, sql n=7, …``: how many scenarios each category's averages cover."""
    return ", ".join(f"{c} n={n}" for c, n in category_counts(report).items())


DOMAIN_NOTE = (
    "per domain: backup rate · mean restorable after restore (for no backup: the damage) "
    "over the domain's scenarios the protector ran · the protector's time per tool call it "
    "saw (a task's reads and later work included)"
)


def domain_cells(report: BenchReport) -> list[list[str]]:
    """Per category: its scenario count, then each protector's backup rate and restorable."""
    rows = []
    for category, n in category_counts(report).items():
        cells = [category, str(n)]
        for name in report.protectors:
            t = totals_for(name, report.protectors[name],
                           [r for r in report.runs if r.category == category])
            cells.append("n/a" if not t.ran else
                          f"{_pct(t.backup_rate)} · {_f(t.restorable, 3)} · "
                          f"{_ms(t.per_call_s)}/call")
        rows.append(cells)
    return rows


#: What the publication states, to show beside our figures (the BackUpper paper, "Back Up
#: Before You Regret"): the only two numbers it gives for the whole benchmark.
PUBLISHED_FIGURES = (
    ("none", "agents without backup tooling back up before the regret moment in",
     "15.2% of tasks", "backup_rate"),
    ("backupper", "BackUpper covers every regret-moment action and restores with",
     "92.2% average similarity", "restorable"),
)


def published_lines(report: BenchReport) -> list[str]:
    """The publication's figure for each protector it states one for, and ours beside it."""
    lines = []
    for name, what, figure, ours in PUBLISHED_FIGURES:
        if name not in report.protectors:
            continue
        t = report.total(name)
        value = getattr(t, ours)
        mine = "-" if value is None else (_pct(value) if ours == "backup_rate" else
                                          f"{value:.1%} restorable")
        lines.append(f"published: {what} {figure}; here ({report.protectors[name]}, "
                     f"{t.ran} runs): {mine.replace('_', ' ')}"
                     + (" backed up" if ours == "backup_rate" else ""))
    return lines


def definitions_lines() -> list[str]:
    """``term — definition`` for every totals column."""
    return [f"{term} — {text}" for term, text in DEFINITIONS]


def progress_line(done: int, total: int, r: RunResult, seconds: float) -> str:
    """One line per finished run, for a run without a terminal (CI): position, scenario,
    protector and outcome, so a long run is never silent."""
    if r.status == "ok":
        outcome = f"{'backed up' if r.backed_up else 'not backed up'}, {scenario_cell(r)[2:]}"
        if r.restored and r.damage is not None:
            outcome += f" (damage {_f(r.damage)})"
    else:
        outcome = r.status + (f": {r.reason[:120]}" if r.reason else "")
    return f"[{done}/{total}] {r.scenario} · {r.label}: {outcome} ({seconds:.1f} s)"


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
    for line in definitions_lines():
        console.print(line, markup=False, highlight=False)
    console.print(SERVER_NOTE, markup=False)
    domains = Table(title=DOMAIN_NOTE, title_justify="left")
    for col in ("domain", "scenarios", *report.protectors.values()):
        domains.add_column(col.replace(" (", "\n("), justify="right", no_wrap=True)
    for domain_row in domain_cells(report):
        domains.add_row(*domain_row)
    console.print(domains)
    for line in published_lines(report):
        console.print(line, markup=False, highlight=False)
    grid = _by_scenario(report)
    per = Table(title=f"per scenario — {CELL_NOTE}", title_justify="left")
    per.add_column("scenario", no_wrap=True)
    per.add_column("category", no_wrap=True)
    for label in report.protectors.values():
        # a protector's name breaks before its parenthesis, so no column is cut off
        per.add_column(label.replace(" (", "\n("), justify="right", no_wrap=True)
    for sid, row in grid.items():
        first = next(iter(row.values()))
        per.add_row(sid, first.category, *(scenario_cell(row.get(p)) for p in report.protectors))
    for nr in report.not_run:
        per.add_row(nr.scenario, nr.category, *(["not run"] * len(report.protectors)))
    console.print(per)
    console.print(f"scenarios per category: {categories_line(report)}", markup=False)
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
    lines += ["", *(f"- **{t}** — {d}" for t, d in DEFINITIONS), "", SERVER_NOTE, ""]
    head = ["domain", "scenarios", *report.protectors.values()]
    lines += [DOMAIN_NOTE + ":", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cells) + " |" for cells in domain_cells(report)]
    lines += ["", *(f"- {line}" for line in published_lines(report))]
    lines += ["", CELL_NOTE, ""]
    head = ["scenario", "category", *report.protectors.values()]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sid, row in _by_scenario(report).items():
        first = next(iter(row.values()))
        cells = [sid, first.category, *(scenario_cell(row.get(p)) for p in report.protectors)]
        lines.append("| " + " | ".join(cells) + " |")
    for nr in report.not_run:
        cells = [nr.scenario, nr.category, *(["not run"] * len(report.protectors))]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"Scenarios per category: {categories_line(report)}."]
    if report.not_run:
        lines.append("")
        lines += [f"- not run: {nr.scenario} — {nr.reason}" for nr in report.not_run]
    return "\n".join(lines) + "\n"




def _level(value: float | None) -> str:
    if value is None:
        return "na"
    return "full" if value == 1.0 else ("none" if value == 0.0 else "part")


def cell_html(r: RunResult | None) -> str:
    """A per-scenario cell: the backup mark and the two similarities, each styled by what
    it says (a ✓ is green whatever the similarity; 1.00 green, partial amber, 0 red)."""
    e = html.escape
    if r is None or r.status != "ok":
        return f"<td class='na'>{e(scenario_cell(r))}</td>"
    mark = "<span class='yes'>✓</span>" if r.backed_up else "<span class='no'>✗</span>"
    if not r.restored:
        left = f"{_f(r.damage_content)}/{_f(r.damage_metadata)}"
        why = "nothing was restored: the content/metadata the call left behind"
        return f"<td class='dmg' title='{e(why)}'>{mark} damage {e(left)}</td>"
    sims = "/".join(
        f"<span class='{_level(v)}'>{e(_f(v))}</span>" for v in (r.content, r.metadata)
    )
    title = f"restorable {_f(r.restorable, 3)}; after the call, before restore: {_f(r.damage, 3)}"
    if r.rewritten:
        title += f"; the call ran rewritten: {r.rewritten[:200]}"
        sims += " <span class='rw'>↻</span>"
    return f"<td title='{e(title)}'>{mark} {sims}</td>"


def write_html(report: BenchReport, out: Path, images: list[Path]) -> Path:
    """``index.html`` in ``out``: tables, plots, what did not run, every shortfall."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>preimage regret benchmark — {e(report.suite)}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>preimage regret benchmark</h1>",
        f"<p class='muted'>suite <b>{e(report.suite)}</b> · {e(report.started_at)} · "
        f"preimage {e(report.version)} · {len(report.runs)} runs in {report.seconds:.1f} s</p>",
        "<h2>Totals</h2><div class='wide'><table class='totals'><tr>",
        *(f"<th>{e(c)}</th>" for c in TOTAL_COLUMNS),
        "</tr>",
    ]
    for t in report.totals:
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in total_cells(t)) + "</tr>")
    parts.append("</table></div><dl class='defs'>")
    parts += [f"<dt>{e(t)}</dt><dd>{e(d)}</dd>" for t, d in DEFINITIONS]
    parts.append(f"</dl><p class='muted'>{e(SERVER_NOTE)}</p>")
    parts.append(f"<h2>Per domain</h2><p class='muted'>{e(DOMAIN_NOTE)}.</p>"
                 "<div class='wide'><table><tr><th>domain</th><th>scenarios</th>")
    parts += [f"<th>{e(label)}</th>" for label in report.protectors.values()]
    parts.append("</tr>")
    for domain_row in domain_cells(report):
        parts.append("<tr>" + "".join(f"<td>{e(c)}</td>" for c in domain_row) + "</tr>")
    parts.append("</table></div>")
    if published_lines(report):
        parts.append("<ul>" + "".join(f"<li>{e(x)}</li>" for x in published_lines(report))
                     + "</ul>")
    parts.append(harness_html(report))
    for img in images:
        parts.append(f"<img src='{e(img.name)}' alt='{e(img.stem)}'>")
    parts.append(
        f"<h2>Per scenario</h2><p class='muted'>{e(CELL_NOTE)} Hover a scenario for its "
        "title, a cell for its restorable score and damage. Scenarios per category: "
        f"{e(categories_line(report))}.</p>"
        "<div class='wide'><table><tr><th>scenario</th><th>category</th>"
    )
    parts += [f"<th>{e(label)}</th>" for label in report.protectors.values()]
    parts.append("</tr>")
    for sid, row in _by_scenario(report).items():
        first = next(iter(row.values()))
        cells = "".join(cell_html(row.get(p)) for p in report.protectors)
        parts.append(f"<tr><td title='{e(first.title)}'>{e(sid)}</td>"
                     f"<td>{e(first.category)}</td>{cells}</tr>")
    for nr in report.not_run:
        cells = "".join("<td class='na'>not run</td>" for _ in report.protectors)
        parts.append(f"<tr><td title='{e(nr.title)}'>{e(nr.scenario)}</td>"
                     f"<td>{e(nr.category)}</td>{cells}</tr>")
    parts.append("</table></div>")
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
