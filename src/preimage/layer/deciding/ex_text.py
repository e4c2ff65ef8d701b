"""Text processors whose programs can write: ``awk`` and ``sed`` read their script first.

Both usually only print, but their languages write files (awk's ``print >
"f"``, sed's ``w f`` and ``s///w f``) and run commands (awk's ``system()``
and pipes, sed's ``e``).  The script is read — from the command line or a
``-f`` file — and the call is read-only only when it provably does neither.
A literal output file is captured (absent ones too, so a restore removes
them); an output file or a command only the running program knows leaves
the call unknown, naming the construct.
"""

from __future__ import annotations

import re

from preimage.layer.context import Context
from preimage.layer.deciding.extract import file_targets, finding, outside, shell_extractor, unknown
from preimage.layer.deciding.rules import Rule
from preimage.layer.decision import Finding, Impact
from preimage.layer.reading.argv import parse_args
from preimage.layer.reading.shell import SimpleCommand, read_small, resolve

_SPECIAL_FILES = ("/dev/stdout", "/dev/stderr", "/dev/null", "/dev/fd/1", "/dev/fd/2", "-")


class ScriptError(ValueError):
    """A script the reader cannot follow (the caller treats the call as unknown)."""


def _outputs_finding(cmd: SimpleCommand, rule: Rule, ctx: Context, files: list[str],
                     runs: list[str], why: str) -> Finding:
    if runs:
        return unknown(cmd, rule, f"`{cmd.name}` runs commands from its script",
                       forced_by=runs)
    paths = [resolve(cmd, f) for f in files if f not in _SPECIAL_FILES]
    if not paths:
        return finding(cmd, rule, impact=Impact.NONE)
    f = finding(cmd, rule, impact=Impact.HIGH,
                targets=file_targets(paths, ctx, why, include_absent=True),
                outside_workspace=outside(ctx, paths))
    f.notes.append(f"`{cmd.name}` writes {', '.join(paths)}")
    return f


# ------------------------------------------------------------------ awk
_AWK_VALUE_OPTS = ["-F", "-v", "-f", "-e", "--file", "--source", "--field-separator", "--assign",
                   "-i", "--include", "-l", "--load", "-E", "--exec", "-W"]
_AWK_WRITING_OPTS = {"-o": "awkprof.out", "--pretty-print": "awkprof.out", "-p": "awkprof.out",
                     "--profile": "awkprof.out", "-d": "awkvars.out",
                     "--dump-variables": "awkvars.out"}


