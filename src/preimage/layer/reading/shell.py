"""Parsing a shell command line into the simple commands it would run.

bashlex gives the structure (lists, pipelines, subshells, redirects,
here-documents, command substitutions); this module walks it keeping what
bash keeps — the working directory across ``cd``, variables across
assignments and ``export`` — and unwraps the commands that only run other
commands (``sudo``, ``env X=1``, ``nice``, ``timeout``, ``xargs``,
``bash -c '…'``, ``eval``, ``bash script.sh``).  A line bashlex cannot parse
is split on its operators instead, and the result says so.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from preimage.layer.reading.unwrap import unwrap
from preimage.layer.reading.words import Word, expand

_MAX_SCRIPT_BYTES = 256 * 1024
_SHELLS = {"bash", "sh", "dash", "zsh", "ksh", "ash", "busybox"}


@dataclass(frozen=True)
class Redirect:
    """One redirection: ``op`` is bash's (``>``, ``>>``, ``<``, ``<<``, ``<<<``, ``&>``, …)."""

    op: str
    target: Word | None
    heredoc: str | None = None


@dataclass
class SimpleCommand:
    """One command bash would run, after expansion and unwrapping."""

    words: list[Word]
    redirects: list[Redirect]
    cwd: str
    env: dict[str, str]
    source: str
    cwd_known: bool = True
    span: tuple[int, int] | None = None
    wrappers: list[str] = field(default_factory=list)
    producer: SimpleCommand | None = None   # the command piping into this one
    creates: list[Word] = field(default_factory=list)  # files its wrappers create (flock)

    @property
    def argv(self) -> list[str]:
        """The expanded words."""
        return [w.text for w in self.words]

    @property
    def name(self) -> str:
        """Basename of the program (``""`` for a redirect-only command)."""
        return os.path.basename(self.words[0].text) if self.words else ""

    def stdin_text(self) -> str | None:
        """What the command reads on standard input, when the line shows it."""
        for r in self.redirects:
            if r.op in ("<<", "<<-") and r.heredoc is not None:
                return r.heredoc
            if r.op == "<<<" and r.target is not None and not r.target.dynamic:
                return r.target.text + "\n"
            if r.op == "<" and r.target is not None and not r.target.dynamic:
                return read_small(resolve(self, r.target.text))
        p = self.producer
        if p is None:
            return None
        if p.name == "echo" and not any(w.dynamic for w in p.words[1:]):
            return " ".join(w.text for w in p.words[1:] if w.text not in ("-e", "-n")) + "\n"
        if p.name == "printf" and len(p.words) == 2 and not p.words[1].dynamic:
            return p.words[1].text.replace("\\n", "\n")
        if p.name == "cat":
            if len(p.words) == 1:
                return p.stdin_text()
            if len(p.words) == 2 and not p.words[1].dynamic:
                return read_small(resolve(p, p.words[1].text))
        return None


@dataclass
class ParsedLine:
    """Every simple command of a line, and whether the parse was exact."""

    commands: list[SimpleCommand]
    exact: bool = True
    notes: list[str] = field(default_factory=list)


def resolve(cmd: SimpleCommand, path: str) -> str:
    """``path`` made absolute against the command's working directory (no symlinks followed)."""
    return os.path.normpath(path if path.startswith("/") else os.path.join(cmd.cwd, path))


def read_small(path: str) -> str | None:
    """A text file's content when it exists and is small, else ``None``."""
    try:
        if os.path.getsize(path) > _MAX_SCRIPT_BYTES:
            return None
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


@dataclass
class _State:
    cwd: str
    env: dict[str, str]
    cwd_known: bool = True
    dynamic: frozenset[str] = frozenset()
    dirstack: list[str] = field(default_factory=list)

    def copy(self) -> _State:
        return _State(self.cwd, dict(self.env), self.cwd_known, self.dynamic, list(self.dirstack))


