"""The declarative rule table: which tier and targets a command or tool call gets.

Rules are YAML (``rules: [ … ]``) shipped in ``preimage/rules/*.yaml`` and
read from the user's ``rules.d/*.yaml``; learned rules (saved from the model
tier, with provenance) live in ``rules.d/learned.yaml``.  Each rule has a
``match`` and either ``targets`` (URI templates) or an ``extract`` naming a
built-in extractor that reads the command's arguments.  The most specific
matching rule wins; between equals, user rules beat learned ones beat
shipped ones.

Template fields: ``{cwd}``, ``{workspace}``, ``{home}``, ``{user}``,
``{arg1}`` … (positionals after the subcommand), ``{opt:--name}``,
``{input.FIELD}`` (tool input) and ``{env.NAME}``.
"""

from __future__ import annotations

import fnmatch
import getpass
import os
import re
import threading
import time
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from preimage.layer.call import ToolCall
from preimage.layer.config import rules_dir
from preimage.layer.reading.argv import parse_args
from preimage.layer.reading.shell import SimpleCommand
from preimage.layer.reading.words import Word

# libyaml's safe loader when PyYAML was built with it: about ten times the pure-Python one.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TierName = Literal["read-only", "rewrite", "pair", "workspace"]
ImpactName = Literal["none", "low", "normal", "high"]
_SOURCE_RANK = {"user": 3, "learned": 2, "builtin": 1}


class RuleMatch(BaseModel):
    """When a rule applies."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] = Field(default_factory=list, description="program basenames")
    subcommand: list[str] = Field(default_factory=list, description="'migrate reset' = two words")
    global_options: list[str] = Field(
        default_factory=list, description="options before the subcommand that take a value"
    )
    options_any: list[str] = Field(default_factory=list)
    options_none: list[str] = Field(default_factory=list)
    tool: list[str] = Field(default_factory=list, description="harness tool names")
    mcp_tool: list[str] = Field(default_factory=list, description="glob patterns on MCP tool names")
    mcp_kind: list[str] = Field(default_factory=list)
    input_matches: dict[str, str] = Field(default_factory=dict, description="field → regex")

    def specificity(self) -> int:
        """How much of the call this match pins down."""
        return (
            bool(self.command) + bool(self.tool) + bool(self.mcp_tool) + bool(self.mcp_kind)
            + 2 * max((len(s.split()) for s in self.subcommand), default=0)
            + len(self.options_any) + len(self.options_none) + len(self.input_matches)
        )


class Rule(BaseModel):
    """One row of the rule table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    tier: TierName
    match: RuleMatch
    extract: str | None = None
    targets: list[str] = Field(default_factory=list)
    impact: ImpactName = "normal"
    description: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    provenance: dict[str, Any] | None = None
    source: str = "builtin"
    origin: str = ""


def _has_option(words: list[Word], name: str) -> bool:
    for w in words:
        t = w.text
        if t == "--":
            return False
        if t == name or (name.startswith("--") and t.startswith(name + "=")):
            return True
        if (len(name) == 2 and name.startswith("-") and t.startswith("-")
                and not t.startswith("--") and name[1] in t[1:] and t[1:].isalpha()):
            return True
        if len(name) == 2 and t.startswith(name) and not t.startswith("--") and len(t) > 2 \
                and not t[1:].isalpha():
            return True  # -i.bak, -n5
    return False


def subcommand_words(cmd: SimpleCommand, global_options: Iterable[str]) -> list[str]:
    """The positionals after the program's global options."""
    args = parse_args(cmd.words[1:], global_options, stop_at_positional=True)
    return args.texts


