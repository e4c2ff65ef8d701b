"""``BackupLayer``: see a tool call before it runs and preserve what it will change.

``before(call)`` reads the call (tiers 1-2 by rule, tier 3 for calls known to
write only the workspace, tier 4 — a model — for calls no rule understands),
narrows by mode and policy, captures the targets as one backup and returns
the :class:`Decision`.  It never raises for a bad call or a failing store:
the decision then carries the error and the harness lets the call run (or
asks, as configured).
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from preimage.connectors.files.address import file_uri, scoped_uri
from preimage.interface.errors import PreimageError
from preimage.interface.registry import connector_problem, get_connector
from preimage.interface.target import Target
from preimage.layer.call import ToolCall
from preimage.layer.config import LayerConfig, Mode
from preimage.layer.context import Context
from preimage.layer.deciding.analyze import analyze
from preimage.layer.deciding.completion import Completion, ToolResult
from preimage.layer.deciding.model import ModelTier
from preimage.layer.deciding.policy import Policy, mode_keeps, select_targets
from preimage.layer.deciding.rm_trash import leave_call
from preimage.layer.deciding.rules import RuleSet, load_rules
from preimage.layer.deciding.side_effects import cover_side_effects, file_path, home_state_targets
from preimage.layer.decision import Action, Decision, Finding, PlannedTarget, Tier
from preimage.snapshot_schemas import Snapshot
from preimage.store.store import Store, default_home


@dataclass
class Plan:
    """What ``before`` would do, without capturing (``rules explain`` prints it)."""

    findings: list[Finding]
    targets: list[PlannedTarget] = field(default_factory=list)
    wanted: list[PlannedTarget] = field(default_factory=list)  # before connector fallbacks
    dropped: list[str] = field(default_factory=list)  # wanted, but no connector can capture them
    uncapturable: list[str] = field(default_factory=list)  # changes no backup can hold: why
    tier: Tier | None = None
    notes: list[str] = field(default_factory=list)
    updated_input: dict[str, object] | None = None
    model_tokens: int = 0
    seconds: float = 0.0

    @property
    def rules(self) -> list[str]:
        seen: list[str] = []
        for f in self.findings:
            if f.rule not in seen and f.changes_state:
                seen.append(f.rule)
        return seen


def unread_content(snapshots: Iterable[Snapshot]) -> list[str]:
    """The file contents a backup could not read (over the store's per-file cap, changed
    while read): the call may overwrite them and no restore brings them back, so each is
    a failure of the backup — the harness is told, and ``--on-failure`` applies."""
    return [f"{u.name} in {snap.target} was not backed up: {u.reason}"
            for snap in snapshots if snap.connector == "file"
            for u in snap.uncaptured if u.fidelity == "content"]


class BackupLayer:
    """The backup layer for one harness process (thread-compatible, not thread-safe)."""

    def __init__(
        self,
        *,
        store: Store | None = None,
        config: LayerConfig | None = None,
        rules: RuleSet | None = None,
        model: ModelTier | None = None,
        env: dict[str, str] | None = None,
        home: Path | None = None,
    ) -> None:
        self.config = config or LayerConfig.load()
        self._store = store
        self._home = home   # the store's home when no store is given (else the default)
        self._store_notes: list[str] = []   # what the store did on the last capture (quota)
        self.rules = rules or load_rules()
        self.env = dict(env if env is not None else os.environ)
        self.model = model if model is not None else (
            ModelTier(self.config.model) if self.config.model else None)
        self.policy = Policy.parse(self.config.policy)

    # ------------------------------------------------------------ planning
    def store_home(self) -> Path:
        """Where this layer's backups go — captures and ``preimage trash`` rewrites alike."""
        if self._store is not None:
            return self._store.home
        return self._home.absolute() if self._home is not None else default_home()

    def context(self, call: ToolCall) -> Context:
        workspace = (self.config.workspace or self.env.get("CLAUDE_PROJECT_DIR") or call.cwd)
        return Context(call, self.config, os.path.normpath(workspace), self.store_home(), self.env)

    def plan(self, call: ToolCall) -> Plan:
        """Analyse ``call`` and choose targets, capturing nothing."""
        started = time.perf_counter()
        ctx = self.context(call)
        findings, notes = analyze(call, ctx, self.rules)
        plan = Plan(findings, notes=list(notes) + list(self.rules.problems))
        mode = self.config.mode
        unknowns = [f for f in findings if f.unknown]
        if unknowns and self.model is not None:
            got = self.model.decide(call, unknowns, ctx, self.rules)
            plan.model_tokens = got.tokens
            plan.notes.extend(got.notes)
            for f in unknowns:
                if got.read_only:
                    f.unknown, f.impact, f.tier = False, f.impact.NONE, Tier.READ_ONLY
                elif got.targets:
                    f.unknown, f.tier, f.targets = False, Tier.MODEL, list(got.targets)
        for f in findings:
            if f.uncapturable:   # whatever the mode: unsure protects more
                plan.uncapturable.append(f.uncapturable)
                continue
            keep, why = mode_keeps(f, mode)
            if not keep:
                if why:
                    plan.notes.append(why)
                continue
            if f.unknown or (f.tier is Tier.WORKSPACE and not f.targets):
                ws = self._workspace_target(ctx, plan)
                if f.unknown:
                    reason = "; ".join(f.notes) or "the layer cannot tell what it changes"
                    if f.forced_by:
                        reason += f" (forced by {', '.join(f.forced_by)})"
                    if mode is Mode.HIGH_IMPACT:
                        plan.notes.append(f"{reason}; high-impact mode takes no workspace snapshot")
                        continue
                    plan.notes.append(f"{reason} — no model is configured, so the workspace "
                                      f"{ctx.workspace} is snapshotted instead"
                                      if self.model is None else f"{reason}; workspace snapshot")
                # a program it does not model, or one that runs code it cannot read (a build,
                # a package manager), may also keep state in the home (~/.npm, ~/.config/…)
                f.targets = [ws, *home_state_targets(ctx)] if ws else home_state_targets(ctx)
                f.tier = Tier.WORKSPACE
            targets, why_not = select_targets(f, mode, self.policy)
            plan.notes.extend(why_not)
            plan.notes.extend(n for n in f.notes if n not in plan.notes and not f.unknown)
            if targets and (plan.tier is None or f.tier.rank > plan.tier.rank):
                plan.tier = f.tier
            plan.targets.extend(targets)
        plan.targets = cover_side_effects(plan.targets, ctx, plan.notes)
        plan.wanted = self._collapse(plan.targets, plan.notes)
        plan.targets = self._collapse(self._fallbacks(plan.wanted, plan.notes, plan.dropped), [])
        plan.targets = self._unobserved(call, plan.targets, plan.notes)
        if not plan.targets:
            plan.tier = None
        plan.updated_input = self._rewrite(call, findings)
        if plan.tier is Tier.REWRITE and plan.updated_input is None:
            # A rule of the rewrite class (git reset --hard, chmod) that rewrote nothing only
            # paired the call with its targets: say so, in the decision and the backup.
            plan.tier = Tier.PAIR
        if self.policy.not_understood:
            plan.notes.append("policy sentences not understood without a model: "
                              + "; ".join(self.policy.not_understood))
        plan.seconds = time.perf_counter() - started
        return plan

    def _workspace_target(self, ctx: Context, plan: Plan) -> PlannedTarget | None:
        ws = ctx.workspace
        if ws == "/" or (ws == ctx.home.rstrip("/") and not self.config.workspace_snapshot_home):
            plan.notes.append(f"the workspace is {ws}; too broad to snapshot — run with "
                              "--workspace DIR (or set `workspace:`) to protect a project")
            return None
        return PlannedTarget(file_uri(ws), "workspace snapshot")

    def _fallbacks(self, targets: list[PlannedTarget], notes: list[str],
                   dropped: list[str]) -> list[PlannedTarget]:
        """Swap in the fallback of a target whose connector is missing (or drop it, saying so)."""
        out: list[PlannedTarget] = []
        for t in targets:
            problem = connector_problem(t.scheme)
            if problem:
                if t.fallback and connector_problem(t.fallback.split(":", 1)[0]) is None:
                    notes.append(f"{problem}; {t.fallback} is captured instead of {t.uri}")
                    t = PlannedTarget(t.fallback, t.why, regenerable=t.regenerable)
                else:
                    notes.append(f"{problem}; {t.uri} is NOT captured")
                    dropped.append(f"{t.uri} ({problem})")
                    continue
            out.append(t)
        return out

    def _collapse(self, targets: list[PlannedTarget], notes: list[str]) -> list[PlannedTarget]:
        """Dedupe, drop paths inside other captured paths, and keep the store out."""
        out: list[PlannedTarget] = []
        seen: set[str] = set()
        for t in targets:
            if t.uri not in seen:
                seen.add(t.uri)
                out.append(t)
        files = sorted((t for t in out if t.scheme == "file" and file_path(t)[1] is None),  # type: ignore[index]
                       key=lambda t: len(t.uri))
        kept: list[PlannedTarget] = []
        for t in files:
            if not any(t.uri == k.uri or t.uri.startswith(k.uri.rstrip("/") + "/") for k in kept):
                kept.append(t)
        split: list[PlannedTarget] = []
        for t in kept:
            split.extend(self._without_store(t, notes))
        others = [t for t in out if t.scheme != "file" and not self._file_covered(t, kept)]
        return others + split + self._limited(out, kept, notes)

    def _limited(self, targets: list[PlannedTarget], full: list[PlannedTarget],
                 notes: list[str]) -> list[PlannedTarget]:
        """Depth-limited file targets not inside a whole one, deepest path first (so the
        directories' own times are put back after what is restored inside them).  One
        whose walk would reach the backup store leaves the store out."""
        roots = [file_path(k)[0] for k in full]  # type: ignore[index]
        best: dict[str, PlannedTarget] = {}
        for limited in targets:
            if not file_path(limited) or file_path(limited)[1] is None:  # type: ignore[index]
                continue
            for t in self._without_store(limited, notes):
                path, depth = file_path(t)  # type: ignore[misc]
                if any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots):
                    continue
                have = best.get(path)
                if have is None or depth > file_path(have)[1]:  # type: ignore[index,operator]
                    best[path] = t
        return sorted(best.values(), key=lambda t: (-file_path(t)[0].count("/"), t.uri))  # type: ignore[index]

    @staticmethod
    def _file_covered(t: PlannedTarget, files: list[PlannedTarget]) -> bool:
        """A SQLite target whose file is captured whole already (bytes and metadata)."""
        if t.scheme != "sqlite":
            return False
        path = unquote(t.uri.split("?", 1)[0][len("sqlite:///"):])
        return any(path == f.uri[len("file://"):] or path.startswith(f.uri[len("file://"):] + "/")
                   for f in files)

    def _without_store(self, t: PlannedTarget, notes: list[str]) -> list[PlannedTarget]:
        """A file target as it is; none when it lies inside the backup store; with the store
        left out (``exclude=``) when its walk would reach the store — saying so."""
        path, depth = file_path(t)  # type: ignore[misc]
        try:
            real, store = Path(path).resolve(), self.store_home().resolve()
        except OSError:
            return [t]
        if real.is_relative_to(store):
            notes.append(f"{path} is the backup store itself or lies inside it; it is not "
                         "captured")
            return []
        if not store.is_relative_to(real):
            return [t]
        rel = store.relative_to(real)
        if depth is not None and len(rel.parts) > depth:
            return [t]  # the walk stops above the store
        notes.append(f"{path}{'' if depth is None else f' (depth {depth})'} holds the backup "
                     f"store {store}; everything beside the store is captured")
        return [PlannedTarget(scoped_uri(str(real), depth, [str(rel)]), t.why,
                              regenerable=t.regenerable)]

    @staticmethod
    def _rewrite(call: ToolCall, findings: list[Finding]) -> dict[str, object] | None:
        text = call.input.get("command")
        edits = [f for f in findings if f.rewrite and f.span]
        if not edits or not isinstance(text, str):
            return None
        for f in sorted(edits, key=lambda f: f.span[0], reverse=True):  # type: ignore[index]
            a, b = f.span  # type: ignore[misc]
            if text[a:b] != f.source:
                return None
            text = text[:a] + f.rewrite + text[b:]  # type: ignore[operator]
        return {**call.input, "command": text}

    # ------------------------------------------------------------ deciding
    def _unobserved(self, call: ToolCall, targets: list[PlannedTarget],
                    notes: list[str]) -> list[PlannedTarget]:
        """Under ``preimage session``, once its supervisor moved to this call's backup
        (the hook client sets ``PREIMAGE_OBSERVED_CALL``), the call's file changes are
        recorded there as they happen: only what syscalls cannot show (databases over a
        socket, Kubernetes, mail, web apps) is captured here."""
        marked = self.env.get("PREIMAGE_OBSERVED_CALL")
        if not marked or marked != (call.tool_use_id or marked):
            return targets
        kept = [t for t in targets if not t.uri.startswith("file:")]
        if len(kept) < len(targets):
            notes.append("file changes are recorded by the session's supervisor in this "
                         "call's observed backup, not read from the call here")
        return kept

    def before(self, call: ToolCall) -> Decision:
        """Decide about ``call`` and take the backup before it runs."""
        started = time.perf_counter()
        try:
            plan = self.plan(call)
        except Exception as exc:  # reading a call must never stop the agent
            return Decision(Action.PASS, None, notes=[f"preimage could not read this call: {exc}"],
                            error=f"analysis failed: {exc}", mode=self.config.mode.value,
                            seconds=time.perf_counter() - started)
        decision = Decision(
            Action.PASS, plan.tier, rules=plan.rules, findings=plan.findings,
            notes=list(dict.fromkeys(plan.notes)), model_tokens=plan.model_tokens,
            mode=self.config.mode.value, seconds=plan.seconds,
        )
        if plan.updated_input is not None:
            decision.updated_input = plan.updated_input
            decision.action = Action.REWRITE
            moved = [f for f in plan.findings if f.rewrite_backup]
            if moved:  # the rewrite itself is the backup: it records it as it runs
                decision.backup_id = moved[0].rewrite_backup
                decision.targets = [u for f in moved for u in f.rewrite_targets]
                decision.tier = decision.tier or Tier.REWRITE
        trash_id = decision.backup_id   # the rewritten rm's, recorded when the harness runs it
        if plan.dropped:
            decision.error = "no connector here can capture " + "; ".join(plan.dropped)
        if plan.uncapturable:
            decision.error = "; ".join(filter(None, [
                decision.error, *(f"no backup can hold this: {why}" for why in plan.uncapturable)]))
        if not plan.targets:
            if trash_id:
                leave_call(self.store_home(), trash_id, call)
            return decision
        t0 = time.perf_counter()
        moved_targets = list(decision.targets)  # what the trash rewrite will hold, if any
        decision.targets = [*moved_targets, *(t.uri for t in plan.targets)]
        backup_id, failed, held = self._capture(call, plan, decision.notes)
        decision.capture_seconds = time.perf_counter() - t0
        decision.backup_id = backup_id or decision.backup_id  # else: the trash rewrite's, if any
        decision.notes.extend(self._store_notes)   # the store applied its quota, and says so
        decision.targets = [*moved_targets, *held]
        if failed:
            decision.error = "; ".join(filter(None, [decision.error, *failed]))
        if backup_id and decision.action is Action.PASS:
            decision.action = Action.CAPTURE
        if trash_id:
            # One call, one undo: the trash move is recorded as a part of the call's own
            # backup, which restore and undo then bring back with it.
            leave_call(self.store_home(), trash_id, call, part_of=backup_id)
        return decision

    def after(self, call: ToolCall, result: ToolResult,
              decision: Decision | None = None, *,
              completion: Completion | None = None) -> Completion:
        """Record that ``call`` finished — status and duration, tied to the backup ``before`` took.

        ``decision`` is the one ``before`` returned, when the caller still holds it (the
        Python API); hook processes pass ``None`` and the pre-call hook's note is read
        instead — or hand in the ``completion`` they made of it already (a hook that
        answered from the note first).  Every post-call step belongs here, so there is
        one place to add one.
        """
        from preimage.layer.deciding.completion import complete

        if completion is None:
            completion = complete(call, result, decision)
        if result.output and call.mcp_tool is not None:
            from preimage.layer.deciding.mcp_playwright import remember_page

            remember_page(call, result.output, self.context(call))   # the page it is on now
        if completion.backup_id:
            self._capture_after(completion)
        return completion

    def _capture_after(self, completion: Completion) -> None:
        """Capture the pre-call backup's targets again: with it, the call's delta is known
        and ``preimage undo`` can revert just this call (unchanged state dedupes)."""
        from preimage.engine.undo import capture_after

        assert completion.backup_id is not None
        t0 = time.perf_counter()
        try:
            post = capture_after(completion.backup_id, store=self._open_store())
        except (PreimageError, OSError) as exc:
            completion.post_error = (f"the capture after the call failed: {exc}; `preimage "
                                     "undo` cannot revert this call alone")
            return
        finally:
            completion.post_capture_seconds = round(time.perf_counter() - t0, 6)
        completion.post_backup_id = post.id if post is not None else None

    def _open_store(self) -> Store:
        if self._store is None:
            self._store = Store(self.store_home())
        return self._store

    def _capture(self, call: ToolCall, plan: Plan,
                 notes: list[str]) -> tuple[str | None, list[str], list[str]]:
        """One backup of the plan's targets: ``(id, failures, the URIs it holds)``.

        When the capture fails, each target is tried alone (into a throw-away
        store); one that still fails is replaced by its wider scope when it
        has one (a table scope naming a view → the database), else left out
        and reported, and the rest are kept in one backup.
        """
        from preimage.engine.capture import capture
        from preimage.interface.errors import CaptureAbandonedError

        label = (call.command or call.tool)[:120]
        kw = {"label": label, "tier": plan.tier.value if plan.tier else "layer",
              "tool_call": call.to_record(), "session": call.session_id, "kind": "layer"}
        uris = [t.uri for t in plan.targets]
        self._store_notes = []
        try:
            store = self._open_store()
            backup = capture(uris, store=store, **kw)  # type: ignore[arg-type]
            self._store_notes = backup.notes
            return backup.id, unread_content(backup.snapshots), uris
        except OSError as exc:
            return None, [f"the backup store failed: {exc}"], []
        except CaptureAbandonedError as exc:   # the hook gave up: the call may be running
            return None, [str(exc)], []
        except Exception as exc:  # a connector's failure, whatever its type, is reported
            if self._store is None:
                return None, [f"{', '.join(uris)}: {exc}"], []
            first_error = exc
        good, failed = [], []
        scratch = self._store.scratch()
        try:  # find which targets fail (into a throw-away store), keep the rest in one backup
            for t in plan.targets:
                for uri in filter(None, (t.uri, t.widen)):
                    try:
                        target = Target.parse(uri)
                        get_connector(target.scheme).capture(target, scratch)
                    except Exception as exc:
                        problem = f"{uri}: {exc}"
                        continue
                    if uri != t.uri:
                        notes.append(f"{problem}; {uri} is captured instead")
                    good.append(uri)
                    break
                else:
                    failed.append(problem)
        finally:
            shutil.rmtree(scratch.root, ignore_errors=True)
        if not good:
            return None, failed or [str(first_error)], []
        try:
            backup = capture(good, store=self._store, **kw)  # type: ignore[arg-type]
            self._store_notes = backup.notes
            return backup.id, [*failed, *unread_content(backup.snapshots)], good
        except Exception as exc:
            return None, [*failed, str(exc)], []