def _awk_tokens(prog: str) -> list[tuple[str, str]]:
    """``(kind, text)`` tokens: ``str``, ``re``, ``name``, ``op`` (strings and regexes kept whole)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(prog)
    while i < n:
        c = prog[i]
        if c == "#":
            j = prog.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "\\" and prog[i + 1:i + 2] == "\n":
            i += 2
            continue
        if c in " \t":
            i += 1
            continue
        if c == '"':
            j = i + 1
            while j < n and prog[j] != '"':
                j += 2 if prog[j] == "\\" else 1
            if j >= n:
                raise ScriptError("unterminated string")
            out.append(("str", prog[i + 1:j]))
            i = j + 1
            continue
        prev = out[-1] if out else ("op", ";")
        if c == "/" and ((prev[0] == "op" and prev[1] not in (")", "]")) or prev == ("name", "print")
                         or prev[1] in ("printf", "return", "in")):
            j = i + 1
            in_class = False
            while j < n and (prog[j] != "/" or in_class):
                if prog[j] == "\\":
                    j += 1
                elif prog[j] == "[":
                    in_class = True
                elif prog[j] == "]":
                    in_class = False
                j += 1
            if j >= n:
                raise ScriptError("unterminated regular expression")
            out.append(("re", prog[i + 1:j]))
            i = j + 1
            continue
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", prog[i:])
        if m:
            out.append(("name", m.group(0)))
            i += m.end()
            continue
        m = re.match(r"\d+(\.\d*)?([eE][-+]?\d+)?", prog[i:])
        if m:
            out.append(("num", m.group(0)))
            i += m.end()
            continue
        two = prog[i:i + 2]
        if two in (">>", "|&", "&&", "||", "==", "!=", ">=", "<=", "++", "--", "+=", "-=",
                   "*=", "/=", "%=", "^=", "**"):
            out.append(("op", two))
            i += 2
            continue
        out.append(("op", "\n" if c in "\n\r" else c))
        i += 1
    return out


def awk_effects(prog: str) -> tuple[list[str], list[str]]:
    """The literal files an awk program writes, and what in it runs commands or writes
    files only the running program can name.  Raises :class:`ScriptError`."""
    toks = _awk_tokens(prog)
    files: list[str] = []
    runs: list[str] = []
    depth = 0
    in_print = False
    print_depth = 0
    for k, (kind, text) in enumerate(toks):
        nxt = toks[k + 1] if k + 1 < len(toks) else ("op", ";")
        if kind == "name" and text == "system" and nxt == ("op", "("):
            runs.append("awk `system()`")
        if kind == "op" and text in "([":
            depth += 1
        elif kind == "op" and text in ")]":
            depth -= 1
        elif kind == "op" and text in (";", "\n", "{", "}"):
            in_print = False
        if kind == "name" and text in ("print", "printf"):
            in_print, print_depth = True, depth
            continue
        if kind == "op" and text in ("|", "|&"):
            if nxt == ("name", "getline"):
                runs.append("awk `cmd | getline`")
            elif in_print and depth == print_depth:
                runs.append("awk `print | cmd`")
            continue
        if in_print and depth == print_depth and kind == "op" and text in (">", ">>"):
            if nxt[0] in ("str", "num") and _single_operand(toks, k + 2):
                files.append(nxt[1])
            else:
                runs.append("awk output file computed by the program")
    return files, runs


def _single_operand(toks: list[tuple[str, str]], k: int) -> bool:
    """Whether the redirection target ends at token ``k`` (no concatenation after it)."""
    if k >= len(toks):
        return True
    kind, text = toks[k]
    return kind == "op" and text in (";", "\n", "}", ")")


@shell_extractor("awk")
def awk(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``awk PROGRAM``/``awk -f FILE``: read-only unless the program writes or runs commands."""
    args = parse_args(cmd.words[1:], _AWK_VALUE_OPTS)
    for opt, default in _AWK_WRITING_OPTS.items():
        if args.has(opt):
            value = args.value(opt)
            return _outputs_finding(cmd, rule, ctx, [value or default], [],
                                    f"{cmd.name} {opt} writes it")
    if args.has("-l", "--load", "-E", "--exec"):
        return unknown(cmd, rule, f"`{cmd.name}` loads an extension or runs a script file")
    sources = args.values("-e", "--source")
    for path in args.values("-f", "--file", "-i", "--include"):
        if path == "inplace":
            continue
        text = read_small(resolve(cmd, path))
        if text is None:
            return unknown(cmd, rule, f"cannot read the awk program {path}",
                           forced_by=[f"awk program file `{path}`"])
        sources.append(text)
    words = args.positionals
    if not sources:
        if not words:
            return finding(cmd, rule, impact=Impact.NONE)
        if words[0].dynamic:
            return unknown(cmd, rule, "the awk program is only known to the running shell",
                           forced_by=[f"word `{words[0].why or words[0].text}`"])
        sources.append(words[0].text)
    files: list[str] = []
    runs: list[str] = []
    try:
        for src in sources:
            got_files, got_runs = awk_effects(src)
            files += got_files
            runs += got_runs
    except ScriptError as exc:
        return unknown(cmd, rule, f"cannot read the awk program ({exc})",
                       forced_by=[f"awk program `{sources[0][:60]}`"])
    return _outputs_finding(cmd, rule, ctx, files, runs, f"{cmd.name} writes it")


# ------------------------------------------------------------------ sed
_SED_VALUE_OPTS = ["-e", "--expression", "-f", "--file", "-l", "--line-length"]
_TEXT_COMMANDS = "aic"
_FILE_COMMANDS = "rRwW"
_LABEL_COMMANDS = "btT:"
_SIMPLE_COMMANDS = "=dDgGhHlnNpPqQxzF{}"


def _regex_end(script: str, i: int, delim: str) -> int:
    """Index of the delimiter closing a regex or replacement that starts at ``i``."""
    while i < len(script):
        c = script[i]
        if c == "\\":
            i += 2
            continue
        if c == "\n" and delim != "\n":
            raise ScriptError("newline inside a regular expression")
        if c == delim:
            return i
        i += 1
    raise ScriptError("unterminated s or y command")