class RuleSet:
    """An ordered table of rules."""

    def __init__(self, rules: list[Rule], problems: list[str] | None = None) -> None:
        self.rules = rules
        self.problems = problems or []
        self._by_command: dict[str, list[Rule]] = {}
        self._tool_rules: list[Rule] = []
        for r in rules:
            if r.match.command:
                for c in r.match.command:
                    self._by_command.setdefault(c, []).append(r)
            else:
                self._tool_rules.append(r)

    def _best(self, candidates: list[Rule]) -> Rule | None:
        if not candidates:
            return None
        return max(
            enumerate(candidates),
            key=lambda ir: (_SOURCE_RANK.get(ir[1].source, 0), ir[1].match.specificity(), -ir[0]),
        )[1]

    def match_command(self, cmd: SimpleCommand) -> Rule | None:
        """The rule for one simple command, if any."""
        hits = []
        for rule in self._by_command.get(cmd.name, []):
            m = rule.match
            if m.subcommand:
                subs = subcommand_words(cmd, m.global_options)
                if not any(subs[: len(s.split())] == s.split() for s in m.subcommand):
                    continue
            args = cmd.words[1:]
            if m.options_any and not any(_has_option(args, o) for o in m.options_any):
                continue
            if m.options_none and any(_has_option(args, o) for o in m.options_none):
                continue
            hits.append(rule)
        return self._best(hits)

    def match_tool(self, call: ToolCall, mcp_kind: str | None) -> Rule | None:
        """The rule for a structured (non-shell) tool call, if any."""
        mcp = call.mcp_tool
        hits = []
        for rule in self._tool_rules:
            m = rule.match
            if m.tool and call.tool.lower() not in {t.lower() for t in m.tool}:
                continue
            if m.mcp_tool and (mcp is None or not any(
                    fnmatch.fnmatch(mcp.tool.lower(), p.lower()) for p in m.mcp_tool)):
                continue
            if m.mcp_kind and mcp_kind not in m.mcp_kind:
                continue
            if not (m.tool or m.mcp_tool or m.mcp_kind):
                continue
            if not all(_input_matches(call.input, k, rx) for k, rx in m.input_matches.items()):
                continue
            hits.append(rule)
        return self._best(hits)


def _input_matches(data: dict[str, Any], key: str, regex: str) -> bool:
    value = data.get(key)
    if value is None:
        return regex == ""
    text = value if isinstance(value, str) else str(value)
    return re.search(regex, text, re.IGNORECASE) is not None


def render(template: str, fields: dict[str, str]) -> str | None:
    """Fill ``{name}`` fields; ``None`` when a field is unknown."""
    missing = False

    def sub(m: re.Match[str]) -> str:
        nonlocal missing
        key = m.group(1)
        if key not in fields:
            missing = True
            return ""
        return fields[key]

    out = re.sub(r"\{([^{}]+)\}", sub, template)
    return None if missing else out


def template_fields(
    *, cwd: str, workspace: str, home: str, env: dict[str, str],
    cmd: SimpleCommand | None = None, rule: Rule | None = None,
    tool_input: dict[str, Any] | None = None,
) -> dict[str, str]:
    """The values ``render`` may use for one command or tool call."""
    fields: dict[str, str] = {"cwd": cwd, "workspace": workspace, "home": home,
                              "user": env.get("USER") or getpass.getuser()}
    for k, v in env.items():
        fields[f"env.{k}"] = v
    if cmd is not None:
        skip = len(rule.match.subcommand[0].split()) if rule and rule.match.subcommand else 0
        opts = rule.match.global_options if rule else []
        args = parse_args(cmd.words[1:], opts)
        for i, w in enumerate(args.positionals[skip:], start=1):
            if not w.dynamic:
                fields[f"arg{i}"] = w.text if w.text.startswith("/") or "://" in w.text \
                    else os.path.normpath(os.path.join(cwd, w.text)) if _looks_path(w.text) \
                    else w.text
        for o, val in args.options:
            if val is not None:
                fields[f"opt:{o}"] = val
    for k, item in (tool_input or {}).items():
        if isinstance(item, (str, int, float)):
            fields[f"input.{k}"] = str(item)
    return fields


def _looks_path(text: str) -> bool:
    return "/" in text or text.startswith(".") or os.path.splitext(text)[1] != ""