def parse(
    text: str, *, cwd: str, env: dict[str, str] | None = None, depth: int = 0
) -> ParsedLine:
    """Parse ``text`` as bash would, starting in ``cwd`` with ``env``."""
    state = _State(cwd, dict(env if env is not None else os.environ))
    state.env["PWD"] = cwd
    return _parse(text, state, depth=depth, top=True)


def _sanitize(text: str) -> str:
    # Forms bashlex does not implement, replaced by equivalents of the same shape.
    text = re.sub(r"(^|[;&|(]\s*|\n\s*)time\s+(-p\s+)?", r"\1", text)
    for _ in range(5):
        text = re.sub(r"\$\(\([^()]*\)\)", "0", text)
    text = re.sub(r"\[\[(.*?)\]\]", "true", text)
    return re.sub(r"<<(-?)\s*(['\"])(\w+)\2", r"<<\1\3", text)


def _parse(text: str, state: _State, *, depth: int, top: bool) -> ParsedLine:
    from preimage.layer.reading.bashlex_tables import install

    install()  # the parser's LR table comes from the cache after the first build
    import bashlex  # only shell calls pay for the parser's tables

    out: list[SimpleCommand] = []
    notes: list[str] = []
    exact = True
    trees = None
    for attempt, src in enumerate((text, _sanitize(text))):
        try:
            trees = bashlex.parse(src)
            if attempt:
                top = False  # positions no longer match the original text
            text = src
            break
        except (bashlex.errors.ParsingError, NotImplementedError, AttributeError,
                IndexError, TypeError, ValueError, AssertionError):
            continue
    if trees is None:
        exact = False
        notes.append("the shell parser could not read this line; it was split on its operators")
        for piece in _split_fallback(text):
            _command_from_raw(piece, state, out, notes, depth)
        return ParsedLine(out, exact, notes)
    for tree in trees:
        _walk(tree, text, state, out, notes, depth, top, None)
    return ParsedLine(out, exact, notes)


def _walk(node: Any, text: str, state: _State, out: list[SimpleCommand], notes: list[str],
          depth: int, top: bool, prev: SimpleCommand | None) -> SimpleCommand | None:
    kind = node.kind
    if kind == "list":
        for part in node.parts:
            _walk(part, text, state, out, notes, depth, top, None)
        return None
    if kind == "pipeline":
        last = None
        for part in node.parts:
            if part.kind == "pipe":
                continue
            last = _walk(part, text, state.copy(), out, notes, depth, top, last)
        return last
    if kind == "compound":
        sub = state.copy() if node.list and getattr(node.list[0], "word", "") == "(" else state
        for part in node.list:
            _walk(part, text, sub, out, notes, depth, top, None)
        if getattr(node, "redirects", None):
            redirects = [_redirect(r, text, state) for r in node.redirects]
            out.append(SimpleCommand([], redirects, state.cwd, dict(state.env),
                                     text[node.pos[0]:node.pos[1]], state.cwd_known))
        return None
    if kind in ("if", "while", "until"):
        for part in node.parts:
            _walk(part, text, state, out, notes, depth, top, None)
        return None
    if kind == "for":
        loop_var = None
        for idx, part in enumerate(node.parts):
            if part.kind == "word" and idx == 1:
                loop_var = part.word
        sub = state.copy()
        if loop_var:
            sub.dynamic = sub.dynamic | {loop_var}
        for part in node.parts:
            if part.kind not in ("word", "reservedword"):
                _walk(part, text, sub, out, notes, depth, top, None)
        return None
    if kind == "function":
        _walk(node.body, text, state.copy(), out, notes, depth, top, None)
        return None
    if kind == "command":
        return _command(node, text, state, out, notes, depth, top, prev)
    return None


def _substitutions(node: Any) -> Iterator[Any]:
    for part in getattr(node, "parts", []) or []:
        if part.kind in ("commandsubstitution", "processsubstitution"):
            yield part.command
        else:
            yield from _substitutions(part)


