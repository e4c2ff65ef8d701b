"""How a benchmark run is shown: cells say what they mean, nothing is cut off, runs show progress."""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console

from preimage.bench.report import (
    DEFINITIONS,
    SERVER_NOTE,
    TOTAL_COLUMNS,
    categories_line,
    cell_html,
    markdown,
    progress_line,
    render_terminal,
    scenario_cell,
    total_cells,
    write_html,
)
from preimage.bench.results import P95_MIN_RUNS, BenchReport, RunResult, totals_for

PROTECTORS = {"none": "no backup", "workspace": "workspace-only (shadow git)",
              "content": "content-only copy", "preimage": "preimage (backup layer)"}


def run(scenario: str, category: str, protector: str, *, backed_up: bool, content: float,
        metadata: float) -> RunResult:
    return RunResult(scenario=scenario, title=f"title of {scenario}", category=category,
                     system="files", protector=protector, label=PROTECTORS[protector],
                     backed_up=backed_up, content=content, metadata=metadata, server=0.5,
                     capture_s=0.01, restore_s=0.02, restored=protector != "none",
                     damage=0.0, damage_content=0.0, damage_metadata=0.5,
                     restorable=(content + metadata) / 2)


def report() -> BenchReport:
    runs = [
        run(sid, cat, p, backed_up=p != "none", content=1.0 if p != "none" else 0.0,
            metadata=1.0 if p == "preimage" else 0.71)
        for sid, cat in (("T-a", "terminal"), ("T-b", "terminal"), ("S-a", "sql"))
        for p in PROTECTORS
    ]
    rep = BenchReport(version="0", suite="test", started_at="2026-01-01T00:00:00Z", seconds=1.0,
                      protectors=PROTECTORS, runs=runs)
    rep.totals = [totals_for(p, label, runs) for p, label in PROTECTORS.items()]
    return rep


def test_a_backed_up_cell_is_green_whatever_its_similarity() -> None:
    """✓ is styled as success even when metadata came back at 0.71; the numbers carry their own level."""
    cell = cell_html(run("T-a", "terminal", "content", backed_up=True, content=1.0, metadata=0.71))
    assert "<span class='yes'>✓</span>" in cell
    assert "<span class='full'>1.00</span>/<span class='part'>0.71</span>" in cell
    missed = cell_html(run("T-a", "terminal", "workspace", backed_up=False, content=0.0,
                           metadata=0.0))
    assert "<span class='no'>✗</span>" in missed and "<span class='none'>0.00</span>" in missed


def test_every_view_explains_the_server_column_and_counts_categories(tmp_path: Path) -> None:
    """The server column's meaning and each category's n are in the terminal, Markdown and HTML."""
    rep = report()
    assert categories_line(rep) == "terminal n=2, sql n=1"
    console = Console(width=100, record=True)
    render_terminal(rep, console)
    text = console.export_text()
    assert "no client can set them" in text and "terminal n=2" in text
    # every protector's column is whole on a 100-column terminal: its name breaks, not its cells
    assert "✓ 1.00/1.00" in text and "(backup layer)" in text
    assert SERVER_NOTE in markdown(rep)
    page = write_html(rep, tmp_path, []).read_text()
    assert page.count("<div class='wide'>") == 3  # all three tables scroll instead of being cut
    assert "no client can set them" in page and "title='title of T-a'" in page


def test_a_run_without_a_terminal_prints_a_line_per_finished_run() -> None:
    """Progress lines name the position, scenario, protector and outcome."""
    line = progress_line(3, 12, run("T-a", "terminal", "preimage", backed_up=True, content=1.0,
                                    metadata=1.0), 0.42)
    assert line == ("[3/12] T-a · preimage (backup layer): backed up, 1.00/1.00 (damage 0.00)"
                    " (0.4 s)")


def test_every_totals_column_is_defined_on_the_page(tmp_path: Path) -> None:
    """Each totals column (restorable, backup rate, content, metadata, p95, stored, …) has a
    definition in the HTML and the Markdown, and restorable is a column, not only JSON."""
    rep = report()
    page = write_html(rep, tmp_path, []).read_text()
    md = markdown(rep)
    assert "<th>restorable</th>" in page and "| restorable |" in md
    defined = {term for term, _ in DEFINITIONS}
    for column in TOTAL_COLUMNS[2:]:
        assert any(column == term or column in term.split(" / ")[0] or
                   term.startswith(column.split(" ")[0]) for term in defined), column
    for term, text in DEFINITIONS:
        assert f"<dt>{term}</dt>" in page and html.escape(text)[:40] in page
        assert f"**{term}**" in md
    assert "score --min" in page


