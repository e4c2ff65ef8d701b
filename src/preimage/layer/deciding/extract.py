"""The extractor registry and the helpers every extractor uses.

An extractor reads one simple command (or one structured tool call) that a
rule matched and returns a :class:`Finding`: the targets it may change, how
much it can destroy, and anything the layer should say about it.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator
from typing import TypeVar
from urllib.parse import unquote, urlsplit

from preimage.connectors.files.address import file_uri
from preimage.layer.call import ToolCall
from preimage.layer.context import Context
from preimage.layer.deciding.rules import Rule, render, template_fields
from preimage.layer.decision import Finding, Impact, PlannedTarget, Tier
from preimage.layer.reading.mounts import kernel_path
from preimage.layer.reading.shell import SimpleCommand, resolve
from preimage.layer.reading.words import Word

ShellExtractor = Callable[[SimpleCommand, Rule, Context], Finding]
ToolExtractor = Callable[[ToolCall, Rule, Context], Finding]
SHELL_EXTRACTORS: dict[str, ShellExtractor] = {}
TOOL_EXTRACTORS: dict[str, ToolExtractor] = {}
F = TypeVar("F")

_GLOB_LIMIT = 200
REGENERABLE_PARTS = frozenset({
    "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox",
    ".nox", "dist", "build", "target", ".next", ".nuxt", ".cache", ".gradle", ".parcel-cache",
    "coverage", "htmlcov", ".venv", "venv", ".eggs", ".terraform", "bower_components",
})


def shell_extractor(name: str) -> Callable[[ShellExtractor], ShellExtractor]:
    """Register a shell extractor under ``name`` (what rules put in ``extract:``)."""
    def deco(fn: ShellExtractor) -> ShellExtractor:
        SHELL_EXTRACTORS[name] = fn
        return fn
    return deco


def tool_extractor(name: str) -> Callable[[ToolExtractor], ToolExtractor]:
    """Register a tool-call extractor under ``name``."""
    def deco(fn: ToolExtractor) -> ToolExtractor:
        TOOL_EXTRACTORS[name] = fn
        return fn
    return deco


def finding(source: SimpleCommand | ToolCall, rule: Rule, **kw: object) -> Finding:
    """A finding for ``source`` under ``rule`` (tier and impact from the rule unless given)."""
    if isinstance(source, SimpleCommand):
        text, span = source.source, source.span
    else:
        text, span = source.tool, None
    f = Finding(source=text, tier=Tier(rule.tier), rule=rule.name, impact=Impact(rule.impact),
                span=span)
    for k, v in kw.items():
        setattr(f, k, v)
    return f


def unknown(source: SimpleCommand | ToolCall, rule: Rule | None, note: str,
            forced_by: list[str] | None = None) -> Finding:
    """A finding for a call whose effect the layer cannot tell.

    ``forced_by`` names what made it so (``word `$x```, ``program `foo```);
    without it the program itself is named.
    """
    text = source.source if isinstance(source, SimpleCommand) else source.tool
    span = source.span if isinstance(source, SimpleCommand) else None
    if forced_by is None:
        forced_by = [f"program `{source.name}`" if isinstance(source, SimpleCommand)
                     else f"tool `{source.tool}`"]
    return Finding(source=text, tier=Tier.WORKSPACE, rule=rule.name if rule else "unknown",
                   impact=Impact.NORMAL, unknown=True, notes=[note], span=span,
                   forced_by=forced_by)


def dynamic_words(cmd: SimpleCommand, words: list[Word]) -> list[str]:
    """How to name the words of ``words`` only the running shell can know."""
    out = [f"word `{w.why or w.text}`" for w in words if w.dynamic]
    if not cmd.cwd_known and any(not w.text.startswith("/") for w in words):
        out.append("an earlier `cd` to a directory only the running shell knows")
    return out


def ancestors(start: str) -> Iterator[str]:
    """``start`` (made absolute), then each directory above it, up to ``/``."""
    path = os.path.abspath(start)
    while True:
        yield path
        parent = os.path.dirname(path)
        if parent == path:
            return
        path = parent


def regenerable(path: str) -> bool:
    """Whether a path lies in a cache or build-output directory a tool can rebuild."""
    parts = set(path.split("/"))
    return bool(parts & REGENERABLE_PARTS) or path.endswith((".pyc", ".o", ".class"))


def expand_paths(cmd: SimpleCommand, words: list[Word]) -> tuple[list[str], bool, bool]:
    """Absolute paths the words name, globs expanded against the command's cwd.

    Returns ``(paths, dynamic, globbed)``: ``dynamic`` when some word cannot
    be known before the command runs (then the caller must not pretend to
    know its targets).
    """
    paths: list[str] = []
    dynamic = not cmd.cwd_known and any(not w.text.startswith("/") for w in words)
    globbed = False
    for w in words:
        if w.dynamic:
            dynamic = True
            continue
        if w.glob:
            globbed = True
            pattern = resolve(cmd, w.text)
            hits = sorted(glob.glob(pattern))
            if len(hits) > _GLOB_LIMIT:
                paths.append(os.path.dirname(pattern))  # too many: take their directory
            else:
                paths.extend(os.path.normpath(h) for h in hits)
            continue
        paths.append(resolve(cmd, w.text))
    return paths, dynamic, globbed


def file_targets(
    paths: list[str], ctx: Context, why: str, *, include_absent: bool = False
) -> list[PlannedTarget]:
    """``file://`` targets for ``paths`` (kernel interfaces — ``/proc``, ``/sys``, device
    nodes — and missing paths skipped; a tmpfs such as ``/dev/shm`` is data)."""
    out = []
    for p in paths:
        if kernel_path(p):
            continue
        if not include_absent and not os.path.lexists(p):
            continue
        out.append(PlannedTarget(file_uri(p), why, regenerable=regenerable(p)))
    return out


def outside(ctx: Context, paths: list[str]) -> bool:
    """Whether any path lies outside the workspace."""
    return any(ctx.outside_workspace(p) for p in paths)


def _templated(source: SimpleCommand | ToolCall, rule: Rule, ctx: Context) -> Finding:
    if isinstance(source, SimpleCommand):
        fields = template_fields(cwd=source.cwd, workspace=ctx.workspace, home=ctx.home,
                                 env=source.env, cmd=source, rule=rule)
    else:
        fields = template_fields(cwd=source.cwd, workspace=ctx.workspace, home=ctx.home,
                                 env=ctx.env, tool_input=source.input)
    targets = []
    for tpl in rule.targets:
        uri = render(tpl, fields)
        if uri is None:
            return unknown(source, rule, f"rule {rule.name}: cannot fill {tpl}")
        targets.append(PlannedTarget(uri, f"rule {rule.name}",
                                     external=not uri.startswith(("file:", "git:", "pip:"))))
    if rule.params.get("creates_missing") and all(
            t.uri.startswith("file://") and os.path.lexists(unquote(urlsplit(t.uri).path))
            for t in targets):  # it only creates these when they are missing: nothing to do
        return finding(source, rule, tier=Tier.READ_ONLY, impact=Impact.NONE)
    return finding(source, rule, targets=targets)


def run_rule(source: SimpleCommand | ToolCall, rule: Rule, ctx: Context) -> Finding:
    """The finding ``rule`` gives ``source`` (an extractor's failure is an unknown finding)."""
    try:
        if rule.extract:
            table = SHELL_EXTRACTORS if isinstance(source, SimpleCommand) else TOOL_EXTRACTORS
            fn = table.get(rule.extract)
            if fn is None:
                return unknown(source, rule, f"rule {rule.name}: no extractor {rule.extract!r}")
            return fn(source, rule, ctx)  # type: ignore[arg-type]
        if rule.tier == "read-only":
            return finding(source, rule, impact=Impact.NONE)
        if rule.tier == "workspace" or not rule.targets:
            return finding(source, rule, tier=Tier.WORKSPACE)
        return _templated(source, rule, ctx)
    except Exception as exc:  # an extractor bug must never stop the agent's call
        return unknown(source, rule, f"rule {rule.name} failed ({type(exc).__name__}: {exc})")