def _redirect(node: Any, text: str, state: _State) -> Redirect:
    op = node.type
    target = None
    heredoc = None
    if op in ("<<", "<<-") and getattr(node, "heredoc", None) is not None:
        value = node.heredoc.value
        heredoc = value.rsplit("\n", 1)[0] + "\n" if "\n" in value else ""
    out = node.output
    if hasattr(out, "kind") and out.kind == "word":
        raw = text[out.pos[0]:out.pos[1]]
        got = expand(raw, state.env, dynamic_vars=state.dynamic, cwd=_known_cwd(state))
        target = got[0] if len(got) == 1 else Word(raw, dynamic=True, why=raw)
    return Redirect(op, target, heredoc)


def _command(node: Any, text: str, state: _State, out: list[SimpleCommand], notes: list[str],
             depth: int, top: bool, prev: SimpleCommand | None) -> SimpleCommand | None:
    assigns: dict[str, Word] = {}
    words: list[Word] = []
    redirects: list[Redirect] = []
    for part in node.parts:
        for sub in _substitutions(part):
            _walk(sub, text, state.copy(), out, notes, depth, False, None)
        if part.kind == "assignment" and not words:
            name, _, raw = text[part.pos[0]:part.pos[1]].partition("=")
            assigns[name] = expand(raw, state.env, dynamic_vars=state.dynamic,
                                   cwd=_known_cwd(state), assignment=True)[0]
        elif part.kind == "word":
            words.extend(expand(text[part.pos[0]:part.pos[1]], state.env,
                                dynamic_vars=state.dynamic, cwd=_known_cwd(state)))
        elif part.kind == "redirect":
            redirects.append(_redirect(part, text, state))
    span = (node.pos[0], node.pos[1]) if top else None
    source = text[node.pos[0]:node.pos[1]]
    if not words:
        _assign(state, assigns)
        if redirects:
            cmd = SimpleCommand([], redirects, state.cwd, dict(state.env), source,
                                state.cwd_known, span)
            out.append(cmd)
            return cmd
        return None
    env = dict(state.env)
    for k, v in assigns.items():
        env[k] = v.text
    return _emit(words, redirects, env, state, out, notes, depth, source, span, prev, [])


def _command_from_raw(raw: str, state: _State, out: list[SimpleCommand], notes: list[str],
                      depth: int) -> None:
    tokens = _split_words(raw)
    words: list[Word] = []
    redirects: list[Redirect] = []
    it = iter(tokens)
    for tok in it:
        m = re.fullmatch(r"(\d*)(>>|>\||&>|>|<<<|<)(.*)", tok)
        if m:
            target = m.group(3) or next(it, "")
            redirects.append(Redirect(m.group(2), expand(target, state.env)[0] if target else None))
            continue
        words.extend(expand(tok, state.env, dynamic_vars=state.dynamic, cwd=_known_cwd(state)))
    while words and "=" in words[0].text and re.match(r"^[A-Za-z_]\w*=", words[0].text):
        k, _, v = words.pop(0).text.partition("=")
        state.env[k] = v
    if words or redirects:
        _emit(words, redirects, dict(state.env), state, out, notes, depth, raw, None, None, [])


def _known_cwd(state: _State) -> str | None:
    """Where bash may expand a word for us: the line's directory, when it is known."""
    return state.cwd if state.cwd_known else None


def _assign(state: _State, assigns: dict[str, Word]) -> None:
    for k, v in assigns.items():
        if v.dynamic:
            state.dynamic = state.dynamic | {k}
            state.env.pop(k, None)
        else:
            state.env[k] = v.text
            state.dynamic = state.dynamic - {k}


def _split_fallback(text: str) -> list[str]:
    pieces, buf, quote, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"' and i + 1 < len(text):
                buf.append(text[i + 1])
                i += 1
        elif c in "'\"":
            quote = c
            buf.append(c)
        elif c == "\\" and i + 1 < len(text):
            buf.append(text[i:i + 2])
            i += 1
        elif c in ";|&\n()":
            pieces.append("".join(buf))
            buf = []
        else:
            buf.append(c)
        i += 1
    pieces.append("".join(buf))
    return [p.strip() for p in pieces if p.strip()]


