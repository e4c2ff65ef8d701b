"""Modes and the plain-words policy: which findings and targets get captured.

Modes narrow by what a finding is:

* ``full`` — everything that may change state;
* ``high-impact`` — only calls that delete, truncate, overwrite or reset;
* ``beyond-request`` — only calls that reach past what they name (globs,
  ``-R``, ``--all``, a ``DELETE`` without ``WHERE``), leave the workspace, or
  touch another system;
* ``human-work`` — skip state a tool can regenerate (caches, build output,
  installed packages).

The policy is sentences such as ``never back up node_modules or build;
always back up databases``.  ``never``/``skip``/``don't`` sentences exclude
targets, ``always`` sentences include them whatever the mode.  A thing is a
system word (files, git, packages, databases, kubernetes, email, browser)
or a path pattern.  Sentences not in that shape are reported as not
understood (a configured model reads them too).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from preimage.layer.config import Mode
from preimage.layer.decision import Finding, Impact, PlannedTarget

_SYSTEMS = {
    "file": ("file",), "files": ("file",), "folders": ("file",), "directories": ("file",),
    "git": ("git",), "repositories": ("git",), "repos": ("git",), "repository": ("git",),
    "packages": ("pip",), "pip": ("pip",), "environments": ("pip",), "venvs": ("pip",),
    "database": ("postgresql", "sqlite", "mysql"), "databases": ("postgresql", "sqlite", "mysql"),
    "sql": ("postgresql", "sqlite", "mysql"), "postgres": ("postgresql",),
    "postgresql": ("postgresql",), "sqlite": ("sqlite",), "mysql": ("mysql",),
    "kubernetes": ("k8s",), "k8s": ("k8s",), "cluster": ("k8s",), "clusters": ("k8s",),
    "email": ("imap", "imaps"), "mail": ("imap", "imaps"), "mailboxes": ("imap", "imaps"),
    "browser": ("browser", "web"), "web": ("web", "browser"), "websites": ("web",),
    "crontab": ("crontab",), "cron": ("crontab",),
}
_NEG = re.compile(r"^\s*(?:never|don'?t|do not|skip|ignore|no need to|exclude)\s+"
                  r"(?:(?:back\s*up|backup|capture|protect|snapshot|save)\s+)?(?:the\s+|any\s+)?(.+)$",
                  re.I)
_POS = re.compile(r"^\s*(?:always|must|do)\s+(?:back\s*up|backup|capture|protect|snapshot|save)\s+"
                  r"(?:the\s+|any\s+|all\s+)?(.+)$", re.I)


@dataclass
class Policy:
    """A parsed plain-words policy."""

    exclude: list[str] = field(default_factory=list)
    include: list[str] = field(default_factory=list)
    not_understood: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> Policy:
        """Read sentences separated by ``.``, ``;`` or new lines."""
        pol = cls()
        for sentence in re.split(r"[.;\n]+", text or ""):
            if not sentence.strip():
                continue
            for rx, bucket in ((_NEG, pol.exclude), (_POS, pol.include)):
                m = rx.match(sentence)
                if m:
                    things = re.split(r",|\band\b|\bor\b|\bnor\b", m.group(1))
                    bucket.extend(t.strip().strip("'\"`") for t in things if t.strip())
                    break
            else:
                pol.not_understood.append(sentence.strip())
        return pol

    @staticmethod
    def _matches(thing: str, target: PlannedTarget) -> bool:
        word = thing.lower().split()[0] if thing.split() else ""
        scheme = target.scheme.split("+", 1)[0]
        if thing.lower() in _SYSTEMS or word in _SYSTEMS:
            return scheme in _SYSTEMS.get(thing.lower(), _SYSTEMS.get(word, ()))
        path = target.uri.split("://", 1)[-1].split("?", 1)[0]
        parts = path.strip("/").split("/")
        return thing in parts or fnmatch.fnmatch(path, thing) or fnmatch.fnmatch(
            path, f"*/{thing}") or fnmatch.fnmatch(path, f"*/{thing}/*")

    def excluded(self, target: PlannedTarget) -> bool:
        return any(self._matches(t, target) for t in self.exclude)

    def included(self, target: PlannedTarget) -> bool:
        return any(self._matches(t, target) for t in self.include)


def mode_keeps(f: Finding, mode: Mode) -> tuple[bool, str]:
    """Whether ``mode`` captures finding ``f``, and why not when it does not."""
    if not f.changes_state:
        return False, ""
    if mode is Mode.HIGH_IMPACT and f.impact is not Impact.HIGH:
        return False, f"high-impact mode: `{f.source[:60]}` ({f.impact.value} impact) not captured"
    if mode is Mode.BEYOND_REQUEST and not (
            f.unknown or f.wide or f.outside_workspace or any(t.external for t in f.targets)):
        return False, f"beyond-request mode: `{f.source[:60]}` stays within what it names"
    return True, ""


def select_targets(f: Finding, mode: Mode, policy: Policy) -> tuple[list[PlannedTarget], list[str]]:
    """The targets of a kept finding that mode and policy let through."""
    out, notes = [], []
    for t in f.targets:
        if policy.included(t):
            out.append(t)
        elif policy.excluded(t):
            notes.append(f"policy: {t.uri} not captured")
        elif mode is Mode.HUMAN_WORK and t.regenerable:
            notes.append(f"human-work mode: {t.uri} is regenerable, not captured")
        else:
            out.append(t)
    return out, notes
