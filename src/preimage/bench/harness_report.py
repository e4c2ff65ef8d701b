"""The real-harness run, per domain: the protectors side by side, and what each costs a call.

Through a real harness the protector's work is not timed in-process: it runs as the
harness's hook.  What a user feels is the time from the model's tool call to the
harness's next request — the tool's run plus every hook around it (``call_gaps``).  The
time a protector adds per call is that gap beside the same call's gap in the unprotected
run of the same task (paired by task and call, then the median over calls).
"""

from __future__ import annotations

import html
from statistics import mean, median

from preimage.bench.results import BenchReport, RunResult
from preimage.interface.sizes import human_bytes

DOMAINS = ("terminal", "sql", "kubernetes", "email", "browser")

#: Every figure of a harness table's cell, defined where the table is shown.
HARNESS_DEFINITIONS: tuple[tuple[str, str], ...] = (
    ("held", "regret moments whose state the protector held before the step ran, of all "
     "the tasks' regret moments"),
    ("restorable", "mean similarity after the way back over content and metadata (no "
     "backup: nothing is restored, so it is the damage the session left)"),
    ("per call", "median time from the model's tool call to the harness's next request — "
     "the tool's run and every hook around it"),
    ("(+ …)", "what the protector adds to that time beside the unprotected run of the same "
     "task and call (median over calls)"),
    ("stored", "bytes the protector's backups added (preimage: new blob bytes after "
     "deduplication and compression; BackUpper: growth of its .backupper/ folder)"),
    ("tok", "model tokens the protector spent on backups"),
    ("later work lost", "of the items the tasks' later unrelated work changed, those the "
     "way back (restore, or undo) lost"),
)
HARNESS_NOTE = "Per domain and protector: " + "; ".join(
    f"{term} — {text}" for term, text in HARNESS_DEFINITIONS) + "."
#: Protectors whose every run below 1.0 restorable is listed with its reason.
PREIMAGE_PROTECTORS = ("preimage", "undo", "observed")


def added_per_call(runs: list[RunResult], baseline: dict[str, RunResult]) -> list[float]:
    """Per call, the gap of each run minus the same call's gap without a protector."""
    out: list[float] = []
    for r in runs:
        base = baseline.get(r.scenario)
        if base is not None and len(base.call_gaps) == len(r.call_gaps):
            out += [g - b for g, b in zip(r.call_gaps, base.call_gaps, strict=True)]
    return out


def _cell(runs: list[RunResult], baseline: dict[str, RunResult], protector: str) -> str:
    if not runs:
        return "-"
    moments = sum(r.moments or 0 for r in runs)
    held = sum(r.moments_covered or 0 for r in runs)
    restorable = mean(r.restorable for r in runs if r.restorable is not None) \
        if any(r.restorable is not None for r in runs) else None
    gaps = [g for r in runs for g in r.call_gaps]
    parts = [f"{held}/{moments} held" if moments else "-",
             "-" if restorable is None else f"{restorable:.3f}",
             f"{median(gaps) * 1000:.0f} ms/call" if gaps else "-/call"]
    if protector != "none":
        added = added_per_call(runs, baseline)
        if added:
            parts[-1] += f" (+{median(added) * 1000:.0f} ms)"
        parts.append(human_bytes(sum(r.stored_bytes for r in runs)))
        parts.append(f"{sum(r.model_tokens for r in runs)} tok")
        later = [r for r in runs if r.intervening]
        if later:
            lost = sum(r.collateral or 0 for r in later)
            parts.append(f"later work lost {lost}/{sum(r.intervening or 0 for r in later)}")
    return " · ".join(parts)


def _harnesses(report: BenchReport) -> dict[str, list[RunResult]]:
    """The finished real-harness runs, by harness, in the order they appear."""
    out: dict[str, list[RunResult]] = {}
    for r in report.runs:
        if r.harness and r.status == "ok":
            out.setdefault(r.harness, []).append(r)
    return out


def harness_rows(report: BenchReport, runs: list[RunResult]) -> list[list[str]]:
    """One harness's table: per domain (and all) its task count, then each protector's cell."""
    names = list(report.protectors)
    baseline = {r.scenario: r for r in runs if r.protector == "none"}
    rows = []
    for domain in (*DOMAINS, "all"):
        mine = [r for r in runs if domain in ("all", r.category)]
        if mine:
            rows.append([domain, str(len({r.scenario for r in mine})),
                         *(_cell([r for r in mine if r.protector == n], baseline, n)
                           for n in names)])
    return rows


def below_full(runs: list[RunResult]) -> list[str]:
    """``task (protector): restorable — why`` for each preimage run below 1.0 restorable:
    the leaves that differ (server-assigned fields carry their reasons there), else the
    run's notes."""
    out = []
    for r in runs:
        if r.protector not in PREIMAGE_PROTECTORS or r.restorable is None or r.restorable >= 1.0:
            continue
        why = "; ".join(r.differences[:3]) or "; ".join(r.notes[:2]) or \
            "no differing leaf or note was recorded"
        out.append(f"{r.scenario} ({r.label}): restorable {r.restorable:.3f} — {why}")
    return out


def _not_run_line(report: BenchReport, harness: str) -> str | None:
    not_run = [nr for nr in report.not_run if nr.reason.startswith("no harness path")]
    if not not_run:
        return None
    return (f"Not run through {harness} ({len(not_run)} tasks): "
            + "; ".join(sorted({nr.reason for nr in not_run})))


def harness_table(report: BenchReport) -> str:
    """Markdown: per harness, one row per domain (and all), one column per protector."""
    lines: list[str] = []
    head = ["domain", "tasks", *report.protectors.values()]
    for harness, runs in _harnesses(report).items():
        lines += [f"Through {harness}: {HARNESS_NOTE}", "",
                  "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row) + " |" for row in harness_rows(report, runs)]
        short = below_full(runs)
        lines += ["", f"preimage below 1.0 restorable through {harness}: "
                  + (f"{len(short)} runs" if short else "none")]
        lines += [f"- {line}" for line in short]
        not_run = _not_run_line(report, harness)
        if not_run:
            lines += ["", not_run]
        lines.append("")
    return "\n".join(lines)


def harness_html(report: BenchReport) -> str:
    """The same tables as HTML, with the definitions of their figures on the page."""
    e = html.escape
    groups = _harnesses(report)
    if not groups:
        return ""
    parts = ["<h2>Through the real harnesses</h2>",
             "<p class='muted'>Each task ran through the harness's pinned binary, driven by "
             "the scripted model; every protector installed itself into the harness.</p>"]
    for harness, runs in groups.items():
        parts.append(f"<h3>{e(harness)}</h3><div class='wide'><table><tr><th>domain</th>"
                     "<th>tasks</th>" + "".join(f"<th>{e(label)}</th>"
                                              for label in report.protectors.values())
                     + "</tr>")
        parts += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>"
                  for row in harness_rows(report, runs)]
        parts.append("</table></div>")
        short = below_full(runs)
        parts.append(f"<p>preimage below 1.0 restorable through {e(harness)}: "
                     + (f"{len(short)} runs</p><ul>"
                        + "".join(f"<li>{e(line)}</li>" for line in short) + "</ul>"
                        if short else "none</p>"))
        not_run = _not_run_line(report, harness)
        if not_run:
            parts.append(f"<p class='muted'>{e(not_run)}</p>")
    parts.append("<dl class='defs'>" + "".join(f"<dt>{e(t)}</dt><dd>{e(d)}</dd>"
                                              for t, d in HARNESS_DEFINITIONS) + "</dl>")
    return "\n".join(parts)
