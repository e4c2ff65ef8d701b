"""The shell reader sees every command a line runs, where it runs and with what arguments."""

from __future__ import annotations

import pytest

from preimage.layer.reading.shell import parse

ENV = {"HOME": "/home/a", "X": "xx", "PATH": "/usr/bin"}


@pytest.mark.parametrize(("line", "expected"), [
    ("ls | grep x && rm -rf b; echo c", [["ls"], ["grep", "x"], ["rm", "-rf", "b"], ["echo", "c"]]),
    ("sudo -u bob rm -rf ~/x", [["rm", "-rf", "/home/a/x"]]),
    ("env X=1 Y=2 nice -n 5 rm 'a b'", [["rm", "a b"]]),
    ("bash -c 'cd sub && rm -rf \"$X\"'", [["rm", "-rf", "xx"]]),
    ("time rm -rf {a,b}", [["rm", "-rf", "a", "b"]]),
    ("(cd /tmp; rm c) && rm d", [["rm", "c"], ["rm", "d"]]),
    ("echo $(rm -rf e)", [["rm", "-rf", "e"], ["echo", ""]]),
    ("find . -name x | xargs rm", [["find", ".", "-name", "x"], ["rm", "{xargs}"]]),
    ("[[ -f x ]] && rm x", [["true"], ["rm", "x"]]),
    ("timeout 5 rm f", [["rm", "f"]]),
])
def test_commands_are_unwrapped(line: str, expected: list[list[str]]) -> None:
    """Pipes, lists, subshells, wrappers, quoting and `bash -c` yield the real commands."""
    assert [c.argv for c in parse(line, cwd="/w", env=ENV).commands] == expected


def test_cd_moves_the_working_directory_and_subshells_do_not_leak() -> None:
    """`cd` changes where later commands run, except out of a subshell."""
    cmds = parse("(cd /tmp && rm a); cd ~/proj && rm b", cwd="/w", env=ENV).commands
    assert [(c.argv[-1], c.cwd) for c in cmds] == [("a", "/tmp"), ("b", "/home/a/proj")]


def test_heredoc_and_pipe_feed_stdin() -> None:
    """A here-document, a here-string and a piped echo are the next command's stdin."""
    (cmd,) = parse("psql <<'SQL'\nDROP TABLE t;\nSQL", cwd="/w", env=ENV).commands
    assert cmd.stdin_text() == "DROP TABLE t;\n"
    cmds = parse('echo "DELETE FROM t" | psql', cwd="/w", env=ENV).commands
    assert cmds[1].stdin_text() == "DELETE FROM t\n"


def test_unknown_variables_and_loop_variables_are_dynamic() -> None:
    """Words only the running shell can know are marked dynamic, never guessed."""
    cmds = parse("for f in *.log; do rm $f; done; rm $NOPE/x", cwd="/w", env=ENV).commands
    assert [w.dynamic for c in cmds for w in c.words[1:]] == [True, True]


def test_unparseable_line_is_split_and_said() -> None:
    """A line bashlex cannot read is still split on its operators, with a note."""
    parsed = parse("case $x in a) rm a;; esac", cwd="/w", env=ENV)
    assert not parsed.exact and parsed.notes
    assert ["rm", "a"] in [c.argv for c in parsed.commands]