def _split_words(raw: str) -> list[str]:
    tokens, buf, quote = [], [], None
    for c in raw:
        if quote:
            buf.append(c)
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
            buf.append(c)
        elif c.isspace():
            if buf:
                tokens.append("".join(buf))
                buf = []
        else:
            buf.append(c)
    if buf:
        tokens.append("".join(buf))
    return tokens


def _emit(words: list[Word], redirects: list[Redirect], env: dict[str, str], state: _State,
          out: list[SimpleCommand], notes: list[str], depth: int, source: str,
          span: tuple[int, int] | None, prev: SimpleCommand | None,
          wrappers: list[str]) -> SimpleCommand | None:
    u = unwrap(words, env, state.cwd)
    if u.clear_env:
        env = {k: v for k, v in env.items() if k in ("HOME", "PATH", "PWD")}
    env.update(u.env)
    cwd, cwd_known = state.cwd, state.cwd_known
    if u.chdir is not None:
        cwd = os.path.normpath(os.path.join(cwd, u.chdir.text))
        cwd_known = cwd_known and not u.chdir.dynamic
    if u.remote:
        notes.append(f"part of this runs {u.remote}; state there is not captured")
    if u.script is not None and depth < 4:
        sub = state.copy()
        sub.env, sub.cwd, sub.cwd_known = dict(env), cwd, cwd_known
        nested = _parse(u.script, sub, depth=depth + 1, top=False)
        out.extend(nested.commands)
        notes.extend(nested.notes)
        if redirects:
            out.append(SimpleCommand([], redirects, cwd, env, source, cwd_known, span))
        return None
    if not u.words:
        if redirects:
            out.append(SimpleCommand([], redirects, cwd, env, source, cwd_known, span))
        return None
    cmd = SimpleCommand(u.words, redirects, cwd, env, source, cwd_known, span,
                        wrappers + u.wrappers, prev, u.creates)
    if _builtin(cmd, state):
        return cmd
    out.append(cmd)
    return cmd


def _builtin(cmd: SimpleCommand, state: _State) -> bool:
    """Apply ``cd``/``pushd``/``popd``/``export``/``unset`` to the state; True if it was one."""
    name, args = cmd.name, cmd.words[1:]
    if name in ("cd", "pushd"):
        args = [a for a in args if not a.text.startswith("-") or a.text == "-"]
        if not args:
            dest: Word | None = Word(state.env.get("HOME", "/"))
        elif args[0].text == "-":
            dest = Word(state.env.get("OLDPWD", state.cwd))
        else:
            dest = args[0]
        if name == "pushd":
            state.dirstack.append(state.cwd)
        state.env["OLDPWD"] = state.cwd
        if dest is None or dest.dynamic:
            state.cwd_known = False
        else:
            state.cwd = os.path.normpath(os.path.join(state.cwd, dest.text))
        state.env["PWD"] = state.cwd
        return True
    if name == "popd":
        if state.dirstack:
            state.cwd = state.dirstack.pop()
        return True
    if name in ("export", "declare", "typeset", "local", "readonly"):
        assigns = {}
        for a in args:
            if "=" in a.text and not a.text.startswith("-"):
                k, _, v = a.text.partition("=")
                assigns[k] = Word(v, a.dynamic)
        _assign(state, assigns)
        return True
    if name == "unset":
        for a in args:
            state.env.pop(a.text, None)
        return True
    if name in ("read", "mapfile", "readarray", "getopts") or (
            name == "printf" and args[:1] and args[0].text == "-v"):
        # the variables they set hold what only the running shell reads
        names = {a.text for a in args if re.fullmatch(r"[A-Za-z_]\w*", a.text)}
        if name == "printf":
            names = {args[1].text} if len(args) > 1 else set()
        for n in names:
            state.env.pop(n, None)
        state.dynamic = state.dynamic | names
        return name != "printf"
    return False


__all__ = ["ParsedLine", "Redirect", "SimpleCommand", "Word", "parse", "read_small", "resolve"]
