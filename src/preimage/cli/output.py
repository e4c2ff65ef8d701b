"""What every command shares: the two consoles, one-line errors, JSON and times."""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import traceback
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import wraps
from typing import Any, NoReturn, TypeVar

import click

from preimage.interface.errors import PreimageError
from preimage.interface.redact import redact

F = TypeVar("F", bound=Callable[..., Any])

for _stream in (sys.stdout, sys.stderr):
    # a file name that is not UTF-8 prints as \xNN instead of stopping the command
    reconfigure = getattr(_stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")

# C0 and C1 control characters (but newline and tab), DEL, and the bidirectional
# overrides: a name holding one could clear the screen, set the window title, or make
# text read in another order than it is stored.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control character spelled out (``\\x1b``, ``\\u202e``): what the
    user's systems hold (file names, labels, table names) reaches a terminal only as text."""
    return _CONTROL.sub(lambda m: (f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100
                                   else f"\\u{ord(m[0]):04x}"), text)


def _escaping_console(**options: Any) -> Any:
    """A rich ``Console`` whose every string — printed, or a table cell — is made
    :func:`printable` before rich reads it (rich's own styling still reaches a terminal)."""
    from rich.console import Console

    class EscapingConsole(Console):
        def render_str(self, text: str, **kwargs: Any) -> Any:
            return super().render_str(printable(text), **kwargs)

    return EscapingConsole(**options)


class _Console:
    """A rich ``Console`` made when first used: a ``--json`` command prints without rich,
    and so does a line of plain text going to a file or a pipe (see :meth:`print`), so
    neither pays for importing it (30 ms of a command's own process)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Any = None

    def _stream(self) -> Any:
        # looked up at each use: a warm process's child gets its streams after import
        return sys.stderr if self._options.get("stderr") else sys.stdout

    def _not_a_terminal(self) -> bool:
        """The stream is surely not a terminal: rich would say so too (no environment
        variable forces it to treat it as one)."""
        isatty = getattr(self._stream(), "isatty", None)
        return (isatty is not None and not isatty() and not os.environ.get("FORCE_TERMINAL")
                and not os.environ.get("TTY_INTERACTIVE"))

    @property
    def is_terminal(self) -> bool:
        """Whether the stream is a terminal, as rich decides it."""
        return False if self._not_a_terminal() else bool(self.__getattr__("is_terminal"))

    def print(self, *objects: Any, **options: Any) -> None:
        """Print as rich would; plain strings to a file or a pipe are written directly.

        With no markup, highlighting or emoji codes, soft wrapping on and no style given,
        rich writes such a line as it is, after :func:`printable` (its tabs it expands,
        so a line holding one still goes through rich); tests/core/test_terminal_escapes.py holds
        both ways to the same output."""
        if (not options and objects and all(type(o) is str for o in objects)
                and self._not_a_terminal()):
            text = " ".join(objects)
            if "\t" not in text:
                stream = self._stream()
                stream.write(printable(text) + "\n")
                stream.flush()
                return
        self.__getattr__("print")(*objects, **options)

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            # Decided on first use, not at import: a warm process's child gets its
            # stdout after preimage was imported.
            options = dict(self._options)
            if options.pop("wide_unless_terminal", False):
                options["width"] = None if sys.stdout.isatty() else 160
            self._console = _escaping_console(**options)
        return getattr(self._console, name)


# No markup and no emoji codes: what is printed quotes names from the user's systems
# (files, tables, folders), and ``a[bold]b``, ``t[/]x`` or ``:smile:.txt`` must come out as
# they are, not styled away, raise or turn into a picture.
out: Any = _Console(highlight=False, soft_wrap=True, markup=False, emoji=False,
                    wide_unless_terminal=True)
err: Any = _Console(stderr=True, highlight=False, soft_wrap=True, markup=False, emoji=False)


def print_table(title: str | None, columns: tuple[str, ...],
                rows: Sequence[Sequence[str | None]], more: int = 0, *,
                right: Collection[int] = ()) -> None:
    """Rows of a command's result: rich's table on a terminal; elsewhere (a pipe, a file,
    a log, an agent reading the output) the title, the column names and one plain line
    per row, each column but the last padded to its widest cell, empty trailing cells
    left out — rendering 200 rows as a table costs 0.15 s of CPU with rich's import.
    ``right``: the indexes of the columns aligned right (numbers), padded even when last.
    ``more`` rows not shown end both as ``… N more``."""
    cells = [[cell or "" for cell in row] for row in rows]
    if out.is_terminal:
        from rich.table import Table

        table = Table(title=title or None)
        for i, column in enumerate(columns):
            table.add_column(column, justify="right" if i in right else "left")
        for row in cells:
            table.add_row(*row)
        if more > 0:
            table.add_row(f"… {more} more", *([""] * (len(columns) - 1)))
        out.print(table)
        return
    if title:
        out.print(title)
    # a cell of several lines (a backup's targets) continues on the lines below its row
    lines = [list(columns)] + [list(line) for row in cells
             for line in itertools.zip_longest(*(cell.split("\n") for cell in row),
                                               fillvalue="")]
    widths = [max((len(line[i]) for line in lines), default=0) for i in range(len(columns))]
    for line in lines:
        while len(line) > 1 and not line[-1] and len(line) - 1 not in right:
            line.pop()
        end = len(line) - 1
        out.print("  " + "  ".join(
            cell.rjust(widths[i]) if i in right else cell if i == end else cell.ljust(widths[i])
            for i, cell in enumerate(line)))
    if more > 0:
        out.print(f"  … {more} more")


def one_line(text: str) -> str:
    """The first line of ``text``, secrets redacted."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return redact(first)


def _fail(message: str, code: int = 2) -> NoReturn:
    # the message quotes user input (URIs, paths): never read as console markup
    from rich.markup import escape

    err.print(f"[bold red]preimage:[/] {escape(one_line(message))}", markup=True, highlight=False)
    sys.exit(code)


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def _os_reason(exc: OSError) -> str:
    where = f" ({exc.filename})" if exc.filename else ""
    return f"{exc.strerror or exc}{where}"


def handle_errors(fn: F) -> F:
    """Turn every error into a one-line reason and exit code 2 — never a traceback.

    A preimage error says what happened and what to do; an operating-system
    error (disk full, permission denied) is named with its path; anything else
    is a bug, reported in one line with the hint to set ``PREIMAGE_DEBUG=1``.
    """

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except PreimageError as exc:
            _fail(str(exc) or type(exc).__name__)
        except KeyboardInterrupt:
            _fail("interrupted — run the same command again to finish", 130)
        except (click.exceptions.Exit, click.ClickException, SystemExit):
            raise
        except OSError as exc:
            if isinstance(exc, BrokenPipeError) and _stdout_gone():
                # what reads the output went away (`| head`): the command's work is done
                # and nobody is left to tell; end as a process killed by SIGPIPE does
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
                sys.exit(128 + 13)
            _fail(f"{_os_reason(exc)} — free space or fix permissions, then run the same "
                  "command again")
        except RecursionError:
            _fail("the input is nested too deeply to read")
        except Exception as exc:
            if os.environ.get("PREIMAGE_DEBUG"):
                traceback.print_exc()
            _fail(f"unexpected error: {type(exc).__name__}: {exc} — run again with "
                  "PREIMAGE_DEBUG=1 for details and report it")

    return wrapper  # type: ignore[return-value]


class JsonArray(list[Any]):
    """An array :func:`emit_json` prints as it reads it, never held whole, one value to a
    line: ``items()`` gives its values afresh each time it is called, ``length`` says how
    many."""

    def __init__(self, items: Callable[[], Iterator[Any]], length: int) -> None:
        super().__init__()
        self._items = items
        self._length = length

    def __iter__(self) -> Iterator[Any]:
        return self._items()

    def __len__(self) -> int:
        return self._length


_ONE_LINE = json.JSONEncoder(default=str)   # no indent: the C encoder


def emit_json(data: Any) -> None:
    """Print ``data`` as JSON on stdout (the only thing a ``--json`` command prints there),
    a block at a time, indented by two; a :class:`JsonArray` in it is read as it is
    printed, each of its values on a line of its own (a restore's million items)."""
    block: list[str] = []
    size = 0
    for chunk in _json_text(data, ""):
        block.append(chunk)
        size += len(chunk)
        if size >= 1 << 16:
            click.echo("".join(block), nl=False)
            block.clear()
            size = 0
    block.append("\n")
    click.echo("".join(block), nl=False)


def _json_text(value: Any, pad: str) -> Iterator[str]:
    """``value`` as ``json.dumps(value, indent=2, default=str)`` writes it at indent
    ``pad``, but a :class:`JsonArray`'s values one to a line."""
    inner = pad + "  "
    if isinstance(value, JsonArray):
        opening = "[\n"
        for item in value:
            yield opening + inner + _ONE_LINE.encode(item)
            opening = ",\n"
        yield "[]" if opening == "[\n" else "\n" + pad + "]"
    elif isinstance(value, dict) and value:
        opening = "{\n"
        for key, item in value.items():
            # a key as json spells it (a number, true, null: as a string)
            yield opening + inner + (_ONE_LINE.encode(key) if isinstance(key, str)
                                     else _ONE_LINE.encode({key: 0})[1:-4]) + ": "
            yield from _json_text(item, inner)
            opening = ",\n"
        yield "\n" + pad + "}"
    elif isinstance(value, (list, tuple)) and value:
        opening = "[\n"
        for item in value:
            yield opening + inner
            yield from _json_text(item, inner)
            opening = ",\n"
        yield "\n" + pad + "]"
    else:
        yield _ONE_LINE.encode(value)


def iso(ts: float | None) -> str | None:
    """An ISO 8601 time with its timezone (UTC), as ``--json`` prints times."""
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds")


def when(ts: float) -> str:
    """A time for tables: ``2025-01-31 12:00:00``, UTC."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


@contextmanager
def working(text: str, enabled: bool) -> Iterator[None]:
    """A spinner on stderr while long work runs (only on a terminal)."""
    if enabled and err.is_terminal:
        with err.status(text):
            yield
    else:
        yield


def print_score_table(total: Any, per_target: list[tuple[str, Any]]) -> None:
    """The similarity table: one row per target plus the total; n/a for an empty class."""
    from preimage.similarity.render import SCORE_COLUMNS, score_rows

    print_table("similarity (live state vs backup)", ("target", *SCORE_COLUMNS),
                score_rows(total, per_target), right=range(1, len(SCORE_COLUMNS) + 1))


def warm_console() -> None:
    """Print a table nowhere: rich loads its emoji and width tables on first print (the
    warm process does this once, so that no command it serves pays for it)."""
    import io

    from rich.console import Console
    from rich.table import Table

    table = Table("backup", "when")
    table.add_row(":white_check_mark: é", "now")
    Console(file=io.StringIO(), width=80).print(table)
