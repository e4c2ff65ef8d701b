"""Expanding one shell word as bash would, without running anything the word names.

The common forms are imitated in Python (no process): quotes are removed,
``~`` and ``$VAR``/``${VAR}``/``${VAR:-x}`` are expanded from the known
environment, plain brace lists multiply the word, and the result says
whether the word still holds something only the running shell knows
(``$(…)``, backticks, an unset or loop variable) and whether it has an
unquoted glob.

Where the imitation would not be exact — ANSI-C quoting ``$'…'``, ``~+``
and ``~-``, brace expansion next to quotes or variables, ``${x#…}`` and the
other parameter operators, an unquoted variable whose value bash would
split or glob, glob classes — bash itself expands the word
(:func:`bash_expand`): ``bash --noprofile --norc`` with only the known
environment, no start-up files, no imported functions, under a short
deadline.  It is only asked when the word cannot run anything: no command
or process substitution, no arithmetic (whose evaluation of variable values
can run commands), no indirection, no prompt expansion.  A word neither
way can expand is dynamic: callers widen instead of guessing.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BASH_SECONDS = 0.5
# Variables that make a non-interactive bash run code or trace before our script.
_UNSAFE_ENV = ("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH")
# ${…} bodies bash may expand without evaluating arithmetic or indirection.
_SAFE_PARAM = re.compile(
    r"#?[A-Za-z_][A-Za-z0-9_]*"                       # ${x} ${#x}
    r"(?:"
    r"|:?[-=?+].*"                                     # ${x:-w} ${x=w} ${x:?w} ${x+w}
    r"|##?.*|%%?.*"                                    # ${x#p} ${x%%p}
    r"|//?.*|/[#%].*"                                  # ${x/p/r} ${x//p/r}
    r"|\^\^?.*|,,?.*"                                  # case changes
    r"|@[QEUuLaAK]"                                    # transformations (not @P)
    r"|:\s*-?\d+(?::\s*-?\d+)?"                         # ${x:1:2} with literal numbers
    r")", re.S)


@dataclass(frozen=True)
class Word:
    """A word after expansion."""

    text: str
    dynamic: bool = False   # depends on something only the running shell knows
    glob: bool = False      # has an unquoted * ? or [ (a pattern not yet matched)
    why: str = ""           # for a dynamic word: the source text that made it so


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


@dataclass
class _Imitation:
    text: str = ""
    dynamic: bool = False
    glob: bool = False
    exact: bool = True


def _imitate(raw: str, env: dict[str, str], dynamic_vars: frozenset[str],
             assignment: bool) -> _Imitation:
    """The imitation of bash's expansions, and whether it is exact for this word."""
    res = _Imitation()
    out: list[str] = []
    quote: str | None = None
    quoted_glob = False
    i = 0
    if raw.startswith("~"):
        m = re.match(r"~([A-Za-z0-9_.-]*)(?=/|$)", raw)
        if m:
            home = home_of(m.group(1) or None, env)
            if home is None:
                res.dynamic = True
            else:
                out.append(home)
                i = m.end()
        else:
            res.exact = False  # ~+ ~- ~N: the shell's directory stack
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = None
            else:
                quoted_glob = quoted_glob or c in "*?["
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
                quoted_glob = quoted_glob or nxt in "*?["
            i += 2
            continue
        if c == '"':
            quote = None if quote == '"' else '"'
            i += 1
            continue
        if c == "'" and quote is None:
            quote = "'"
            i += 1
            continue
        if c == "`":
            res.dynamic = True
            j = raw.find("`", i + 1)
            i = len(raw) if j < 0 else j + 1
            continue
        if c == "$" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt in "'\"" and quote is None:
                res.exact = False  # $'…' ANSI-C and $"…" locale quoting
                out.append(c)
                i += 1
                continue
            if nxt == "(":
                res.dynamic = True
                i = _skip_balanced(raw, i + 1, "(", ")")
                continue
            if nxt == "{":
                end = _skip_balanced(raw, i + 1, "{", "}")
                inner = raw[i + 2 : end - 1]
                m = _NAME.match(inner.removeprefix("#"))
                name = m.group(0) if m else ""
                rest = inner[len(name) + inner.startswith("#"):]
                value = env.get(name) if name and name not in dynamic_vars else None
                if not inner.startswith("#") and (
                        (rest.startswith(":-") and value in (None, ""))
                        or (rest.startswith("-") and value is None)):
                    sub = _imitate(rest.split("-", 1)[1], env, dynamic_vars, True)
                    value = None if sub.dynamic else sub.text
                    res.exact = res.exact and sub.exact
                elif (rest or inner.startswith("#")) and value is not None:
                    res.exact = False  # ${x#y}, ${x/a/b}, ${#x}, ${x-y}: bash knows
                    i = end
                    continue
                if value is None:
                    res.dynamic = True
                else:
                    out.append(value)
                    res.exact = res.exact and (quote is not None or assignment
                                               or _splits_to_itself(value))
                i = end
                continue
            m = _NAME.match(raw, i + 1)
            if m:
                name = m.group(0)
                value = env.get(name) if name not in dynamic_vars else None
                if value is None:
                    res.dynamic = True
                else:
                    out.append(value)
                    res.exact = res.exact and (quote is not None or assignment
                                               or _splits_to_itself(value))
                i = m.end()
                continue
            if nxt in "0123456789@*#?$!-":
                res.dynamic = True
                i += 2
                continue
            if nxt == "[":
                res.dynamic = True
                i = _skip_balanced(raw, i + 1, "[", "]")
                continue
        if quote is None and c in "*?[" and not assignment:
            res.glob = True
            if c == "[" and re.match(r"\[(\^|!?\[:)", raw[i:]):
                res.exact = False  # [^…] and [[:class:]] differ between bash and Python
        if quote is None and c in "@+!" and raw[i + 1:i + 2] == "(" and not assignment:
            res.exact = False  # extglob
        out.append(c)
        i += 1
    if quote is not None:
        res.exact = False
    if res.glob and quoted_glob:
        res.exact = False  # `"a*"*`: which stars are patterns is lost once quotes are gone
    if not assignment and _has_brace_expansion(raw):
        res.exact = res.exact and _plain_braces(raw)
    res.text = "".join(out)
    return res


