"""bashlex's LR parse table, built once per installation instead of on every start;
here-document bodies read a line at a time instead of a character at a time.

bashlex (0.18) builds its LALR table with its bundled PLY every time
``bashlex.parser`` is imported — tens of milliseconds on every hook process
that reads a shell command.  :func:`install` wraps that one import: the
first build's action/goto tables and production list are written to the
user cache (``marshal``: plain dicts, tuples and strings, nothing that runs
code on load), keyed by the Python version and the grammar file's
content; later imports rebuild the parser from them.
Anything unexpected — a missing or stale cache, another bashlex, an
unwritable cache directory — falls back to bashlex's own build.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import marshal
import os
import sys
import types
import zlib
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from preimage.interface.cache import cache_dir

FORMAT = 1


def _cache_file(grammar: str) -> Path:
    # Keyed by the grammar's bytes, not its file's time: every virtual environment holding
    # the same bashlex shares one table instead of leaving one file each in the cache.
    with open(grammar, "rb") as fh:
        text = fh.read()
    tag = f"{FORMAT}-{sys.version_info[0]}{sys.version_info[1]}-{len(text)}-{zlib.crc32(text):08x}"
    return cache_dir() / f"bashlex-lalr-{tag}.marshal"


class _Production:
    """What bashlex's ``LRParser.parse`` reads of a grammar production."""

    __slots__ = ("callable", "func", "len", "name", "str")

    def __init__(self, name: str, length: int, text: str, func: str | None,
                 pdict: dict[str, Any]) -> None:
        self.name, self.len, self.str, self.func = name, length, text, func
        self.callable = pdict[func] if func else None


def _load(path: Path, yacc: types.ModuleType, pdict: dict[str, Any]) -> Any:
    with open(path, "rb") as fh:
        doc = marshal.load(fh)  # noqa: S302 - the user's own cache; marshal runs no code on load
    if not (isinstance(doc, tuple) and len(doc) == 3):
        raise ValueError("not a table")
    action, goto, prods = doc
    table = types.SimpleNamespace(
        lr_action=action, lr_goto=goto,
        lr_productions=[_Production(n, ln, s, f, pdict) for n, ln, s, f in prods])
    parser = yacc.LRParser(table, pdict.get("p_error"))
    yacc.parse = parser.parse  # type: ignore[attr-defined]  # as bashlex's own build does
    return parser


def _save(path: Path, parser: Any) -> None:
    prods = tuple((p.name, p.len, p.str, p.func) for p in parser.productions)
    action = {s: dict(row) for s, row in parser.action.items()}
    goto = {s: dict(row) for s, row in parser.goto.items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    with open(tmp, "wb") as fh:
        marshal.dump((action, goto, prods), fh)
    os.replace(tmp, path)


def _cached_yacc(build: Callable[..., Any], yacc: types.ModuleType, module: types.ModuleType,
                 **kwargs: Any) -> Any:
    """Stand-in for ``bashlex.yacc.yacc`` while ``bashlex.parser`` runs its module body."""
    pdict = vars(module)
    try:
        path = _cache_file(str(module.__file__))
    except (OSError, TypeError):
        return build(module=module, **kwargs)
    with contextlib.suppress(OSError, ValueError, EOFError, TypeError, KeyError):
        return _load(path, yacc, pdict)
    parser = build(module=module, **kwargs)
    with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
        _save(path, parser)
    return parser


def _fast_readline(original: Callable[..., Any]) -> Callable[..., Any]:
    """bashlex's ``tokenizer.readline`` for here-document bodies, a line at a time.

    The original reads one character per call (about a microsecond each: a
    1 MB heredoc costs a second or more).  For a line without a backslash the
    result is the same slice of the input, so that case is taken with
    ``str.find``; anything else — a backslash, a character pushed back —
    goes to the original.
    """

    def readline(self: Any, removequotenewline: bool) -> Any:
        if removequotenewline or self._eol_ungetc_lookahead is not None:
            return original(self, removequotenewline)
        text, start = self._shell_input_line, self._shell_input_line_index
        end = text.find("\n", start)
        line = text[start:end + 1] if end >= 0 else text[start:]
        if "\\" in line:
            return original(self, removequotenewline)
        if end >= 0:
            self._shell_input_line_index = end + 1
            return line
        if not line:
            return None
        self._shell_input_line_index = len(text)
        return line + "\n"

    return readline


class _ParserLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self.inner = inner

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        from bashlex import yacc  # the package is mid-import; its yacc module is safe to load

        build = yacc.yacc
        yacc.yacc = lambda *a, **kw: _cached_yacc(build, yacc, module, **kw)  # type: ignore[attr-defined]
        try:
            self.inner.exec_module(module)
        finally:
            yacc.yacc = build  # type: ignore[attr-defined]
        from bashlex import tokenizer

        tokenizer.tokenizer.readline = _fast_readline(tokenizer.tokenizer.readline)


class _ParserFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> ModuleSpec | None:
        if fullname != "bashlex.parser":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ParserLoader(spec.loader)
        return spec


def install() -> None:
    """Route the next ``import bashlex`` through the table cache (idempotent)."""
    if "bashlex.parser" in sys.modules:
        return
    if not any(isinstance(f, _ParserFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _ParserFinder())
