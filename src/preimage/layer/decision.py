"""What the backup layer decides about one tool call.

A call is first analysed into :class:`Finding` s — one per simple command of a
shell line, or one for a structured tool call — each naming the tier and
rule that understood it and the :class:`PlannedTarget` s it may change.  The
layer then narrows the findings by mode and policy, captures the targets and
returns a :class:`Decision`: pass, capture-then-run, or rewrite.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Tier(StrEnum):
    """Where a call was understood, cheapest first."""

    READ_ONLY = "read-only"
    REWRITE = "rewrite"
    PAIR = "pair"
    WORKSPACE = "workspace"
    MODEL = "model"

    @property
    def rank(self) -> int:
        """Order of cost: read-only 0 … model 4."""
        return list(Tier).index(self)


class Action(StrEnum):
    """What the harness should do with the call."""

    PASS = "pass"  # noqa: S105 - run it as is; nothing captured
    CAPTURE = "capture"    # a backup was taken; run it as is
    REWRITE = "rewrite"    # a backup was taken; run the updated input instead


class Impact(StrEnum):
    """How much a call can destroy: modes select by it."""

    NONE = "none"      # reads only
    LOW = "low"        # creates new state, or changes metadata only
    NORMAL = "normal"  # modifies existing state
    HIGH = "high"      # deletes, truncates, overwrites or force-resets existing state

    @property
    def rank(self) -> int:
        """0 for none … 3 for high."""
        return list(Impact).index(self)


@dataclass(frozen=True)
class PlannedTarget:
    """A target URI the layer means to capture, with why and how to fall back.

    ``fallback`` is captured instead when the connector for ``uri`` is not
    installed (a ``git://`` repository falls back to its ``file://`` tree).
    ``regenerable`` marks state a tool can rebuild (caches, build output,
    installed packages) — the ``human-work`` mode skips it.  ``widen`` is a
    wider scope captured when ``uri`` itself cannot be (a table scope that
    names a view: the whole database).
    """

    uri: str
    why: str = ""
    fallback: str | None = None
    regenerable: bool = False
    external: bool = False   # lives outside the machine's filesystem (a server)
    widen: str | None = None  # captured instead when capturing ``uri`` fails (a wider scope)

    @property
    def scheme(self) -> str:
        """The URI scheme (selects the connector)."""
        return self.uri.split(":", 1)[0].lower()


@dataclass
class Finding:
    """How one command (or one structured tool call) was understood."""

    source: str
    tier: Tier
    rule: str
    impact: Impact = Impact.NONE
    targets: list[PlannedTarget] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unknown: bool = False          # the layer cannot tell what it changes
    wide: bool = False             # reaches beyond what it names (globs, -R, --all, no WHERE)
    outside_workspace: bool = False
    rewrite: str | None = None     # a reversible replacement for ``source`` (shell text)
    span: tuple[int, int] | None = None  # where ``source`` sits in the call's command text
    forced_by: list[str] = field(default_factory=list)  # words/programs that widened the scope
    # A rewrite that protects by moving into the store's trash when it runs: the backup ID
    # it will record and the target URIs it will hold (there is nothing to capture first).
    rewrite_backup: str | None = None
    rewrite_targets: list[str] = field(default_factory=list)
    # What the call changes is out of any backup's reach (a command inside a container):
    # why.  The decision then fails as a backup that could not be taken does — the call is
    # asked or refused by ``on_failure`` — instead of a snapshot that would hold nothing.
    uncapturable: str | None = None

    @property
    def changes_state(self) -> bool:
        """Whether this command may change anything."""
        return self.unknown or self.impact is not Impact.NONE

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (for ``rules explain --json``)."""
        return {
            "source": self.source,
            "tier": self.tier.value,
            "rule": self.rule,
            "impact": self.impact.value,
            "targets": [t.uri for t in self.targets],
            "notes": list(self.notes),
            "unknown": self.unknown,
            "wide": self.wide,
            "outside_workspace": self.outside_workspace,
            "rewrite": self.rewrite,
            "forced_by": list(self.forced_by),
            "uncapturable": self.uncapturable,
        }


@dataclass
class Decision:
    """The layer's answer for one tool call.

    ``backup_id`` names the backup taken before the call runs (``None`` when
    nothing was captured); ``preimage restore <backup_id>`` brings the
    targets back.  ``error`` is set when a capture was wanted but failed —
    the call is then *not* protected and :attr:`additional_context` says so.
    """

    action: Action
    tier: Tier | None
    rules: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    backup_id: str | None = None
    updated_input: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    model_tokens: int = 0
    seconds: float = 0.0           # time spent deciding (analysis, model)
    capture_seconds: float = 0.0   # time spent capturing
    mode: str = "full"

    @property
    def protected(self) -> bool:
        """True when a backup of the call's targets exists."""
        return self.backup_id is not None and self.error is None

    @property
    def additional_context(self) -> str:
        """One paragraph for the agent: what was backed up and how to undo, or why not."""
        parts: list[str] = []
        if self.backup_id:
            what = ", ".join(self.targets[:6]) + (" …" if len(self.targets) > 6 else "")
            tier = self.tier.value if self.tier else "?"
            parts.append(
                f"preimage backup {self.backup_id} ({tier} tier) holds the state before this "
                f"call: {what}. Undo with `preimage restore {self.backup_id}`."
            )
        if self.action is Action.REWRITE and self.updated_input is not None:
            parts.append("The call was rewritten into a reversible form.")
        if self.error:
            parts.append(f"preimage could NOT back up this call: {self.error}")
        parts.extend(self.notes)
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view of the decision."""
        return {
            "action": self.action.value,
            "tier": self.tier.value if self.tier else None,
            "rules": list(self.rules),
            "targets": list(self.targets),
            "backup_id": self.backup_id,
            "updated_input": self.updated_input,
            "notes": list(self.notes),
            "error": self.error,
            "model_tokens": self.model_tokens,
            "seconds": round(self.seconds, 6),
            "capture_seconds": round(self.capture_seconds, 6),
            "mode": self.mode,
            "additional_context": self.additional_context,
            "findings": [f.to_dict() for f in self.findings],
        }