# ------------------------------------------------------------------ loading
def _load_file(path: Path | Any, source: str) -> tuple[list[Rule], list[str]]:
    try:
        doc = yaml.load(path.read_text(), Loader=_YAML_LOADER) or {}  # noqa: S506 - a safe loader
    except (OSError, yaml.YAMLError) as exc:
        return [], [f"{path}: cannot read rules ({exc})"]
    rows = doc.get("rules", []) if isinstance(doc, dict) else []
    out, problems = [], []
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        try:
            rule = Rule.model_validate(row)
        except ValidationError as exc:
            problems.append(f"{path}: rule #{i + 1} ignored: {exc.errors()[0]['msg']}")
            continue
        src = "learned" if rule.provenance else source
        out.append(rule.model_copy(update={"source": src, "origin": str(getattr(path, "name", path))}))
    return out, problems


@lru_cache(maxsize=1)
def builtin_rules() -> tuple[Rule, ...]:
    """The rules shipped with preimage."""
    rules: list[Rule] = []
    folder = resources.files("preimage") / "rules"
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".yaml"):
            got, problems = _load_file(entry, "builtin")
            if problems:
                raise ValueError("; ".join(problems))
            rules.extend(got)
    return tuple(rules)


# The user's rules, validated once per version of each file: a resident decision service
# answers every call from these, and re-reads a file only when its stat says it changed.
_Stamp = tuple[int, int, int, int]
_user_files: dict[str, tuple[_Stamp, list[Rule], list[str]]] = {}
_sets: dict[str, tuple[tuple[object, ...], RuleSet]] = {}   # by rules folder
_cache_lock = threading.Lock()
_SETTLE_NS = 2_000_000_000   # a file written less than this long ago is read on every call


def _stamp(path: Path) -> _Stamp | None:
    """What says a rules file changed: inode, size, mtime and ctime (``None``: unreadable)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _settled(stamp: _Stamp | None) -> bool:
    """Whether a file with ``stamp`` may be cached: its last write lies further back than
    a timestamp's granularity, so a write after this read cannot keep the same stamp."""
    return stamp is not None and time.time_ns() - stamp[2] > _SETTLE_NS


def _user_file(path: Path) -> tuple[list[Rule], list[str]]:
    """``path``'s rules and problems, validated again only when the file changed."""
    stamp = _stamp(path)
    key = str(path)
    hit = _user_files.get(key)
    if hit is not None and hit[0] == stamp and _settled(stamp):
        return hit[1], hit[2]
    got, bad = _load_file(path, "user")
    if stamp is not None and _settled(stamp) and stamp == _stamp(path):   # unchanged meanwhile
        _user_files[key] = (stamp, got, bad)
    return got, bad


def keep_rule_sets(folders: Iterable[str]) -> None:
    """Forget the cached rules of every folder but ``folders`` (a resident process serving
    many config directories keeps a few, not every one it ever saw)."""
    keep = set(folders)
    with _cache_lock:
        for folder in [f for f in _sets if f not in keep]:
            del _sets[folder]
        for path in [p for p in _user_files if str(Path(p).parent) not in keep]:
            del _user_files[path]


def load_rules(user_dir: Path | None = None) -> RuleSet:
    """Shipped rules plus the user's (``rules.d``); bad user files are reported, not fatal.

    The shipped rules are read once per process; each user file is read and validated
    again only when its inode, size or times change, and the same :class:`RuleSet` is
    returned while none did (a rule saved by the model tier, an edit, a new or removed
    file all count)."""
    folder = user_dir if user_dir is not None else rules_dir()
    paths = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
    stamps = [_stamp(p) for p in paths]
    key: tuple[object, ...] = (str(folder), *zip(map(str, paths), stamps, strict=True))
    with _cache_lock:
        hit = _sets.get(str(folder))
        if hit is not None and hit[0] == key and all(map(_settled, stamps)):
            return hit[1]
        rules = list(builtin_rules())
        problems: list[str] = []
        for path in paths:
            got, bad = _user_file(path)
            rules.extend(got)
            problems.extend(bad)
        ruleset = RuleSet(rules, problems)
        _sets[str(folder)] = (key, ruleset)
        return ruleset
