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
