"""Protectors installed into a real harness, as each installs itself.

In the real-harness path nothing is called in-process before a tool call: the harness
runs its own hooks.  Each protector here installs itself into the run's project
(:meth:`HookedProtector.install`), says what it holds at a moment
(:meth:`HookedProtector.mark`, read while the scripted model waits between two tool
calls), and turns what appeared between two marks into the :class:`Protection` of the
call that ran between them (:meth:`HookedProtector.between`).  Coverage, restore and the
evidence rule are those of the in-process protectors they extend, so both paths are
judged alike.

* **no backup** — nothing installed;
* **preimage** — ``preimage install <harness>`` (project scope); a call's backups are the
  catalog's new backups taken before a tool call (not the capture after one);
* **preimage undo** — the same hook; the way back is ``preimage undo`` of each call;
* **preimage, observed** — the harness runs under ``preimage session`` with the hooks
  marking each call; a call's backup is what the kernel reported it about to change;
* **harness checkpoint** — Claude Code's file checkpoints, rewound with
  ``--rewind-files`` (Codex has none a non-interactive run can drive);
* **BackUpper** — ``backupper init``, tier 4 off, ``backupper install <harness>``; a
  call's backup is the action it recorded.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, ClassVar

import preimage
from preimage.bench.backupper import BackUpper
from preimage.bench.preimage_protector import PreimageBackup
from preimage.bench.protector import NotCoveredError, Protection, Protector, RunContext
from preimage.interface.errors import UsageError

INSTALL_TIMEOUT = 120.0


class HookedProtector(Protector):
    """Base: a protector that runs as the harness's hook."""

    def install(self, ctx: RunContext, harness: str, env: dict[str, str]) -> None:
        """Put the protector into the run's project for ``harness``."""

    def mark(self, ctx: RunContext) -> Any:
        """What the protector holds now (compared by :meth:`between`)."""
        return None

    def launcher(self, env: dict[str, str]) -> list[str]:
        """What the harness's command line is run under (nothing: the harness itself)."""
        return []

    def own_paths(self, ctx: RunContext) -> list[str]:
        """Folders inside the project the protector writes its own records into."""
        return []

    def finished(self, ctx: RunContext, argv: list[str], stdout: str) -> None:
        """See the harness's run end (its command line, what it printed on stdout)."""

    def between(self, ctx: RunContext, earlier: Any, later: Any) -> Protection:
        """The protection of the call that ran between two marks."""
        return Protection()


class HookedNone(HookedProtector):
    """No backup: the harness runs its tools unguarded."""


