"""The real-harness run, per domain: the protectors side by side, and what each costs a call.

Through a real harness the protector's work is not timed in-process: it runs as the
harness's hook.  What a user feels is the time from the model's tool call to the
harness's next request — the tool's run plus every hook around it (``call_gaps``).  The
time a protector adds per call is that gap beside the same call's gap in the unprotected
run of the same task (paired by task and call, then the median over calls).
"""

from __future__ import annotations

from statistics import mean, median

from preimage.bench.results import BenchReport, RunResult
from preimage.interface.sizes import human_bytes

DOMAINS = ("terminal", "sql", "kubernetes", "email", "browser")

HARNESS_NOTE = (
    "Per domain and protector: held — regret moments whose state the protector held before "
    "the step, of all moments; restorable — mean similarity after restore over content and "
    "metadata (no backup: the damage); per call — median time from the model's tool call to "
    "the harness's next request (the tool and every hook), and + what the protector adds to "
    "it beside the unprotected run of the same task and call; stored — bytes its backups "
    "added; tokens — model tokens it spent on backups; later work lost — of the items the "
    "tasks' later unrelated work changed, those its way back (restore, or undo) lost."
)


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


def harness_table(report: BenchReport) -> str:
    """Markdown: one row per domain (and all), one column per protector."""
    runs = [r for r in report.runs if r.harness and r.status == "ok"]
    if not runs:
        return ""
    harness = runs[0].harness
    names = list(report.protectors)
    baseline = {r.scenario: r for r in runs if r.protector == "none"}
    head = ["domain", "tasks", *(report.protectors[n] for n in names)]
    lines = [f"Through {harness}: {HARNESS_NOTE}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for domain in (*DOMAINS, "all"):
        mine = [r for r in runs if domain in ("all", r.category)]
        if not mine:
            continue
        tasks = len({r.scenario for r in mine})
        cells = [_cell([r for r in mine if r.protector == n], baseline, n) for n in names]
        lines.append(f"| {domain} | {tasks} | " + " | ".join(cells) + " |")
    not_run = [nr for nr in report.not_run if nr.reason.startswith("no harness path")]
    if not_run:
        lines += ["", f"Not run through {harness} ({len(not_run)} tasks): "
                  + "; ".join(sorted({nr.reason for nr in not_run}))]
    return "\n".join(lines) + "\n"
