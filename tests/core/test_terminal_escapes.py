"""Names from the user's systems reach the terminal as text: a file name or label that
would clear the screen, set the window title or reverse the reading order is printed
with its control characters spelled out, in every human output."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

CliResult = subprocess.CompletedProcess[str]
CLEAR, TITLE, BIDI = "\x1b[2J", "\x1b]0;owned\x07", "\u202e"


def test_control_characters_in_names_are_printed_escaped(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    """list, show, diff, score, restore, rules explain and an error: no raw ESC, BEL or bidi override, the names still readable."""
    root = tmp_path / "t"
    root.mkdir()
    (root / f"a{CLEAR}b").write_text("1")
    (root / f"c{TITLE}d").write_text("2")
    (root / f"e{BIDI}txt.exe").write_text("3")
    cli("capture", "--label", f"label{CLEAR}", f"file://{root}", check=True)
    for p in root.iterdir():
        p.write_text("changed")
    runs = [cli("list"), cli("show", "last"), cli("diff", "last"), cli("score", "last"),
            cli("restore", "last"), cli("rules", "explain", f"rm -rf 'x{CLEAR}'"),
            cli("restore", f"nope{CLEAR}")]
    for run in runs:
        text = run.stdout + run.stderr
        for raw in ("\x1b", "\x07", BIDI):
            assert raw not in text, (run.args, text)
        assert "Traceback" not in text
    shown = "".join(r.stdout + r.stderr for r in runs)
    assert "\\x1b[2J" in shown and "\\u202e" in shown


def test_names_with_emoji_codes_and_markup_are_printed_as_they_are(
    tmp_path: Path, cli: Callable[..., CliResult]
) -> None:
    """A file named ``:smile:.txt`` or ``[bold]x`` is listed by its name, in the table of
    ``diff`` and in the lines of ``restore``, not as a picture or styled away."""
    root = tmp_path / "t"
    root.mkdir()
    names = [":smile:.txt", ":+1: done", "[bold]x", "t[b]x"]
    for name in names:
        (root / name).write_text("1")
    cli("capture", "--label", ":rocket:", f"file://{root}", check=True)
    for name in names:
        (root / name).write_text("changed")
    runs = [cli("list"), cli("diff", "last"), cli("restore", "last")]
    shown = "".join(r.stdout + r.stderr for r in runs)
    assert ":rocket:" in shown
    for name in names:
        assert name in shown, (name, shown)
    assert not any(ord(c) > 0x2fff for c in shown), shown


def test_a_plain_line_to_a_pipe_is_what_rich_would_print() -> None:
    """Lines of plain text to a file or pipe skip rich; rich itself, with the same options,
    is the oracle for what they must look like."""
    import io
    import sys

    from preimage.cli.output import _escaping_console, out

    lines = ["captured 1 target(s), 792 item(s)", "", "trailing   ", "  leading",
             "wide 漢字 and é", f"a{CLEAR}b{BIDI}c", "two\nlines", "[red]x[/red] :smile:",
             "x" * 400, "\r\n", "zero\u200bwidth"]
    for parts in [(line,) for line in lines] + [("a", "b  c", "")]:
        ours, theirs = io.StringIO(), io.StringIO()
        saved = sys.stdout
        sys.stdout = ours
        try:
            out.print(*parts)
        finally:
            sys.stdout = saved
        _escaping_console(file=theirs, width=160, highlight=False, soft_wrap=True,
                          markup=False, emoji=False).print(*parts)
        assert ours.getvalue() == theirs.getvalue(), parts