def _splits_to_itself(value: str) -> bool:
    """Whether an unquoted expansion of ``value`` stays one literal word in bash."""
    return bool(value) and not re.search(r"[\s*?\[]", value)


def _has_brace_expansion(raw: str) -> bool:
    """Whether ``raw`` has an unquoted ``{…,…}`` or ``{x..y}`` bash would expand."""
    return "{" in raw and bool(re.search(r"\{[^{}]*(,|\.\.)[^{}]*\}", raw))


def _plain_braces(raw: str) -> bool:
    """Braces the imitation expands exactly: comma lists and number ranges, no nesting,
    quotes, escapes or expansions in the word."""
    if re.search(r"['\"\\$`]", raw):
        return False
    for m in re.finditer(r"\{([^{}]*)\}", raw):
        body = m.group(1)
        if ".." in body and not re.fullmatch(r"-?\d+\.\.-?\d+", body):
            return False
    return not re.search(r"\{[^{}]*\{", raw)


def expand(raw: str, env: dict[str, str], *, dynamic_vars: frozenset[str] = frozenset(),
           cwd: str | None = None, assignment: bool = False) -> list[Word]:
    """Expand the raw source text of one word into the words bash would pass.

    ``cwd`` (the directory the command will run in) lets bash expand a word
    the imitation cannot; without it such a word is dynamic.  With
    ``assignment`` the word is the value of ``NAME=value`` (no splitting,
    globbing or brace expansion).
    """
    got = _imitate(raw, env, dynamic_vars, assignment)
    if got.dynamic:
        return [Word(got.text, True, got.glob, why=raw)]
    if got.exact:
        words = [Word(got.text, False, got.glob)]
        if not assignment and _has_brace_expansion(raw):
            expanded = expand_braces(got.text)
            if len(expanded) > 1:
                words = [Word(t, False, got.glob) for t in expanded]
        return words
    if cwd is not None and shell_can_expand(raw):
        fields = bash_expand([raw], env, cwd, assignment=assignment)
        if fields is not None:
            return fields[0]
    return [Word(got.text, True, got.glob, why=raw)]