class HookedPreimage(HookedProtector, PreimageBackup):
    """preimage's hook, installed with ``preimage install``; restores by backup id."""

    name: ClassVar[str] = "preimage"
    label: ClassVar[str] = "preimage (hook)"

    def install(self, ctx: RunContext, harness: str, env: dict[str, str]) -> None:
        """``preimage install HARNESS`` in the project, as a user runs it."""
        import shutil

        exe = shutil.which("preimage", path=env.get("PATH"))
        if exe is None:
            raise UsageError("`preimage` is not on the run's PATH; install preimage into "
                             "the environment that runs the benchmark")
        done = subprocess.run([exe, "install", harness], cwd=ctx.sandbox.cwd, env=env,
                              capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise UsageError(f"preimage install {harness} failed: {done.stderr.strip()[-300:]}")

    def mark(self, ctx: RunContext) -> Any:
        """The ids of the backups in the run's store."""
        return {b.id for b in ctx.store.catalog.list_backups(limit=None)}

    def between(self, ctx: RunContext, earlier: Any, later: Any) -> Protection:
        """The backups the hook took before the call (their targets, bytes and tier)."""
        rows = [ctx.store.catalog.get(i) for i in sorted(set(later) - set(earlier))]
        rows = [r for r in rows if r.kind != "post-call" and r.tool_call]
        if not rows:
            return Protection(tier="pass")
        rows.sort(key=lambda r: r.created_at)
        return Protection(
            backup_id=rows[-1].id, handle=[r.id for r in rows],
            targets=[s.target for r in rows for s in r.snapshots],
            stored_bytes=sum(r.stored_bytes for r in rows),
            tier=",".join(dict.fromkeys(r.tier for r in rows if r.tier)),
        )

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """Every backup of the call, latest first (the earliest state wins)."""
        notes: list[str] = []
        for backup_id in reversed(protection.handle or [protection.backup_id]):
            one = Protection(backup_id=backup_id)
            try:
                notes.extend(super().restore(ctx, one))
            except preimage.PreimageError as exc:
                notes.append(f"restore {backup_id} failed: {exc}")
        return notes


class HookedUndo(HookedPreimage):
    """preimage's hook as :class:`HookedPreimage`; the way back is ``preimage undo`` of each
    call (the hook's post-call capture tells the call's own changes from later ones)."""

    name: ClassVar[str] = "undo"
    label: ClassVar[str] = "preimage undo (hook)"

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """``preimage.undo`` of every backup of the call, latest first; conflicts reported."""
        from preimage.bench.intervening import absolute_key

        notes: list[str] = []
        for backup_id in reversed(protection.handle or [protection.backup_id]):
            try:
                result = preimage.undo(backup_id, store=ctx.store)
            except preimage.PreimageError as exc:
                notes.append(f"undo {backup_id} failed: {exc}")
                continue
            for plan in result.plans:
                notes.append(f"{plan.target}: {plan.summary()}")
                notes.extend(f"{plan.target}: {n}" for n in plan.notes)
                protection.reported.extend(absolute_key(plan.target, c.key)
                                           for c in plan.conflicts)
        return notes


class HookedObserved(HookedPreimage):
    """The harness run under ``preimage session`` (observed capture: the kernel reports
    every file change of the harness's process tree before it happens), with preimage's
    hooks marking where each call begins and ends.  It watches this machine's processes,
    so it covers the terminal tasks; a database, cluster or mailbox changes in a server."""

    name: ClassVar[str] = "observed"
    label: ClassVar[str] = "preimage (observed session)"

    def install(self, ctx: RunContext, harness: str, env: dict[str, str]) -> None:
        """Only for tasks whose state is files; then the hooks, as for :class:`HookedPreimage`."""
        from preimage.observe.kernel import unavailable_reason

        if not ctx.system.files_only:
            raise NotCoveredError(
                f"observed capture watches file changes on this machine; a {ctx.system.name} "
                "task changes a server's state")
        reason = unavailable_reason()
        if reason is not None:
            raise NotCoveredError(f"supervision unavailable here: {reason}")
        super().install(ctx, harness, env)

    def launcher(self, env: dict[str, str]) -> list[str]:
        """``preimage session --``."""
        import shutil

        exe = shutil.which("preimage", path=env.get("PATH")) or "preimage"
        return [exe, "session", "--"]

    def between(self, ctx: RunContext, earlier: Any, later: Any) -> Protection:
        """The call's observed backup (a session's backups between calls are not the call's)."""
        protection = super().between(ctx, earlier, later)
        protection.tier = "observed" if protection.backup_id else "pass"
        return protection


class HookedCheckpoint(HookedProtector):
    """The harness's own checkpoint, where a non-interactive run can restore it.

    Claude Code keeps file checkpoints of its session (in a non-interactive run when
    ``CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING`` is set) and restores them with
    ``claude --resume SESSION --rewind-files USER-MESSAGE-ID``: the files as they were at
    the request.  Its checkpoints follow its own file tools' edits; whether they held a
    moment's state is judged by the evidence (the restore brought back every content leaf
    the step destroyed).  Codex 0.171 has none a non-interactive run can drive: its ghost
    snapshots are gone (read as "legacy" lines) and ``codex exec`` has no undo.
    """

    name: ClassVar[str] = "checkpoint"
    label: ClassVar[str] = "harness checkpoint"
    evidence: ClassVar[tuple[str, ...]] = ("content",)

    def install(self, ctx: RunContext, harness: str, env: dict[str, str]) -> None:
        """Turn Claude Code's checkpoints on for the run (Codex: not covered, with why)."""
        if harness != "claude-code":
            raise NotCoveredError(
                f"{harness} has no checkpoint a non-interactive run can restore (Codex 0.171: "
                "ghost snapshots removed, no undo in `codex exec`)")
        env["CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING"] = "1"

    def finished(self, ctx: RunContext, argv: list[str], stdout: str) -> None:
        """The run's session (its configuration folder is the run's own: one transcript)
        and the id of its request's message."""
        import json

        folder = Path(ctx.sandbox.env["CLAUDE_CONFIG_DIR"])
        for transcript in sorted(folder.glob("projects/*/*.jsonl")):
            for line in transcript.read_text().splitlines():
                entry = json.loads(line)
                if entry.get("type") == "user" and entry.get("uuid"):
                    ctx.sandbox.variables["checkpoint"] = json.dumps(
                        [argv[0], transcript.stem, entry["uuid"]])
                    return

    def between(self, ctx: RunContext, earlier: Any, later: Any) -> Protection:
        """Every call of the session is under the request's checkpoint."""
        held = ctx.sandbox.variables.get("checkpoint")
        return Protection(backup_id=held, tier="checkpoint") if held else Protection()

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """``claude --resume SESSION --rewind-files ID`` (once: every moment shares it)."""
        import json

        if ctx.sandbox.variables.get("rewound"):
            return []
        ctx.sandbox.variables["rewound"] = "1"
        exe, session, message = json.loads(str(protection.backup_id))
        done = subprocess.run(
            [exe, "-p", "--resume", session, "--rewind-files", message],
            cwd=ctx.sandbox.cwd, env=ctx.sandbox.env, capture_output=True, text=True,
            timeout=INSTALL_TIMEOUT, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            return [f"--rewind-files exited {done.returncode}: "
                    f"{(done.stderr or done.stdout).strip()[-300:]}"]
        return []


class HookedBackUpper(HookedProtector, BackUpper):
    """BackUpper's hooks, installed with ``backupper install``; tiers 1-3."""

    def install(self, ctx: RunContext, harness: str, env: dict[str, str]) -> None:
        """``backupper init``, tier 4 off, ``backupper install HARNESS``."""
        for args in (("init",), ("config", "set", "subagentEnabled", "false"),
                     ("install", harness)):
            done = self._cli(ctx, *args)
            if done.returncode != 0:
                raise NotCoveredError(
                    f"backupper {' '.join(args)} failed: {done.stderr.strip()[-300:]}")

    def own_paths(self, ctx: RunContext) -> list[str]:
        """BackUpper keeps its store in the project's ``.backupper/``."""
        return [str(ctx.sandbox.cwd / ".backupper")]

    def mark(self, ctx: RunContext) -> Any:
        """The actions BackUpper recorded, and the size of its store."""
        return self._actions(ctx), self._store_bytes(ctx)

    def between(self, ctx: RunContext, earlier: Any, later: Any) -> Protection:
        """The action BackUpper recorded for the call."""
        new = [a for a in later[0] if a not in earlier[0]]
        protection = Protection(tier="backupper", stored_bytes=max(0, later[1] - earlier[1]))
        if new:
            protection.backup_id, protection.targets = new[-1], new
        return protection


def hooked_protectors(spec: str) -> list[HookedProtector]:
    """The protectors named in ``spec`` (none, preimage, backupper) for the harness path."""
    out: list[HookedProtector] = []
    for name in (n.strip() for n in spec.split(",")):
        if name == "none":
            out.append(HookedNone())
        elif name == "preimage":
            out.append(HookedPreimage())
        elif name == "backupper":
            out.append(HookedBackUpper())
        elif name == "observed":
            out.append(HookedObserved())
        elif name == "undo":
            out.append(HookedUndo())
        elif name == "checkpoint":
            out.append(HookedCheckpoint())
        elif name:
            raise UsageError(f"protector {name!r} has no harness install; through a real "
                             "harness choose from none, preimage, undo, observed, checkpoint, "
                             "backupper")
    if not out:
        raise UsageError("--protectors is empty")
    return out