def test_a_no_backup_cell_shows_the_damage_labelled_as_such() -> None:
    """Nothing restored: the cell reads "damage" with the state the call left, never a
    green after-restore 1.00."""
    none = run("T-a", "terminal", "none", backed_up=False, content=1.0, metadata=1.0)
    assert scenario_cell(none) == "✗ damage 0.00/0.50"
    cell = cell_html(none)
    assert "damage 0.00/0.50" in cell and "class='full'" not in cell


def test_damage_and_restorable_are_in_the_totals() -> None:
    """The totals show the damage (right after the call) beside the restorable score."""
    rep = report()
    cells = dict(zip(TOTAL_COLUMNS, total_cells(rep.total("preimage")), strict=True))
    assert cells["damage"] == "0.000" and cells["restorable"] == "1.000"
    none = dict(zip(TOTAL_COLUMNS, total_cells(rep.total("none")), strict=True))
    assert none["restorable"] == "0.355"


def test_p95_is_shown_only_with_enough_runs_else_the_maximum() -> None:
    """Seven runs give "max …"; twenty give a real 95th percentile below the maximum."""
    few = [run(f"T-{i}", "terminal", "preimage", backed_up=True, content=1.0, metadata=1.0)
           for i in range(7)]
    for i, r in enumerate(few):
        r.capture_s = (i + 1) / 100
    cells = dict(zip(TOTAL_COLUMNS, total_cells(totals_for("preimage", "p", few)), strict=True))
    assert cells["capture p95"] == "max 70 ms"
    many = [r.model_copy(update={"scenario": f"T-{i}", "capture_s": (i + 1) / 100})
            for i, r in enumerate(few * 3)][:P95_MIN_RUNS]
    t = totals_for("preimage", "p", many)
    assert t.capture_p95_s is not None and t.capture_max_s is not None
    assert t.capture_p95_s < t.capture_max_s
    assert not total_cells(t)[TOTAL_COLUMNS.index("capture p95")].startswith("max")


def test_a_rewritten_call_is_marked_and_its_moved_bytes_are_counted() -> None:
    """rm → trash: the cell carries ↻ with the rewrite, and stored says what was moved."""
    r = run("T-a", "terminal", "preimage", backed_up=True, content=1.0, metadata=1.0)
    r.rewritten, r.moved_bytes, r.stored_bytes = "preimage trash -- a", 3 * 1024 * 1024, 0
    assert scenario_cell(r).endswith("↻")
    assert "↻" in cell_html(r) and "preimage trash -- a" in cell_html(r)
    t = totals_for("preimage", "p", [r])
    assert t.rewritten == 1
    stored = total_cells(t)[TOTAL_COLUMNS.index("stored")]
    assert stored == "0 B + 3.0 MiB moved"


def test_latency_panels_name_protectors_and_carry_several_ticks() -> None:
    """Ticks under each column are protector names, and a log axis over data within one
    decade still shows at least three labelled ticks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    from preimage.bench.plots import log_axis, tick_label

    assert tick_label("preimage (backup layer)") == "preimage\n(backup layer)"
    fig, ax = plt.subplots()
    ax.scatter([1, 2], [120.0, 340.0])
    log_axis(ax, ticker, [120.0, 340.0])
    fig.canvas.draw()
    low, high = ax.get_ylim()
    shown = [t for t in ax.get_yticks() if low <= t <= high]
    plt.close(fig)
    assert len(shown) >= 3


def test_a_latency_row_without_times_is_left_out(tmp_path: Path) -> None:
    """A run through a real harness times whole calls, not captures: the capture row, which
    would be empty, is not drawn (the figure is one row high), and with both rows timed it
    is (two rows)."""
    import matplotlib.image

    from preimage.bench.plots import latency_distribution

    rep = report()
    harness_like = rep.model_copy(update={"runs": [r.model_copy(update={"capture_s": None})
                                                  for r in rep.runs]})
    one = matplotlib.image.imread(latency_distribution(harness_like, tmp_path)).shape[0]
    two = matplotlib.image.imread(latency_distribution(rep, tmp_path)).shape[0]
    assert two > 1.7 * one


def test_time_per_call_counts_every_call_a_task_made() -> None:
    """A task of 4 calls with 0.4 s of protector time and a one-call scenario with 0.1 s
    give 0.1 s per call, shown per domain."""
    task = run("T.x.01", "terminal", "preimage", backed_up=True, content=1.0, metadata=1.0)
    task.capture_s, task.calls = 0.4, 4
    single = run("T-a", "terminal", "preimage", backed_up=True, content=1.0, metadata=1.0)
    single.capture_s = 0.1
    t = totals_for("preimage", "p", [task, single])
    assert t.per_call_s is not None and abs(t.per_call_s - 0.1) < 1e-9
    rep = BenchReport(version="0", suite="t", started_at="now", seconds=1.0,
                      protectors={"preimage": "p"}, runs=[task, single])
    from preimage.bench.report import domain_cells

    assert domain_cells(rep) == [["terminal", "2", "100% · 1.000 · 100 ms/call"]]
