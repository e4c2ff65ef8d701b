"""Commands that only run another command, and how to see through them.

``sudo``, ``doas``, ``env``, ``nice``, ``nohup``, ``timeout``, ``stdbuf``,
``flock``, ``xargs``, ``watch`` … run the command that follows their own
options; ``bash -c SCRIPT``, ``eval`` and ``bash script.sh`` run a script the
layer parses in turn; ``ssh``/``docker exec``/``kubectl exec`` run somewhere
the layer cannot capture, which is said.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from preimage.layer.reading.words import Word

_MAX_SCRIPT = 256 * 1024

# wrapper → (options taking a value, whether positional args precede the command)
_WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "-R",
                        "--user", "--group", "--chdir", "--prompt", "--host", "--close-from",
                        "--role", "--type", "--other-user", "--command-timeout", "--chroot"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "ionice": (frozenset({"-c", "-n", "-t", "--class", "--classdata"}), 0),
    "nohup": (frozenset(), 0),
    "setsid": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "time": (frozenset({"-f", "-o", "--format", "--output"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}), 0),
    "timeout": (frozenset({"-s", "-k", "--signal", "--kill-after"}), 1),
    "flock": (frozenset({"-w", "-E", "--timeout", "--conflict-exit-code"}), 1),
    "taskset": (frozenset(), 1),
    "chrt": (frozenset(), 1),
    "watch": (frozenset({"-n", "-d", "--interval"}), 0),
    "unbuffer": (frozenset(), 0),
    "caffeinate": (frozenset(), 0),
    "xvfb-run": (frozenset({"-a", "-n", "-s", "-f", "-e", "-p", "-w"}), 0),
    "catchsegv": (frozenset(), 0),
    "strace": (frozenset({"-o", "-e", "-p", "-s"}), 0),
}
_RUNNERS = {"uv": {"run"}, "poetry": {"run"}, "pipenv": {"run"}, "pdm": {"run"},
            "hatch": {"run"}, "pnpm": {"exec", "dlx"}, "yarn": {"exec", "dlx"},
            "bundle": {"exec"}}
_SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash"})
_REMOTE = {"ssh": "on another machine (ssh)", "docker": "inside a container",
           "podman": "inside a container"}


@dataclass
class Unwrapped:
    """The command under the wrappers, and what the wrappers changed."""

    words: list[Word]
    wrappers: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    clear_env: bool = False
    chdir: Word | None = None
    script: str | None = None
    remote: str | None = None
    creates: list[Word] = field(default_factory=list)  # files a wrapper itself creates


def _skip_options(words: list[Word], value_opts: frozenset[str], positionals: int) -> list[Word]:
    i = 1
    while i < len(words):
        t = words[i].text
        if t == "--":
            i += 1
            break
        if t.startswith("--") and "=" in t:
            i += 1
        elif t in value_opts:
            i += 2
        elif t.startswith("-") and len(t) > 1:
            if t[:2] in value_opts and len(t) > 2:
                i += 1
            else:
                i += 1
        else:
            break
    i += positionals
    return words[i:]


def unwrap(words: list[Word], env: dict[str, str], cwd: str = "/") -> Unwrapped:
    """See through wrapper commands; stop at the first real command."""
    u = Unwrapped(list(words))
    for _ in range(8):
        if not u.words:
            return u
        name = os.path.basename(u.words[0].text)
        args = [w.text for w in u.words[1:]]
        if name in ("sudo", "doas"):
            for flag, val in zip(args, [*args[1:], ""], strict=False):
                if flag in ("-D", "--chdir"):
                    u.chdir = Word(val)
                elif flag.startswith("--chdir="):
                    u.chdir = Word(flag.split("=", 1)[1])
            if "-l" in args[:1] or "--list" in args[:1]:
                u.words = []
                return u
        if name == "env":
            rest = u.words[1:]
            while rest:
                t = rest[0].text
                if t in ("-i", "--ignore-environment", "-"):
                    u.clear_env = True
                    rest = rest[1:]
                elif t in ("-u", "--unset"):
                    rest = rest[2:]
                elif t in ("-C", "--chdir") and len(rest) > 1:
                    u.chdir = rest[1]
                    rest = rest[2:]
                elif t.startswith("--chdir="):
                    u.chdir = Word(t.split("=", 1)[1], rest[0].dynamic)
                    rest = rest[1:]
                elif t in ("-S", "--split-string") and len(rest) > 1:
                    u.script = rest[1].text + " " + " ".join(w.text for w in rest[2:])
                    u.wrappers.append("env")
                    u.words = []
                    return u
                elif "=" in t and not t.startswith("-"):
                    k, _, v = t.partition("=")
                    u.env[k] = v
                    rest = rest[1:]
                elif t.startswith("-"):
                    rest = rest[1:]
                else:
                    break
            u.wrappers.append("env")
            u.words = rest
            continue
        if name in _WRAPPERS:
            opts, positionals = _WRAPPERS[name]
            if name == "flock":  # `flock FILE cmd` creates FILE when it is missing
                lock = _skip_options(u.words, opts, 0)[:1]
                u.creates += [w for w in lock if not w.text.isdigit()]
            if name == "command" and args[:1] and args[0] in ("-v", "-V"):
                u.words = []
                return u
            rest = _skip_options(u.words, opts, positionals)
            while rest and "=" in rest[0].text and not rest[0].text.startswith("-") \
                    and rest[0].text.split("=", 1)[0].isidentifier():
                k, _, v = rest[0].text.partition("=")
                u.env[k] = v
                rest = rest[1:]
            u.wrappers.append(name)
            u.words = rest
            continue
        if name == "xargs":
            rest = _skip_options(u.words, frozenset({"-n", "-I", "-L", "-P", "-d", "-E", "-s",
                                                     "-a", "--max-args", "--max-procs",
                                                     "--delimiter", "--arg-file", "-i"}), 0)
            u.wrappers.append("xargs")
            u.words = [*rest, Word("{xargs}", dynamic=True)] if rest else [Word("echo")]
            continue
        if name in ("npx", "bunx", "pnpx"):
            u.wrappers.append(name)
            u.words = _skip_options(u.words, frozenset({"-p", "--package", "-c", "--call"}), 0)
            continue
        if name in _RUNNERS and args[:1] and args[0] in _RUNNERS[name]:
            u.wrappers.append(f"{name} {args[0]}")
            u.words = _skip_options(u.words[1:], frozenset({"--python", "-p", "--with", "-e",
                                                            "--env-file", "--directory"}), 0)
            continue
        if name in _SHELLS:
            script = _shell_script(u.words, cwd)
            if script is not None:
                u.wrappers.append(name)
                u.script = script
                u.words = []
            return u
        if name == "eval":
            u.wrappers.append("eval")
            u.script = " ".join(w.text for w in u.words[1:])
            u.words = []
            return u
        if name == "su":
            for i, w in enumerate(u.words):
                if w.text in ("-c", "--command") and i + 1 < len(u.words):
                    u.wrappers.append("su")
                    u.script = u.words[i + 1].text
                    u.words = []
                    return u
            return u
        if name in _REMOTE and (name == "ssh" or args[:1] == ["exec"]):
            u.remote = _REMOTE[name]
            return u
        return u
    return u


def _shell_script(words: list[Word], cwd: str) -> str | None:
    """The script a shell invocation runs: ``-c`` text or a script file's content."""
    i = 1
    while i < len(words):
        t = words[i].text
        if t.startswith("-") and not t.startswith("--") and "c" in t[1:]:
            return words[i + 1].text if i + 1 < len(words) else None
        if t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        if t.startswith(("-", "+")):
            i += 1
            continue
        if words[i].dynamic:
            return None
        try:
            path = Path(cwd) / t
            if path.is_file() and path.stat().st_size <= _MAX_SCRIPT:
                return path.read_text(errors="replace")
        except OSError:
            return None
        return None
    return None
