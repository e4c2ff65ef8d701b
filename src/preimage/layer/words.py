"""Expanding one shell word as bash would, without running anything.

Quotes are removed, ``~`` and ``$VAR``/``${VAR}`` are expanded from the
known environment, brace lists ``{a,b}`` and ranges ``{1..3}`` multiply the
word, and the result says whether the word still holds something only the
running shell knows (``$(…)``, backticks, an unset or loop variable) and
whether it has an unquoted glob.
"""

from __future__ import annotations

import os
import pwd
import re
from dataclasses import dataclass

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Word:
    """A word after expansion."""

    text: str
    dynamic: bool = False   # depends on something only the running shell knows
    glob: bool = False      # has an unquoted * ? or [


def home_of(user: str | None, env: dict[str, str]) -> str | None:
    """The home directory of ``user`` (the current user when ``None``)."""
    if not user:
        return env.get("HOME") or os.path.expanduser("~")
    try:
        return pwd.getpwnam(user).pw_dir
    except KeyError:
        return None


def _skip_balanced(raw: str, i: int, open_: str, close: str) -> int:
    """Index just past the ``close`` matching the ``open_`` at ``raw[i]``."""
    depth = 0
    quote: str | None = None
    while i < len(raw):
        c = raw[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 2
            continue
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(raw)


def expand(raw: str, env: dict[str, str], *, dynamic_vars: frozenset[str] = frozenset()) -> list[Word]:
    """Expand the raw source text of one word into the words bash would pass."""
    out: list[str] = []
    dynamic = False
    glob = False
    quote: str | None = None
    i = 0
    if raw.startswith("~"):
        m = re.match(r"~([A-Za-z0-9_.-]*)(?=/|$)", raw)
        if m:
            home = home_of(m.group(1) or None, env)
            if home is None:
                dynamic = True
            else:
                out.append(home)
                i = m.end()
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = None
            else:
                out.append(c)
            i += 1
            continue
        if c == "\\":
            if i + 1 < len(raw):
                nxt = raw[i + 1]
                if quote == '"' and nxt not in '$`"\\\n':
                    out.append(c)
                if nxt != "\n":
                    out.append(nxt)
            i += 2
            continue
        if c == '"':
            quote = None if quote == '"' else '"'
            i += 1
            continue
        if c == "'" and quote is None:
            if raw.startswith("$'", i - 1):
                pass
            quote = "'"
            i += 1
            continue
        if c == "`":
            dynamic = True
            j = raw.find("`", i + 1)
            i = len(raw) if j < 0 else j + 1
            continue
        if c == "$" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt == "(":
                dynamic = True
                i = _skip_balanced(raw, i + 1, "(", ")")
                continue
            if nxt == "{":
                end = _skip_balanced(raw, i + 1, "{", "}")
                inner = raw[i + 2 : end - 1]
                m = _NAME.match(inner)
                name = m.group(0) if m else ""
                rest = inner[len(name):]
                value = env.get(name) if name and name not in dynamic_vars else None
                if rest.startswith((":-", "-")) and value in (None, ""):
                    default = rest.split("-", 1)[1]
                    sub = expand(default, env, dynamic_vars=dynamic_vars)
                    value = sub[0].text if sub and not sub[0].dynamic else None
                elif rest and not rest.startswith((":-", "-")):
                    value = None  # ${x#y}, ${x/a/b}, ${#x}: leave to the shell
                if value is None:
                    dynamic = True
                else:
                    out.append(value)
                i = end
                continue
            m = _NAME.match(raw, i + 1)
            if m:
                name = m.group(0)
                value = env.get(name) if name not in dynamic_vars else None
                if value is None:
                    dynamic = True
                else:
                    out.append(value)
                i = m.end()
                continue
            if nxt in "0123456789@*#?$!-":
                dynamic = True
                i += 2
                continue
        if quote is None and c in "*?[":
            glob = True
        out.append(c)
        i += 1
    text = "".join(out)
    words = [Word(text, dynamic, glob)]
    if quote is None and "{" in raw and not dynamic and "'" not in raw and '"' not in raw:
        expanded = expand_braces(text)
        if len(expanded) > 1:
            words = [Word(t, dynamic, glob) for t in expanded]
    return words


def expand_braces(text: str) -> list[str]:
    """``a{b,c}d`` → ``[abd, acd]``; ``f{1..3}`` → ``[f1, f2, f3]`` (one level)."""
    m = re.search(r"\{([^{}]*)\}", text)
    if not m:
        return [text]
    body = m.group(1)
    pre, post = text[: m.start()], text[m.end():]
    if "," in body:
        options = body.split(",")
    else:
        r = re.fullmatch(r"(-?\d+)\.\.(-?\d+)", body)
        if not r:
            return [text]
        a, b = int(r.group(1)), int(r.group(2))
        step = 1 if b >= a else -1
        options = [str(n) for n in range(a, b + step, step)]
    out: list[str] = []
    for opt in options:
        out.extend(expand_braces(pre + opt + post))
    return out
