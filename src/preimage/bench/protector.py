"""What the benchmark compares: protectors that act before a destructive call.

A :class:`Protector` sees the call before it runs (:meth:`Protector.before`)
and may take a backup; after the call ran the runner asks it to bring the
state back (:meth:`Protector.restore`).  The runner then scores the live
state against the ground truth, so every number is measured the same way
for every protector.

Whether a protector "backed up at the regret moment" is decided per
expected target URI by :meth:`Protector.covers`: the backup it took before
the call holds that target's state.  For preimage that is a target of the
backup containing the expected one (:func:`uri_covers`); baselines answer
from what they actually copied.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from preimage.bench.scenario import CallSpec, Scenario
from preimage.bench.systems.base import Sandbox, System
from preimage.interface.target import Target
from preimage.snapshot_schemas import Snapshot
from preimage.store.store import Store

_SCHEME_ALIASES = {"postgres": "postgresql", "imaps": "imap"}
# Schemes whose state is a local file or tree: a file:// capture of the path holds it.
_LOCAL_SCHEMES = ("file", "sqlite", "git", "pip")
# Query parameters that narrow a target to part of what its path addresses.
_NARROWING = frozenset({
    "tables", "table", "where", "schema", "uids", "search", "labelSelector", "selector",
    "fieldSelector", "origin", "depth",
})


@dataclass
class RunContext:
    """Everything one (scenario, protector) run knows."""

    scenario: Scenario
    system: System
    sandbox: Sandbox
    call: CallSpec
    expected: list[str]
    truth: dict[str, Snapshot]
    store: Store
    scratch: Path


@dataclass
class Protection:
    """What a protector did before the call."""

    backup_id: str | None = None
    targets: list[str] = field(default_factory=list)
    stored_bytes: int = 0
    model_tokens: int = 0
    tier: str = ""
    rules: list[str] = field(default_factory=list)
    call: CallSpec | None = None
    notes: list[str] = field(default_factory=list)
    handle: Any = None
    reported: list[str] = field(default_factory=list)
    """Item keys the restore reported as conflicts (left as they are, not overwritten)."""
    post_bytes: int | None = None
    """Bytes the capture after the call added to the store (``None``: no such capture)."""


class NotCoveredError(Exception):
    """The protector cannot handle this scenario's system at all (with the reason)."""


class Protector:
    """Base class: a protector that takes no backup."""

    name: ClassVar[str] = "none"
    label: ClassVar[str] = "no backup"
    #: Which leaves a restore must bring back for its backup to count as holding the state
    #: when :meth:`covers` cannot tell from the backup's targets.
    evidence: ClassVar[tuple[str, ...]] = ("content", "metadata")

    def before(self, ctx: RunContext) -> Protection:
        """Act before the call; return what was taken."""
        return Protection()

    def setup(self, ctx: RunContext) -> None:
        """Install into the run's project before the session's first call (and before the
        ground truth is taken), as a user installs a tool before working."""

    def observe(self, ctx: RunContext, call: CallSpec) -> None:
        """See an earlier call of the session (a navigation) before it runs."""

    def after_call(self, ctx: RunContext, protection: Protection, exit_code: int) -> None:
        """See the call finish (a harness's post-tool event), before anyone changes more."""

    def covers(self, ctx: RunContext, protection: Protection, uri: str) -> bool:
        """Whether the backup taken before the call holds the state of ``uri``."""
        return False

    def moved_bytes(self, ctx: RunContext, protection: Protection) -> int:
        """Bytes the (rewritten) call moved into the protector's keeping instead of
        deleting them — held, though nothing was copied; 0 for most protectors."""
        return 0

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """Bring the state back from the backup; return notes (problems met)."""
        return []


def _normal(scheme: str) -> str:
    scheme = scheme.lower()
    return _SCHEME_ALIASES.get(scheme, scheme)


def _contains(outer: str, inner: str) -> bool:
    # A trailing "*" (web+isso://host/blog/*: every thread under /blog/) is a prefix.
    outer = outer.rstrip("*").rstrip("/") or "/"
    inner = inner.rstrip("*") or "/"
    return outer in (inner, "/") or inner.startswith(outer + "/")


def _local_path(t: Target) -> str:
    if t.scheme == "sqlite":
        return t.path[1:] if t.path.startswith("/") else t.path
    return t.path


def uri_covers(captured: str, expected: str) -> bool:
    """Whether a capture of ``captured`` holds the state addressed by ``expected``.

    Same scheme, host, port and user, and ``captured``'s path contains
    ``expected``'s; a narrowing query parameter on ``captured`` (``tables=``,
    ``schema=``, ``uids=``, ``labelSelector=``, …) must list everything
    ``expected`` lists; parameters that widen or say how to connect
    (``recursive=1``, ``sslmode=``) do not matter.  A ``file://``
    capture of a path holds any local state under it (a SQLite file, a git
    repository, a virtualenv), byte for byte.
    """
    c, e = Target.parse(captured), Target.parse(expected)
    cs, es = _normal(c.scheme), _normal(e.scheme)
    if any(e.query.get(name) != values for name, values in c.query.items()
           if name == "depth"):
        return False  # a tree read to a depth does not hold what lies below it
    if cs == "file" and es in _LOCAL_SCHEMES:
        return _contains(c.path, _local_path(e))
    if cs == "git" and es == "file":
        return _contains(c.path, e.path)  # a repository's capture holds its working files
    if cs != es or (c.host or "") != (e.host or "") or c.port != e.port:
        return False
    if (c.username or "") != (e.username or ""):
        return False
    if not _contains(_local_path(c), _local_path(e)):
        return False
    for name, values in c.query.items():
        if name not in _NARROWING:
            continue  # recursive=1, sslmode=…: they widen or only say how to connect
        wanted = e.query.get(name)
        if name == "schema" and wanted is None and e.query.get("tables"):
            schemas = {v for raw in values for v in raw.split(",")}
            tables = [t for raw in e.query["tables"] for t in raw.split(",")]
            if all((t.rpartition(".")[0] or "public") in schemas for t in tables):
                continue
            return False
        if wanted is None:
            return False
        have = {v for raw in values for v in raw.split(",")}
        need = {v for raw in wanted for v in raw.split(",")}
        if not need <= have:
            return False
    return True