def _rest_of_line(script: str, i: int) -> tuple[str, int]:
    j = script.find("\n", i)
    j = len(script) if j < 0 else j
    return script[i:j], j


def sed_effects(script: str) -> tuple[list[str], list[str]]:
    """The files a sed script writes and what in it runs commands.  Raises :class:`ScriptError`."""
    files: list[str] = []
    runs: list[str] = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;":
            i += 1
            continue
        if c == "#":
            _, i = _rest_of_line(script, i)
            continue
        # addresses: numbers, $, /re/, \cREc, first~step, +N, ~N, ',' and '!'
        while i < n:
            c = script[i]
            if c.isdigit() or c in "$,~+! \t":
                i += 1
            elif c == "/":
                i = _regex_end(script, i + 1, "/") + 1
                while i < n and script[i] in "IM":
                    i += 1
            elif c == "\\" and i + 1 < n:
                i = _regex_end(script, i + 2, script[i + 1]) + 1
                while i < n and script[i] in "IM":
                    i += 1
            else:
                break
        if i >= n:
            break
        c = script[i]
        if c == "s":
            delim = script[i + 1] if i + 1 < n else ""
            if not delim or delim in "\\\n":
                raise ScriptError("bad s command")
            j = _regex_end(script, i + 2, delim)
            j = _regex_end(script, j + 1, delim)
            i = j + 1
            while i < n and script[i] not in ";\n}":
                f = script[i]
                if f == "w":
                    name, i = _rest_of_line(script, i + 1)
                    files.append(name.strip())
                    break
                if f == "e":
                    runs.append("sed `s///e`")
                elif not (f.isdigit() or f in "gpiImM \t"):
                    raise ScriptError(f"unknown s flag {f!r}")
                i += 1
            continue
        if c == "y":
            delim = script[i + 1] if i + 1 < n else ""
            if not delim or delim in "\\\n":
                raise ScriptError("bad y command")
            j = _regex_end(script, i + 2, delim)
            i = _regex_end(script, j + 1, delim) + 1
            continue
        if c in _TEXT_COMMANDS:
            i += 1
            while True:  # text runs to an unescaped end of line
                line, i = _rest_of_line(script, i)
                if not line.endswith("\\"):
                    break
                i += 1
            continue
        if c in _FILE_COMMANDS:
            name, i = _rest_of_line(script, i + 1)
            if c in "wW":
                files.append(name.strip())
            continue
        if c == "e":
            command, i = _rest_of_line(script, i + 1)
            runs.append(f"sed `e {command.strip()}`" if command.strip()
                        else "sed `e` (runs the pattern space)")
            continue
        if c in _LABEL_COMMANDS:
            i += 1
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if c in "qQlL" and i + 1 < n:
            i += 1
            while i < n and (script[i].isdigit() or script[i] in " \t"):
                i += 1
            continue
        if c in _SIMPLE_COMMANDS or c == "v":
            i += 1
            continue
        raise ScriptError(f"unknown sed command {c!r}")
    return [f for f in files if f], runs


@shell_extractor("sed")
def sed(cmd: SimpleCommand, rule: Rule, ctx: Context) -> Finding:
    """``sed SCRIPT``: read-only unless the script writes files (``w``) or runs commands (``e``)."""
    args = parse_args(cmd.words[1:], _SED_VALUE_OPTS)
    scripts = args.values("-e", "--expression")
    for path in args.values("-f", "--file"):
        text = cmd.stdin_text() if path == "-" else read_small(resolve(cmd, path))
        if text is None:
            return unknown(cmd, rule, f"cannot read the sed script {path}",
                           forced_by=[f"sed script file `{path}`"])
        scripts.append(text)
    words = args.positionals
    if not scripts:
        if not words:
            return finding(cmd, rule, impact=Impact.NONE)
        if words[0].dynamic:
            return unknown(cmd, rule, "the sed script is only known to the running shell",
                           forced_by=[f"word `{words[0].why or words[0].text}`"])
        scripts.append(words[0].text)
    files: list[str] = []
    runs: list[str] = []
    try:
        for s in scripts:
            got_files, got_runs = sed_effects(s)
            files += got_files
            runs += got_runs
    except ScriptError as exc:
        return unknown(cmd, rule, f"cannot read the sed script ({exc})",
                       forced_by=[f"sed script `{scripts[0][:60]}`"])
    return _outputs_finding(cmd, rule, ctx, files, runs, "sed w writes it")