def shell_can_expand(raw: str) -> bool:
    """Whether bash may expand ``raw`` without running anything it names.

    Refused: command and process substitution, arithmetic (``$((…))``,
    ``$[…]``, subscripts and offsets other than literal numbers — bash
    evaluates variable *values* there, and a value can hold ``a[$(cmd)]``),
    indirection ``${!x}``, prompt expansion ``${x@P}``, and any unquoted
    operator or unbalanced quote (the word must stay one word of our script).
    """
    if "`" in raw or "$(" in raw or "$[" in raw or "<(" in raw or ">(" in raw:
        return False
    quote: str | None = None
    i = 0
    while i < len(raw):
        c = raw[i]
        if quote == "'":
            if c == "'":
                quote = None
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if c == '"':
            quote = None if quote == '"' else '"'
        elif c == "'" and quote is None:
            quote = "'"
        elif c == "$" and raw.startswith("${", i):
            end = _skip_balanced(raw, i + 1, "{", "}")
            if not raw.startswith("}", end - 1) or not _SAFE_PARAM.fullmatch(raw[i + 2:end - 1]):
                return False
            i = end
            continue
        elif quote is None and (c in ";&|<>()\n\r" or c.isspace()):
            return False
        i += 1
    return quote is None


@lru_cache(maxsize=1)
def _bash() -> str | None:
    return shutil.which("bash") or ("/bin/bash" if os.path.exists("/bin/bash") else None)


def _clean_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items()
            if k not in _UNSAFE_ENV and not k.startswith("BASH_FUNC_") and "\0" not in v
            and "=" not in k and k}


def bash_expand(raws: list[str], env: dict[str, str], cwd: str, *,
                assignment: bool = False) -> list[list[Word]] | None:
    """Let bash expand each raw word (each checked by :func:`shell_can_expand` first).

    Each word is expanded twice in the same shell, without and then with
    pathname expansion (the first pass checks the second is well formed); the
    fields are final — glob matches are exact paths.  ``None`` when bash
    is missing, fails (``${x:?}`` of an unset ``x``), or overruns its deadline.
    """
    bash = _bash()
    if bash is None or not os.path.isdir(cwd):
        return None
    lines: list[str] = []
    for raw in raws:
        if assignment:
            lines.append(f"__w={raw}; builtin printf '%s\\0' 1 \"$__w\" 1 \"$__w\"")
        else:
            lines.append(f"builtin set -f; builtin set -- {raw}; builtin printf '%s\\0' \"$#\" \"$@\"")
            lines.append(f"builtin set +f; builtin set -- {raw}; builtin printf '%s\\0' \"$#\" \"$@\"")
    try:
        proc = subprocess.run(
            [bash, "--noprofile", "--norc", "-c", "\n".join(lines)],
            env=_clean_env(env), cwd=cwd, stdin=subprocess.DEVNULL,
            capture_output=True, timeout=_BASH_SECONDS, check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or proc.stderr:
        return None
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: list[list[Word]] = []
    pos = 0
    try:
        for _ in raws:
            runs: list[list[str]] = []
            for _pass in range(2):
                n = int(fields[pos])
                runs.append(fields[pos + 1:pos + 1 + n])
                pos += 1 + n
            out.append([Word(t) for t in runs[1]])
    except (ValueError, IndexError):
        return None
    return out


def expand_braces(text: str) -> list[str]:
    """``a{b,c}d`` → ``[abd, acd]``; ``f{1..3}`` → ``[f1, f2, f3]``."""
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
