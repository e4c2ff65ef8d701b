"""BackUpper (``agents-backupper`` 0.1.0) as a protector, installed as it installs itself.

BackUpper is the published backup layer the regret benchmark comes from.  It is
a Node program shipped on PyPI (``pip install agents-backupper``, Node >= 18 on
``PATH``).  In each run's working directory the protector does what its README
tells a user to do — ``backupper init``, then ``backupper install claude-code``
— and turns its tier-4 subagent off (``backupper config set subagentEnabled
false``): tiers 1-3 (rewrite, pairing, shadow-git snapshot) need no model.  Its
model tier runs the harness's own CLI (``claude`` with ``haiku`` by default, or
``codex``) with the user's login; no model is reachable here, so that tier is
not measured and its tokens are not counted.

Every call of the session goes to the ``PreToolUse`` command that ``install``
wrote into ``.claude/settings.local.json``, with Claude Code's payload on stdin,
exactly as Claude Code runs it; its ``updatedInput`` is the call that runs (a
``rm`` becomes a move into its trash) and exit 2 blocks the call.  The
``PostToolUse`` command sees the result.  A regret moment's backup is the action
BackUpper recorded for that call; the restore is ``backupper restore N
--direct`` (latest first).  Whether it held the state is judged by the evidence
only, on content as the workspace checkpoint is judged on file bytes: its restore
brought back every content leaf the call destroyed
(:func:`preimage.bench.runner._backed_up_by_evidence`).  BackUpper keeps its
backups in ``.backupper/`` inside the project; stored bytes are what that
folder grew by.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, ClassVar

from preimage.bench.protector import NotCoveredError, Protection, Protector, RunContext
from preimage.bench.scenario import CallSpec
from preimage.interface.sizes import tree_bytes

VERSION = "0.1.0"
HOOK_TIMEOUT = 180.0
INSTALL_HINT = f"pip install agents-backupper=={VERSION} (needs Node.js >= 18)"


def backupper_command() -> str | None:
    """The ``backupper`` executable next to this interpreter or on ``PATH``."""
    import sys

    here = Path(sys.executable).parent / "backupper"
    return str(here) if here.exists() else shutil.which("backupper")


class BackUpper(Protector):
    """BackUpper's Claude Code hooks, tiers 1-3; ``backupper restore N --direct``."""

    name: ClassVar[str] = "backupper"
    label: ClassVar[str] = f"BackUpper {VERSION} (tiers 1-3)"
    # Judged as the workspace checkpoint is (file bytes): held when its restore brought back
    # every content leaf the call destroyed; what it keeps of the metadata shows in that column.
    evidence: ClassVar[tuple[str, ...]] = ("content",)

    def _cli(self, ctx: RunContext, *args: str) -> subprocess.CompletedProcess[str]:
        exe = backupper_command()
        if exe is None:
            raise NotCoveredError(f"BackUpper is not installed: {INSTALL_HINT}")
        return subprocess.run([exe, *args], cwd=ctx.sandbox.cwd, env=ctx.sandbox.env,
                              capture_output=True, text=True, errors="replace",
                              timeout=HOOK_TIMEOUT, stdin=subprocess.DEVNULL)

    def _installed(self, ctx: RunContext) -> dict[str, str]:
        """Init and install into the run's project once; the hook commands by event."""
        settings = ctx.sandbox.cwd / ".claude" / "settings.local.json"
        if not settings.exists():
            for args in (("init",), ("config", "set", "subagentEnabled", "false"),
                         ("install", "claude-code")):
                done = self._cli(ctx, *args)
                if done.returncode != 0:
                    raise NotCoveredError(
                        f"backupper {' '.join(args)} failed: {done.stderr.strip()[-300:]}")
        hooks = json.loads(settings.read_text())["hooks"]
        return {event: hooks[event][0]["hooks"][0]["command"]
                for event in ("PreToolUse", "PostToolUse")}

    def _hook(self, ctx: RunContext, command: str, payload: dict[str, Any]
              ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", command], input=json.dumps(payload),
                              cwd=ctx.sandbox.cwd, env=ctx.sandbox.env, capture_output=True,
                              text=True, errors="replace", timeout=HOOK_TIMEOUT)

    def _payload(self, ctx: RunContext, call: CallSpec, event: str) -> dict[str, Any]:
        run = ctx.sandbox.variables["run"]
        return {
            "session_id": f"bench-{run}", "transcript_path": str(ctx.scratch / "t.jsonl"),
            "cwd": str(ctx.sandbox.cwd), "permission_mode": "bypassPermissions",
            "hook_event_name": event, "tool_name": call.tool, "tool_input": dict(call.input),
            "tool_use_id": f"toolu_{run}_{abs(hash(json.dumps(call.input))) % 10**8}",
        }

    def _actions(self, ctx: RunContext) -> list[str]:
        folder = ctx.sandbox.cwd / ".backupper" / "backups"
        return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []

    def _store_bytes(self, ctx: RunContext) -> int:
        folder = ctx.sandbox.cwd / ".backupper"
        return tree_bytes(folder) if folder.exists() else 0

    def setup(self, ctx: RunContext) -> None:
        """Install into the run's project before the session's first call."""
        self._installed(ctx)

    def observe(self, ctx: RunContext, call: CallSpec) -> None:
        """An earlier or later call of the session goes through the hook too."""
        self._pre(ctx, call)

    def _pre(self, ctx: RunContext, call: CallSpec) -> tuple[Protection, list[str]]:
        hooks = self._installed(ctx)
        seen, size = self._actions(ctx), self._store_bytes(ctx)
        done = self._hook(ctx, hooks["PreToolUse"], self._payload(ctx, call, "PreToolUse"))
        new = [a for a in self._actions(ctx) if a not in seen]
        protection = Protection(tier="backupper", handle=new,
                                stored_bytes=max(0, self._store_bytes(ctx) - size))
        if new:
            protection.backup_id = new[-1]
            protection.targets = new
        notes = []
        if done.returncode == 2:
            notes.append(f"BackUpper blocked the call: {done.stderr.strip()[-200:]}")
            protection.call = CallSpec(tool="Bash", input={"command": "true"})
        elif done.stdout.strip():
            try:
                out = json.loads(done.stdout).get("hookSpecificOutput", {})
            except json.JSONDecodeError:
                out = {}
            if out.get("updatedInput"):
                protection.call = CallSpec(tool=call.tool, input=dict(out["updatedInput"]))
            if out.get("additionalContext"):
                notes.append(str(out["additionalContext"])[:300])
        protection.notes = notes
        return protection, new

    def before(self, ctx: RunContext) -> Protection:
        """The PreToolUse hook of the destructive call: its action is the backup."""
        return self._pre(ctx, ctx.call)[0]

    def after_call(self, ctx: RunContext, protection: Protection, exit_code: int) -> None:
        """The PostToolUse hook, as Claude Code sends it."""
        hooks = self._installed(ctx)
        call = protection.call or ctx.call
        payload = {**self._payload(ctx, call, "PostToolUse"),
                   "tool_response": {"stdout": "", "stderr": "", "interrupted": False,
                                     "exit_code": exit_code}}
        self._hook(ctx, hooks["PostToolUse"], payload)

    def restore(self, ctx: RunContext, protection: Protection) -> list[str]:
        """``backupper restore N --direct`` for the call's action."""
        assert protection.backup_id is not None
        number = str(int(protection.backup_id.split("_")[1]))
        done = self._cli(ctx, "restore", number, "--direct")
        notes = [line.strip() for line in done.stdout.splitlines()
                 if line.strip().startswith(("[FAIL]", "[WARN]", "[SKIP]"))]
        if done.returncode != 0:
            notes.append(f"backupper restore exited {done.returncode}: "
                         f"{(done.stderr or done.stdout).strip()[-300:]}")
        return notes


def available() -> bool:
    """Whether BackUpper and Node.js are installed here."""
    return backupper_command() is not None and shutil.which("node") is not None


__all__ = ["BackUpper", "available", "backupper_command"]
