"""What a command prints where its output goes: plain lines to a pipe, rich's table to a
terminal, and nothing at all when the reader of its pipe has gone away."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

CliResult = subprocess.CompletedProcess[str]


def _tree(root: Path) -> None:
    for i in range(30):
        (root / "d" / f"f{i:02}").parent.mkdir(parents=True, exist_ok=True)
        (root / "d" / f"f{i:02}").write_text(f"file {i}\n")


def test_a_restore_piped_lists_its_changes_one_plain_line_each(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """Through a pipe every changed entry is a line of its own (name, outcome, action),
    with no table drawing; the count line and the undo line follow."""
    root = tmp_path / "t"
    _tree(root)
    backup = cli("capture", f"file://{root}", check=True).stdout.strip()
    shutil.rmtree(root)
    text = cli("restore", backup, check=True).stdout
    lines = text.splitlines()
    assert lines[0] == f"restored file://{root}"
    assert any(line.split() == ["d/f07", "restored", "write", "file"] for line in lines)
    assert not any(c in text for c in "┏┃│━")
    assert "32 change(s), 0 unchanged" in text and "undo this restore with" in text


def test_undo_list_log_and_stats_piped_print_plain_lines(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """What an agent reads after `preimage undo`, `list`, `log` or `stats` is plain lines: the
    column names, then a row per line with its cells in columns — no table drawing; a
    cell of several lines (a backup's targets) continues under its column."""
    root = tmp_path / "t"
    _tree(root)
    before = cli("capture", f"file://{root}", check=True).stdout.strip()
    (root / "d" / "f07").unlink()
    (root / "d" / "new").write_text("made by the call\n")
    after = cli("capture", f"file://{root}", f"file://{tmp_path / 'other'}",
                check=True).stdout.strip()
    undone = cli("undo", before, "--post", after, check=True).stdout
    lines = undone.splitlines()
    assert lines[2].split() == ["item", "verdict", "what", "note"]
    assert ["d/f07", "revert", "write", "back", "deleted", "by", "the", "call"] in (
        line.split() for line in lines)
    assert ["d/new", "revert", "remove", "created", "by", "the", "call"] in (
        line.split() for line in lines)
    assert (root / "d" / "f07").read_text() == "file 7\n" and not (root / "d" / "new").exists()
    listed = cli("list", check=True).stdout.splitlines()
    assert listed[0].split()[:3] == ["id", "time", "(UTC)"]
    (row,) = [i for i, line in enumerate(listed) if line.split()[:1] == [after]]
    column = listed[row].index(f"file://{root}")
    assert listed[row + 1].index(f"file://{tmp_path / 'other'}") == column
    assert cli("log", check=True).stdout.startswith("no calls recorded yet")
    stats = cli("stats", check=True).stdout.splitlines()
    head = stats.index("per target")
    assert stats[head + 1].split() == ["target", "backups", "restore", "size", "only", "here"]
    assert not any(c in "\n".join([undone, *listed, *stats]) for c in "┏┃│━")


def test_score_piped_prints_plain_lines_with_its_numbers_aligned_right(
        tmp_path: Path, cli: Callable[..., CliResult]) -> None:
    """`preimage score` through a pipe (what CI gating and `make demo` read): its title,
    the column names and a line per target, each number ending under the end of its
    column's name — no table drawing, and a name with brackets as it is."""
    root = tmp_path / "a[bold]b"
    _tree(root)
    backup = cli("capture", f"file://{root}", check=True).stdout.strip()
    (root / "d" / "f07").write_text("changed\n")
    lines = cli("score", backup).stdout.splitlines()
    head = lines.index("similarity (live state vs backup)")
    names, row = lines[head + 1], lines[head + 2]
    assert names.split() == ["target", "content", "metadata", "access", "server", "restorable"]
    assert row.split()[0] == f"file://{root}" and row.split()[1] != "1.0000"   # content
    at = row.index(" ", row.index("file://"))
    for column, value in zip(names.split()[1:], row.split()[1:], strict=True):
        at = row.index(value, at) + len(value)
        assert at == names.index(column) + len(column), (row, column)
    assert not any(c in "\n".join(lines) for c in "┏┃│━")


def test_a_restore_on_a_terminal_draws_rich_s_table(
        tmp_path: Path, cli: Callable[..., CliResult], home: Path) -> None:
    """On a terminal the changes are rich's table."""
    root = tmp_path / "t"
    _tree(root)
    backup = cli("capture", f"file://{root}", check=True).stdout.strip()
    shutil.rmtree(root)
    main, child = pty.openpty()
    env = {**os.environ, "PREIMAGE_HOME": str(home), "COLUMNS": "120"}
    chunks = []
    with subprocess.Popen([sys.executable, "-m", "preimage", "restore", backup],
                          stdout=child, stderr=subprocess.DEVNULL, env=env) as proc:
        os.close(child)
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:   # the terminal's other end closed: the command is done
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(main)
        assert proc.wait(timeout=600) == 0
    text = b"".join(chunks).decode()
    assert "┏" in text and "d/f07" in text


def test_a_reader_that_goes_away_ends_the_command_quietly(
        tmp_path: Path, cli: Callable[..., CliResult], home: Path) -> None:
    """`preimage restore ID | head -1`: the restore is done, the rest of its output has no
    reader; it ends as a process killed by SIGPIPE does (141), with nothing on stderr —
    not with advice to free space."""
    root = tmp_path / "t"
    _tree(root)
    backup = cli("capture", f"file://{root}", check=True).stdout.strip()
    shutil.rmtree(root)
    read_end, write_end = os.pipe()
    os.close(read_end)   # the reader has gone before the first line
    env = {**os.environ, "PREIMAGE_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "preimage", "restore", backup],
                          stdout=write_end, stderr=subprocess.PIPE, text=True, env=env,
                          timeout=600)
    os.close(write_end)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""
    assert sorted(p.name for p in (root / "d").iterdir()) == [f"f{i:02}" for i in range(30)]
