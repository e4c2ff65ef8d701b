"""How a benchmark run is shown: cells say what they mean, nothing is cut off, runs show progress."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from preimage.bench.report import (
    SERVER_NOTE,
    categories_line,
    cell_html,
    markdown,
    progress_line,
    render_terminal,
    write_html,
)
from preimage.bench.results import BenchReport, RunResult, totals_for

PROTECTORS = {"none": "no backup", "workspace": "workspace-only (shadow git)",
              "content": "content-only copy", "preimage": "preimage (backup layer)"}


def run(scenario: str, category: str, protector: str, *, backed_up: bool, content: float,
        metadata: float) -> RunResult:
    return RunResult(scenario=scenario, title=f"title of {scenario}", category=category,
                     system="files", protector=protector, label=PROTECTORS[protector],
                     backed_up=backed_up, content=content, metadata=metadata, server=0.5,
                     capture_s=0.01, restore_s=0.02)


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
    missed = cell_html(run("T-a", "terminal", "none", backed_up=False, content=0.0, metadata=0.0))
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
    assert page.count("<div class='wide'>") == 2  # both tables scroll instead of being cut
    assert "no client can set them" in page and "title='title of T-a'" in page


def test_a_run_without_a_terminal_prints_a_line_per_finished_run() -> None:
    """Progress lines name the position, scenario, protector and outcome."""
    line = progress_line(3, 12, run("T-a", "terminal", "preimage", backed_up=True, content=1.0,
                                    metadata=1.0), 0.42)
    assert line == "[3/12] T-a · preimage (backup layer): backed up, 1.00/1.00 (0.4 s)"
